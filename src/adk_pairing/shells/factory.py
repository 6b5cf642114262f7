"""Building the inner session service from a URI, the way ADK itself does.

A ``pairing+<inner-uri>`` URI means "the service ADK would build for
``<inner-uri>``, wrapped in `PairingSessionService`"; this module builds that
inner service and knows nothing of the wrapper (``adk_pairing.shells.service`` imports
it, never the reverse; `adk_pairing.create_session_service` wraps). The inner
service is resolved exactly as ``adk web`` / ``adk api_server`` resolve
``--session_service_uri`` (``google/adk/cli/utils/service_factory.py``,
``create_session_service_from_options``):

1. ADK's service registry (``google.adk.cli.service_registry``), so the
   built-in schemes (``memory``, ``sqlite``, ``postgresql``, ``mysql``,
   ``agentengine``) and every scheme a user registered in ``services.py`` or
   ``services.yaml`` work unchanged;
2. ``redis://`` and ``rediss://``, which ADK's registry does not know, go to
   ADK's own ``google.adk.integrations.redis.RedisSessionService``; on a
   release without it the error names google-adk-community's service, which
   takes no URI and is wrapped by hand;
3. anything else is handed to ``DatabaseSessionService(db_url=...)``, as ADK
   does: that is how ``postgresql+asyncpg://`` and ``sqlite+aiosqlite://`` work,
   since the registry matches the whole scheme and knows only the bare
   dialect names.

Everything it says about a URI is masked first (`adk_pairing.shells.masking`).
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlsplit

from google.adk.sessions.base_session_service import BaseSessionService

from ..adk import (
    ADK_VERSION,
    MIN_ADK_FOR_REDIS,
    REDIS_ALTERNATIVE,
    database_drops_subsecond_times,
    has_adk_redis_session_service,
)
from .errors import (
    RAW_PASSWORD_CHARACTERS,
    ArgumentValueError,
    StoreLayoutError,
    UnknownEngineOptionError,
    UnsupportedSchemeError,
    UriPasswordError,
    driver_failure_message,
    engine_refusal,
    mariadb_dialect_message,
    raw_password_message,
    require_type,
    unknown_engine_options_message,
    unsupported_scheme_message,
)
from .extras import SQLALCHEMY_DIALECTS
from .masking import mask_secrets, mask_uri, uri_password
from .store_failures import store_failure
from .store_layouts import SQLITE_SCHEME_OF, refuse_foreign_tables, refuse_other_layout
from .uris import PAIRING_PREFIX, REDIS_SCHEMES, inner_uri, is_pairing_uri, uri_scheme

#: Redis connection settings that the URI supplies (ADK ignores these fields
#: whenever its config has a URI).
_REDIS_URI_FIELDS = frozenset({"uri", "host", "port", "password", "ssl", "db"})

#: What a URI argument must be, for messages.
URI_ARGUMENT = "a URI string such as 'pairing+sqlite+aiosqlite:///sessions.db'"

#: Keyword ADK's CLI adds to every factory call; only some inner services use it.
AGENTS_DIR_KWARG = "agents_dir"

#: Async SQLAlchemy dialect+driver schemes that ``DatabaseSessionService``
#: accepts but ADK's registry does not list (it reaches them by fallback).
SQLALCHEMY_ASYNC_SCHEMES = (
    "postgresql+asyncpg",
    "postgresql+psycopg",
    "postgresql+psycopg_async",
    "mysql+aiomysql",
    "mysql+asyncmy",
    "mariadb+aiomysql",
    "mariadb+asyncmy",
    "sqlite+aiosqlite",
)

#: Used when the registry does not expose its schemes (a private attribute).
_ADK_BUILTIN_SESSION_SCHEMES = ("memory", "agentengine", "sqlite", "postgresql", "mysql")


def registry_session_schemes(registry: Any) -> list[str]:
    """The session schemes already in `registry`.

    ADK's ``ServiceRegistry`` has no public way to list schemes; it keeps them
    in ``_session_factories``. Read it when present, else assume ADK's built-ins.
    """
    factories = getattr(registry, "_session_factories", None)
    if isinstance(factories, dict):
        return [str(scheme) for scheme in factories]
    return list(_ADK_BUILTIN_SESSION_SCHEMES)


def supported_schemes() -> list[str]:
    """The inner schemes a URI may name here: ADK's registry, its SQLAlchemy fallback, Redis."""
    from google.adk.cli.service_registry import get_service_registry

    schemes = {
        scheme.lower()
        for scheme in (
            *registry_session_schemes(get_service_registry()),
            *SQLALCHEMY_ASYNC_SCHEMES,
            *REDIS_SCHEMES,
        )
    }
    return sorted(scheme for scheme in schemes if not scheme.startswith(PAIRING_PREFIX))


