"""Building the repaired event list: stored events plus synthetic results.

Pure functions over events. Each call event with unanswered calls is replaced
by an annotated copy, and one synthetic event (`adk_pairing.core.placeholders`)
answers its open calls, placed where ADK's request builder pairs it with them
(`PairingLedger.placement`).

A regular history's call event whose answers no placement keeps in call
order goes as stored where the ledger says the builder keeps the stored
request in order (`PairingLedger.serves_as_stored`), decided from the
builder's traits and proven against each release's builder
(tests/unit/test_answers_out_of_order.py and the fuzzers), not by running it
here; only where the ledger cannot tell is the view checked as below.

An irregular history (`PairingLedger.irregular`) is repaired only where
`adk_pairing.rules.builder_check` shows that ADK's own request builder, run on the repaired
list, keeps every request valid that it keeps valid on the stored one. Where
the whole repair is not proven, the smallest part the check cannot prove is
served as stored: the call events whose placeholders it rejects, found by
halving the set of call events (`_provable_slots`), each call event with its
placeholders kept or left out as one; every other call event keeps its
placeholders, and the list served is itself proven (`RepairedHistory.serves_some_as_stored`).
"""

from __future__ import annotations

import enum
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

from google.adk.events.event import Event

from ..ledger import PairingLedger, build_ledger
from ..rules.builder_check import StoredVerdicts, view_never_worse
from .placeholders import PlaceholderTexts, RepairedSlot

_DEFAULT_TEXTS = PlaceholderTexts()

#: How many views `repair_history` checks at most beyond the whole one while
#: it looks for the call events it can repair: each check is one run of ADK's
#: builder per agent, O(history). With k call events the check rejects among
#: n, halving finds them in about 2k·log2(n) checks; past the budget, the call
#: events not yet proven are served as stored.
MOST_PARTIAL_CHECKS = 24


class Fallback(enum.StrEnum):
    """Why a view serves some call events as stored, their calls unanswered."""

    #: An irregular history whose placeholders ADK's builder would misplace
    #: (`adk_pairing.rules.builder_check`).
    UNPROVEN = "unproven"
    #: A call event whose open calls sit between calls later events answered:
    #: no placement of its placeholders gives the answers in call order
    #: (`PairingLedger.placement`), and ADK's builder keeps the stored
    #: request in order (`PairingLedger.serves_as_stored`; in an irregular
    #: history, `adk_pairing.rules.builder_check`).
    ANSWERS_OUT_OF_ORDER = "answers_out_of_order"


@dataclass(slots=True)
class RepairedHistory:
    """A repaired event list and the repair of each call event in it."""

    events: list[Event]
    #: Stored-event index -> the repair of the call event there, in index order.
    slots: dict[int, RepairedSlot]
    #: Why some call events with unanswered calls are served as stored (their
    #: placeholders could make ADK's request worse); None when every one is
    #: repaired.
    fallback: Fallback | None = None
    #: The stored indices of those call events, in order; the rest of the
    #: history keeps its placeholders (`slots`).
    served_as_stored: tuple[int, ...] = ()
    #: ADK's builder checked this view whole (`adk_pairing.rules.builder_check`):
    #: which call events it serves as stored depends on the whole history.
    checked: bool = False

    @property
    def serves_some_as_stored(self) -> bool:
        """True when the view serves some call events as stored, for either `Fallback`."""
        return self.fallback is not None


def repair_history(
    events: Sequence[Event], ledger: PairingLedger, texts: PlaceholderTexts
) -> RepairedHistory:
    """The stored events with a synthetic result after every unanswered call it may answer.

    Healthy events are the very objects passed in; only events with unanswered
    calls are replaced, by annotated copies. `ledger` must have been built
    over exactly `events`. In a regular history the ledger says which call
    events go as stored (`PairingLedger.serves_as_stored`). `view_never_worse`
    checks the view of an irregular history (but for the call events the
    ledger knows about: `PairingLedger.collapses_idless_answers` go as
    stored, `PairingLedger.placeable_apart` keep their placeholders), and of
    a regular one where the ledger cannot tell; when it rejects the whole
    view, the call events whose placeholders it cannot prove are served as
    stored.
    Either way the reason is given (`RepairedHistory.fallback`,
    `RepairedHistory.served_as_stored`), and every other call event keeps its
    placeholders.
    """
    slots = _slots(events, ledger, texts)
    if not slots:
        return RepairedHistory(list(events), {})
    if ledger.irregular:
        collapsed = tuple(sorted(ledger.collapses_idless_answers(events)))
        apart = ledger.placeable_apart(events)
        unchecked = {index: slots.pop(index) for index in sorted(apart) if index in slots}
        for index in collapsed:
            slots.pop(index, None)
        return _checked_repair(events, slots, Fallback.UNPROVEN, collapsed, unchecked)
    # A list, not a generator: the ledger would call back up into this layer.
    as_stored = ledger.serves_as_stored(
        [index for index, slot in slots.items() if slot.anchor is None], events
    )
    if None in as_stored.values():
        return _checked_repair(events, slots, Fallback.ANSWERS_OUT_OF_ORDER)
    served_as_stored = tuple(index for index, stored in as_stored.items() if stored)
    for index in served_as_stored:
        del slots[index]
    fallback = Fallback.ANSWERS_OUT_OF_ORDER if served_as_stored else None
    return RepairedHistory(_render(events, slots), slots, fallback, served_as_stored)


