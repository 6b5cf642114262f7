"""A ledger over a whole history, and its report: which calls are answered, pending or missing.

`build_ledger` runs a fresh `PairingLedger` over a history with its rewinds
applied, `analyze` reports every live call's status, and `held_open_call_ids`
answers the request pass. Pure, like the rest of the ledger.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ..adk.builder import NEWEST_BUILDER, BuilderTraits
from ..wire import IrregularShape
from .calls import CallStatus, TrackedCall
from .pairing import PairingLedger
from .reads import EventRead
from .rewinds import live_event_mask, live_runs

__all__ = ["PairingReport", "analyze", "build_ledger", "held_open_call_ids"]


def build_ledger(
    events: Sequence[EventRead],
    live: Sequence[bool] | None = None,
    *,
    traits: BuilderTraits | None = None,
) -> PairingLedger:
    """Runs a fresh ledger over `events`, skipping those annulled by rewinds.

    Without `live`, the common case (no rewind anywhere) costs one pass: the
    rewind check rides along, and only a history that has one is walked again
    with its mask. Every event is checked, content or not, exactly as
    `live_event_mask` and ADK's request builder honour a rewind on any event,
    so views built by different paths agree. `traits` default to the
    installed ADK's.
    """
    ledger = PairingLedger(traits)
    if live is None:
        if ledger.walk(events, 0, stop_at_rewind=True) is None:
            return ledger
        return build_ledger(events, live_event_mask(events), traits=traits)
    for start, stop in live_runs(live):
        ledger.walk(events[start:stop], start)
    return ledger


@dataclass(frozen=True)
class PairingReport:
    """The status of every live function call in a history."""

    calls: tuple[TrackedCall, ...]
    #: The history's irregular shapes (`PairingLedger.shapes`), empty when regular.
    shapes: frozenset[IrregularShape] = frozenset()

    def with_status(self, status: CallStatus) -> list[TrackedCall]:
        return [call for call in self.calls if call.status is status]

    @property
    def missing(self) -> list[TrackedCall]:
        return self.with_status(CallStatus.MISSING)

    @property
    def pending(self) -> list[TrackedCall]:
        return self.with_status(CallStatus.PENDING)

    @property
    def answered(self) -> list[TrackedCall]:
        return self.with_status(CallStatus.ANSWERED)

    @property
    def is_healthy(self) -> bool:
        """True when every call has an answer, so the view adds nothing."""
        return all(call.answered for call in self.calls)


def analyze(events: Iterable[EventRead], *, traits: BuilderTraits | None = None) -> PairingReport:
    """Classifies every live function call in `events`, as the installed ADK pairs them.

    Pass ``traits=NEWEST_BUILDER`` for what the store holds whatever the ADK
    release: each response answering the newest call before it with its id.
    """
    event_list = events if isinstance(events, Sequence) else list(events)
    ledger = build_ledger(event_list, traits=traits)
    return PairingReport(calls=tuple(ledger.calls), shapes=frozenset(ledger.shapes))


def held_open_call_ids(events: Iterable[EventRead]) -> set[str]:
    """The ids of the calls ADK holds open and nothing has answered yet, as the view decides.

    For the request pass, which sees contents without ``long_running_tool_ids``
    or branches: the ledger's own decision (`TrackedCall.held_open`, so a call
    waiting on its child run counts too), for the *newest* call with each id.
    Model ids such as ``call_1`` repeat across turns: an id once held open and
    later reused by an ordinary call that was lost is not held open. Read off
    the newest builder's open index (`PairingLedger.held_open_ids`).
    """
    event_list = events if isinstance(events, Sequence) else list(events)
    return build_ledger(event_list, traits=NEWEST_BUILDER).held_open_ids()
