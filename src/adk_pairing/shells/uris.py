"""The grammar of the URIs adk-pairing accepts: ``pairing+<inner-uri>``.

A ``pairing+`` prefix asks for `PairingSessionService` around the service ADK
would build for the rest of the URI (`adk_pairing.shells.factory` builds it).
"""

from __future__ import annotations

from urllib.parse import quote, urlsplit

#: The scheme prefix that asks for a `PairingSessionService` around the rest.
PAIRING_PREFIX = "pairing+"

#: Schemes served by ADK's Redis session service (absent from ADK's registry).
REDIS_SCHEMES = ("redis", "rediss")


def is_pairing_uri(uri: str) -> bool:
    """Whether `uri` asks for the pairing decorator (``pairing+<inner-uri>``)."""
    return uri.lower().startswith(PAIRING_PREFIX)


def inner_uri(uri: str) -> str:
    """The inner service's URI: `uri` without its ``pairing+`` prefix, if any."""
    return uri[len(PAIRING_PREFIX) :] if is_pairing_uri(uri) else uri


def uri_scheme(uri: str) -> str:
    """The scheme as ADK's registry sees it (the whole part before ``://``)."""
    return urlsplit(uri).scheme


def with_password(uri: str, password: str) -> str:
    """`uri` with `password` percent-encoded into its user info (after the user name).

    Every character of `password` stands for itself: ``p@ss#word`` and
    ``100%25`` are sent as written, since ``@``, ``#``, ``%`` and the other
    delimiters are encoded first.

    Raises:
      ValueError: `uri` has no ``scheme://``, names no host (its authority is
        empty, as in ``sqlite:///file.db``), or holds a password already.
    """
    target = inner_uri(uri)
    prefix = uri[: len(uri) - len(target)]
    scheme, separator, rest = target.partition("://")
    if not separator:
        raise ValueError("the URI has no scheme://")
    ends = [index for index in (rest.find(char) for char in "/?#") if index >= 0]
    authority, tail = rest[: min(ends, default=len(rest))], rest[min(ends, default=len(rest)) :]
    user, at, host = authority.rpartition("@")
    if not at:
        user, host = "", authority
    if not authority:
        raise ValueError("the URI names no host, so a password has nowhere to go")
    if ":" in user:
        raise ValueError("the URI holds a password already; give it in one place only")
    return f"{prefix}{scheme}://{user}:{quote(password, safe='')}@{host}{tail}"