def _checked_repair(
    events: Sequence[Event],
    slots: dict[int, RepairedSlot],
    fallback: Fallback,
    already_as_stored: tuple[int, ...] = (),
    unchecked: Mapping[int, RepairedSlot] | None = None,
) -> RepairedHistory:
    """The repair `view_never_worse` accepts: every slot, else those `_provable_slots` finds.

    The call events `already_as_stored` go as stored, and the `unchecked`
    repairs are kept, whatever the check says.
    """
    unchecked = unchecked or {}
    reason = fallback if already_as_stored else None
    if not slots:  # nothing left to prove
        return RepairedHistory(
            _render(events, unchecked), dict(unchecked), reason, already_as_stored
        )
    everything = dict(sorted({**unchecked, **slots}.items()))
    view = _render(events, everything)
    stored_verdicts: StoredVerdicts = {}
    if view_never_worse(events, view, stored_verdicts=stored_verdicts):
        return RepairedHistory(view, everything, reason, already_as_stored, checked=True)
    kept = _provable_slots(events, slots, stored_verdicts, unchecked)
    served_as_stored = tuple(
        sorted((*already_as_stored, *(index for index in slots if index not in kept)))
    )
    # Rendered last, so each kept slot holds the synthetic event served.
    return RepairedHistory(_render(events, kept), kept, fallback, served_as_stored, checked=True)


def _provable_slots(
    events: Sequence[Event],
    slots: Mapping[int, RepairedSlot],
    stored_verdicts: StoredVerdicts,
    kept_anyway: Mapping[int, RepairedSlot],
) -> dict[int, RepairedSlot]:
    """Call events' repairs, found by halving, that `view_never_worse` accepts together.

    Called once the view with every repair was rejected. Each half of the
    rejected call events is tried on top of the repairs accepted so far, and
    halved again when rejected, down to single call events; so every set
    kept was accepted as a whole, and the order of the history decides
    between two repairs that only fail together (the earlier one is kept).
    At most `MOST_PARTIAL_CHECKS` views are checked. The repairs
    `kept_anyway` are in every view checked, and in the result.
    """
    kept: dict[int, RepairedSlot] = dict(kept_anyway)
    budget = MOST_PARTIAL_CHECKS

    def halve(rejected: list[int]) -> None:
        nonlocal kept, budget
        if len(rejected) == 1:
            return  # a single call event the check rejects: served as stored
        half = len(rejected) // 2
        for part in (rejected[:half], rejected[half:]):
            if budget == 0:
                return
            budget -= 1
            trial = {**kept, **{index: slots[index] for index in part}}
            if view_never_worse(events, _render(events, trial), stored_verdicts=stored_verdicts):
                kept = trial
            else:
                halve(part)

    halve(list(slots))  # the whole set, already rejected
    return dict(sorted(kept.items()))


def place_repairs(
    events: Sequence[Event],
    ledger: PairingLedger,
    texts: PlaceholderTexts,
    *,
    idless_left_open: Collection[int] = (),
) -> RepairedHistory:
    """`repair_history` without the check: a synthetic result for every unanswered call.

    Each call event's synthetic event goes right after it, or after the
    later event `PairingLedger.placement` names. Where no placement gives
    call order, it goes right after the call event (its slot's `anchor` is
    None), and `repair_history` decides whether it stays (`PairingLedger.serves_as_stored`).
    The call events `idless_left_open` keep their id-less calls unanswered.
    """
    slots = _slots(events, ledger, texts)
    for index in idless_left_open:
        slot = slots.get(index)
        if slot is None:
            continue
        with_ids = [call for call in ledger.open_calls[index] if call.call_id]
        if with_ids:
            slots[index] = RepairedSlot(events[index], with_ids, texts, slot.anchor)
        else:
            del slots[index]
    return RepairedHistory(_render(events, slots) if slots else list(events), slots)


def _slots(
    events: Sequence[Event], ledger: PairingLedger, texts: PlaceholderTexts
) -> dict[int, RepairedSlot]:
    """The repair of each call event with open calls, in index order, at its `placement`."""
    open_calls = ledger.open_calls
    return {
        index: RepairedSlot(events[index], open_calls[index], texts, ledger.placement(index))
        for index in sorted(open_calls)
    }


def _render(events: Sequence[Event], slots: Mapping[int, RepairedSlot]) -> list[Event]:
    """`events` with each slot's call event annotated and its synthetic event placed."""
    after: dict[int, list[RepairedSlot]] = {}
    for index in sorted(slots):
        slot = slots[index]
        anchor = slot.anchor
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
    return result


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
