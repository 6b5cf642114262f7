"""Remembering how far each session's history was analysed, between reads.

ADK's stores only ever append to a session's history. So when a session is
read again, the history is the one analysed last time plus new events, and
only those need walking: the decorator's cost per read stops growing with the
history. This module holds that memory. Like every layer below the shells, it
never awaits and never touches a store; the decorator asks it for a ledger on
every full read.
"""

from __future__ import annotations

from dataclasses import dataclass

from google.adk.events.event import Event

from ..ledger import PairingLedger, build_ledger
from .lru import Lru

#: Sessions whose analysis `PairingSessionService` remembers by default.
DEFAULT_ANALYSIS_CACHE_SIZE = 4096

#: (app name, user id, session id).
SessionKey = tuple[str, str, str]


@dataclass(frozen=True, slots=True)
class _Analysed:
    """How far a session's history was analysed, to resume from on its next read.

    A later full read that still has the same first event, the same event at
    the old end and the same call events where the open calls were is the old
    history plus new events: only those need walking.
    """

    event_count: int
    first_event_id: str
    last_event_id: str
    open_event_ids: tuple[tuple[int, str], ...]
    #: Never mutated: every read continues from a `carry_forward` copy.
    ledger: PairingLedger

    @classmethod
    def of(cls, events: list[Event], ledger: PairingLedger) -> _Analysed | None:
        if not events or not events[0].id or not events[-1].id:
            return None
        return cls(
            len(events),
            events[0].id,
            events[-1].id,
            tuple((index, events[index].id) for index in ledger.open_calls),
            ledger.carry_forward(),
        )

    def resume(self, events: list[Event]) -> PairingLedger | None:
        """A ledger over `events`, or None when they are not this history grown."""
        count = self.event_count
        if (
            len(events) < count
            or events[0].id != self.first_event_id
            or events[count - 1].id != self.last_event_id
            or any(events[index].id != event_id for index, event_id in self.open_event_ids)
        ):
            return None
        ledger = self.ledger.carry_forward()
        if ledger.walk(events[count:], count, stop_at_rewind=True) is not None:
            return None  # a rewind can annul events already walked
        return ledger


class AnalysisCache:
    """The analysis of the `size` most recently read sessions (LRU).

    An entry holds a few ids and copies of the session's open calls: about a
    kilobyte for a healthy session. Size 0 remembers nothing.
    """

    def __init__(self, size: int) -> None:
        self.size = size
        self._entries: Lru[SessionKey, _Analysed] = Lru(size)

    def __len__(self) -> int:
        return len(self._entries)

    def ledger_for(self, key: SessionKey, events: list[Event]) -> PairingLedger:
        """The ledger of `events`, the whole history of session `key`, walking only what is new.

        Its `PairingLedger.calls` hold every call wherever the history is
        irregular (`PairingLedger.holds_every_call`).
        """
        if self.size == 0:
            return build_ledger(events)
        analysed = self._entries.get(key)
        resumed = analysed.resume(events) if analysed is not None else None
        if resumed is not None and resumed.irregular and not resumed.holds_every_call:
            # Turned irregular since: its restore reads every call, which the
            # carried ledger no longer holds. Walked whole once; carried whole on.
            resumed = None
        ledger = resumed if resumed is not None else build_ledger(events)
        if resumed is None or analysed.event_count != len(events):
            analysed = _Analysed.of(events, ledger)
        if analysed is None:
            self._entries.discard(key)
            return ledger
        self._entries.put(key, analysed)
        return ledger

    def forget(self, key: SessionKey) -> None:
        """Drops what is remembered of session `key` (created, deleted, unreadable)."""
        self._entries.discard(key)
