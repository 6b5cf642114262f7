"""Where the placeholders of a call event go when later events answered some of its calls.

ADK's builder merges every response event of one call event into one, in
history order (``merge_function_response_events``, the same merge in every
supported release): the first event's results, then each later event's new
ones. The placeholders of one call event are one event, in call order. When
later events answered some of its calls, that merge gives the answers in call
order only if the open calls all come before the answered ones (the
placeholders go right after the call event, as usual) or all after them. They
go after the events that answered those only when those events are the run of
events right after the call event and each holds results for this call event
alone (ADK's own shapes: an ordinary call's result before a long-running
call's, and parallel calls answered one event each as they finish): the merge
then ends with the placeholders, and what came before them is the stored
request's merge unchanged. Past any other event ADK's rearrangers would
attribute or cut differently (a result goes to the newest call before it with
its id, and a trailing result event cuts the history back to its call event).
Otherwise no one placement can.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import NamedTuple

from .calls import TrackedCall
from .reads import ContentRead, EventRead, PartRead, parts_of


class AnsweredLater(NamedTuple):
    """What later events answered of a call event that still has open calls."""

    #: The lowest and highest part index of its calls that later events answered.
    lowest: int
    highest: int
    #: The last event of the run that answered them, or -1 when the run cannot
    #: take the placeholders (an answer came from outside the run of events
    #: right after the call event, or an event of the run holds other parts).
    answered_by: int
    #: How many of its calls the event `answered_by` answered.
    count: int
    #: Whether each answer came after the answers to every call before it in
    #: the event, as ADK's merge then keeps them (`answers_stay_in_call_order`).
    ascending: bool


#: Makes an `AnsweredLater` from a tuple without its generated ``__new__``: this runs
#: for every answer that leaves its call event with open calls.
_record = tuple.__new__


class Placements:
    """The `AnsweredLater` record of each call event whose calls later events partly answered.

    The ledger tells it of each answer that leaves the call event with open
    calls (`note_answer`), and asks it `placement`.
    """

    __slots__ = ("answered_later", "moved", "to_confirm")

    def __init__(self) -> None:
        #: Call event index -> its record, while the call event has open calls.
        self.answered_later: dict[int, AnsweredLater] = {}
        #: Set when a placement moved back to its call event (`pin`).
        self.moved = False
        #: The call event whose record is confirmed after the event that
        #: answered some of its calls (`confirm_sole_answers`), or -1.
        self.to_confirm = -1

    def note_answer(self, event_index: int, part_index: int, by: int) -> None:
        """The call at `part_index` of call event `event_index` was answered by event `by`."""
        known = self.answered_later.get(event_index)
        if known is None:
            # The run that can take its placeholders starts right after the call event.
            after = by if by == event_index + 1 else -1
            self.answered_later[event_index] = _record(
                AnsweredLater, (part_index, part_index, after, 1, True)
            )
        else:
            lowest, highest, answered_by, count, ascending = known
            if answered_by >= 0 and by == answered_by:
                after, count = by, count + 1
            elif answered_by >= 0 and by == answered_by + 1:
                after, count = by, 1  # the run goes on; this event is confirmed in turn
            else:
                after = -1
            self.answered_later[event_index] = _record(
                AnsweredLater,
                (
                    lowest if lowest < part_index else part_index,
                    highest if highest > part_index else part_index,
                    after,
                    count,
                    ascending and part_index > highest,
                ),
            )
        if after >= 0:
            self.to_confirm = event_index

    def confirm_sole_answers(self, parts: Sequence[PartRead], index: int) -> None:
        """Keeps the event at `index` in the run only if all its parts are results for one event."""
        call_index, self.to_confirm = self.to_confirm, -1
        known = self.answered_later.get(call_index)
        if known is None or known.answered_by != index:
            return
        results = sum(part.function_response is not None for part in parts)
        if results != known.count or len(parts) != results:
            self.answered_later[call_index] = known._replace(answered_by=-1)

    def pin(self) -> None:
        """Leaves every call event's placeholders right after it.

        For a second result of an answered call whose event still has open
        calls: ADK takes the last one, so no later event may take them.
        """
        if any(known.answered_by >= 0 for known in self.answered_later.values()):
            self.moved = True
        self.answered_later = {
            index: known._replace(answered_by=-1) for index, known in self.answered_later.items()
        }

    def answered_in_call_order(self, index: int) -> bool:
        """Whether later events answered call event `index`'s calls in call order, if any."""
        known = self.answered_later.get(index)
        return known is None or known.ascending

    def placement(self, index: int, open_parts: Mapping[int, TrackedCall] | None) -> int | None:
        """After which event the placeholders of call event `index` go; None if nowhere.

        `open_parts` are its open calls by part index, in part order (the module docstring).
        """
        known = self.answered_later.get(index)
        if known is None:
            return index
        if not open_parts:
            return index  # every call there is answered: nothing to place
        if next(reversed(open_parts)) < known.lowest:
            return index
        if known.highest < next(iter(open_parts)) and known.answered_by >= 0:
            return known.answered_by
        return None

    def copy(self) -> Placements:
        """A copy sharing nothing mutable (the records are immutable), with nothing moved yet."""
        copied = Placements()
        copied.answered_later = dict(self.answered_later)
        copied.to_confirm = self.to_confirm
        return copied


