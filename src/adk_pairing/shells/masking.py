"""Secrets in store URIs, and in the messages of libraries that quote them.

One rule, by structure: a URI's password is the text after the first ":" of
its user info, and its user info runs from ``scheme://`` to the *last* "@"
(RFC 3986 section 3.2.1, read the widest way any driver reads it; see
`_password_span`). Secret query values (``?password=``, ``sslpassword=``,
``token=`` ...) are masked the same way, by their place after ``key=``.
Everything adk-pairing prints about a URI goes through `mask_uri`, and every
text from another library through `mask_secrets`, which applies `mask_uri` to
each URI inside it. Nothing is replaced by what it looks like, so our own
words ("cannot resolve the host") are never touched, whatever letters the
password holds.

One case is not a URI: a driver that misreads a password holding an unescaped
``#``, ``?``, ``/``, ``@`` or space quotes a piece of it as something else
(redis-py: ``Port could not be cast to integer value as 'S3cret'``). For such
URIs only, and only in other libraries' text, the password is masked where it
stands whole, and its pieces where a driver quotes what it read, both as
whole words (see `_echo_patterns`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any
from urllib.parse import parse_qsl, quote, unquote, urlsplit

from .uris import PAIRING_PREFIX, inner_uri

_MASK = "***"

# Where a URI's password can sit, read the way the drivers read it:
# - SQLAlchemy (`sqlalchemy.engine.url._parse_url`): after ``scheme://``, a user
#   name ``[^:/]*``, then ``:password`` running to the *first* "@" after it;
#   what follows (even "x@db" or "#frag") becomes host, port or database.
# - redis-py (`redis.connection.parse_url`, i.e. `urllib.parse.urlparse`): the
#   netloc stops at the first "/", "?" or "#", so "redis://:S3cret#Pw@h" has
#   no "@" in its netloc, ":S3cret" becomes host and port.
# Both put the password right after the user name's ":". Its end is where they
# differ, so the mask runs to the *last* "@" of the URI: that covers both
# readings and what the user meant, at worst also hiding a query value that
# holds an "@" (SQLAlchemy itself reads such a value as part of the password).
_SCHEME_PREFIX = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_+.\-]*://")
_SECRET_WORDS = r"pass|pwd|secret|token|key|credential|auth"
# Query parameters whose value is a secret (password=, sslpassword=, token=,
# ...). Both drivers pass query values on (asyncpg's `connect(**url.query)`,
# redis-py's `parse_qs`), and their values run to the next "&": the fragment
# ("#...") belongs to it for SQLAlchemy, which does not split fragments off.
# An "&" not followed by another "key=" is taken as part of the value (a raw
# "&" in a password), since the drivers would show the rest as a bare key.
_SECRET_PARAM = re.compile(
    rf"(?P<key>[?&;](?:[^=&#\s]*(?:{_SECRET_WORDS})[^=&#\s]*)=)"
    r"(?P<value>(?:[^&]|&(?![^&=]*=))*)",
    re.IGNORECASE,
)
# A secret in libpq's ``key=value`` connection strings, in keyword-argument
# reprs (``password='...'``) and in dict reprs (``'password': '...'``), in
# text outside any URI. Narrower names than in queries: "auth" and "key" are
# ordinary words of error messages ("authentication failed").
_SECRET_SETTING = re.compile(
    r"(?:^|(?<=[\s(,{]))(?P<key>['\"]?[\w-]*(?:pass|pwd|secret|token|credential)[\w-]*"
    r"['\"]?\s*[=:]\s*)(?P<value>'[^']*'|\"[^\"]*\"|[^\s,;&)}'\"]+)",
    re.IGNORECASE,
)
# URI-looking substrings inside free text (error messages from other libraries).
# A URI in quotes ends at the same quote (drivers quote URLs they render, and
# a password may hold a space or the other quote); one not in quotes, at a space.
_URI_START = r"[A-Za-z0-9_][A-Za-z0-9_+.\-]*://"
_EMBEDDED_URI = re.compile(
    rf"(?<=')(?:{_URI_START}[^'\n<>]+)|(?<=\")(?:{_URI_START}[^\"\n<>]+)"
    rf"|{_URI_START}[^\s<>]+"
)
# A character that would carry a URI's last value on.
_URI_CONTINUES = re.compile(r"[A-Za-z0-9%_~+\-]")
# Where a driver quotes what it read out of a URI: a quoted value
# ('S3cret', "x") or a word holding URI punctuation (host:port, x@host).
# Plain words of a message ("Name or service not known") are neither.
_ECHO_SITE = re.compile(r"'[^'\n]*'|\"[^\"\n]*\"|[^\s'\"]*[:@/#?=%][^\s'\"]*")
# Characters at which a driver may cut a password in pieces and echo one piece:
# every delimiter and quote (a quote ends a URI in a message), the ones that
# end redis-py's netloc (whose port may then be "1:X"), and SQLAlchemy's "@".
_PIECE_CUTS = (
    re.compile(r"[#?/@:\s&;=%'\"]+"),
    re.compile(r"[#?/]+"),
    re.compile(r"@+"),
    re.compile(r"[#?/@]+"),
    re.compile(r"[#?/@\s]+"),
)
#: Pieces of a password shorter than this are not looked for outside URIs:
#: two letters say little, and they would be found in ordinary words.
MIN_SECRET_FRAGMENT = 3


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
    if uri.startswith("/", scheme.end()):
        return None  # an empty authority: what follows is a path
    colon = uri.find(":", scheme.end(), at)
    if colon < 0 or colon + 1 == at:
        return None
    return (colon + 1, at)


def _secret_spans(uri: str) -> list[tuple[int, int]]:
    """The password span and every secret query value of `uri`, merged."""
    spans = [span] if (span := _password_span(uri)) is not None else []
    spans += [m.span("value") for m in _SECRET_PARAM.finditer(uri) if m["value"]]
    merged: list[tuple[int, int]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def mask_uri(uri: str) -> str:
    """`uri` with its password and secret query values replaced by ``***``.

    The user name, host, port, path and the other query parameters stay, so
    the result still says which store is meant. Safe for any string: text
    that is not a URI and holds no "@" comes back unchanged.
    """
    for start, end in reversed(_secret_spans(uri)):
        uri = f"{uri[:start]}{_MASK}{uri[end:]}"
    return uri


def uri_password(uri: str) -> str | None:
    """The password as written in `uri` (the span `mask_uri` hides), if any."""
    target = inner_uri(uri)
    span = _password_span(target)
    return target[span[0] : span[1]] if span is not None else None


def mask_secrets(text: str, *uris: str | None, embedded: bool = True) -> str:
    """`text` with the URIs in it masked by `mask_uri`, and nothing else of ours.

    `uris` are the URIs the text may be about (the store the command was
    given): each is found whole, even where a space in its password would end
    a URI for the eye. With ``embedded=True`` (text from other libraries) every
    other URI in `text` is masked too, as are ``password=...`` settings
    outside URIs and the pieces of a password that a driver misread and echoed
    (`_echo_patterns`). ``embedded=False`` is for text of our own: only `uris`
    are masked, so our example URIs and our words stay as written.
    """
    known = [uri for uri in uris if uri]
    whole, echoes = _echo_patterns(known) if embedded else (None, None)
    parts: list[str] = []
    position = 0
    for start, end in _occurrences(text, known):
        parts.append(_mask_foreign(text[position:start], whole, echoes, embedded))
        parts.append(mask_uri(text[start:end]))
        position = end
    parts.append(_mask_foreign(text[position:], whole, echoes, embedded))
    return "".join(parts)


def _occurrences(text: str, uris: list[str]) -> list[tuple[int, int]]:
    """Spans of `text` that are one of `uris` (or its other form, with or without ``pairing+``)."""
    forms = {
        form for uri in uris for form in (uri, inner_uri(uri), PAIRING_PREFIX + inner_uri(uri))
    }
    found: list[tuple[int, int]] = []
    for form in sorted(forms, key=len, reverse=True):
        start = text.find(form)
        while start >= 0:
            end = start + len(form)
            # Followed by more of a URI ("1X%" of "...password=1X%25"), it is
            # the start of another URI: the embedded-URI rule masks that one.
            continued = end < len(text) and _URI_CONTINUES.match(text, end) is not None
            overlapping = any(start < b and a < end for a, b in found)
            if not continued and not overlapping:
                found.append((start, end))
            start = text.find(form, start + 1)
    return sorted(found)


def _mask_foreign(
    text: str, whole: re.Pattern[str] | None, echoes: re.Pattern[str] | None, embedded: bool
) -> str:
    """Other libraries' `text` (no known URI in it) with its URIs and secrets masked."""
    if not embedded or not text:
        return text
    if whole is not None:
        text = whole.sub(_MASK, text)
    parts: list[str] = []
    position = 0
    for match in _EMBEDDED_URI.finditer(text):
        parts.append(_mask_outside_uris(text[position : match.start()], echoes))
        masked = mask_uri(match.group(0))
        # A driver's rendering of a URI it misread (SQLAlchemy's repr shows
        # "user:***@ss#word@host") may hold a piece as its host or path.
        parts.append(echoes.sub(_MASK, masked) if echoes is not None else masked)
        position = match.end()
    parts.append(_mask_outside_uris(text[position:], echoes))
    return "".join(parts)


