"""The ledger: which function calls an event history answers, by the newest builder's rules.

The rules follow the ones ADK's newest request builder applies (older
builders' differences are `adk_pairing.ledger.older_builders`; which release has
which, docs/compatibility.md):

* A function response answers the *newest preceding* call with the same id
  (model-issued ids such as Gemini's ``call_1`` repeat across turns, so "a
  response with this id exists somewhere" does not mean "this call was
  answered"). A response in the same event as a call does not answer it.
* Branches scope who answers whom. ADK's request builder shows an agent only
  the events of its own branch, of its ancestors and branch-less ones
  (`branch_shows`), and pairs within what it keeps: two `ParallelAgent`
  branches may each call ``call_0`` and each answer its own. So a response in
  a branch answers the newest preceding open call with its id *among the calls
  its branch shows*; a branch-less response sees every call.
* A call without an id is answered by a later id-less response of the same
  name. Like ADK's rearranger, the response belongs to the newest preceding
  event with an id-less call of that name; within that event, responses take
  the calls in order, one each. (Reaching back to an older event's open call
  instead would pair a result with a call it is not adjacent to on the wire.)
* Rewinds annul events (`adk_pairing.ledger.rewinds`): the walk never sees
  annulled events.
* An unanswered call is *pending* when ADK holds it open on purpose
  (`adk_pairing.wire.is_held_open`), or while the child run it started waits
  (`adk_pairing.ledger.child_runs`), and *missing* otherwise.
* A call sharing its `Part` with text (or a signed thought) is not a call on
  the wire (`adk_pairing.wire.never_sent_as_a_call`), so a placeholder for it
  would be an orphan ``tool_result``. Malformed input.
* The same id twice in one event (malformed) is one ``tool_use`` id on the
  wire: one result answers both, so only the first is tracked.

Irregular histories (docs/irregular-histories.md; `adk_pairing.wire.IrregularShape`)
are marked (`PairingLedger.shapes`) where the walk meets them, so that
`adk_pairing.rules.builder_check` can check their view against ADK's own builder.
One mark is lifted again: a call id reused while open, once the newest
builder's own pairing covers it (`OpenCallIndex.note_reuse`).
A response repeating the id of an answered call in an event of its own (a
long-running tool's progress updates) is regular.

`PairingLedger` keeps this state incrementally, one event at a time, so the
session-service decorator can keep a view current on every ``append_event``
without rescanning the history.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence

from ..adk.builder import NEWEST_BUILDER, BuilderTraits, builder_traits
from ..wire import IrregularShape, anthropic_keeps_id
from .calls import (
    NOTHING_CHANGED,
    CallCopies,
    Observation,
    OpenCalls,
    TrackedCall,
    earlier_response_with,
)
from .child_runs import ChildRuns
from .older_builders import EventAt, older_builder_for
from .open_calls import READS_STORED_EVENTS, OpenCallIndex, ReadPolicy
from .placement import (
    Placements,
    answers_stay_in_call_order,
    idless_results_after,
    ids_held_once,
)
from .reads import CallRead, EventRead, PartRead, parts_of

#: Makes an `EventAt` without its generated ``__new__``: one per event under an older builder.
_event_at = tuple.__new__


class PairingLedger:
    """Attributes responses to calls, one event at a time, in O(parts) each.

    ``open_calls`` (event index -> its unanswered calls) is what a repaired
    view needs. Its parts: `OpenCallIndex`, `Placements`, `ChildRuns`, and the
    older builder `traits` choose (`adk_pairing.ledger.older_builders`), which
    sees only `LedgerForOlderBuilders`. `reads` is a `ReadPolicy`.
    """

    __slots__ = (
        "_child_runs",
        "_index",
        "_older",
        "_placements",
        "calls",
        "holds_every_call",
        "reads",
        "shapes",
        "traits",
    )

    def __init__(
        self, traits: BuilderTraits | None = None, *, reads: ReadPolicy = READS_STORED_EVENTS
    ) -> None:
        self.traits = traits if traits is not None else builder_traits()
        # None under the newest builder: its rules are the plain path.
        self._older = older_builder_for(self.traits)
        self.reads = reads
        #: Every call observed, in order; after a `carry_forward` that kept only
        #: the open ones (`holds_every_call` False), the calls open at that
        #: point and every call observed since.
        self.calls: list[TrackedCall] = []
        #: Whether `calls` holds every call of the history walked.
        self.holds_every_call = True
        self._index = OpenCallIndex()
        self._child_runs = ChildRuns()
        self._placements = Placements()
        #: The irregular shapes of the history walked so far (see the module
        #: docstring). Added to only on branches a regular history never takes.
        self.shapes: set[IrregularShape] = set()

    @property
    def irregular(self) -> bool:
        """Whether the history walked so far has an irregular shape (`shapes`)."""
        return bool(self.shapes)

    @property
    def withholding(self) -> bool:
        """True while an older builder withholds calls (`WalksBack`), which `observe` never
        reports releasing: a view kept current rebuilds on its next append instead."""
        older = self._older
        return older is not None and older.withholding

    @property
    def open_calls(self) -> OpenCalls:
        """Event index -> its unanswered calls, in part order (only events that have some)."""
        return OpenCalls(self._index.slots)

    def placement(self, index: int) -> int | None:
        """After which event the placeholders of call event `index` go; None if nowhere.

        See `adk_pairing.ledger.placement`.
        """
        return self._placements.placement(index, self._index.slots.get(index))

    def serves_as_stored(
        self, indices: Iterable[int], events: Sequence[EventRead]
    ) -> dict[int, bool | None]:
        """For each call event of `indices` in a regular history: does it go as stored?

        None where only ADK's builder can tell. `events` is the history the
        ledger walked. Only a call event whose answers no placement keeps in
        call order (`placement` is None) can go as stored:

        * Where it has an id-less call, ADK's builder pairs that call's
          results by name across events, and is asked (None), as for an
          irregular history (`adk_pairing.rules.builder_check`).
        * A builder that sends a call nothing answers as stored (not
          `BuilderTraits.drops_unanswered_calls`), or keeps one because its
          event marks it long-running, sends a request no strict provider
          takes: placeholders right after the call event make it no worse
          and answer every call (False).
        * Else it drops the open calls when no event carries one of their ids
          in a result or a long-running mark, and merges the other calls'
          results in history order (`answers_stay_in_call_order`). When that
          is call order, the stored request keeps Gemini's rule there, which
          a placeholder would break (True); when not, it breaks it already,
          and placeholders answer every call (False). Where some event does
          carry such an id, whether the builder drops the call depends on
          which events a request shows: it is asked (None).

        One pass over the history for all of `indices` that need it.
        """
        verdicts: dict[int, bool | None] = {}
        asked: dict[int, set[str]] = {}
        for index in indices:
            verdicts[index] = self._serves_as_stored_by_its_event(index, events[index], asked)
        if asked:
            verdicts.update(answers_stay_in_call_order(events, asked))
        return verdicts

    def still_serves_as_stored(
        self, index: int, call_event: EventRead, event: EventRead, settled: Collection[int]
    ) -> bool:
        """Whether call event `index`, which went as stored (`serves_as_stored` True), still
        does now that `event`, the last one observed, answered its calls at `settled`.

        What `serves_as_stored` read of the history changed only by `event`: the
        call event still goes as stored while no placement keeps its answers in
        call order (`placement` is None) and they came in call order
        (`Placements.answered_in_call_order`), and `event` holds no other
        result for one of its calls (ADK gives a call its last). Once none of
        its calls is open, nothing is placed either way. Whether `event` marks
        one of its open calls long-running (ADK then keeps that call) is
        `marks_open_calls_elsewhere`, asked first. O(parts of `event`), and of
        the call event only where `event` holds other results; asking
        `serves_as_stored` again would be a pass over the history.
        """
        if index not in self._index.slots:
            return True
        if self.placement(index) is not None or not self._placements.answered_in_call_order(index):
            return False
        parts = parts_of(call_event.content)
        answered_here = {
            call.id
            for part in settled
            if part < len(parts) and (call := parts[part].function_call) is not None
        }
        others = {
            part.function_response.id
            for part in parts_of(event.content)
            if part.function_response is not None and part.function_response.id not in answered_here
        }
        # Usually none: then the call event's own calls are not read at all.
        return not (others and any(call.id in others for call in _calls_of(call_event)))

    def marks_open_calls_elsewhere(self, event: EventRead, index: int) -> bool:
        """Whether `event`, at `index`, marks long-running an open call of another event.

        ADK's builder keeps such a call wherever it is, so whether its call
        event goes as stored (`serves_as_stored`) can change, and a view must
        be repaired again. O(marks).
        """
        marked = event.long_running_tool_ids
        return bool(marked) and any(self._opened_elsewhere(call_id, index) for call_id in marked)

    def collapses_idless_answers(self, events: Sequence[EventRead]) -> set[int]:
        """The call events whose open id-less calls no placeholder can answer.

        ADK's builder keeps one event of id-less results per call event, the
        last it gives to it (`idless_results_after`): where a stored one
        answered some of a call event's id-less calls and others are open, a
        placeholder event for them displaces it or is displaced. Such a call
        event goes as stored, which is never worse, without asking the builder.
        """
        candidates: dict[int, set[str]] = {}
        for index, calls in self._index.slots.items():
            open_idless = sum(not call.call_id for call in calls.values())
            idless = [call.name or "" for call in _calls_of(events[index]) if not call.id]
            if open_idless and len(idless) > open_idless:  # some answered, some open
                candidates[index] = set(idless)
        return idless_results_after(events, candidates) if candidates else set()

    def placeable_apart(
        self, events: Sequence[EventRead], among: Iterable[int] | None = None
    ) -> set[int]:
        """The call events whose placeholders ADK's builder pairs with them alone, in any history.

        Every call of the event is open, each with an id that ADK's
        Anthropic converter sends as it is and that no other part or event
        carries (`ids_held_once`), and its placeholders go right after it:
        the builder pairs each result by id with that event and no other,
        no id-less result is among them, and no stored call or result
        changes place. Such a repair only answers calls, so an irregular
        history's check need not ask about it. Only the call events `among`
        are asked, when given.
        """
        if IrregularShape.CALL_ID_LIKE_A_FALLBACK in self.shapes:
            return set()  # the converter's fallback ids can merge two ids on the wire
        slots = self._index.slots
        candidates: dict[int, set[str]] = {}
        for index in slots if among is None else among:
            slot = slots.get(index)
            if not slot:
                continue
            parts = parts_of(events[index].content)
            calls = _calls_of(events[index])
            if (
                len(slot) == len(calls)
                and all(call.id and anthropic_keeps_id(call.id) for call in calls)
                and not any(part.function_response for part in parts)
                and self.placement(index) == index
            ):
                candidates[index] = {call.id for call in calls}  # type: ignore[misc]
        if not candidates:
            return set()
        once = ids_held_once(events, set().union(*candidates.values()))
        return {index for index, ids in candidates.items() if ids <= once}

    def still_repairs_apart(
        self,
        events: Sequence[EventRead],
        observed: Observation,
        shapes_before: Collection[IrregularShape],
    ) -> bool:
        """Whether an irregular history repaired apart stays so with its last event observed.

        The history before `events`' last event was repaired without ADK's
        builder: each call event with open calls either `placeable_apart` or
        `collapses_idless_answers`. With the last event, `observed` said what
        it changed, and the repair is the one before, changed only there,
        when that event leaves both sets as they were but for itself:

        * it adds or lifts no irregular shape (`shapes_before` were the shapes):
          the repair reads them (`placeable_apart`, and whether the history is
          irregular at all);
        * each call it answers leaves its call event with no open call (a call
          event placed apart with some calls answered is no longer apart), and
          it changes no call's status or placement;
        * none of its calls or results carries the id of another event's call
          still open, which would then be carried twice (a call the ledger
          does not track, such as one sent as text, carries its id too);
        * its own calls, if it opened some, are `placeable_apart`.

        O(parts of the event), plus one pass over the history (`ids_held_once`)
        when it opened calls.
        """
        settled, opened, held, placements_moved = observed
        if held or placements_moved or self.shapes != shapes_before:
            return False
        index = len(events) - 1
        slots = self._index.slots
        if any(call.event_index in slots for call in settled):
            return False
        for part in parts_of(events[index].content):
            for carried in (part.function_call, part.function_response):
                if carried is not None and carried.id and self._opened_elsewhere(carried.id, index):
                    return False
        return opened is None or self.placeable_apart(events, (index,)) == {index}

    def _serves_as_stored_by_its_event(
        self, index: int, call_event: EventRead, asked: dict[int, set[str]]
    ) -> bool | None:
        """`serves_as_stored` of one call event, as far as that event tells; else its open
        ids go to `asked`, for the pass over the history."""
        if self.placement(index) is not None:
            return False
        if any(not call.id for call in _calls_of(call_event)):
            return None
        if not self.traits.drops_unanswered_calls:
            return False
        marked = call_event.long_running_tool_ids or ()
        open_ids: set[str] = set()
        for call in self._index.slots[index].values():
            if call.call_id in marked:
                return False
            open_ids.add(call.call_id)  # type: ignore[arg-type]
        asked[index] = open_ids
        return None

    def observe(self, event: EventRead, index: int) -> Observation:
        """Records `event` (at `index` in the history) and says what it changed.

        `event` must not be a rewind (`is_rewind`): a rewind can annul events
        already observed, so the ledger has to be built again instead.
        """
        settled: list[TrackedCall] = []
        held: list[TrackedCall] = []
        if event.content is not None:
            self._child_runs.held_now = held
            try:
                self.walk((event,), index, settled)
            finally:
                self._child_runs.held_now = None
        moved, self._placements.moved = self._placements.moved, False
        opened = index if index in self._index.slots else None
        if opened is None and not settled and not held and not moved:
            return NOTHING_CHANGED
        return Observation(settled, opened, held, moved)

    def walk(
        self,
        events: Sequence[EventRead],
        start: int,
        settled: list[TrackedCall] | None = None,
        *,
        stop_at_rewind: bool = False,
        answered_at: list[tuple[int, int]] | None = None,
    ) -> int | None:
        """Records `events`, the first at index `start`; returns None when all are recorded.

        A hot loop: no call per event or per id'd answer outside branches under
        the newest builder, nothing allocated for an event without calls. Calls
        answered go to `settled`, each answer's (event, part) index to
        `answered_at` (newest builder only). With `stop_at_rewind`, it returns
        the index of the first rewind. An older builder has a say at each
        response, answer and event's end.
        """
        open_index = self._index
        newest_by_id = open_index.newest_by_id
        by_branch = open_index.by_branch
        watch_compaction = open_index.watch_compaction
        placements = self._placements
        shapes = self.shapes
        older = self._older
        # Made per walk, not kept: kept, it would tie the ledger in a reference cycle.
        for_older = _ForOlderBuilders(self) if older is not None else None
        if answered_at is not None and older is not None:
            raise ValueError("answered_at needs a ledger with NEWEST_BUILDER traits")
        index = start - 1
        for event in events:
            index += 1
            if watch_compaction:
                watch_compaction = open_index.watch_for_compaction(event, shapes)
            if stop_at_rewind:
                # Inline `is_rewind`: a call per event costs more than the check.
                actions = event.actions
                if actions is not None and actions.rewind_before_invocation_id:
                    return index
            content = event.content
            if content is None:
                continue
            parts = content.parts
            if not parts:
                continue
            if older is not None:
                at = _event_at(EventAt, (event, index, parts, settled))
            calls_here: list[tuple[int, PartRead]] | None = None
            part_index = -1
            for part in parts:
                part_index += 1
                if part.function_call is not None:
                    # Opened after the loop: a response never answers a call in its own event.
                    if calls_here is None:
                        calls_here = [(part_index, part)]
                        if part_index and earlier_response_with(parts, part_index):
                            shapes.add(IrregularShape.CALLS_AND_RESULTS_IN_ONE_EVENT)
                    else:
                        calls_here.append((part_index, part))
                response = part.function_response
                if response is None:
                    continue
                if calls_here is not None:
                    shapes.add(IrregularShape.CALLS_AND_RESULTS_IN_ONE_EVENT)
                if older is not None and older.takes_response(for_older, at, part_index, response):
                    continue
                response_id = response.id
                if response_id and by_branch is None:
                    # Only open calls are indexed, so a hit is always open.
                    call = newest_by_id.pop(response_id, None)
                else:
                    call = self._answered_in_branch_or_by_name(response, event.branch)
                if call is None:
                    if response_id and earlier_response_with(parts, part_index, response_id):
                        shapes.add(IrregularShape.ID_ANSWERED_TWICE_IN_ONE_EVENT)
                    if placements.answered_later:
                        # Perhaps a second result for a call whose event has open calls.
                        placements.pin()
                    continue
                responder = event.author
                if call.author != responder and responder != "user":
                    # One agent's result for another agent's call: ADK writes a
                    # tool's result under the agent that called it (or the user).
                    shapes.add(IrregularShape.ANSWER_FROM_ANOTHER_AGENT)
                elif older is not None:
                    older.check_answer(for_older, call, response)
                elif response_id:
                    open_index.note_answered(call, parts, index, shapes)
                self._settle(call, settled, index)
                if answered_at is not None:
                    answered_at.append((index, part_index))
            if placements.to_confirm >= 0:
                placements.confirm_sole_answers(parts, index)
            if older is not None:
                older.end_parts(for_older, at, calls_here)
            if calls_here is not None:
                self._open(event, index, calls_here, for_older)
                watch_compaction = open_index.watch_compaction
                by_branch = open_index.by_branch
        return None

    def _answered_in_branch_or_by_name(
        self, response: CallRead, branch: str | None
    ) -> TrackedCall | None:
        """Unindexes and returns the open call `response` answers, off `walk`'s fast path.

        An id'd response once a branch is seen (`OpenCallIndex.take_shown`), or
        an id-less one (the newest event's open id-less call of its name).
        """
        open_index = self._index
        response_id = response.id
        if response_id:
            call = open_index.take_shown(response_id, branch)
            if call is not None and self._child_runs.holding:
                self._child_runs.stop_holding(call)  # the caller answers it right after
            return call
        queue = open_index.idless_open.get(response.name or "")
        if queue:
            return queue.popleft()
        self.shapes.add(IrregularShape.IDLESS_RESULT_NOTHING_WAITS_FOR)
        return None

    def _open(
        self,
        event: EventRead,
        index: int,
        calls_here: list[tuple[int, PartRead]],
        for_older: _ForOlderBuilders | None,
    ) -> None:
        """Tracks the calls of `event`, at `index` (`OpenCallIndex.open_event`)."""
        opened = self._index.open_event(
            event, index, calls_here, self.shapes, self.reads, self._older, for_older
        )
        self.calls.extend(opened.values())
        branch = event.branch
        if branch and "@" in branch:
            self._child_runs.hold_callers(event, branch, opened, self._newest_open_call_with)

    def pass_over(self, calls: Iterable[tuple[str | None, str]]) -> None:
        """Accounts for calls answered right where they stand (`OpenCallIndex.pass_over`).

        Newest builder only: under older ones such a call also answers, or
        withholds, calls elsewhere, which skipping it would not record.
        """
        if self.traits != NEWEST_BUILDER:
            raise ValueError("pass_over needs a ledger with NEWEST_BUILDER traits")
        self._index.pass_over(calls)

    def _settle(self, call: TrackedCall, settled: list[TrackedCall] | None, by: int) -> None:
        """Marks `call` answered by the event at index `by`."""
        call.answered = True
        if call.withheld:
            return  # already out of the view (`WalksBack`)
        event_index = call.event_index
        slots = self._index.slots
        slot = slots[event_index]
        del slot[call.part_index]
        placements = self._placements
        if not slot:
            del slots[event_index]
            if placements.answered_later:
                placements.answered_later.pop(event_index, None)
        else:
            placements.note_answer(event_index, call.part_index, by)
        if settled is not None:
            settled.append(call)

    def held_open_ids(self) -> set[str]:
        """`adk_pairing.ledger.held_open_call_ids` of the history walked, off the open index.

        The newest call with each id is the open one indexed under it, unless
        a newer call with the id was answered (then none is), so what that
        function finds by walking the whole history again is here in
        O(open calls). Newest builder only: older ones index calls otherwise.
        """
        if self.traits != NEWEST_BUILDER:
            raise ValueError("held_open_ids needs a ledger with NEWEST_BUILDER traits")
        return {call_id for call_id, call in self._index.newest_by_id.items() if call.held_open}

    def _newest_open_call_with(self, call_id: str) -> TrackedCall | None:
        caller = self._index.newest_by_id.get(call_id)
        if caller is None and self._older is not None:
            caller = self._older.newest_open_call_with(call_id)
        return caller

    def _opened_elsewhere(self, call_id: str, index: int) -> bool:
        """Whether the newest open call with `call_id`, in either index, is not event `index`'s."""
        call = self._newest_open_call_with(call_id)
        return call is not None and call.event_index != index

    def carry_forward(self) -> PairingLedger:
        """A new ledger that continues from this one, sharing nothing mutable.

        It holds copies of the open (and withheld) calls only, so it costs
        O(open calls), not O(history): a caller can keep it and later observe
        just the events appended since, as if the whole history had been
        walked again. An irregular history's `calls` go on whole, the answered
        ones as they are (nothing changes a call once answered): the restore
        reads every call of such a history
        (`adk_pairing.passes.restore_pass.calls_the_request_lacks`). That is
        O(calls), paid only there.
        """
        copies = CallCopies()
        successor = PairingLedger(self.traits, reads=self.reads)
        index = successor._index = self._index.copy_by_event_and_id(copies)
        for slot in index.slots.values():
            successor.calls.extend(slot.values())
        # In this order: a held-open call copied neither as open nor by id is
        # one that can no longer stop holding (`ChildRuns.copy`).
        successor._child_runs = self._child_runs.copy(copies)
        self._index.copy_idless_into(index, copies)
        successor.shapes = set(self.shapes)
        if self._older is not None:
            assert successor._older is not None  # the same traits choose the same builder
            self._older.carry_into(successor._older, _ForOlderBuilders(successor), copies)
        successor._placements = self._placements.copy()
        if self.shapes and self.holds_every_call:
            # After the older builder's copies (withheld calls), which are among these.
            successor.calls = [call if call.answered else copies.of(call) for call in self.calls]
        else:
            successor.holds_every_call = False
        return successor


def _calls_of(event: EventRead) -> list[CallRead]:
    """The function calls of `event`'s parts, in part order."""
    return [
        part.function_call for part in parts_of(event.content) if part.function_call is not None
    ]


class _ForOlderBuilders:
    """`LedgerForOlderBuilders` over one ledger: all an older builder reads or changes of it.

    Made per walk; what a hook uses on every response is bound once here.
    """

    __slots__ = ("_child_runs", "_ledger", "_settle", "shapes")

    def __init__(self, ledger: PairingLedger) -> None:
        self._ledger = ledger
        self.shapes = ledger.shapes
        self._child_runs = ledger._child_runs
        self._settle = ledger._settle

    def answer(self, call: TrackedCall, settled: list[TrackedCall] | None, by: int) -> None:
        child_runs = self._child_runs
        if child_runs.holding:
            child_runs.stop_holding(call)
        self._settle(call, settled, by)

    @property
    def has_branches(self) -> bool:
        return self._ledger._index.by_branch is not None

    def answered_as_it_opens(self, call: TrackedCall) -> None:
        call.answered = True
        self._ledger.calls.append(call)

    def open_calls_at(self, index: int) -> Mapping[int, TrackedCall] | None:
        return self._ledger._index.slots.get(index)

    def withhold_event(self, index: int) -> list[TrackedCall]:
        return self._ledger._index.take_event(index)

    def withhold_events_with_ids(self, ids: set[str]) -> list[TrackedCall]:
        return self._ledger._index.take_events_with_ids(ids)

    def reopen(self, calls: Sequence[TrackedCall]) -> None:
        self._ledger._index.reopen(calls)

    def keep_calls(self, calls: Sequence[TrackedCall]) -> None:
        self._ledger.calls.extend(calls)


def answers_nothing_open(event: EventRead, settled: Collection[TrackedCall]) -> bool:
    """Whether `event`, the last one a ledger observed, holds a result that answered no open call.

    `settled` are the calls it answered (`Observation`). Such a result may be
    a later one for an answered call, which ADK's builder gives that call in
    place of the earlier one (the last one wins), so whether its call event
    goes as stored (`PairingLedger.serves_as_stored`) can change.
    O(parts of `event`).
    """
    results = sum(part.function_response is not None for part in parts_of(event.content))
    return results > len(settled)
