"""Secrets in store URIs, and in the messages of libraries that quote them.

URIs carry passwords, so everything adk-pairing prints about a URI goes
through `mask_uri` first. Masking follows the drivers' grammar, not a pattern of our
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
from urllib.parse import parse_qsl, unquote, urlsplit

from .uris import PAIRING_PREFIX, inner_uri

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