def _mask_outside_uris(text: str, echoes: re.Pattern[str] | None) -> str:
    text = _SECRET_SETTING.sub(lambda m: m["key"] + _MASK, text)
    if echoes is None:
        return text
    return _ECHO_SITE.sub(lambda site: echoes.sub(_MASK, site.group(0)), text)


def _echo_patterns(uris: list[str]) -> tuple[re.Pattern[str] | None, re.Pattern[str] | None]:
    """The secrets that a driver misreads in `uris`, whole and in pieces (whole words).

    A driver echoes only what it read as something other than a password (a
    host, a port, a database name), and it reads those only where an
    unescaped delimiter cut the password short. So these are looked for only
    for those URIs, only as whole words (a piece "word" never masks part of
    "password"), in any letter case (hosts come back lowercased), and from
    `MIN_SECRET_FRAGMENT` characters on. A whole secret holds the delimiter
    that made it misread, so it is looked for anywhere (a driver renders
    "user:***@00 00@/x" outside quotes); a piece only where a driver quotes
    what it read (`_ECHO_SITE`), since a piece may be an ordinary word.
    """
    whole: set[str] = set()
    pieces: set[str] = set()
    for uri in uris:
        for secret in _misread_secrets(inner_uri(uri)):
            for form in (secret, unquote(secret)):
                whole.add(form)
                for cut in _PIECE_CUTS:
                    pieces.update(cut.split(form))
    # SQLAlchemy renders a misread database name percent-encoded ("11%3AX").
    pieces |= {quote(piece, safe=safe) for piece in pieces for safe in ("", "/", " +")}
    # A piece holding a delimiter or a space ("11 X" of "1@11 X") is no
    # ordinary word either, and a driver renders it unquoted as a host.
    whole |= {piece for piece in pieces if _PIECE_CUTS[0].search(piece)}
    return _words(whole), _words(pieces | whole)


