"""Building the inner session service from a URI, the way ADK itself does.

A ``pairing+<inner-uri>`` URI means "the service ADK would build for
``<inner-uri>``, wrapped in `PairingSessionService`"; this module builds that
inner service and knows nothing of the wrapper (``adk_pairing.service`` imports
it, never the reverse; `adk_pairing.create_session_service` wraps). The inner
service is resolved exactly as ``adk web`` / ``adk api_server`` resolve
``--session_service_uri`` (``google/adk/cli/utils/service_factory.py``,
``create_session_service_from_options``):

1. ADK's service registry (``google.adk.cli.service_registry``), so the
   built-in schemes (``memory``, ``sqlite``, ``postgresql``, ``mysql``,
   ``agentengine``) and every scheme a user registered in ``services.py`` or
   ``services.yaml`` work unchanged;
2. ``redis://`` and ``rediss://``, which ADK's registry does not know, go to
   ADK's own ``google.adk.integrations.redis.RedisSessionService`` (google-adk
   >= 2.9; on older versions the error names google-adk-community's service,
   which takes no URI and is wrapped by hand);
3. anything else is handed to ``DatabaseSessionService(db_url=...)``, as ADK
   does: that is how ``postgresql+asyncpg://`` and ``sqlite+aiosqlite://`` work,
   since the registry matches the whole scheme and knows only the bare
   dialect names.

Everything it says about a URI is masked first (`adk_pairing.masking`).
"""

from __future__ import annotations

from typing import Any

from google.adk.sessions.base_session_service import BaseSessionService

from ..adk import (
    ADK_VERSION,
    MIN_ADK_FOR_REDIS,
    REDIS_ALTERNATIVE,
    database_drops_subsecond_times,
    has_adk_redis_session_service,
)
from .masking import mask_secrets, mask_uri
from .uris import PAIRING_PREFIX, REDIS_SCHEMES, inner_uri, is_pairing_uri, uri_scheme

#: Redis connection settings that the URI supplies (ADK ignores these fields
#: whenever its config has a URI).
_REDIS_URI_FIELDS = frozenset({"uri", "host", "port", "password", "ssl", "db"})

#: Keyword ADK's CLI adds to every factory call; only some inner services use it.
AGENTS_DIR_KWARG = "agents_dir"


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
      ValueError: The URI has no scheme, wraps twice, or the inner factory
        rejects it. Messages show the URI with its password masked.
    """
    target = inner_uri(uri)
    if is_pairing_uri(target):
        raise ValueError(
            f"{mask_uri(uri)!r} wraps twice; use a single prefix: "
            f"{mask_uri(PAIRING_PREFIX + inner_uri(target))!r}."
        )
    scheme = uri_scheme(target) if "://" in target else ""
    if not scheme:
        raise ValueError(
            f"{mask_uri(uri)!r} is not a session service URI: expected "
            "<scheme>://..., e.g. 'postgresql+asyncpg://user@host:5432/db', "
            "'sqlite+aiosqlite:///sessions.db', 'redis://localhost:6379/0' or 'memory://'."
        )

    try:
        return _build_inner(target, scheme, kwargs)
    except ValueError as error:
        # Drivers and ADK quote the URI, or a piece of a misread password
        # (redis-py: "Port could not be cast to integer value as 'S3cret'");
        # ADK < 2.13 quotes it unredacted. The cause chain would print the
        # original text again, hence `from None`.
        masked = mask_secrets(str(error), uri)
        if masked == str(error):
            raise
        raise ValueError(masked) from None


def _build_inner(target: str, scheme: str, kwargs: dict[str, Any]) -> BaseSessionService:
    from google.adk.cli.service_registry import get_service_registry

    service = get_service_registry().create_session_service(target, **kwargs)
    if service is not None:
        return service
    if scheme.lower() in REDIS_SCHEMES:
        return _redis_session_service(target, kwargs)
    return _database_session_service(target, kwargs)


def _without_agents_dir(kwargs: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in kwargs.items() if key != AGENTS_DIR_KWARG}


def _redis_session_service(uri: str, kwargs: dict[str, Any]) -> BaseSessionService:
    """ADK's `RedisSessionService`, configured by `uri` plus config fields."""
    if not has_adk_redis_session_service():
        # google.adk.integrations.redis appeared in google-adk 2.9; before it
        # no ADK service can take this URI, whatever is installed.
        raise ValueError(
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
        raise ValueError(
            f"{mask_uri(uri)!r} needs the redis package: pip install 'adk-pairing[redis]' ({error})"
        ) from error
    options = _without_agents_dir(kwargs)
    # With a URI, ADK's service ignores host/port/password/ssl/db: the URI
    # carries them. The config model also ignores unknown fields, so a misspelt
    # or ineffective option would vanish silently; reject it instead.
    allowed = sorted(set(RedisSessionServiceConfig.model_fields) - _REDIS_URI_FIELDS)
    unknown = sorted(set(options) - set(allowed))
    if unknown:
        raise ValueError(
            f"Unknown option(s) {unknown} for the Redis session service at "
            f"{mask_uri(uri)!r}; allowed: {allowed} (host, port, password, database "
            "and TLS go in the URI: rediss://:password@host:6379/0)."
        )
    return RedisSessionService(config=RedisSessionServiceConfig(uri=uri, **options))


def _database_session_service(uri: str, kwargs: dict[str, Any]) -> BaseSessionService:
    """ADK's fallback for schemes its registry does not know: SQLAlchemy URLs."""
    from google.adk.sessions.database_session_service import DatabaseSessionService

    if database_drops_subsecond_times(uri):
        mysql_form = "mysql" + uri[len("mariadb") :] if uri.lower().startswith("mariadb") else uri
        raise ValueError(
            f"{mask_uri(uri)!r}: ADK's DatabaseSessionService keeps the times of "
            "SQLAlchemy's mariadb dialect to the second, so appends are refused as stale "
            "(or, on releases without that check, the events of one second reordered). "
            f"The mysql dialect serves MariaDB: use {mask_uri(mysql_form)!r}."
        )
    try:
        return DatabaseSessionService(db_url=uri, **_without_agents_dir(kwargs))
    except ValueError as error:
        # google-adk 1.20 puts the unredacted URL in these messages; 1.39 and
        # later redact it (docs/compatibility.md).
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
