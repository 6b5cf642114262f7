"""Building the repaired event list: stored events plus synthetic results.

Pure functions over events. Each call event with unanswered calls is replaced
by an annotated copy, and one synthetic event (`adk_pairing.placeholders`)
answers its open calls, placed where ADK's request builder pairs it with them
(`PairingLedger.placement`).

An irregular history (`PairingLedger.irregular`) is repaired only when
`adk_pairing.builder_check` shows that ADK's own request builder, run on the repaired
list, keeps every request valid that it keeps valid on the stored one;
otherwise the stored events are returned as they are (`RepairedHistory.unproven`).
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass

from google.adk.events.event import Event

from .analysis import PairingLedger, build_ledger
from .builder_check import view_never_worse
from .placeholders import PlaceholderTexts, RepairedSlot

_DEFAULT_TEXTS = PlaceholderTexts()


class Fallback(enum.StrEnum):
    """Why a view serves the stored events as they are."""

    #: An irregular history whose placeholders ADK's builder would misplace
    #: (`adk_pairing.builder_check`).
    UNPROVEN = "unproven"
    #: A call event whose open calls sit between calls later events answered:
    #: no placement of its placeholders gives the answers in call order
    #: (`PairingLedger.placement`), and ADK's builder keeps the stored
    #: request in order (`adk_pairing.builder_check`).
    ANSWERS_OUT_OF_ORDER = "answers_out_of_order"


@dataclass(slots=True)
class RepairedHistory:
    """A repaired event list and the repair of each call event in it."""

    events: list[Event]
    #: Stored-event index -> the repair of the call event there, in index order.
    slots: dict[int, RepairedSlot]
    #: Why `events` are the stored ones although some calls are unanswered
    #: (the repair could make ADK's request worse); None when repaired.
    fallback: Fallback | None = None

    @property
    def unproven(self) -> bool:
        """True when the view serves the stored events (see `fallback`)."""
        return self.fallback is not None


def repair_history(
    events: Sequence[Event], ledger: PairingLedger, texts: PlaceholderTexts
) -> RepairedHistory:
    """The stored events with a synthetic result after every unanswered call.

    Healthy events are the very objects passed in; only events with unanswered
    calls are replaced, by annotated copies. `ledger` must have been built
    over exactly `events`. A view `view_never_worse` rejects comes back as
    stored, with the reason (`RepairedHistory.fallback`): it checks an
    irregular history, and one with a call event whose placeholders no
    placement puts in call order (`PairingLedger.placement`).
    """
    repaired = place_repairs(events, ledger, texts)
    if not repaired.slots:
        return repaired
    out_of_order = any(slot.anchor is None for slot in repaired.slots.values())
    if (ledger.irregular or out_of_order) and not view_never_worse(events, repaired.events):
        fallback = Fallback.UNPROVEN if ledger.irregular else Fallback.ANSWERS_OUT_OF_ORDER
        return RepairedHistory(list(events), {}, fallback)
    return repaired


def place_repairs(
    events: Sequence[Event], ledger: PairingLedger, texts: PlaceholderTexts
) -> RepairedHistory:
    """`repair_history` without the check: a synthetic result for every unanswered call.

    Each call event's synthetic event goes right after it, or after the
    later event `PairingLedger.placement` names. Where no placement gives
    call order, it goes right after the call event (its slot's `anchor` is
    None), and `repair_history` checks the view.
    """
    open_calls = ledger.open_calls
    if not open_calls:
        return RepairedHistory(list(events), {})
    slots: dict[int, RepairedSlot] = {}
    after: dict[int, list[RepairedSlot]] = {}
    for index in sorted(open_calls):
        anchor = ledger.placement(index)
        slot = slots[index] = RepairedSlot(events[index], open_calls[index], texts, anchor)
        after.setdefault(index if anchor is None else anchor, []).append(slot)
    result: list[Event] = []
    start = 0
    # Copy the runs of healthy events between repaired ones as slices, not
    # with a Python loop over every event (benchmarks/RESULTS.md).
    for index in sorted(slots.keys() | after.keys()):
        result.extend(events[start:index])
        slot = slots.get(index)
        result.append(events[index] if slot is None else slot.annotated_call_event())
        for placed in after.get(index, ()):
            placed.synthetic = placed.synthetic_event()
            result.append(placed.synthetic)
        start = index + 1
    result.extend(events[start:])
    return RepairedHistory(result, slots)


def repaired_events(
    events: Sequence[Event],
    texts: PlaceholderTexts = _DEFAULT_TEXTS,
    *,
    ledger: PairingLedger | None = None,
) -> list[Event]:
    """The stored events with a synthetic result after every unanswered call.

    Pass `ledger` when it was already built over `events` to avoid a second pass.
    """
    if ledger is None:
        ledger = build_ledger(events)
    return repair_history(events, ledger, texts).events
