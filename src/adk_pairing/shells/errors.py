"""The mistakes a user can make wiring adk-pairing: one type each, one line each.

Every message says what is wrong and how to fix it, names the argument, key or
store (its URI masked, `adk_pairing.shells.masking`), and never quotes a value that
may be a secret. The library raises these; the CLI prints the same lines
(``adk_pairing.cli`` builds its messages here), so the two never drift apart.

Each type also subclasses the built-in exception a Python user would catch
for that kind of mistake: `TypeError` for a wrong type, `ValueError` for a
bad value or URI, `ConnectionError` for a store that cannot be reached or
refuses the login. `PairingError` catches them all. Which of them a
store's own failure is, is decided in `adk_pairing.shells.store_failures`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from .extras import install_line
from .masking import mask_uri, uri_password
from .uris import inner_uri, uri_scheme

#: What a store URI looks like, for messages.
URI_EXAMPLES = (
    "postgresql+asyncpg://user:password@host:5432/db, "
    "sqlite+aiosqlite:///sessions.db or redis://localhost:6379/0"
)


class PairingError(Exception):
    """Any mistake adk-pairing reports about its arguments, its configuration or a store."""


class ArgumentTypeError(PairingError, TypeError):
    """A public argument or configuration value of the wrong type."""


class ArgumentValueError(PairingError, ValueError):
    """A public argument or configuration value of the right type but not one that is taken."""


class UnknownEngineOptionError(ArgumentTypeError):
    """Keyword arguments SQLAlchemy's engine does not take (``pool_sizee=10``)."""

    def __init__(self, message: str, names: str, configuration: str) -> None:
        super().__init__(message)
        #: The refused names as SQLAlchemy quotes them, e.g. ``'pool_sizee'``.
        self.names = names
        #: SQLAlchemy's dialect/pool/engine, e.g. ``PGDialect_asyncpg/QueuePool/Engine``.
        self.configuration = configuration


class UnsupportedSchemeError(PairingError, ValueError):
    """A URI scheme that no session service here can serve; the message says which can.

    Also a scheme whose database driver is not installed here, or is not an
    async one; the message names the driver and one that works.
    """


class UriPasswordError(PairingError, ValueError):
    """A URI whose password holds a character that ends it early: it must be percent-encoded."""


class StoreLayoutError(PairingError, ValueError):
    """A store written by another session service, which the one asked for would alter."""


class StoreConnectionError(PairingError, ConnectionError):
    """The store cannot be used: see `StoreLoginError`, `StoreHostError`, `StoreDatabaseError`."""


class StoreLoginError(StoreConnectionError):
    """The store rejected the user name or password."""


class StoreHostError(StoreConnectionError):
    """The store's host does not resolve, or nothing answers at its host and port."""


class StoreDatabaseError(StoreConnectionError):
    """The server answers, but the database the URI names does not exist or cannot be opened."""


# -- argument types ----------------------------------------------------------


def require_type(
    name: str, value: object, types: type | tuple[type, ...], expected: str, *, optional: bool
) -> None:
    """Raises `ArgumentTypeError` unless `value` is one of `types` (or None when `optional`).

    The message names the argument and the type it got, never the value,
    which may be a password.
    """
    if value is None and optional:
        return
    allowed = types if isinstance(types, tuple) else (types,)
    # bool is an int to isinstance, but never what a count or a text means.
    if isinstance(value, allowed) and not (isinstance(value, bool) and bool not in allowed):
        return
    raise ArgumentTypeError(f"{name} must be {expected}, got {type(value).__name__}.")


def require_pairing_options(
    missing_text: object, pending_text: object, analysis_cache_size: object
) -> None:
    """The decorator's own options, checked wherever they are taken (``None``: the default)."""
    require_type("missing_text", missing_text, str, "a string or None", optional=True)
    require_type("pending_text", pending_text, str, "a string or None", optional=True)
    require_type(
        "analysis_cache_size",
        analysis_cache_size,
        int,
        "a whole number of sessions >= 0 (0 turns the cache off) or None",
        optional=True,
    )