def _words(texts: set[str]) -> re.Pattern[str] | None:
    """A pattern finding any of `texts` long enough to look for, as whole words."""
    kept = sorted((t for t in texts if len(t) >= MIN_SECRET_FRAGMENT), key=len, reverse=True)
    if not kept:
        return None
    alternatives = "|".join(re.escape(text) for text in kept)
    # A word may also start right after a %XX escape ("%2311X": "#" then "11X").
    return re.compile(
        rf"(?:(?<=%[0-9A-Fa-f]{{2}})|(?<![^\W_]))(?:{alternatives})(?![^\W_])", re.IGNORECASE
    )


def _misread_secrets(uri: str) -> Iterator[str]:
    """The secrets of `uri` (as `mask_uri` finds them) that some driver reads otherwise."""
    sqlalchemy_url = _sqlalchemy_reading(uri)
    try:
        parts = urlsplit(uri)
        netloc_password = parts.password
        query = dict(parse_qsl(parts.query))
    except ValueError:  # e.g. an unbalanced "[": redis-py fails to read it too
        netloc_password, query = None, {}
    span = _password_span(uri)
    if span is not None:
        written = unquote(uri[span[0] : span[1]])
        readings = [unquote(netloc_password or "")]
        # A URI SQLAlchemy cannot parse is misread by it: its error may quote a piece.
        readings.append(str(sqlalchemy_url.password or "") if sqlalchemy_url else None)
        if any(reading != written for reading in readings):
            yield uri[span[0] : span[1]]
    for match in _SECRET_PARAM.finditer(uri):
        key = match["key"][1:-1]
        value = unquote(match["value"])
        readings = [query.get(key), sqlalchemy_url.query.get(key) if sqlalchemy_url else None]
        if any(reading != value for reading in readings):
            yield match["value"]


def _sqlalchemy_reading(uri: str) -> Any:
    """`uri` as SQLAlchemy's ``make_url`` reads it, or None if it cannot."""
    try:
        from sqlalchemy.engine import make_url

        return make_url(uri)
    except Exception:  # no SQLAlchemy, or a URI it cannot parse: no reading to compare
        return None
