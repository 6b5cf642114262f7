"""Building session services from URIs, the way ADK itself does.

A ``pairing+<inner-uri>`` URI means "the service ADK would build for
``<inner-uri>``, wrapped in `PairingSessionService`". The inner service is
resolved exactly as ``adk web`` / ``adk api_server`` resolve
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

URIs carry passwords, so everything this module prints goes through
`mask_uri` first.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from google.adk.sessions.base_session_service import BaseSessionService

from .adk_compat import (
    ADK_VERSION,
    MIN_ADK_FOR_REDIS,
    REDIS_ALTERNATIVE,
    has_adk_redis_session_service,
)

if TYPE_CHECKING:
    from .service import PairingSessionService

#: The scheme prefix that asks for a `PairingSessionService` around the rest.
PAIRING_PREFIX = "pairing+"

#: Schemes served by ADK's Redis session service (absent from ADK's registry).
REDIS_SCHEMES = ("redis", "rediss")

#: Redis connection settings that the URI supplies (ADK ignores these fields
#: whenever its config has a URI).
_REDIS_URI_FIELDS = frozenset({"uri", "host", "port", "password", "ssl", "db"})

#: Keyword ADK's CLI adds to every factory call; only some inner services use it.
AGENTS_DIR_KWARG = "agents_dir"

_MASK = "***"

# scheme://user:password@ -- the password runs to the last "@" before any
# query or fragment, so an unescaped "@" inside it is masked too (SQLAlchemy's
# own URL grammar stops at the first "@" and would leave the tail visible).
_USERINFO = re.compile(
    r"(?P<head>[A-Za-z][A-Za-z0-9+.\-]*://[^:/@?#\s]*:)(?P<password>[^?#\s]*)(?P<at>@)"
)
# Query parameters whose value is a secret (password=, sslpassword=, token=, ...).
_SECRET_PARAM = re.compile(
    r"(?P<key>[?&;](?:[^=&#\s]*(?:pass|pwd|secret|token|key|credential|auth)[^=&#\s]*)=)"
    r"(?P<value>[^&#\s]*)",
    re.IGNORECASE,
)
# URI-looking substrings inside free text (error messages from other libraries).
_EMBEDDED_URI = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://[^\s'\"<>]+")


def mask_uri(uri: str) -> str:
    """`uri` with its password and secret query values replaced by ``***``.

    The user name, host, port, path and the other query parameters stay, so
    the result still says which store is meant. Safe for any string: text
    that is not a URI comes back unchanged.
    """
    masked = _USERINFO.sub(lambda m: f"{m['head']}{_MASK}{m['at']}", uri, count=1)
    return _SECRET_PARAM.sub(lambda m: f"{m['key']}{_MASK}", masked)


def mask_secrets(text: str) -> str:
    """`text` with every URI in it masked (for messages of other libraries)."""
    return _EMBEDDED_URI.sub(lambda m: mask_uri(m.group(0)), text)


def is_pairing_uri(uri: str) -> bool:
    """Whether `uri` asks for the pairing decorator (``pairing+<inner-uri>``)."""
    return uri.lower().startswith(PAIRING_PREFIX)


def inner_uri(uri: str) -> str:
    """The inner service's URI: `uri` without its ``pairing+`` prefix, if any."""
    return uri[len(PAIRING_PREFIX) :] if is_pairing_uri(uri) else uri


def uri_scheme(uri: str) -> str:
    """The scheme as ADK's registry sees it (the whole part before ``://``)."""
    return urlsplit(uri).scheme


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

    from google.adk.cli.service_registry import get_service_registry

    service = get_service_registry().create_session_service(target, **kwargs)
    if service is not None:
        return service
    if scheme.lower() in REDIS_SCHEMES:
        return _redis_session_service(target, kwargs)
    return _database_session_service(target, kwargs)


def create_session_service(
    uri: str,
    *,
    missing_text: str | None = None,
    pending_text: str | None = None,
    analysis_cache_size: int | None = None,
    **inner_kwargs: Any,
) -> PairingSessionService:
    """A `PairingSessionService` around the service ADK builds for ``pairing+<inner-uri>``.

    The keyword names are those of `PairingSessionService` and of the
    ``pairing:`` block of a config file, so one vocabulary serves all three.

    Args:
      uri: ``pairing+`` followed by any URI ADK accepts, e.g.
        ``pairing+postgresql+asyncpg://user:pw@db:5432/agents``.
      missing_text: What the model reads for a call with no recorded result.
      pending_text: What the model reads for a call ADK still holds open.
      analysis_cache_size: How many sessions' analysis the decorator remembers
        between reads; 0 turns that off. `PairingSessionService`'s default
        when omitted.
      **inner_kwargs: Passed to the inner service's factory
        (see `create_inner_session_service`), e.g. ``pool_size=10``.

    Raises:
      ValueError: `uri` lacks the ``pairing+`` prefix (the message shows the
        corrected URI, password masked), `analysis_cache_size` is not a whole
        number >= 0, or the inner service cannot be built.
    """
    if not is_pairing_uri(uri):
        raise ValueError(
            f"create_session_service expects a {PAIRING_PREFIX}<uri> URI, got "
            f"{mask_uri(uri)!r}. Did you mean {mask_uri(PAIRING_PREFIX + uri)!r}? "
            "(For the unwrapped service, call "
            "adk_pairing.factory.create_inner_session_service.)"
        )
    from .service import PairingSessionService

    return PairingSessionService(
        create_inner_session_service(uri, **inner_kwargs),
        missing_text=missing_text,
        pending_text=pending_text,
        analysis_cache_size=analysis_cache_size,
    )


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

    try:
        return DatabaseSessionService(db_url=uri, **_without_agents_dir(kwargs))
    except ValueError as error:
        # google-adk 1.20 puts the unredacted URL in these messages
        # (database_session_service.py:451 in 1.20.0); 1.39 and later redact it.
        # The original error is not chained: its message holds the password.
        message = mask_secrets(str(error))
        if message == str(error):
            raise
        raise ValueError(message) from error.__cause__