def answers_stay_in_call_order(
    events: Sequence[EventRead], open_ids: Mapping[int, set[str]]
) -> dict[int, bool | None]:
    """For each call event (index -> its open ids): does ADK's request answer it in call order?

    Where the builder drops calls nothing answers (``drop_orphaned_function_calls``),
    it keeps a call whose id an earlier event carries in a result or a
    long-running mark: then whether it drops an open call depends on which
    events a request shows, and this says None. Else it drops them all, and
    merges the results of the call event's other calls in history order (the
    module docstring), each result going to the newest call before it with
    its id: True when that is their call order. A call given two results is
    None too: the builder takes the last, in the first one's place.

    What a later event could change here, the ledger reports, and a view
    kept current is repaired again: a result or a call reusing an open id
    (`PairingLedger.irregular`), a second result for an answered call
    (`Placements.pin`). One pass over the history for all the call events,
    asked only of those no placement keeps in call order
    (`PairingLedger.serves_as_stored`).
    """
    verdicts: dict[int, bool | None] = {}
    owner_of_open = {call_id: index for index, ids in open_ids.items() for call_id in ids}
    answered: dict[int, list[int]] = {index: [] for index in open_ids}
    # Call id -> (the newest call event with it, that call's part index there).
    newest_call: dict[str, tuple[int, int]] = {}
    answered_once: set[tuple[int, int]] = set()
    for position, event in enumerate(events):
        marked = event.long_running_tool_ids
        if marked:
            for call_id in marked:
                if call_id in owner_of_open:
                    verdicts[owner_of_open[call_id]] = None
        for part_index, part in enumerate(parts_of(event.content)):
            call = part.function_call
            if call is not None and call.id:
                newest_call[call.id] = (position, part_index)
            response = part.function_response
            if response is None or not response.id:
                continue
            response_id = response.id
            if response_id in owner_of_open:
                verdicts[owner_of_open[response_id]] = None
            owner = newest_call.get(response_id)
            if owner is None or owner[0] not in answered:
                continue
            if owner in answered_once:
                verdicts[owner[0]] = None
            answered_once.add(owner)
            answered[owner[0]].append(owner[1])
    for index, parts in answered.items():
        verdicts.setdefault(index, parts == sorted(parts))
    return verdicts


def idless_results_after(
    events: Sequence[EventRead], call_events: Mapping[int, set[str]]
) -> set[int]:
    """Those of `call_events` (index -> its id-less calls' names) that ADK's builder gives a
    stored id-less result of one of those names to.

    The builder gives an id-less result to the newest event before it with an
    id-less call (an event that also holds results is no call event there),
    whatever the names, and keeps for that call event only the last event
    holding such results: a placeholder event for its open id-less calls
    would push the stored results out, or be pushed out itself. One pass
    over the history (`PairingLedger.collapses_idless_answers`).
    """
    found: set[int] = set()
    newest = -1
    for position, event in enumerate(events):
        parts = parts_of(event.content)
        responses = [part.function_response for part in parts if part.function_response]
        if responses:
            names = call_events.get(newest)
            if names and any(not r.id and r.name in names for r in responses):
                found.add(newest)
            continue
        if any(part.function_call is not None and not part.function_call.id for part in parts):
            newest = position
    return found


def ids_held_once(events: Sequence[EventRead], call_ids: set[str]) -> set[str]:
    """Those of `call_ids` that one call part holds and no other part or event carries.

    A result, another call or a long-running mark of another event with the
    id would let ADK's builder pair or keep it elsewhere. One pass over the
    history (`PairingLedger.placeable_apart`).
    """
    seen: dict[str, int] = {}
    for event in events:
        marked = event.long_running_tool_ids
        content = event.content
        for part in parts_of(content):
            for carried in (part.function_call, part.function_response):
                if carried is not None and carried.id in call_ids:
                    seen[carried.id] = seen.get(carried.id, 0) + 1
        if marked:
            for call_id in marked:
                if call_id in call_ids and not _calls_id(content, call_id):
                    seen[call_id] = seen.get(call_id, 0) + 2  # marked by another event
    return {call_id for call_id in call_ids if seen.get(call_id) == 1}


def _calls_id(content: ContentRead | None, call_id: str) -> bool:
    """Whether `content` holds a call with `call_id` (its event's own long-running mark)."""
    return any(
        part.function_call is not None and part.function_call.id == call_id
        for part in parts_of(content)
    )
