"""The ledger's former front, kept importable: it lives in `adk_pairing.ledger`.

`build_ledger`, `analyze`, `PairingReport` and `held_open_call_ids` are in
`adk_pairing.ledger.history`; the rest are the ledger's own names.
"""

from __future__ import annotations

from .ledger import (
    BranchedCall,
    CallStatus,
    Observation,
    OpenCalls,
    PairingLedger,
    PairingReport,
    TrackedCall,
    analyze,
    build_ledger,
    held_open_call_ids,
    is_rewind,
    live_event_mask,
)
from .wire import branch_shows, held_by_child

__all__ = [
    "BranchedCall",
    "CallStatus",
    "Observation",
    "OpenCalls",
    "PairingLedger",
    "PairingReport",
    "TrackedCall",
    "analyze",
    "branch_shows",
    "build_ledger",
    "held_by_child",
    "held_open_call_ids",
    "is_rewind",
    "live_event_mask",
]
