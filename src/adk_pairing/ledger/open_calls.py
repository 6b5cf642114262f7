"""Which calls an event opens, and the index where a response finds them.

The index holds open calls by event, by id, by branch, and id-less ones by
function name.

Only open calls are indexed: an answered call can never change again, so
settling one is O(1) whatever the width of its event, and a ledger carried
forward copies only what later events can still change.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..adk.builder import left_out_call_names
from ..wire import (
    IrregularShape,
    branches_shown_to,
    builder_leaves_out,
    is_held_open,
    may_collide_with_a_fallback,
    never_sent_as_a_call,
)
from .calls import BranchedCall, CallCopies, TrackedCall
from .reads import EventRead, PartRead

if TYPE_CHECKING:
    from .older_builders import LedgerForOlderBuilders, OlderBuilder


#: How many answered call ids an index remembers (`OpenCallIndex.answered_ids`):
#: more than a model that numbers its calls per turn uses. Past it, the memory
#: starts again, and a reuse of a forgotten id waits for its answer.
ANSWERED_IDS_REMEMBERED = 16


@dataclass(frozen=True, slots=True)
class ReadPolicy:
    """What the ledger reads, and the two rules that change with it."""

    #: ADK's builder still has to leave out, whole, an event beside its
    #: confirmation or credential request (`adk_pairing.wire.builder_leaves_out`):
    #: a call there is not sent, so it is not tracked unless ADK holds it open.
    builder_leaves_events_out: bool
    #: A call whose id an earlier call of its event carries is one ``tool_use``
    #: on the wire, answered by the first's result: it is not tracked.
    one_call_per_id_in_an_event: bool


#: Stored events: what the view reads.
READS_STORED_EVENTS = ReadPolicy(builder_leaves_events_out=True, one_call_per_id_in_an_event=True)
#: Contents ADK's builder has made (the request pass, `adk_pairing.passes.request_pass`):
#: it has left its events out already, and the request pass renames a repeated
#: id apart, so each call is its own ``tool_use`` and needs its own answer.
READS_BUILT_REQUEST = ReadPolicy(builder_leaves_events_out=False, one_call_per_id_in_an_event=False)


class OpenCallIndex:
    """The calls still open, as the newest builder's rules open them and find them."""

    __slots__ = (
        "_left_out_event",
        "answered_ids",
        "by_branch",
        "idless_open",
        "newest_by_id",
        "reuse_stays_irregular",
        "reused_unanswered",
        "slots",
        "watch_compaction",
    )

    def __init__(self) -> None:
        #: Event index -> part index -> its open call, both in history order.
        self.slots: dict[int, dict[int, TrackedCall]] = {}
        #: Call id -> the newest call with that id, while that call is open. An
        #: answered newest call is dropped rather than kept: a later response
        #: with its id answers nothing either way (it must not reach back to an
        #: older open call with the same id).
        self.newest_by_id: dict[str, TrackedCall] = {}
        #: Once a call event with a branch is seen: branch -> call id -> the
        #: newest open call with that id in that branch. Until then every call
        #: is branch-less and `newest_by_id` is what every branch sees.
        self.by_branch: dict[str | None, dict[str, TrackedCall]] | None = None
        #: Function name -> the open id-less calls of the newest event that has
        #: id-less calls of that name. An emptied queue stays: it still owns
        #: later responses of that name, which then answer nothing.
        self.idless_open: dict[str, deque[TrackedCall]] = {}
        #: Call id -> the agent whose call reused it while its earlier call
        #: was open, until some call with the id is answered (`note_reuse`).
        self.reused_unanswered: dict[str, str] = {}
        #: Call id -> the agent whose call with that id its own agent or the
        #: user answered, for the ids answered last (`ANSWERED_IDS_REMEMBERED`).
        self.answered_ids: dict[str, str] = {}
        #: Set while a reuse is regular by an earlier answer alone: a compaction
        #: can take that answer out of ADK's request (`watch_for_compaction`).
        self.watch_compaction = False
        #: Set once a reuse that no answer can make regular was seen.
        self.reuse_stays_irregular = False
        # (event index, whether the builder leaves that event out), for the
        # event whose answers `note_answered` reads: asked once per event, not
        # once per answer, which would be quadratic in a wide parallel answer.
        self._left_out_event: tuple[int, bool] = (-1, False)

    def open_event(
        self,
        event: EventRead,
        index: int,
        calls_here: list[tuple[int, PartRead]],
        shapes: set[IrregularShape],
        reads: ReadPolicy,
        older: OlderBuilder | None,
        ledger: LedgerForOlderBuilders | None,
    ) -> dict[int, TrackedCall]:
        """Indexes the calls of `event` (at `index`) the newest rules track; returns them.

        `calls_here` are its parts with a call. A call is not tracked when it
        is never sent as one (beside ADK's request, text in its part) or
        repeats an id of its event (`reads`); `older` may index it itself.
        The irregular shapes met go to `shapes`.
        """
        held_open_ids = event.long_running_tool_ids or ()
        author = event.author
        branch = event.branch or None
        newest_by_id = self.newest_by_id
        in_branch = (
            None if branch is None and self.by_branch is None else self._open_in_branch(branch)
        )
        opened: dict[int, TrackedCall] = {}
        opened_ids: set[str] = set()
        idless_here: dict[str, deque[TrackedCall]] | None = None
        left_out: bool | None = None
        left_out_names = left_out_call_names()
        for part_index, part in calls_here:
            function_call = part.function_call
            name = function_call.name or ""  # type: ignore[union-attr]
            call_id = function_call.id or None  # type: ignore[union-attr]
            # Positional: cheaper on this hot path (benchmarks/RESULTS.md).
            held_open = is_held_open(name, call_id, held_open_ids)
            if name not in left_out_names and reads.builder_leaves_events_out:
                if left_out is None:
                    left_out = builder_leaves_out(event.content.parts, left_out_names)  # type: ignore[union-attr,arg-type]
                if left_out:
                    shapes.add(IrregularShape.CALL_BESIDE_AN_ADK_REQUEST)
                    if not held_open:
                        # Never sent (the builder leaves this event out whole); a
                        # placeholder would be, answering an earlier call with
                        # its id. (A call ADK holds open stays pending; the
                        # builder check sees where its placeholder lands.)
                        continue
            if never_sent_as_a_call(part):
                # The converter sends this part as its text: a placeholder would
                # be an orphan tool_result. A later result with its id reaches
                # the model after the previous tool_use, where the ledger
                # attributes it too.
                shapes.add(IrregularShape.NOT_SENT_AS_A_CALL)
                continue
            call = (
                TrackedCall(index, part_index, call_id, name, held_open, author)
                if branch is None
                else BranchedCall(
                    index, part_index, call_id, name, held_open, author, branch=branch
                )
            )
            if call_id is not None and may_collide_with_a_fallback(call_id):
                shapes.add(IrregularShape.CALL_ID_LIKE_A_FALLBACK)
            if (
                call_id is not None
                and older is not None
                and older.takes_call(ledger, call, opened_ids, opened)  # type: ignore[arg-type]
            ):
                continue
            if call_id is not None:
                if call_id in opened_ids:
                    shapes.add(IrregularShape.CALL_ID_TWICE_IN_ONE_EVENT)
                    if reads.one_call_per_id_in_an_event:
                        # A second placeholder would split this event from a
                        # model event after it that Anthropic merges with it,
                        # orphaning the result they share.
                        continue
                opened_ids.add(call_id)
                if call_id in newest_by_id:
                    # Not dict.setdefault: dearer on a cold walk (benchmarks/RESULTS.md).
                    self.note_reuse(call_id, newest_by_id[call_id], author, older, shapes)
                newest_by_id[call_id] = call
                if in_branch is not None:
                    in_branch[call_id] = call
            else:
                if idless_here is None:
                    idless_here = {}
                elif IrregularShape.IDLESS_CALLS_IN_ONE_EVENT not in shapes:
                    # ADK merges their result events keyed by id, and both have the key None.
                    shapes.add(IrregularShape.IDLESS_CALLS_IN_ONE_EVENT)
                idless_here.setdefault(name, deque()).append(call)
            opened[part_index] = call
        # This event now owns every later id-less response of these names.
        if idless_here is not None:
            self.idless_open.update(idless_here)
        if opened:
            self.slots[index] = opened
        return opened

    def _open_in_branch(self, branch: str | None) -> dict[str, TrackedCall]:
        """The open calls of `branch` by id, indexed from the first branch on."""
        by_branch = self.by_branch
        if by_branch is None:
            # The first branch: every call before it is branch-less.
            by_branch = self.by_branch = {None: dict(self.newest_by_id)}
            if self.reused_unanswered:
                # An answer in a branch is not shown to every agent.
                self.reused_unanswered.clear()
                self.reuse_stays_irregular = True
        return by_branch.setdefault(branch, {})

    def note_reuse(
        self,
        call_id: str,
        earlier: TrackedCall,
        author: str | None,
        older: OlderBuilder | None,
        shapes: set[IrregularShape],
    ) -> None:
        """A call by `author` reuses `call_id` while `earlier`, with that id, is open.

        The history is irregular (`IrregularShape.CALL_ID_REUSED_WHILE_OPEN`).
        Under the newest builder, in a history without branches, with both
        calls made by one agent, it is so only until some call with the id is
        answered by that agent or the user (`reuse_answered`), or none if one
        was before (`answered_ids`). From then on
        that builder keeps every call with the id (it drops a call only when
        no result carries its id) and gives each placeholder to the call
        right before it, as the ledger does: the view changes nothing but
        the open calls' answers. Before, the placeholders alone would keep
        calls the builder drops, several with one id. Elsewhere the builder's
        pairing reaches across the history, and the view is checked.
        """
        if older is None and self.by_branch is None and earlier.author == author and author:
            if self.answered_ids.get(call_id) == author:
                self.watch_compaction = True
                return  # a result with the id is in the history already
            self.reused_unanswered[call_id] = author
        else:
            self.reuse_stays_irregular = True
        shapes.add(IrregularShape.CALL_ID_REUSED_WHILE_OPEN)

    def note_answered(
        self,
        call: TrackedCall,
        parts: Sequence[PartRead],
        index: int,
        shapes: set[IrregularShape],
    ) -> None:
        """`call`, which has an id, was answered by its agent or the user in event `index`.

        `parts` are that event's. Only a result that reaches ADK's request
        counts (`note_reuse`): the builder leaves out, whole, an event with a
        confirmation or credential request or its answer.
        """
        at, left_out = self._left_out_event
        if at != index:
            left_out = builder_leaves_out(parts, left_out_call_names())
            self._left_out_event = (index, left_out)
        if left_out:
            return
        answered = self.answered_ids
        if len(answered) >= ANSWERED_IDS_REMEMBERED:
            answered.clear()
        answered[call.call_id] = call.author  # type: ignore[index]
        if self.reused_unanswered:
            self.reuse_answered(call, shapes)

    def watch_for_compaction(self, event: EventRead, shapes: set[IrregularShape]) -> bool:
        """Whether to go on watching for compaction events, after `event`.

        A compaction after a reuse made regular by an earlier answer may have
        summarised that answer away while calls with its id stay in the
        request: the reuse is irregular from there on.
        """
        actions = event.actions
        if actions is None or getattr(actions, "compaction", None) is None:
            return True
        shapes.add(IrregularShape.CALL_ID_REUSED_WHILE_OPEN)
        self.reuse_stays_irregular = True
        self.watch_compaction = False
        self.answered_ids.clear()
        return False

    def reuse_answered(self, call: TrackedCall, shapes: set[IrregularShape]) -> None:
        """`call` was answered by its own agent or the user (`note_reuse`)."""
        if self.reused_unanswered.get(call.call_id or "") != call.author:
            return
        del self.reused_unanswered[call.call_id]  # type: ignore[arg-type]
        if not self.reused_unanswered and not self.reuse_stays_irregular:
            shapes.discard(IrregularShape.CALL_ID_REUSED_WHILE_OPEN)

    def take_shown(self, call_id: str, branch: str | None) -> TrackedCall | None:
        """Unindexes and returns the open call a response with `call_id` in `branch` answers.

        The newest open call with the id among those `branch_shows` the
        response's branch (every call for a branch-less response). Only once
        a branch is seen (`by_branch`).
        """
        by_branch = self.by_branch
        assert by_branch is not None
        if not branch:
            call = self.newest_by_id.pop(call_id, None)
            if call is not None:
                in_branch = by_branch.get(call.branch)
                if in_branch is not None and in_branch.get(call_id) is call:
                    del in_branch[call_id]
            return call
        call = None
        for shown in branches_shown_to(branch):
            in_branch = by_branch.get(shown)
            candidate = in_branch.get(call_id) if in_branch is not None else None
            if candidate is not None and (call is None or candidate.event_index > call.event_index):
                call = candidate
        if call is not None:
            del by_branch[call.branch][call_id]
            if self.newest_by_id.get(call_id) is call:
                del self.newest_by_id[call_id]
        return call

    def pass_over(self, calls: Iterable[tuple[str | None, str]]) -> None:
        """Accounts for calls that are answered right where they stand, without tracking them.

        What walking them and their answers would leave behind: an id-ed call
        makes the open call with its id unreachable (a later response with the
        id finds the newer, answered call), and an event of id-less calls owns
        later id-less responses of their names (which then answer nothing).
        The request pass uses it to skip stretches it has checked already.
        """
        for call_id, name in calls:
            if call_id:
                self.newest_by_id.pop(call_id, None)
            else:
                self.idless_open[name] = deque()

    def take_event(self, index: int) -> list[TrackedCall]:
        """Unindexes and returns the open calls of event `index`, in part order."""
        return list(self.slots.pop(index).values())

    def take_events_with_ids(self, ids: set[str]) -> list[TrackedCall]:
        """Unindexes and returns the open calls of every event with an open call of `ids`."""
        slots = self.slots
        taken: list[TrackedCall] = []
        for index in [
            i
            for i, calls in slots.items()
            if not ids.isdisjoint(call.call_id for call in calls.values())
        ]:
            taken.extend(slots.pop(index).values())
        return taken

    def reopen(self, calls: Iterable[TrackedCall]) -> None:
        """Indexes `calls` again by event, those still unanswered; each event in part order."""
        slots = self.slots
        events: set[int] = set()
        for call in calls:
            events.add(call.event_index)
            if not call.answered:
                slots.setdefault(call.event_index, {})[call.part_index] = call
        for index in events & slots.keys():
            slots[index] = dict(sorted(slots[index].items()))

    def copy_by_event_and_id(self, copies: CallCopies) -> OpenCallIndex:
        """A copy of the index by event, id and branch, over `copies` (id-less calls apart)."""
        copied = OpenCallIndex()
        for index, slot in self.slots.items():
            copied.slots[index] = {part_index: copies.of(call) for part_index, call in slot.items()}
        copied.newest_by_id = {
            call_id: copies.of(call) for call_id, call in self.newest_by_id.items()
        }
        copied.reused_unanswered = dict(self.reused_unanswered)
        copied.answered_ids = dict(self.answered_ids)
        copied.watch_compaction = self.watch_compaction
        copied.reuse_stays_irregular = self.reuse_stays_irregular
        if self.by_branch is not None:
            copied.by_branch = {
                branch: {call_id: copies.of(call) for call_id, call in calls.items()}
                for branch, calls in self.by_branch.items()
            }
        return copied

    def copy_idless_into(self, copied: OpenCallIndex, copies: CallCopies) -> None:
        copied.idless_open = {
            name: deque(copies.of(call) for call in queue)
            for name, queue in self.idless_open.items()
        }
