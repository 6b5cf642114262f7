"""adk-pairing: session-layer repair of unanswered tool calls for Google's ADK.

`PairingSessionService` wraps any ADK session service. Sessions it returns are
*repaired views*: every function call that no later event answers is followed
by a synthetic result, so providers that enforce strict call/result pairing
accept the conversation. The stored history is never modified.

`PairingPlugin` is the request-time half: a final pass over every model
request that makes it satisfy every provider's pairing rules; `pair_request`
is the same pass as an agent's ``before_model_callback``.
"""

#: The package's one version: pyproject.toml reads it, ``adk-pairing --version`` prints it.
__version__ = "0.1.0"

from .core.placeholders import (
    DEFAULT_MISSING_TEXT,
    DEFAULT_PENDING_TEXT,
    METADATA_KEY,
    PlaceholderTexts,
    is_synthetic,
)
from .core.repair import repaired_events
from .ledger import CallStatus, PairingReport, TrackedCall, analyze
from .passes.view import PairedSession
from .shells.adk_services import register_pairing_schemes
from .shells.config import ConfigError, load_config, load_session_service
from .shells.errors import (
    ArgumentTypeError,
    ArgumentValueError,
    PairingError,
    StoreConnectionError,
    StoreDatabaseError,
    StoreHostError,
    StoreLayoutError,
    StoreLoginError,
    UnsupportedSchemeError,
    UriPasswordError,
)
from .shells.masking import mask_uri
from .shells.plugin import PairingPlugin, pair_request
from .shells.service import PairingSessionService, create_session_service

__all__ = [
    "DEFAULT_MISSING_TEXT",
    "DEFAULT_PENDING_TEXT",
    "METADATA_KEY",
    "ArgumentTypeError",
    "ArgumentValueError",
    "CallStatus",
    "ConfigError",
    "PairedSession",
    "PairingError",
    "PairingPlugin",
    "PairingReport",
    "PairingSessionService",
    "PlaceholderTexts",
    "StoreConnectionError",
    "StoreDatabaseError",
    "StoreHostError",
    "StoreLayoutError",
    "StoreLoginError",
    "TrackedCall",
    "UnsupportedSchemeError",
    "UriPasswordError",
    "analyze",
    "create_session_service",
    "is_synthetic",
    "load_config",
    "load_session_service",
    "mask_uri",
    "pair_request",
    "register_pairing_schemes",
    "repaired_events",
]