# -- error chains --------------------------------------------------------------


def causes(error: BaseException) -> Iterator[BaseException]:
    """`error`, then its cause or context, and so on (each once)."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


# -- engine options ------------------------------------------------------------


_ENGINE_REFUSAL = re.compile(
    r"Invalid argument\(s\) (?P<names>.+?) sent to create_engine\(\), "
    r"using configuration (?P<configuration>[\w/]+)"
)


def engine_refusal(error: BaseException) -> tuple[str, str] | None:
    """The option names and configuration SQLAlchemy's ``create_engine`` refused, if it did.

    ADK wraps SQLAlchemy's TypeError in a ValueError quoting the store's URL;
    the TypeError's text is somewhere in the chain.
    """
    for cause in causes(error):
        match = _ENGINE_REFUSAL.search(str(cause))
        if match is not None:
            return match["names"], match["configuration"]
    return None


def engine_options() -> list[str]:
    """The keyword options SQLAlchemy's ``create_engine`` documents (its typed overload)."""
    import inspect
    from typing import get_overloads

    import sqlalchemy

    names: set[str] = set()
    for overload in get_overloads(sqlalchemy.create_engine):
        names.update(inspect.signature(overload).parameters)
    return sorted(names - {"url", "kwargs"})


def unknown_engine_options_message(names: str, configuration: str, where: str, label: str) -> str:
    """The line for engine options SQLAlchemy refused; `label` says how they were given."""
    several = "," in names
    return (
        f"unknown {label}{'s' if several else ''} {names} for {where}: "
        f"SQLAlchemy's engine ({configuration}) does not take {'them' if several else 'it'}; "
        f"it takes {', '.join(engine_options())}"
    )


# -- URIs ----------------------------------------------------------------------


def unsupported_scheme_message(uri: str, scheme: str, supported: list[str]) -> str:
    return (
        f"{mask_uri(uri)!r}: no session service serves the scheme {scheme!r}. "
        f"Use one of {', '.join(supported)} (each also as pairing+<scheme>), "
        "or register the scheme with ADK's service registry."
    )


#: An async driver each SQLAlchemy dialect can use, and the extra that installs it.
ASYNC_DRIVER_OF_DIALECT = {
    "postgresql": ("postgresql+asyncpg", "postgres"),
    "postgres": ("postgresql+asyncpg", "postgres"),
    "mysql": ("mysql+aiomysql", "mysql"),
    "mariadb": ("mysql+aiomysql", "mysql"),
    "sqlite": ("sqlite+aiosqlite", "postgres"),
}


def driver_failure_message(uri: str, error: BaseException) -> str | None:
    """The line for a URI whose database driver is missing or synchronous, else None.

    ADK's ``DatabaseSessionService`` says only "Database related module not
    found" (or, for a synchronous driver, names the async URL on newer
    releases); the driver's own exception in the chain names the module.
    """
    missing = next((cause for cause in causes(error) if isinstance(cause, ImportError)), None)
    synchronous = next(
        (cause for cause in causes(error) if "requires an async driver" in str(cause)), None
    )
    if missing is None and synchronous is None:
        return None
    scheme = uri_scheme(inner_uri(uri)).lower()
    driver, extra = ASYNC_DRIVER_OF_DIALECT.get(scheme.split("+", 1)[0], (None, None))
    if missing is not None:
        module = missing.name or "its database driver"
        if driver == scheme and extra is not None:
            return f"{mask_uri(uri)!r} needs the module {module}, which is not installed: " + (
                f"{install_line(extra)}."
            )
        problem = f"needs the module {module}, which is not installed: install it, or"
    else:
        problem = "names a synchronous driver, and ADK's DatabaseSessionService needs an async one:"
    if driver is not None and extra is not None:
        return f"{mask_uri(uri)!r} {problem} use {driver}:// ({install_line(extra)})."
    return f"{mask_uri(uri)!r} {problem} name an installed async driver of its database."


