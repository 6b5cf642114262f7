"""The ledger: who answers whom in an event history, as the installed ADK's builder pairs them.

Pure: it reads events (`adk_pairing.ledger.reads`) and never awaits, logs or
touches a store. Its parts:

* `pairing`: `PairingLedger`, the newest builder's rules, walking responses;
* `open_calls`: which calls an event opens, and where a response finds them;
* `placement`: where placeholders go when later events answered some calls;
* `child_runs`: calls kept pending while the child run they started waits;
* `rewinds`: which events survive rewinds;
* `older_builders`: what older request builders do differently, as hooks;
* `calls`: the records of calls and what observing an event reports;
* `history`: a ledger run over a whole history (`build_ledger`), and its
  report (`analyze`, `held_open_call_ids`).
"""

from __future__ import annotations

from .calls import BranchedCall, CallStatus, Observation, OpenCalls, TrackedCall
from .history import PairingReport, analyze, build_ledger, held_open_call_ids
from .open_calls import READS_BUILT_REQUEST, READS_STORED_EVENTS, ReadPolicy
from .pairing import PairingLedger, answers_nothing_open
from .rewinds import is_rewind, live_event_mask

__all__ = [
    "READS_BUILT_REQUEST",
    "READS_STORED_EVENTS",
    "BranchedCall",
    "CallStatus",
    "Observation",
    "OpenCalls",
    "PairingLedger",
    "PairingReport",
    "ReadPolicy",
    "TrackedCall",
    "analyze",
    "answers_nothing_open",
    "build_ledger",
    "held_open_call_ids",
    "is_rewind",
    "live_event_mask",
]
