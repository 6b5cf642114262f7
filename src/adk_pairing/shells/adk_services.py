"""Registering ``pairing+…`` schemes with ADK's CLI service registry.

``adk web`` and ``adk api_server`` look ``--session_service_uri`` up in ADK's
service registry by its *whole* scheme (``urlparse(uri).scheme``, see
``google/adk/cli/service_registry.py``, ``ServiceRegistry.create_session_service``):
``pairing+postgresql+asyncpg`` is one scheme, and there is no prefix matching.
An unknown scheme silently falls through to ``DatabaseSessionService``, which
then fails on the ``pairing+`` dialect name. So every ``pairing+<scheme>`` that
should work has to be registered by name; `register_pairing_schemes` does that
for every scheme ADK knows, the common SQLAlchemy async drivers and Redis.

Call it from ``services.py`` in the agents directory ADK is started with::

    from adk_pairing import register_pairing_schemes

    register_pairing_schemes()
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from google.adk.sessions.base_session_service import BaseSessionService

from .errors import ArgumentTypeError, require_pairing_options, require_type
from .factory import (
    SQLALCHEMY_ASYNC_SCHEMES,
    create_inner_session_service,
    registry_session_schemes,
)
from .uris import PAIRING_PREFIX, REDIS_SCHEMES


def register_pairing_schemes(
    *,
    missing_text: str | None = None,
    pending_text: str | None = None,
    analysis_cache_size: int | None = None,
    extra_schemes: Iterable[str] = (),
    inner_kwargs: Mapping[str, Any] | None = None,
    registry: Any = None,
) -> list[str]:
    """Registers ``pairing+<scheme>`` session schemes with ADK's service registry.

    Covers every session scheme the registry holds when called (ADK's built-ins
    plus any registered earlier, e.g. by ``services.yaml``, which ADK loads
    before ``services.py``), the async SQLAlchemy drivers ADK reaches through
    its ``DatabaseSessionService`` fallback, ``redis``/``rediss``, and
    `extra_schemes`. Each factory builds the inner service exactly as
    `adk_pairing.create_session_service` does, with `inner_kwargs` plus the
    keywords ADK passes (``agents_dir``, and ``session_db_kwargs`` when the app
    is built with ``get_fast_api_app(session_db_kwargs=...)``).

    Args:
      missing_text: Placeholder text for calls with no recorded result.
      pending_text: Placeholder text for calls ADK still holds open.
      analysis_cache_size: How many sessions' analysis each service remembers
        between reads; 0 turns that off. `PairingSessionService`'s default
        when omitted.
      extra_schemes: More inner schemes to wrap, e.g. a scheme you register
        after this call or another SQLAlchemy dialect+driver.
      inner_kwargs: Keyword arguments for the inner service, e.g.
        ``{"pool_size": 10}``; ADK's CLI has no flag for them. Keywords ADK
        passes itself take precedence.
      registry: The registry to fill; ADK's singleton when omitted.

    Returns:
      The registered ``pairing+…`` schemes, sorted.

    Raises:
      ArgumentTypeError: An argument of the wrong type (a `TypeError`), e.g.
        a single string as `extra_schemes`.
    """
    require_pairing_options(missing_text, pending_text, analysis_cache_size)
    if isinstance(extra_schemes, str | bytes) or not isinstance(extra_schemes, Iterable):
        raise ArgumentTypeError(
            f"extra_schemes must be a list of scheme names such as ['mysql+asyncmy'], "
            f"got {type(extra_schemes).__name__}."
        )
    extra_schemes = list(extra_schemes)
    for scheme in extra_schemes:
        require_type("each of extra_schemes", scheme, str, "a scheme name", optional=False)
    require_type(
        "inner_kwargs",
        inner_kwargs,
        Mapping,
        "a mapping of keyword arguments or None",
        optional=True,
    )
    if registry is None:
        from google.adk.cli.service_registry import get_service_registry

        registry = get_service_registry()

    inner_schemes = {
        scheme.lower()
        for scheme in (
            *registry_session_schemes(registry),
            *SQLALCHEMY_ASYNC_SCHEMES,
            *REDIS_SCHEMES,
            *extra_schemes,
        )
        if scheme and not scheme.lower().startswith(PAIRING_PREFIX)
    }

    defaults = dict(inner_kwargs or {})

    def pairing_factory(uri: str, **kwargs: Any) -> BaseSessionService:
        from .service import PairingSessionService

        return PairingSessionService(
            create_inner_session_service(uri, **{**defaults, **kwargs}),
            missing_text=missing_text,
            pending_text=pending_text,
            analysis_cache_size=analysis_cache_size,
        )

    registered = sorted(PAIRING_PREFIX + scheme for scheme in inner_schemes)
    for scheme in registered:
        registry.register_session_service(scheme, pairing_factory)
    return registered
