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

URIs carry passwords, so everything this module prints goes through
`mask_uri` first. Masking follows the drivers' grammar, not a pattern of our
own: whatever SQLAlchemy's ``make_url`` or redis-py's ``parse_url`` would
send as a password is hidden, even when an unescaped ``#``, ``?``, ``/``,
``@`` or space makes one of them misread the URI (see `_password_span`). A
driver that misreads it echoes a piece of the password in its error
(redis-py: ``Port could not be cast to integer value as 'S3cret'``), so text
from other libraries goes through `mask_secrets` with the URI it is about,
which masks the pieces too.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

from google.adk.sessions.base_session_service import BaseSessionService

from .adk_compat import (
    ADK_VERSION,
    MIN_ADK_FOR_REDIS,
    REDIS_ALTERNATIVE,
    has_adk_redis_session_service,
)

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

# Where a URI's password can sit, read the way the drivers read it:
# - SQLAlchemy (`sqlalchemy.engine.url._parse_url`): after ``scheme://``, a user
#   name ``[^:/]*``, then ``:password`` running to the *first* "@" after it;
#   what follows (even "x@db" or "#frag") becomes host, port or database.
# - redis-py (`redis.connection.parse_url`, i.e. `urllib.parse.urlparse`): the
#   netloc stops at the first "/", "?" or "#", so "redis://:S3cret#Pw@h" has
#   no "@" in its netloc, ":S3cret" becomes host and port, and redis-py raises
#   "Port could not be cast to integer value as 'S3cret'", echoing the secret.
# Both put the password right after the user name's ":". Its end is where they
# differ, so the mask runs to the *last* "@" of the URI: that covers both
# readings and what the user meant, at worst also hiding a query value that
# holds an "@" (SQLAlchemy itself reads such a value as part of the password).
_SCHEME_PREFIX = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://")
_USER_NAME = re.compile(r"[^:/]*")  # SQLAlchemy's user-name class
# Query parameters whose value is a secret (password=, sslpassword=, token=,
# ...). Both drivers pass query values on (asyncpg's `connect(**url.query)`,
# redis-py's `parse_qs`), and their values run to the next "&": the fragment
# ("#...") belongs to it for SQLAlchemy, which does not split fragments off.
# An "&" not followed by another "key=" is taken as part of the value (a raw
# "&" in a password), since the drivers would show the rest as a bare key.
_SECRET_PARAM = re.compile(
    r"(?P<key>[?&;](?:[^=&#\s]*(?:pass|pwd|secret|token|key|credential|auth)[^=&#\s]*)=)"
    r"(?P<value>(?:[^&]|&(?![^&=]*=))*)",
    re.IGNORECASE,
)
_SECRET_NAME = re.compile(r"pass|pwd|secret|token|key|credential|auth", re.IGNORECASE)
# URI-looking substrings inside free text (error messages from other libraries).
_EMBEDDED_URI = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://[^\s'\"<>]+")
# Characters at which a driver may cut a password in pieces and echo one piece.
_URI_DELIMITERS = re.compile(r"[#?/@:\s&;=]+")
#: Pieces shorter than this are not searched for in free text: they would mask
#: unrelated letters of the message and reveal little on their own.
MIN_SECRET_FRAGMENT = 4


def _password_span(uri: str) -> tuple[int, int] | None:
    """Start and end of the password in `uri`, as wide as any driver reads it.

    None when there is no password: no user info ("sqlite:///a:b@c.db",
    "memory://"), or a user name alone ("postgresql://alice@db/x"). Text that
    is not a URI at all but holds an "@" is treated as ``credentials@host``
    and everything before the last "@" counts (masking conservatively).
    """
    at = uri.rfind("@")
    if at < 0:
        return None
    scheme = _SCHEME_PREFIX.match(uri)
    if scheme is None:
        return (0, at) if at > 0 else None
    user_end = _USER_NAME.match(uri, scheme.end()).end()
    if user_end >= at or uri[user_end] != ":":
        return None
    return (user_end + 1, at) if at > user_end + 1 else None


