"""A store's failure as the typed, one-line error it stands for.

A driver's error (asyncpg's, a MySQL driver's, redis-py's, sqlite3's), often
wrapped by SQLAlchemy or ADK, names the wrapper more than the problem.
`store_failure` finds the driver's error in the chain and says what is wrong
(a login refused, a host that does not resolve or answer, a database that
does not exist) as one of the `adk_pairing.shells.errors` types: the factory
raises it, and the CLI prints it. `store_error_typed`, and `StoreErrorsTyped`
around each call of the decorator's inner service, do the same for the errors
a Redis or ``SqliteSessionService`` store raises on its own calls, keeping
each an instance of the store's own class, so no ``except`` clause that caught
it before misses it now.
"""

from __future__ import annotations

import functools
import socket
import sqlite3
from typing import Any
from urllib.parse import urlsplit

from google.adk.sessions.base_session_service import BaseSessionService

from ..adk.internals import store_uri
from . import errors
from .errors import causes, escape_hint, no_adk_tables_message
from .masking import mask_secrets, mask_uri

__all__ = ["StoreErrorsTyped", "store_error_typed", "store_failure"]


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
) -> errors.PairingError | None:
    """`error` as the typed, one-line error it stands for, or None if it is none of them.

    Recognises failures by their type (and, for drivers wrapped by SQLAlchemy,
    by the driver's exception in the cause chain), so the message names the
    real problem rather than the wrapper. The store is called `store_name`,
    by default its masked URI; the driver's text is masked for `uri`.
    """
    if isinstance(error, errors.PairingError):
        return error
    where = store_name or (mask_uri(uri) if uri else "the store")
    for cause in causes(error):
        names = _type_names(cause)
        lines = mask_secrets(str(cause), uri).strip().splitlines()
        text = lines[0].rstrip(".") if lines else ""
        # A sentence of its own: "… correct?" is not followed by a full stop.
        stop = "" if text.endswith(("?", "!")) else "."
        if names & {"InvalidAuthorizationSpecificationError", "InvalidPasswordError"}:
            return errors.StoreLoginError(
                f"{where} rejected the login: {text}{stop} "
                "Fix the user name or password in the URI." + escape_hint(uri, escapes=True)
            )
        mysql_code = _mysql_code(cause)
        if mysql_code in MYSQL_LOGIN_CODES:
            return errors.StoreLoginError(
                f"{where} rejected the login: {_mysql_text(cause, uri)}. "
                "Fix the user name or password in the URI." + escape_hint(uri, escapes=True)
            )
        if mysql_code == MYSQL_UNKNOWN_DATABASE:
            return errors.StoreDatabaseError(
                f"{where}: {_mysql_text(cause, uri)}. Fix the database name in the URI."
            )
        if mysql_code == MYSQL_DATABASE_DENIED:
            return errors.StoreDatabaseError(
                f"{where}: {_mysql_text(cause, uri)}. Fix the database name in the URI, "
                "or grant the user access to it."
            )
        if "InvalidCatalogNameError" in names:
            return errors.StoreDatabaseError(
                f"{where}: {text}{stop} Fix the database name in the URI."
            )
        if "without any password configured" in text or "no password is set" in text:
            return errors.StoreLoginError(
                f"{where} rejected the login: {text}{stop} The server has no password set: "
                "remove the password from the URI."
            )
        if "AuthenticationError" in names or (
            "ResponseError" in names and ("WRONGPASS" in text or "NOAUTH" in text)
        ):
            # Redis does not say which of an ACL user's name and password is wrong.
            fix = "user name or password" if _uri_user(uri) else "password"
            return errors.StoreLoginError(
                f"{where} rejected the login: {text}{stop} Fix the {fix} in the URI."
                + escape_hint(uri, escapes=True)
            )
        if "ResponseError" in names and "DB index is out of range" in text:
            return errors.StoreDatabaseError(
                f"{where}: {text}{stop} Fix the database number at the end of the URI: the "
                "server's are 0 to its 'databases' setting minus 1 (0 to 15 by default)."
            )
        if _is_redis_error(cause) and "ConnectionError" in names and _unresolved(cause):
            continue  # redis-py's "Error -2 connecting to …": the resolver's error says it
        if isinstance(cause, socket.gaierror):
            return errors.StoreHostError(
                f"cannot resolve the host of {where}: {text}{stop} Check the host name in the URI."
                + escape_hint(uri)
            )
        if "InvalidResponse" in names and _is_redis_error(cause):
            # Something answered, but not in Redis's protocol: another service
            # at that host and port, or a raw "@" or "/" in the password that
            # moved the host.
            return errors.StoreHostError(
                f"{where} did not answer as a Redis server: {text}{stop} "
                "Are the host and port in the URI right?" + escape_hint(uri)
            )
        if isinstance(cause, ConnectionRefusedError | TimeoutError) or (
            "ConnectionError" in names and _is_redis_error(cause)
        ):
            return errors.StoreHostError(
                f"cannot connect to {where}: {text or type(cause).__name__}. "
                "Is the server running, and are the host and port in the URI right?"
            )
        if "read-only transaction" in text or "readonly database" in text:
            return errors.StoreLayoutError(no_adk_tables_message(where))
        if isinstance(cause, sqlite3.OperationalError) and "unable to open" in text:
            return errors.StoreDatabaseError(
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
    if not isinstance(failure, errors.StoreConnectionError):
        return None
    try:
        return _typed_class(type(failure), type(error))(str(failure))
    except Exception:  # classes whose layouts or constructors do not combine
        return None


@functools.cache
def _typed_class(kind: type[errors.StoreConnectionError], original: type[BaseException]) -> type:
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
    kind: type[errors.StoreConnectionError], original: type[BaseException], args: tuple[Any, ...]
) -> BaseException:
    return _typed_class(kind, original)(*args)


class StoreErrorsTyped:
    """``with`` it around a call to `inner`: a login, host or database failure of
    the store leaves as its one line, still an instance of the store's own class
    and chained from the original (`store_error_typed`); every other error
    leaves as it is. A success pays one ``__enter__`` and ``__exit__``, nothing
    more."""

    __slots__ = ("_inner",)

    def __init__(self, inner: BaseSessionService) -> None:
        self._inner = inner

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: object, error: BaseException | None, traceback: object) -> bool:
        if isinstance(error, Exception):
            typed = store_error_typed(error, store_uri(self._inner))
            if typed is not None:
                raise typed from error
        return False