def create_inner_session_service(uri: str, **kwargs: Any) -> BaseSessionService:
    """The session service ADK would build for `uri`, unwrapped.

    Accepts ``pairing+<inner-uri>`` as well as a plain inner URI (the prefix is
    dropped), because `PairingSessionService(uri=...)` receives whichever form
    ADK's ``services.yaml`` registration or the user passed.

    Args:
      uri: The store, e.g. ``postgresql+asyncpg://user:pw@db/agents``,
        ``sqlite+aiosqlite:///sessions.db``, ``redis://localhost:6379/0``.
      **kwargs: Passed to the inner service's factory: SQLAlchemy
        ``create_async_engine`` options for databases (``pool_size=10``),
        `RedisSessionServiceConfig` fields for Redis (``key_prefix=...``).
        ADK's CLI adds ``agents_dir``; factories that do not use it drop it.

    Raises:
      ArgumentTypeError: `uri` is not a string.
      UnsupportedSchemeError: The URI has no scheme, wraps twice, or names a
        scheme no service here serves: an unknown one, one whose driver is
        not installed or not async, ``mariadb+<driver>``, or Redis on a
        google-adk without its Redis service.
      UriPasswordError: The password holds a character that would end it
        early for the store's driver (it must be percent-encoded).
      StoreLayoutError: The SQLite file was written by ADK's other SQLite
        service, which this one would alter; the message names the right URI.
      ValueError: The inner factory rejects the URI. Messages show the URI
        with its password masked.

    Failures to log in to, reach or open the store happen on first use (ADK
    connects lazily); for SQL stores they are raised as `StoreLoginError`,
    `StoreHostError` or `StoreDatabaseError` (all `adk_pairing.PairingError`).
    A Redis or ``sqlite://`` store's are raised so by `PairingSessionService`,
    which wraps it.
    """
    require_type("uri", uri, str, URI_ARGUMENT, optional=False)
    target = inner_uri(uri)
    if is_pairing_uri(target):
        raise UnsupportedSchemeError(
            f"{mask_uri(uri)!r} wraps twice; use a single prefix: "
            f"{mask_uri(PAIRING_PREFIX + inner_uri(target))!r}."
        )
    scheme = uri_scheme(target) if "://" in target else ""
    if not scheme:
        raise UnsupportedSchemeError(
            f"{mask_uri(uri)!r} is not a session service URI: expected "
            "<scheme>://..., e.g. 'postgresql+asyncpg://user@host:5432/db', "
            "'sqlite+aiosqlite:///sessions.db', 'redis://localhost:6379/0' or 'memory://'."
        )

    _refuse_misread_password(target, scheme.lower(), uri)
    if scheme.lower() in SQLITE_SCHEME_OF.values():
        refuse_other_layout(target, scheme.lower())
    try:
        service = _build_inner(target, scheme, kwargs, uri)
    except (
        ArgumentValueError,
        StoreLayoutError,
        UnsupportedSchemeError,
        UriPasswordError,
        TypeError,
    ):
        raise
    except ValueError as error:
        driver = driver_failure_message(uri, error)
        if driver is not None:
            raise UnsupportedSchemeError(driver) from None
        refused = engine_refusal(error)
        if refused is not None:
            names, configuration = refused
            raise UnknownEngineOptionError(
                unknown_engine_options_message(
                    names, configuration, mask_uri(uri), "keyword argument"
                ),
                names,
                configuration,
            ) from None
        # Drivers and ADK quote the URI, or a piece of a misread password
        # (redis-py: "Port could not be cast to integer value as 'S3cret'");
        # older ADK releases quote it unredacted. The cause chain would print the
        # original text again, hence `from None`.
        masked = mask_secrets(str(error), uri)
        if masked == str(error):
            raise
        raise ValueError(masked) from None
    _raise_connection_failures_typed(service, uri)
    return service


