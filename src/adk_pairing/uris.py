"""The grammar of the URIs adk-pairing accepts: ``pairing+<inner-uri>``.

A ``pairing+`` prefix asks for `PairingSessionService` around the service ADK
would build for the rest of the URI (`adk_pairing.factory` builds it).
"""

from __future__ import annotations

from urllib.parse import urlsplit

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
