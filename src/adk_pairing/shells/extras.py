"""Which extra of adk-pairing a store URI needs beyond the base install.

``pip install adk-pairing`` brings google-adk and what every store shares;
the drivers of particular stores come with extras (pyproject.toml,
``[project.optional-dependencies]``). A command pointed at a store whose
driver is missing says which extra to install, in one line, instead of
failing deep inside ADK with ``No module named ...``.
"""

from __future__ import annotations

import importlib.util

from .uris import REDIS_SCHEMES, inner_uri, uri_scheme

#: Store URI schemes (before any ``+driver``) that ADK serves through SQLAlchemy.
SQLALCHEMY_DIALECTS = frozenset({"postgresql", "postgres", "mysql", "mariadb", "mssql", "oracle"})

#: The dialects the ``mysql`` extra serves (its driver, aiomysql, talks to both servers).
MYSQL_DIALECTS = frozenset({"mysql", "mariadb"})

#: The modules a scheme needs that the base install lacks, and the extra that has them.
#: ``sqlite+aiosqlite`` needs SQLAlchemy only: aiosqlite is a dependency of google-adk.
MODULES_FOR_SCHEME: dict[str, tuple[tuple[str, ...], str]] = {
    "postgresql+asyncpg": (("sqlalchemy", "asyncpg"), "postgres"),
    "sqlite+aiosqlite": (("sqlalchemy",), "postgres"),
    "mysql+aiomysql": (("sqlalchemy", "aiomysql"), "mysql"),
    "mariadb+aiomysql": (("sqlalchemy", "aiomysql"), "mysql"),
    **{scheme: (("redis",), "redis") for scheme in REDIS_SCHEMES},
}


def install_line(extra: str) -> str:
    """The command that installs `extra`, as README writes it."""
    return f"pip install 'adk-pairing[{extra}]'"


def needed_modules(uri: str) -> tuple[tuple[str, ...], str] | None:
    """(modules, extra) the store of `uri` needs beyond the base install, or None.

    A ``pairing+`` prefix is ignored. Other drivers of a SQLAlchemy dialect
    (``mysql+asyncmy``, ``postgresql+psycopg``, ...) need SQLAlchemy from the
    extra of their dialect (``mysql`` for MySQL and MariaDB, else ``postgres``)
    plus a driver no extra installs.
    """
    target = inner_uri(uri)
    scheme = uri_scheme(target).lower() if "://" in target else ""
    if scheme in MODULES_FOR_SCHEME:
        return MODULES_FOR_SCHEME[scheme]
    dialect = scheme.split("+", 1)[0]
    if dialect in MYSQL_DIALECTS:
        return ("sqlalchemy",), "mysql"
    if dialect in SQLALCHEMY_DIALECTS:
        return ("sqlalchemy",), "postgres"
    return None


def missing_extra(uri: str) -> tuple[list[str], str] | None:
    """(missing modules, extra) when the store of `uri` cannot load here, else None."""
    needed = needed_modules(uri)
    if needed is None:
        return None
    modules, extra = needed
    missing = [module for module in modules if importlib.util.find_spec(module) is None]
    return (missing, extra) if missing else None
