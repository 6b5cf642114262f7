"""The mistakes a user can make wiring adk-pairing: one type each, one line each.

Every message says what is wrong and how to fix it, names the argument, key or
store (its URI masked, `adk_pairing.shells.masking`), and never quotes a value that
may be a secret. The library raises these; the CLI prints the same lines
(``adk_pairing.cli`` builds its messages here), so the two never drift apart.

Each type also subclasses the built-in exception a Python user would catch
for that kind of mistake: `TypeError` for a wrong type, `ValueError` for a
bad value or URI, `ConnectionError` for a store that cannot be reached or
refuses the login. `PairingError` catches them all. A Redis or
``SqliteSessionService`` store's failure is also still the error the store
raised (`store_error_typed`), so no ``except`` clause that caught it before
misses it now.
"""

from __future__ import annotations

import functools
import re
import socket
import sqlite3
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

from .extras import install_line
from .masking import mask_secrets, mask_uri, uri_password
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


# -- store failures --------------------------------------------------------------


def causes(error: BaseException) -> Iterator[BaseException]:
    """`error`, then its cause or context, and so on (each once)."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


def _type_names(error: BaseException) -> set[str]:
    return {cls.__name__ for cls in type(error).__mro__}


#: MySQL/MariaDB server errors: access denied (for the user, for the user
#: without a password), and unknown database.
MYSQL_LOGIN_CODES = frozenset({1045, 1698})
MYSQL_UNKNOWN_DATABASE = 1049
#: Access denied to the database, after a login the server accepted: also what
#: a user without global rights gets for a database that does not exist.
MYSQL_DATABASE_DENIED = 1044


def _mysql_code(error: BaseException) -> int | None:
    """The server's error number of a MySQL driver's error (pymysql, aiomysql, asyncmy)."""
    module = type(error).__module__
    if not module.startswith(("pymysql", "aiomysql", "asyncmy")) or not error.args:
        return None
    code = error.args[0]
    return code if isinstance(code, int) else None


def _mysql_text(error: BaseException, uri: str | None) -> str:
    text = str(error.args[1]) if len(error.args) > 1 else str(error)
    return mask_secrets(text, uri).strip().rstrip(".")


def _is_redis_error(error: BaseException) -> bool:
    return type(error).__module__.startswith("redis.")


def _uri_user(uri: str | None) -> str | None:
    try:
        return urlsplit(uri).username if uri else None
    except ValueError:  # not a URI urllib can split
        return None


def _unresolved(error: BaseException) -> bool:
    """Whether `error` was caused by a host name that does not resolve."""
    return any(isinstance(cause, socket.gaierror) for cause in causes(error))


def store_failure(
    error: BaseException, uri: str | None, *, store_name: str | None = None
) -> PairingError | None:
    """`error` as the typed, one-line error it stands for, or None if it is none of them.

    Recognises failures by their type (and, for drivers wrapped by SQLAlchemy,
    by the driver's exception in the cause chain), so the message names the
    real problem rather than the wrapper. The store is called `store_name`,
    by default its masked URI; the driver's text is masked for `uri`.
    """
    if isinstance(error, PairingError):
        return error
    where = store_name or (mask_uri(uri) if uri else "the store")
    for cause in causes(error):
        names = _type_names(cause)
        lines = mask_secrets(str(cause), uri).strip().splitlines()
        text = lines[0].rstrip(".") if lines else ""
        # A sentence of its own: "… correct?" is not followed by a full stop.
        stop = "" if text.endswith(("?", "!")) else "."
        if names & {"InvalidAuthorizationSpecificationError", "InvalidPasswordError"}:
            return StoreLoginError(
                f"{where} rejected the login: {text}{stop} "
                "Fix the user name or password in the URI." + escape_hint(uri, escapes=True)
            )
        mysql_code = _mysql_code(cause)
        if mysql_code in MYSQL_LOGIN_CODES:
            return StoreLoginError(
                f"{where} rejected the login: {_mysql_text(cause, uri)}. "
                "Fix the user name or password in the URI." + escape_hint(uri, escapes=True)
            )
        if mysql_code == MYSQL_UNKNOWN_DATABASE:
            return StoreDatabaseError(
                f"{where}: {_mysql_text(cause, uri)}. Fix the database name in the URI."
            )
        if mysql_code == MYSQL_DATABASE_DENIED:
            return StoreDatabaseError(
                f"{where}: {_mysql_text(cause, uri)}. Fix the database name in the URI, "
                "or grant the user access to it."
            )
        if "InvalidCatalogNameError" in names:
            return StoreDatabaseError(f"{where}: {text}{stop} Fix the database name in the URI.")
        if "without any password configured" in text or "no password is set" in text:
            return StoreLoginError(
                f"{where} rejected the login: {text}{stop} The server has no password set: "
                "remove the password from the URI."
            )
        if "AuthenticationError" in names or (
            "ResponseError" in names and ("WRONGPASS" in text or "NOAUTH" in text)
        ):
            # Redis does not say which of an ACL user's name and password is wrong.
            fix = "user name or password" if _uri_user(uri) else "password"
            return StoreLoginError(
                f"{where} rejected the login: {text}{stop} Fix the {fix} in the URI."
                + escape_hint(uri, escapes=True)
            )
        if "ResponseError" in names and "DB index is out of range" in text:
            return StoreDatabaseError(
                f"{where}: {text}{stop} Fix the database number at the end of the URI: the "
                "server's are 0 to its 'databases' setting minus 1 (0 to 15 by default)."
            )
        if _is_redis_error(cause) and "ConnectionError" in names and _unresolved(cause):
            continue  # redis-py's "Error -2 connecting to …": the resolver's error says it
        if isinstance(cause, socket.gaierror):
            return StoreHostError(
                f"cannot resolve the host of {where}: {text}{stop} Check the host name in the URI."
                + escape_hint(uri)
            )
        if "InvalidResponse" in names and _is_redis_error(cause):
            # Something answered, but not in Redis's protocol: another service
            # at that host and port, or a raw "@" or "/" in the password that
            # moved the host.
            return StoreHostError(
                f"{where} did not answer as a Redis server: {text}{stop} "
                "Are the host and port in the URI right?" + escape_hint(uri)
            )
        if isinstance(cause, ConnectionRefusedError | TimeoutError) or (
            "ConnectionError" in names and _is_redis_error(cause)
        ):
            return StoreHostError(
                f"cannot connect to {where}: {text or type(cause).__name__}. "
                "Is the server running, and are the host and port in the URI right?"
            )
        if "read-only transaction" in text or "readonly database" in text:
            return StoreLayoutError(no_adk_tables_message(where))
        if isinstance(cause, sqlite3.OperationalError) and "unable to open" in text:
            return StoreDatabaseError(
                f"cannot open the SQLite database of {where}: {text}. Check the path in the "
                "URI (three slashes start a relative path, four an absolute one), that its "
                "directory exists, and that this user may open it."
            )
    return None


# -- the store's own errors, typed -----------------------------------------------


def store_error_typed(error: BaseException, uri: str | None) -> BaseException | None:
    """A redis-py or sqlite3 login, host or database failure as its one line, of its own class.

    Redis's session services connect on every call, and ADK's
    ``SqliteSessionService`` opens its file on every call, so these failures
    come from the store's own calls, where a caller may be catching the
    driver's classes (``except redis.exceptions.ConnectionError`` around a
    retry).
    The error returned is both: an instance of `error`'s class and of the
    `StoreConnectionError` `store_failure` names (`StoreLoginError`,
    `StoreHostError`, `StoreDatabaseError`), with that one line as its
    message. None for any other error, or when the two classes cannot be
    combined: the caller then raises `error` as it is. The caller chains it
    (``raise typed from error``), so redis-py's own words stay in the cause.
    """
    if not (_is_redis_error(error) or isinstance(error, sqlite3.OperationalError)):
        return None
    failure = store_failure(error, uri)
    if not isinstance(failure, StoreConnectionError):
        return None
    try:
        return _typed_class(type(failure), type(error))(str(failure))
    except Exception:  # classes whose layouts or constructors do not combine
        return None


@functools.cache
def _typed_class(kind: type[StoreConnectionError], original: type[BaseException]) -> type:
    """The class deriving from `kind` and `original`, one per pair.

    It bears `kind`'s name, so a traceback ends in
    ``adk_pairing.shells.errors.StoreLoginError: …``; it pickles as a rebuild
    of the same pair.
    """
    own = f"{original.__module__}.{original.__qualname__}"
    namespace = {
        "__module__": kind.__module__,
        "__qualname__": kind.__qualname__,
        "__doc__": f"{kind.__doc__} Also the store's own {own}.",
        "__reduce__": lambda self: (_rebuild_typed, (kind, original, self.args)),
    }
    return type(kind.__name__, (kind, original), namespace)


def _rebuild_typed(
    kind: type[StoreConnectionError], original: type[BaseException], args: tuple[Any, ...]
) -> BaseException:
    return _typed_class(kind, original)(*args)