#: A host name or address as SQLAlchemy's URLs hold them (IPv6 without brackets).
_HOST = re.compile(r"[A-Za-z0-9._~%:\-]*")


def _refuse_misread_password(target: str, scheme: str, uri: str) -> None:
    """Raises `UriPasswordError` when the store's driver would cut the password short.

    Judged by the driver's own reading, so a password that works as written
    is never refused: SQLAlchemy ends a password at its first "@" (the rest
    then shows in the host name); redis-py ends the whole authority at the
    first "#", "?" or "/" (leaving no host, or a port that is not a number).
    """
    password = uri_password(target)
    if not password or not any(char in RAW_PASSWORD_CHARACTERS for char in password):
        return
    if scheme in REDIS_SCHEMES:
        parts = urlsplit(target)
        try:
            misread = parts.port is None and not parts.hostname
        except ValueError:  # "Port could not be cast to integer value"
            misread = True
    elif scheme.split("+", 1)[0] in SQLALCHEMY_DIALECTS:
        try:
            from sqlalchemy.engine import make_url
        except ImportError:  # the store's extra is missing; its own error says so
            return
        try:
            url = make_url(target)
        except Exception:  # any parse failure of a URI whose password holds a raw "@"
            misread = "@" in password
        else:
            # What followed the password's first "@" became host and database.
            misread = "@" in password and (
                _HOST.fullmatch(url.host or "") is None or "@" in (url.database or "")
            )
    else:
        return
    if misread:
        raise UriPasswordError(raw_password_message(uri))


def _raise_connection_failures_typed(service: BaseSessionService, uri: str) -> None:
    """Makes a SQL store's login, host and database failures `StoreConnectionError`s.

    ``DatabaseSessionService`` connects on first use, not when built; there a
    refused login surfaces as SQLAlchemy's ``DBAPIError`` and an unknown host
    as ``socket.gaierror``. SQLAlchemy's ``do_connect`` event lets the
    connection be made here, so the first use raises the one-line error the
    CLI prints (`adk_pairing.shells.store_failures.store_failure`) instead.
    """
    engine = getattr(service, "db_engine", None)
    sync_engine = getattr(engine, "sync_engine", None)
    if sync_engine is None:
        return
    from sqlalchemy import event

    checked = False

    def connect(dialect: Any, _record: Any, cargs: Any, cparams: Any) -> Any:
        nonlocal checked
        try:
            connection = dialect.connect(*cargs, **cparams)
        except Exception as error:
            failure = store_failure(error, uri)
            if failure is None:
                raise
            raise failure from None
        if not checked:
            try:
                refuse_foreign_tables(connection, dialect.name, uri)
            except BaseException:
                connection.close()
                raise
            checked = True
        return connection

    event.listen(sync_engine, "do_connect", connect)


def _build_inner(target: str, scheme: str, kwargs: dict[str, Any], uri: str) -> BaseSessionService:
    from google.adk.cli.service_registry import get_service_registry

    service = get_service_registry().create_session_service(target, **kwargs)
    if service is not None:
        return service
    if scheme.lower() in REDIS_SCHEMES:
        return _redis_session_service(target, kwargs)
    _refuse_unknown_dialect(target, scheme, uri)
    return _database_session_service(target, kwargs, uri)