def _structural_mask(uri: str) -> str:
    """`uri` with the password span and every secret query value masked.

    Both are found in the original text and masked together, so that a query
    value the password span swallowed or touches is hidden whole.
    """
    spans = [span] if (span := _password_span(uri)) is not None else []
    spans += [m.span("value") for m in _SECRET_PARAM.finditer(uri) if m["value"]]
    merged: list[list[int]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    for start, end in reversed(merged):
        uri = f"{uri[:start]}{_MASK}{uri[end:]}"
    return uri


def uri_passwords(uri: str) -> list[str]:
    """The password as written in `uri` (the span `mask_uri` hides), if any."""
    target = inner_uri(uri)
    span = _password_span(target)
    return [target[span[0] : span[1]]] if span is not None else []


def uri_secrets(uri: str) -> list[str]:
    """Every string from `uri` that must never be printed, longest first.

    The password as each driver would read it (SQLAlchemy's `make_url`,
    redis-py's `urlparse`), raw and %-decoded; the widest span `mask_uri`
    hides; secret query values; and the pieces of those at URI delimiters,
    since a driver that misparses the URI echoes a piece (redis-py's port
    error). Pieces shorter than `MIN_SECRET_FRAGMENT` are left out.
    """
    target = inner_uri(uri)
    whole: set[str] = set(uri_passwords(uri))
    for match in _SECRET_PARAM.finditer(target):
        whole.add(match["value"])
    whole.update(_driver_passwords(target))
    found: set[str] = set()
    for secret in whole:
        for form in (secret, unquote(secret)):
            found.add(form)
            found.update(_URI_DELIMITERS.split(form))
    found = {item for item in found if len(item) >= MIN_SECRET_FRAGMENT or item in whole}
    found.discard("")
    return sorted(found, key=len, reverse=True)


def _driver_passwords(uri: str) -> set[str]:
    """The passwords SQLAlchemy and redis-py would take from `uri` (best effort)."""
    found: set[str] = set()
    try:
        from sqlalchemy.engine import make_url

        url = make_url(uri)
        if url.password:
            found.add(str(url.password))
        found.update(str(v) for k, v in url.query.items() if _SECRET_NAME.search(k))
    except Exception:  # no SQLAlchemy, or a URI it cannot parse: nothing to add
        pass
    try:
        parts = urlsplit(uri)
        if parts.password:
            found.add(parts.password)
        found.update(v for k, v in parse_qsl(parts.query) if _SECRET_NAME.search(k))
    except ValueError:
        pass
    return found


def mask_uri(uri: str) -> str:
    """`uri` with its password and secret query values replaced by ``***``.

    The user name, host, port, path and the other query parameters stay, so
    the result still says which store is meant. Safe for any string: text
    that is not a URI and holds no "@" comes back unchanged.
    """
    masked = _structural_mask(uri)
    # A net under the structural rule: should a driver read a password the
    # rule did not cover, it is masked wherever it shows. One the rule did
    # cover is not searched for: it may also be the user name, shown on purpose.
    covered = [
        value
        for match in _SECRET_PARAM.finditer(uri)
        for value in (match["value"], unquote(match["value"]))
    ]
    for password in uri_passwords(uri):
        covered += [password, unquote(password)]
    for secret in _driver_passwords(inner_uri(uri)):
        if any(secret in value for value in covered):
            continue
        if len(secret) >= MIN_SECRET_FRAGMENT and secret in masked:
            masked = masked.replace(secret, _MASK)
    return masked


def mask_secrets(text: str, *uris: str | None, embedded: bool = True) -> str:
    """`text` with every URI in it masked (for messages of other libraries).

    Pass the URIs the text may be about (the store the command was given):
    their passwords are then masked wherever they appear, whole or as the
    piece a driver echoed, even outside anything that looks like a URI.
    With ``embedded=False`` only those are masked, not other URIs in `text`
    (for text of our own, whose example URIs show where a password goes).
    """
    for uri in uris:
        if not uri:
            continue
        # The URI's own masked forms stay readable: a password that is also a
        # word of the URI ("postgres://postgres:postgres@...") would otherwise
        # mask the scheme and user name too. They are set aside meanwhile.
        forms = {uri, inner_uri(uri), PAIRING_PREFIX + inner_uri(uri)}
        kept = sorted({mask_uri(form) for form in forms}, key=len, reverse=True)
        for form in sorted(forms, key=len, reverse=True):
            text = text.replace(form, mask_uri(form))
        for index, masked in enumerate(kept):
            text = text.replace(masked, f"\x00{index}\x00")
        for secret in uri_secrets(uri):
            text = text.replace(secret, _MASK)
        for index, masked in enumerate(kept):
            text = text.replace(f"\x00{index}\x00", masked)
    if not embedded:
        return text
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

    try:
        return DatabaseSessionService(db_url=uri, **_without_agents_dir(kwargs))
    except ValueError as error:
        # google-adk 1.20 puts the unredacted URL in these messages
        # (database_session_service.py:451 in 1.20.0); 1.39 and later redact it.
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