def mariadb_dialect_message(uri: str) -> str:
    """The line for a ``mariadb+<driver>://`` URI, naming its ``mysql+<driver>://`` form."""
    target = inner_uri(uri)
    prefix = uri[: len(uri) - len(target)]
    mysql_form = prefix + "mysql" + target[len("mariadb") :]
    return (
        f"{mask_uri(uri)!r}: ADK's DatabaseSessionService keeps the times of "
        "SQLAlchemy's mariadb dialect to the second, so appends are refused as stale "
        "(or, on releases without that check, the events of one second reordered). "
        f"The mysql dialect serves MariaDB: use {mask_uri(mysql_form)!r}."
    )


#: A password holding one of these is cut short by one driver or another
#: (``#``, ``?`` and ``/`` end a URI's authority for redis-py, ``@`` ends the
#: password for SQLAlchemy, a space ends the URI for the eye).
RAW_PASSWORD_CHARACTERS = "#?/@ "

_PERCENT_ESCAPE = re.compile(r"%[0-9A-Fa-f]{2}")


def _raw_characters(password: str) -> str:
    return "".join(sorted({char for char in password if char in RAW_PASSWORD_CHARACTERS}))


def _has_percent_escape(password: str) -> bool:
    return _PERCENT_ESCAPE.search(password) is not None


def escape_hint(uri: str | None, *, escapes: bool = False) -> str:
    """Why a password is misread, and the fix; empty when it is not the cause.

    The "percent-encode" fix is given only when the password as written holds
    a character no encoded password can hold (``#``, ``?``, ``/``, ``@``, a
    space). With `escapes` (a login was refused), a password holding ``%XX``
    escapes is told how a URI reads them: it may be encoded and simply wrong,
    or meant literally, and only its owner knows which.
    """
    password = uri_password(uri) if uri else None
    if not password:
        return ""
    if _raw_characters(password):
        return (
            " The password holds a character that ends it early (#, ?, /, @ or a space);"
            " percent-encode it: # as %23, ? as %3F, / as %2F, @ as %40, space as %20."
        )
    if escapes and _has_percent_escape(password):
        return (
            " The password's %XX sequences are read as escapes (%41 as A); if a % is meant"
            " literally, write it as %25."
        )
    return ""


def raw_password_message(uri: str) -> str:
    """The line for a URI whose password the driver would cut short."""
    return f"the password in {mask_uri(uri)!r} is not percent-encoded." + escape_hint(uri)


# -- SQLite layouts ------------------------------------------------------------


def other_layout_message(service: str, path: str, scheme: str, wanted: str) -> str:
    """The line for a SQLite file written by `service`, opened with the other service's scheme."""
    return (
        f"this file was written by {service}: use {wanted}:///{path} "
        f"({scheme}:// reads the other SQLite layout)"
    )


def directory_message(path: str, where: str) -> str:
    """The line for a SQLite URI that names a directory."""
    return f"{path!r} (from {where}) is a directory, not a SQLite file: name the file."


def not_sqlite_message(path: str, where: str, error: BaseException) -> str:
    """The line for a SQLite URI whose file is something else."""
    return (
        f"{path!r} (from {where}) is not a SQLite database ({error}): name the file "
        "your ADK app's session service writes."
    )


def foreign_tables_message(where: str, missing: dict[str, list[str]]) -> str:
    """The line for a database whose tables of ADK's names belong to another application."""
    tables = "; ".join(f"{table} lacks {', '.join(columns)}" for table, columns in missing.items())
    return (
        f"{where} holds tables named as ADK's that ADK's DatabaseSessionService did not create "
        f"({tables}), and would have its schema set up around them. Name a database "
        "of its own for ADK's sessions."
    )


def no_adk_tables_message(where: str) -> str:
    """What to say about a store holding none of ADK's tables (opened read-only, it stays so)."""
    return (
        f"{where} has no ADK session tables (or an older schema ADK would "
        "upgrade), and adk-pairing opens stores read-only. Check that the URI "
        "names the database your ADK app uses."
    )