def _refuse_unknown_dialect(target: str, scheme: str, uri: str) -> None:
    """Raises `UnsupportedSchemeError` when SQLAlchemy, ADK's fallback, has no such dialect."""
    try:
        from sqlalchemy.engine import make_url
        from sqlalchemy.exc import NoSuchModuleError
    except ImportError:  # ADK's own error names the missing module
        return
    try:
        make_url(target).get_dialect()
    except NoSuchModuleError:
        raise UnsupportedSchemeError(
            unsupported_scheme_message(uri, scheme, supported_schemes())
        ) from None
    except Exception:  # a URL SQLAlchemy cannot parse: ADK's error says so
        return


def _without_agents_dir(kwargs: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in kwargs.items() if key != AGENTS_DIR_KWARG}


def _redis_session_service(uri: str, kwargs: dict[str, Any]) -> BaseSessionService:
    """ADK's `RedisSessionService`, configured by `uri` plus config fields."""
    if not has_adk_redis_session_service():
        # Without google.adk.integrations.redis no ADK service can take this
        # URI, whatever else is installed.
        raise UnsupportedSchemeError(
            f"{mask_uri(uri)!r} needs google-adk >= {MIN_ADK_FOR_REDIS} "
            f"(installed: {ADK_VERSION}) for ADK's RedisSessionService; "
            f"on this version use {REDIS_ALTERNATIVE}."
        )
    try:
        from google.adk.integrations.redis import (
            RedisSessionService,
            RedisSessionServiceConfig,
        )
    except ImportError as error:  # its own dependency, the redis client, is missing
        raise UnsupportedSchemeError(
            f"{mask_uri(uri)!r} needs the redis package: pip install 'adk-pairing[redis]' ({error})"
        ) from error
    options = _without_agents_dir(kwargs)
    # With a URI, ADK's service ignores host/port/password/ssl/db: the URI
    # carries them. The config model also ignores unknown fields, so a misspelt
    # or ineffective option would vanish silently; reject it instead.
    allowed = sorted(set(RedisSessionServiceConfig.model_fields) - _REDIS_URI_FIELDS)
    unknown = sorted(set(options) - set(allowed))
    if unknown:
        raise ArgumentValueError(
            f"Unknown option(s) {unknown} for the Redis session service at "
            f"{mask_uri(uri)!r}; allowed: {allowed} (host, port, password, database "
            "and TLS go in the URI: rediss://:password@host:6379/0)."
        )
    return RedisSessionService(config=RedisSessionServiceConfig(uri=uri, **options))


def _database_session_service(uri: str, kwargs: dict[str, Any], given: str) -> BaseSessionService:
    """ADK's fallback for schemes its registry does not know: SQLAlchemy URLs.

    `given` is the URI as the caller wrote it, for messages.
    """
    from google.adk.sessions.database_session_service import DatabaseSessionService

    if database_drops_subsecond_times(uri):
        raise UnsupportedSchemeError(mariadb_dialect_message(given))
    try:
        return DatabaseSessionService(db_url=uri, **_without_agents_dir(kwargs))
    except ValueError as error:
        driver = driver_failure_message(given, error)
        if driver is not None:
            raise UnsupportedSchemeError(driver) from None
        # Older releases put the unredacted URL in these messages
        # (docs/compatibility.md).
        # SQLAlchemy's own error, chained as the cause, masks only what it
        # parsed as the password: with an unescaped "@" in it, the rest shows
        # ("user:***@00000@/sessions.db"). Neither is chained when it holds a
        # secret; their masked texts are the message.
        cause = error.__cause__
        texts = [str(error)] + ([str(cause)] if cause is not None else [])
        masked = [mask_secrets(text, uri) for text in texts]
        if masked == texts:
            raise
        detail = f" ({type(cause).__name__}: {masked[1]})" if cause is not None else ""
        raise ValueError(masked[0] + detail) from None
