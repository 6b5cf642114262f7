"""Which function calls in an event history are answered, pending or missing.

This module is the pure half of adk-pairing: it reads events and never awaits,
logs or touches a store. The rules follow the ones ADK itself applies when it
builds a model request:

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
* A rewind is any event whose ``actions.rewind_before_invocation_id`` is set,
  *whatever else it carries*. ADK's request builder drops it, content and all,
  together with every event from the first event of the rewound invocation up
  to it, walking backwards so that a rewind inside an annulled stretch is never
  applied (a rewind of a rewind revives what the inner one annulled). Rewinds
  arrived in google-adk 1.17.0 (absent from 1.16.0's ``EventActions``); every
  supported version does exactly this: inline in ``_get_contents``
  (``flows/llm_flows/contents.py:362`` in 1.20.0, ``:452`` in 1.39.1, ``:539``
  in 2.0.0), then through ``events/_rewind_events.py`` ``_apply_rewinds``
  (2.6.2 and 2.9.2 from ``contents.py``, 2.10.0 to 2.13.0 from
  ``flows/llm_flows/context/_contents.py``). So annulled events neither answer
  calls nor need answers, and a call or response inside a rewind event counts
  for nothing. ADK itself writes rewinds without content
  (``sessions/_rewind_utils.py``, ``runners.py`` before 2.9); a rewind with
  content is malformed, but one rule for all events is what keeps every path
  that builds a view (append, fresh read, cached read) on the same view.
* An unanswered call is *pending* when ADK holds it open on purpose
  (`adk_pairing.wire.is_held_open`) and *missing* otherwise.
* A call is also pending while the child run it started waits (`adk_pairing.wire.held_by_child`):
  from google-adk 2.6 a sub-agent with ``mode="single_turn"`` or ``"task"``
  runs as a tool in the caller's session, in a branch whose segment
  ``<agent>@<call id>`` names the call (``_BranchPath.run_ids``, the way ADK's
  ``should_pause_invocation`` finds it). While an event of that run holds an
  unanswered call ADK holds open, every call its branch names waits on it
  (google-adk <= 2.10 never answers the caller once the child resumes: it is
  missing again then); a task run (its events scoped to the call,
  ``isolation_scope == <call id>``) holds its call open until the task ends
  (``_TaskAgentTool`` defers the result).
* A call sharing its `Part` with text (or a signed thought) is not a call on
  the wire (`adk_pairing.wire.never_sent_as_a_call`), so a placeholder for it
  would be an orphan ``tool_result``. Malformed input.

Older request builders pair reused ids differently, and the view must never
make their request worse than the stored history's. Two traits, detected by
running ADK's own functions once (`adk_pairing.builder_traits`), choose the
ledger's adapters for them (`_PairsByLastResponse`, `_WalksBack`):

* ADK <= 2.6 puts the *last* response with an id after *every* call with that
  id. There, a response answers every call with its id, earlier or later: a
  placeholder for a call whose id some response carries would only replace
  that response, including after an earlier call it really answers.
* ADK <= 2.10 walks back through the history from a trailing response event
  that does not directly follow its call event, and raises (or truncates)
  when an older call event reuses one of the found event's ids. When a
  response event directly follows a call event that shares an id with an
  older call event, that event's other open calls are *withheld* while the
  response event is the last one with parts: the view adds no placeholder
  between the two and leaves the calls as stored (the unwrapped request),
  since that is the only place a placeholder can go. The next event with
  parts ends the hazard and brings the placeholder back.
* The same id twice in one event (malformed) is one ``tool_use`` id on the
  wire: one result answers both, so only the first is tracked.

Some histories are *irregular*: a call id twice in one event, a call id
reused while an earlier call with it is still open, text and a call in one
``Part``, two id-less calls in one event, an id-less response when no
id-less call of its name is open, one id answered twice in one event, calls
and results in one event, a call id of the form ADK's Anthropic converter gives
the ids it rewrites (``toolu_fallback_<n>``: two stored ids may be one on the
wire, `adk_pairing.wire.may_collide_with_a_fallback`), a call beside ADK's
confirmation or credential request (the builder leaves that event out whole,
`adk_pairing.wire.builder_leaves_out`, so such a call is not counted unless
ADK holds it open), or one agent's event answering another agent's call (ADK
authors a tool's result as the agent that called it, or the user for
answers from outside).
ADK's request builder keys its rearranging on call ids (an id-less response
counts under the id ``None``) and picks one response event per call event and
id, so in such a history where a placeholder lands in the request depends on
the rest of the history, and on the ADK release. The ledger marks them
(`PairingLedger.irregular`); `adk_pairing.builder_check` then checks the view against
ADK's own builder before it is served. ADK itself writes none of these: a
model that repeats ids gives the first two, hand-written, migrated or damaged
stores the rest. A response repeating the id of an answered call in an event
of its own (a long-running tool's progress updates) is regular. Under the
older builders' traits two more shapes are irregular, because the fuzz run
finds them misplaced there and only there (google-adk <= 2.10, whose
latest-response rearranger and id map treat them specially): a result before
any call with its id, and a result under another name than its call's.

`PairingLedger` keeps this state incrementally, one event at a time, so the
session-service decorator can keep a view current on every ``append_event``
without rescanning the history.
"""

from __future__ import annotations

import enum
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import ClassVar, NamedTuple, Self

from google.adk.events.event import Event
from google.genai.types import FunctionCall, FunctionResponse, Part

from .builder_traits import NEWEST_BUILDER, BuilderTraits, builder_traits
from .wire import (
    LEFT_OUT_CALL_NAMES,
    IrregularShape,
    branch_shows,
    branches_shown_to,
    builder_leaves_out,
    call_key,
    held_by_child,
    is_held_open,
    may_collide_with_a_fallback,
    never_sent_as_a_call,
)


class CallStatus(enum.StrEnum):
    """What the history says about one function call."""

    ANSWERED = "answered"
    PENDING = "pending"
    MISSING = "missing"


@dataclass(slots=True)
class TrackedCall:
    """One function call and, once known, whether something answered it."""

    event_index: int
    part_index: int
    call_id: str | None
    name: str
    held_open: bool
    #: The author of the call's event (the agent that made it).
    author: str
    answered: bool = False
    #: Left unanswered in the view on purpose (see `PairingLedger`).
    withheld: bool = False
    #: The branch of the call's event: None here, set on a `BranchedCall`.
    branch: ClassVar[str | None] = None

    @property
    def status(self) -> CallStatus:
        if self.answered:
            return CallStatus.ANSWERED
        return CallStatus.PENDING if self.held_open else CallStatus.MISSING

    @property
    def key(self) -> str:
        """The call's id, or its function name when the model gave it no id."""
        return call_key(self.call_id, self.name)


class BranchedCall(TrackedCall):
    """A call in an event with a branch; a history without branches makes none."""

    __slots__ = ("branch",)  # type: ignore[misc]

    def __init__(self, *fields: object, branch: str) -> None:
        super().__init__(*fields)  # type: ignore[arg-type]
        self.branch = branch  # type: ignore[misc]


def live_event_mask(events: Sequence[Event]) -> list[bool]:
    """Marks which events survive rewinds, as ADK's request builder decides.

    A rewind event (``actions.rewind_before_invocation_id == X``) annuls itself
    and every event from the first event of invocation ``X`` up to it. Walking
    backwards keeps the cost linear; the invocation index is built only when a
    rewind is present.
    """
    live = [True] * len(events)
    first_index_of: dict[str, int] | None = None
    i = len(events) - 1
    while i >= 0:
        actions = events[i].actions
        target = actions.rewind_before_invocation_id if actions is not None else None
        if target:
            if first_index_of is None:
                first_index_of = {}
                for idx, event in enumerate(events):
                    if event.invocation_id and event.invocation_id not in first_index_of:
                        first_index_of[event.invocation_id] = idx
            live[i] = False
            start = first_index_of.get(target)
            if start is not None and start < i:
                for j in range(start, i):
                    live[j] = False
                i = start
        i -= 1
    return live


def is_rewind(event: Event) -> bool:
    """Whether `event` is a rewind: it carries a rewind target, with or without content.

    ADK's request builder honours the target on any event and drops the
    event's content with it (see the module docstring), so every walk here
    does too. Appending a rewind can annul events already walked: whoever
    keeps a ledger current must rebuild it then.
    """
    actions = event.actions
    return bool(actions is not None and actions.rewind_before_invocation_id)


class Observation(NamedTuple):
    """What observing one event changed."""

    #: Earlier calls this event answered, or withheld from the view.
    settled: Sequence[TrackedCall]
    #: The event's own index when it made calls (all open at first), else None.
    opened: int | None
    #: Earlier open calls whose status changed (pending <-> missing) as a child
    #: run they started began or stopped waiting (`held_by_child`).
    held: Sequence[TrackedCall] = ()

    @property
    def changed(self) -> set[int]:
        """Indices of the events whose open calls changed."""
        indices = {call.event_index for call in (*self.settled, *self.held)}
        if self.opened is not None:
            indices.add(self.opened)
        return indices


_NOTHING_CHANGED = Observation((), None)


class OpenCalls(Mapping[int, list[TrackedCall]]):
    """A read-only view of a ledger's open calls: event index -> its open calls.

    Built in O(1); each lookup lists one event's open calls in part order.
    """

    __slots__ = ("_slots",)

    def __init__(self, slots: dict[int, dict[int, TrackedCall]]) -> None:
        self._slots = slots

    def __getitem__(self, index: int) -> list[TrackedCall]:
        return list(self._slots[index].values())

    def __iter__(self) -> Iterator[int]:
        return iter(self._slots)

    def __len__(self) -> int:
        return len(self._slots)

    def __contains__(self, index: object) -> bool:
        return index in self._slots


class PairingLedger:
    """Attributes responses to calls, one event at a time, in O(parts) each.

    ``open_calls`` maps the index of every event that still has unanswered
    calls to those calls, in part order; it is what a repaired view needs.
    Only open calls are indexed: an answered call can never change again, so
    settling one is O(1) whatever the width of its event, and
    `carry_forward` copies only what later events can still change.

    `traits` say how the installed ADK's request builder pairs reused ids
    (`adk_pairing.builder_traits`). The methods here are the newest builder's
    rules (google-adk 2.11 and later); an older builder's differences (see the
    module docstring) live in its adapter (`_OlderBuilderAdapter`), chosen
    once from the traits, which `walk` consults at a few marked points.

    With `reads_built_request`, the ledger reads contents ADK's builder has
    already made (the request pass, `adk_pairing.request_pass`) rather than
    stored events, and two rules change with that: every call there is sent
    (the builder has already left out the events it leaves out, so a call
    beside ADK's confirmation or credential request is tracked), and a call
    whose id an earlier call of the same event carries is tracked as a call of
    its own rather than skipped (the request pass renames such ids apart, so
    each is its own ``tool_use`` on the wire and needs its own answer).
    """

    __slots__ = (
        "_adapter",
        "_answered_later",
        "_by_branch",
        "_held_now",
        "_holding",
        "_idless_open",
        "_newest_by_id",
        "_open",
        "_reads_built_request",
        "_to_confirm",
        "_waited_on",
        "calls",
        "placements_moved",
        "shapes",
        "traits",
    )

    def __init__(
        self, traits: BuilderTraits | None = None, *, reads_built_request: bool = False
    ) -> None:
        self.traits = traits if traits is not None else builder_traits()
        # None under the newest builder: its rules are the plain path.
        self._adapter = _adapter_for(self.traits)
        self._reads_built_request = reads_built_request
        #: Every call observed, in order (after `carry_forward`: the calls
        #: open at that point and every call observed since).
        self.calls: list[TrackedCall] = []
        # Event index -> part index -> its open call, both in history order.
        self._open: dict[int, dict[int, TrackedCall]] = {}
        # Call id -> the newest call with that id, while that call is open. An
        # answered newest call is dropped rather than kept: a later response
        # with its id answers nothing either way (it must not reach back to an
        # older open call with the same id).
        self._newest_by_id: dict[str, TrackedCall] = {}
        # Once a call event with a branch is seen: branch -> call id -> the
        # newest open call with that id in that branch. Until then every call
        # is branch-less and `_newest_by_id` is what every branch sees.
        self._by_branch: dict[str | None, dict[str, TrackedCall]] | None = None
        # While `observe` runs: the open calls whose status it changed (`held_by_child`).
        self._held_now: list[TrackedCall] | None = None
        # A held-open call in a child run -> the calls whose runs it is in, by
        # the id() of each call; and a call kept waiting -> itself, how many
        # such calls keep it waiting, and whether ADK held it open before.
        self._holding: dict[int, list[TrackedCall]] = {}
        self._waited_on: dict[int, tuple[TrackedCall, int, bool]] = {}
        # Function name -> the open id-less calls of the newest event that has
        # id-less calls of that name. An emptied queue stays: it still owns
        # later responses of that name, which then answer nothing.
        self._idless_open: dict[str, deque[TrackedCall]] = {}
        # Call event index -> (lowest and highest part index of its calls that
        # later events answered, the index of the event that did, or -1 when
        # that cannot take its placeholders, how many it answered), while the
        # call event still has open calls: where its placeholders may go
        # (`placement`).
        self._answered_later: dict[int, tuple[int, int, int, int]] = {}
        #: Set when a placement `placement` gave moved back to its call event
        #: (`_pin_placements`); whoever keeps a view current rebuilds it then.
        self.placements_moved = False
        # The call event whose record `walk` confirms after the event that
        # answered some of its calls (`_confirm_sole_answers`), or -1.
        self._to_confirm = -1
        #: The irregular shapes of the history walked so far (see the module
        #: docstring). Added to only on branches a regular history never takes.
        self.shapes: set[IrregularShape] = set()

    @property
    def irregular(self) -> bool:
        """Whether the history walked so far has an irregular shape (`shapes`)."""
        return bool(self.shapes)

    @property
    def withholding(self) -> bool:
        """True while some calls are withheld until an event with parts follows.

        `observe` does not report their release; a view kept current by
        appends rebuilds from a fresh walk on its next append instead. Only
        an older builder's adapter withholds (`_WalksBack`).
        """
        adapter = self._adapter
        return adapter is not None and adapter.withholding

    @property
    def open_calls(self) -> OpenCalls:
        """Event index -> its unanswered calls, in part order (only events that have some)."""
        return OpenCalls(self._open)

    def observe(self, event: Event, index: int) -> Observation:
        """Records `event` (at `index` in the history) and says what it changed.

        `event` must not be a rewind (`is_rewind`): a rewind can annul events
        already observed, so the ledger has to be built again instead.
        """
        if event.content is None:
            return _NOTHING_CHANGED
        settled: list[TrackedCall] = []
        held: list[TrackedCall] = []
        self._held_now = held
        try:
            self.walk((event,), index, settled)
        finally:
            self._held_now = None
        opened = index if index in self._open else None
        if opened is None and not settled and not held:
            return _NOTHING_CHANGED
        return Observation(settled, opened, held)

    def walk(
        self,
        events: Sequence[Event],
        start: int,
        settled: list[TrackedCall] | None = None,
        *,
        stop_at_rewind: bool = False,
        answered_at: list[tuple[int, int]] | None = None,
    ) -> int | None:
        """Records `events`, the first at index `start`; returns None when all are recorded.

        This loop runs once per event of every history the decorator has not
        seen, so it is written for that: no call per event (under the newest
        builder's traits, which need no adapter), nothing allocated
        for an event without calls, and only the fields the rules need are
        read (each is a likely cache miss on freshly loaded events). Earlier
        calls that the events answer are appended to `settled` when given,
        and, in step with it, the (event index, part index) of each answering
        response to `answered_at` (the request pass moves responses by it).
        One response answers one call, and `settled` holds only answered
        calls, only under the newest builder's traits: `answered_at` needs
        them (an older builder's adapter settles every call with an id at
        once, or reports withheld calls that nothing answered).

        With `stop_at_rewind`, it stops at the first rewind (`is_rewind`, with
        or without content) and returns that event's index, so the caller can
        walk again with the rewind applied.

        The loop is the newest builder's rules; an older builder's adapter
        (`_OlderBuilderAdapter`) gets a say at three marked points: each
        response, each answer, and the end of each event's parts.
        """
        newest_by_id = self._newest_by_id
        by_branch = self._by_branch
        idless_open = self._idless_open
        adapter = self._adapter
        if answered_at is not None and adapter is not None:
            raise ValueError("answered_at needs a ledger with NEWEST_BUILDER traits")
        index = start - 1
        for event in events:
            index += 1
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
            calls_here: list[tuple[int, Part]] | None = None
            part_index = -1
            for part in parts:
                part_index += 1
                function_call = part.function_call
                if function_call is not None:
                    # Registered after the loop: a response never answers a
                    # call in its own event.
                    if calls_here is None:
                        calls_here = [(part_index, part)]
                        if part_index and _earlier_response_with(parts, part_index):
                            self.shapes.add(IrregularShape.CALLS_AND_RESULTS_IN_ONE_EVENT)
                    else:
                        calls_here.append((part_index, part))
                response = part.function_response
                if response is None:
                    continue
                if calls_here is not None:
                    self.shapes.add(IrregularShape.CALLS_AND_RESULTS_IN_ONE_EVENT)
                if adapter is not None and adapter.takes_response(
                    self, event, index, parts, part_index, response, settled
                ):
                    continue
                response_id = response.id
                if response_id:
                    # Only open calls are indexed, so a hit is always open.
                    if by_branch is None:
                        call = newest_by_id.pop(response_id, None)
                    else:
                        call = self._take_shown(response_id, event.branch)
                    if call is None and _earlier_response_with(parts, part_index, response_id):
                        self.shapes.add(IrregularShape.ID_ANSWERED_TWICE_IN_ONE_EVENT)
                else:
                    queue = idless_open.get(response.name or "")
                    if queue:
                        call = queue.popleft()
                    else:
                        call = None
                        self.shapes.add(IrregularShape.IDLESS_RESULT_NOTHING_WAITS_FOR)
                if call is None:
                    if self._answered_later:
                        # Perhaps a second result for an answered call whose
                        # event still has open calls: ADK takes the last one,
                        # so no later event may take their placeholders.
                        self._pin_placements()
                    continue
                responder = event.author
                if call.author != responder and responder != "user":
                    # One agent's result for another agent's call: ADK writes a
                    # tool's result under the agent that called it (or the user).
                    self.shapes.add(IrregularShape.ANSWER_FROM_ANOTHER_AGENT)
                elif adapter is not None:
                    adapter.check_answer(self, call, response)
                self._settle(call, settled, index)
                if answered_at is not None:
                    answered_at.append((index, part_index))
            if self._to_confirm >= 0:
                self._confirm_sole_answers(parts, index)
            if adapter is not None:
                adapter.end_parts(self, event, index, parts, calls_here, settled)
            if calls_here is not None:
                self._open_calls_of(event, index, calls_here)
                by_branch = self._by_branch
        return None

    def pass_over(self, calls: Iterable[tuple[str | None, str]]) -> None:
        """Accounts for calls that are answered right where they stand, without tracking them.

        What walking them and their answers would leave behind: an id-ed call
        makes the open call with its id unreachable (a later response with the
        id finds the newer, answered call), and an event of id-less calls owns
        later id-less responses of their names (which then answer nothing).
        The request pass uses it to skip stretches it has checked already.

        Only for a ledger with the newest builder's traits (the request pass's,
        see `adk_pairing.request_pass`): under the older traits a call answered
        where it stands also answers, or withholds, calls elsewhere, which
        skipping it would not record.
        """
        if self.traits != NEWEST_BUILDER:
            raise ValueError("pass_over needs a ledger with NEWEST_BUILDER traits")
        for call_id, name in calls:
            if call_id:
                self._newest_by_id.pop(call_id, None)
            else:
                self._idless_open[name] = deque()

    def _hold_callers(self, event: Event, branch: str, opened: Mapping[int, TrackedCall]) -> None:
        """Makes pending the open calls whose child run `event` (in `branch`) holds open."""
        waiting = [call for call in opened.values() if call.held_open]
        scope = getattr(event, "isolation_scope", None)
        for run_id in held_by_child(branch, scope, bool(waiting)):
            caller = self._newest_by_id.get(run_id)
            if caller is None and self._adapter is not None:
                caller = self._adapter.newest_open_call_with(run_id)
            if caller is None or caller.answered:
                continue
            was_pending = caller.held_open
            if run_id == scope:
                # A task's call: open until the task ends, whatever waits.
                self._waited_on.pop(id(caller), None)
            elif waiting:
                _, count, held_before = self._waited_on.get(id(caller), (caller, 0, was_pending))
                self._waited_on[id(caller)] = (caller, count + len(waiting), held_before)
                for call in waiting:
                    self._holding.setdefault(id(call), []).append(caller)
            caller.held_open = True
            if not was_pending and self._held_now is not None:
                self._held_now.append(caller)

    def _stop_holding(self, call: TrackedCall) -> None:
        """`call`, answered, no longer keeps the calls whose child runs it was in waiting."""
        for caller in self._holding.pop(id(call), ()):
            waited = self._waited_on.get(id(caller))
            if waited is None:
                continue  # a task's call
            _, count, held_before = waited
            if count > 1:
                self._waited_on[id(caller)] = (caller, count - 1, held_before)
                continue
            del self._waited_on[id(caller)]
            if not held_before and not caller.answered:
                caller.held_open = False
                if self._held_now is not None:
                    self._held_now.append(caller)

    def _take_shown(self, call_id: str, branch: str | None) -> TrackedCall | None:
        """Unindexes and returns the open call a response with `call_id` in `branch` answers.

        The newest open call with the id among those `branch_shows` the
        response's branch (every call for a branch-less response).
        """
        by_branch = self._by_branch
        assert by_branch is not None
        if not branch:
            call = self._newest_by_id.pop(call_id, None)
            if call is not None:
                in_branch = by_branch.get(call.branch)
                if in_branch is not None and in_branch.get(call_id) is call:
                    del in_branch[call_id]
                if self._holding:
                    self._stop_holding(call)  # the caller answers it right after
            return call
        call = None
        for shown in branches_shown_to(branch):
            in_branch = by_branch.get(shown)
            candidate = in_branch.get(call_id) if in_branch is not None else None
            if candidate is not None and (call is None or candidate.event_index > call.event_index):
                call = candidate
        if call is not None:
            del by_branch[call.branch][call_id]
            if self._newest_by_id.get(call_id) is call:
                del self._newest_by_id[call_id]
        if call is not None and self._holding:
            self._stop_holding(call)  # the caller answers it right after
        return call

    def _settle(self, call: TrackedCall, settled: list[TrackedCall] | None, by: int) -> None:
        """Marks `call` answered by the event at index `by`."""
        call.answered = True
        if call.withheld:
            return  # already out of the view (see `_withhold_before_a_walk_back`)
        event_index = call.event_index
        slot = self._open[event_index]
        del slot[call.part_index]
        if not slot:
            del self._open[event_index]
            if self._answered_later:
                self._answered_later.pop(event_index, None)
        else:
            part_index = call.part_index
            known = self._answered_later.get(event_index)
            if known is None:
                # Only the event right after the call event can take its
                # placeholders (`placement`).
                after = by if by == event_index + 1 else -1
                self._answered_later[event_index] = (part_index, part_index, after, 1)
            else:
                after = known[2] if known[2] == by else -1
                self._answered_later[event_index] = (
                    min(known[0], part_index),
                    max(known[1], part_index),
                    after,
                    known[3] + 1,
                )
            if after >= 0:
                self._to_confirm = event_index
        if settled is not None:
            settled.append(call)

    def _confirm_sole_answers(self, parts: Sequence[Part], index: int) -> None:
        """Keeps the event at `index` as a placement only if all its results answered one event."""
        call_index, self._to_confirm = self._to_confirm, -1
        known = self._answered_later.get(call_index)
        if known is None or known[2] != index:
            return
        results = sum(part.function_response is not None for part in parts)
        if results != known[3] or len(parts) != results:
            self._answered_later[call_index] = (known[0], known[1], -1, known[3])

    def _pin_placements(self) -> None:
        """Leaves every call event's placeholders right after it (`placement`)."""
        if any(after >= 0 for _, _, after, _ in self._answered_later.values()):
            self.placements_moved = True
        self._answered_later = {
            index: (low, high, -1, count)
            for index, (low, high, _, count) in self._answered_later.items()
        }

    def placement(self, index: int) -> int | None:
        """After which event the placeholders of call event `index` go; None if nowhere.

        ADK's builder merges every response event of one call event into one,
        in history order (``merge_function_response_events``, 2.13.0
        ``flows/llm_flows/tools/_rearranger.py:29``; the same merge in every
        supported release): the first event's results, then each later
        event's new ones. The placeholders of one call event are one event,
        in call order. When later events answered some of its calls, that
        merge gives the answers in call order only if the open calls all come
        before the answered ones (the placeholders go right after the call
        event, as usual) or all after them. They go right after the event
        that answered those only when it is the event right after the call
        event and holds results for this call event alone (ADK's own shape:
        an ordinary call's result before a long-running call's); past any
        other event ADK's rearrangers would attribute or cut differently
        (a result goes to the newest call before it with its id, and a
        trailing result event cuts the history back to its call event).
        Otherwise no one placement can: None.
        """
        known = self._answered_later.get(index)
        if known is None:
            return index
        lowest_answered, highest_answered, last_answer, _ = known
        open_parts = self._open.get(index)
        if not open_parts:
            return index  # every call there is answered: nothing to place
        if next(reversed(open_parts)) < lowest_answered:
            return index
        if highest_answered < next(iter(open_parts)) and last_answer >= 0:
            return last_answer
        return None

    def carry_forward(self) -> PairingLedger:
        """A new ledger that continues from this one, sharing nothing mutable.

        It holds copies of the open (and withheld) calls only, so it costs O(open calls), not
        O(history): a caller can keep it and later observe just the events
        appended since, as if the whole history had been walked again.
        """
        copies: dict[int, TrackedCall] = {}

        def copy_of(call: TrackedCall) -> TrackedCall:
            copy = copies.get(id(call))
            if copy is None:
                fields = (
                    call.event_index,
                    call.part_index,
                    call.call_id,
                    call.name,
                    call.held_open,
                    call.author,
                    call.answered,
                    call.withheld,
                )
                branch = call.branch
                copy = copies[id(call)] = (
                    TrackedCall(*fields) if branch is None else BranchedCall(*fields, branch=branch)
                )
            return copy

        successor = PairingLedger(self.traits, reads_built_request=self._reads_built_request)
        for index, slot in self._open.items():
            copied_slot = {part_index: copy_of(call) for part_index, call in slot.items()}
            successor.calls.extend(copied_slot.values())
            successor._open[index] = copied_slot
        successor._newest_by_id = {
            call_id: copy_of(call) for call_id, call in self._newest_by_id.items()
        }
        if self._by_branch is not None:
            successor._by_branch = {
                branch: {call_id: copy_of(call) for call_id, call in calls.items()}
                for branch, calls in self._by_branch.items()
            }
        for key, callers in self._holding.items():
            held = copies.get(key)
            if held is not None:  # an unanswered held-open call: copied as open above
                successor._holding[id(held)] = [copy_of(caller) for caller in callers]
        successor._waited_on = {
            id(copy_of(caller)): (copy_of(caller), count, held_before)
            for caller, count, held_before in self._waited_on.values()
        }
        successor._idless_open = {
            name: deque(copy_of(call) for call in queue)
            for name, queue in self._idless_open.items()
        }
        if self._adapter is not None:
            assert successor._adapter is not None  # the same traits choose the same adapter
            self._adapter.carry_into(successor._adapter, successor, copies, copy_of)
        successor.shapes = set(self.shapes)
        successor._answered_later = dict(self._answered_later)
        successor._to_confirm = self._to_confirm
        return successor

    def _open_calls_of(self, event: Event, index: int, calls_here: list[tuple[int, Part]]) -> None:
        held_open_ids = event.long_running_tool_ids or ()
        author = event.author
        branch = event.branch or None
        newest_by_id = self._newest_by_id
        by_branch = self._by_branch
        if branch is not None and by_branch is None:
            # The first branch: every call before it is branch-less.
            by_branch = self._by_branch = {None: dict(newest_by_id)}
        in_branch = by_branch.setdefault(branch, {}) if by_branch is not None else None
        adapter = self._adapter
        opened: dict[int, TrackedCall] = {}
        opened_ids: set[str] = set()
        idless_here: dict[str, deque[TrackedCall]] | None = None
        left_out: bool | None = None
        for part_index, part in calls_here:
            function_call: FunctionCall = part.function_call  # type: ignore[assignment]
            name = function_call.name or ""
            call_id = function_call.id or None
            # Positional: cheaper on this hot path (benchmarks/RESULTS.md, "Figures
            # behind the core's choices").
            held_open = is_held_open(name, call_id, held_open_ids)
            if name not in LEFT_OUT_CALL_NAMES and not self._reads_built_request:
                if left_out is None:
                    left_out = builder_leaves_out(event.content.parts)  # type: ignore[union-attr]
                if left_out:
                    self.shapes.add(IrregularShape.CALL_BESIDE_AN_ADK_REQUEST)
                    if not held_open:
                        # Malformed: ADK's builder leaves this event out whole,
                        # so the call is never sent; a placeholder for it would
                        # be, and would answer an earlier call with its id. (A
                        # call ADK holds open stays pending; the builder check
                        # sees where its placeholder lands.)
                        continue
            if never_sent_as_a_call(part):
                self.shapes.add(IrregularShape.NOT_SENT_AS_A_CALL)
                # Malformed: the converter sends this part as its text, so a
                # placeholder would answer a tool_use that is not there (an
                # orphan tool_result, rejected). It is not a call on the wire,
                # so it is not one here: a later result with its id reaches the
                # model after the previous tool_use, which is where the ledger
                # attributes it too.
                continue
            call = (
                TrackedCall(index, part_index, call_id, name, held_open, author)
                if branch is None
                else BranchedCall(
                    index, part_index, call_id, name, held_open, author, branch=branch
                )
            )
            if call_id is not None and may_collide_with_a_fallback(call_id):
                self.shapes.add(IrregularShape.CALL_ID_LIKE_A_FALLBACK)
            if (
                call_id is not None
                and adapter is not None
                and adapter.takes_call(self, call, opened_ids, opened)
            ):
                continue
            if call_id is not None:
                if call_id in opened_ids:
                    self.shapes.add(IrregularShape.CALL_ID_TWICE_IN_ONE_EVENT)
                    if not self._reads_built_request:
                        # Malformed: the same id twice in one event is one
                        # tool_use id on the wire; one result answers both (and
                        # ADK merges results keyed by id). A second placeholder
                        # would split this event from a model event after it
                        # that Anthropic merges with it, orphaning the result
                        # they share. (The request pass renames the second
                        # apart instead.)
                        continue
                opened_ids.add(call_id)
                if call_id in newest_by_id:
                    # Not dict.setdefault: dearer on a cold walk (benchmarks/RESULTS.md).
                    self.shapes.add(IrregularShape.CALL_ID_REUSED_WHILE_OPEN)
                newest_by_id[call_id] = call
                if in_branch is not None:
                    in_branch[call_id] = call
            else:
                if idless_here is None:
                    idless_here = {}
                elif IrregularShape.IDLESS_CALLS_IN_ONE_EVENT not in self.shapes:
                    # Two id-less calls in one event: ADK merges their result
                    # events keyed by id, and both results have the key None.
                    self.shapes.add(IrregularShape.IDLESS_CALLS_IN_ONE_EVENT)
                idless_here.setdefault(name, deque()).append(call)
            opened[part_index] = call
        self.calls.extend(opened.values())
        # This event now owns every later id-less response of these names.
        if idless_here is not None:
            self._idless_open.update(idless_here)
        if opened:
            self._open[index] = opened
        if branch is not None and "@" in branch:
            self._hold_callers(event, branch, opened)


class _OlderBuilderAdapter:
    """What an older ADK request builder does differently from the newest, as hooks.

    `PairingLedger`'s own methods are the newest builder's rules (google-adk
    2.11 and later). A ledger built for an older builder's traits gets one
    adapter, chosen once (`_adapter_for`), which `PairingLedger.walk` and
    `PairingLedger._open_calls_of` consult at the points below; under the
    newest builder there is none, so its walk pays only an ``is None`` test
    at each of them. Each hook here is the newest builder's answer:
    nothing to add. The adapters are mixins (ADK <= 2.6 has both
    differences: `_PairsByLastResponseAndWalksBack`), so a hook both
    implement passes on through ``super()``.
    """

    def __init__(self, traits: BuilderTraits) -> None:
        pass

    @property
    def withholding(self) -> bool:
        """Whether calls are withheld from the view (`PairingLedger.withholding`)."""
        return False

    def takes_response(
        self,
        ledger: PairingLedger,
        event: Event,
        index: int,
        parts: Sequence[Part],
        part_index: int,
        response: FunctionResponse,
        settled: list[TrackedCall] | None,
    ) -> bool:
        """Sees each response first; True when it attributed the response itself."""
        return False

    def check_answer(
        self, ledger: PairingLedger, call: TrackedCall, response: FunctionResponse
    ) -> None:
        """Sees each response the newest rules attribute to `call`, from its agent or the user."""

    def end_parts(
        self,
        ledger: PairingLedger,
        event: Event,
        index: int,
        parts: Sequence[Part],
        calls_here: list[tuple[int, Part]] | None,
        settled: list[TrackedCall] | None,
    ) -> None:
        """Runs once per event with parts: after its responses, before its calls open."""

    def takes_call(
        self,
        ledger: PairingLedger,
        call: TrackedCall,
        opened_ids: set[str],
        opened: dict[int, TrackedCall],
    ) -> bool:
        """Sees each new call with an id; True when it indexed (or settled) the call itself."""
        return False

    def newest_open_call_with(self, call_id: str) -> TrackedCall | None:
        """The newest open call with `call_id` in this adapter's own index, if it keeps one."""
        return None

    def carry_into(
        self,
        successor: Self,
        ledger: PairingLedger,
        copies: Mapping[int, TrackedCall],
        copy_of: Callable[[TrackedCall], TrackedCall],
    ) -> None:
        """Copies this adapter's state into `successor`, the adapter of `ledger`.

        For `PairingLedger.carry_forward`, whose `copy_of` copies a call once
        (`copies` holds the copies made so far, by the id() of the original).
        """


class _WalksBack(_OlderBuilderAdapter):
    """ADK <= 2.10: the latest-response rearranger walks back from a trailing result event.

    Mirrors ``_rearrange_events_for_latest_function_response``: 2.10.0
    ``flows/llm_flows/tools/_rearranger.py:311`` (run by
    ``flows/llm_flows/context/_contents.py:542``), 2.6.2
    ``flows/llm_flows/contents.py:194`` (run by ``contents.py:829``; 1.20.0
    ``contents.py:126``, run by :434). It returns at once when the event
    before the trailing response event holds one of its calls (2.10.0 :345,
    2.6.2 :228, 1.20.0 :160); otherwise it walks back, and an older call
    event sharing an id with the one it found raises (2.10.0 :362, 2.6.2
    :245, 1.20.0 :177) or becomes the new start of a merge that drops
    everything after it (its ``break`` leaves only the inner loop: 2.10.0
    :371, 2.6.2 :254, 1.20.0 :186). 2.13.0 finds each result's own call
    event instead (``_find_owning_call_event_index``,
    ``tools/_rearranger.py:359``, used by :378).

    So it withholds (`_withhold_before_a_walk_back`), and marks two shapes
    the fuzz run finds misplaced only here: a result before any call with its
    id, and a result under another name than its call's. Where the builder
    drops results no call carries the id of before the rearranger runs
    (``_drop_orphaned_function_responses``, 2.10.0 ``context/_contents.py:541``,
    ``tools/_rearranger.py:171``; absent from 2.6.2), an event of such results
    does not end the hazard.
    """

    def __init__(self, traits: BuilderTraits) -> None:
        super().__init__(traits)
        self._drops_orphan_responses = traits.drops_orphan_responses
        # Every call id seen (None for id-less), the newest call event's index
        # and ids if it reuses one, and the index of the last event with parts.
        self._seen_call_ids: set[str | None] = set()
        self._last_call_event: tuple[int, frozenset[str | None]] | None = None
        self._previous_index = -1
        # The calls withheld while a response event is the last one.
        self._withheld: list[TrackedCall] | None = None
        # Within one event's parts: the ids of its responses (None for id-less).
        self._response_ids: set[str | None] | None = None

    @property
    def withholding(self) -> bool:
        return self._withheld is not None

    def takes_response(
        self,
        ledger: PairingLedger,
        event: Event,
        index: int,
        parts: Sequence[Part],
        part_index: int,
        response: FunctionResponse,
        settled: list[TrackedCall] | None,
    ) -> bool:
        response_id = response.id
        if self._response_ids is None:
            self._response_ids = {response_id or None}
        else:
            self._response_ids.add(response_id or None)
        if response_id and response_id not in self._seen_call_ids:
            # A result before any call with its id.
            ledger.shapes.add(IrregularShape.RESULT_BEFORE_ITS_CALL)
        return super().takes_response(ledger, event, index, parts, part_index, response, settled)

    def check_answer(
        self, ledger: PairingLedger, call: TrackedCall, response: FunctionResponse
    ) -> None:
        if call.name != (response.name or ""):
            ledger.shapes.add(IrregularShape.RESULT_UNDER_ANOTHER_NAME)

    def end_parts(
        self,
        ledger: PairingLedger,
        event: Event,
        index: int,
        parts: Sequence[Part],
        calls_here: list[tuple[int, Part]] | None,
        settled: list[TrackedCall] | None,
    ) -> None:
        """Ends or starts the hazard after the event's responses, then notes its calls."""
        response_ids, self._response_ids = self._response_ids, None
        if self._withheld is not None and not (
            # ADK drops an event of orphan responses before looking for
            # the last one, so it does not end the hazard.
            calls_here is None
            and response_ids is not None
            and self._drops_orphan_responses
            and len(response_ids) == len(parts)
            and None not in response_ids
            and response_ids.isdisjoint(self._seen_call_ids)
        ):
            # The result is no longer last: the placeholder is safe again.
            # (A withheld call this event answered stays answered.)
            self._release_withheld(ledger)
        if response_ids is not None:
            self._withhold_before_a_walk_back(ledger, response_ids, settled, event.branch)
        if calls_here is not None:
            # Every call the builder sees, sent or not: its walk reads them all.
            ids = frozenset(
                part.function_call.id or None  # type: ignore[union-attr]
                for _, part in calls_here
            )
            reuses = not self._seen_call_ids.isdisjoint(ids)
            self._seen_call_ids |= ids
            self._last_call_event = (index, ids) if reuses else None
        self._previous_index = index

    def _withhold_before_a_walk_back(
        self,
        ledger: PairingLedger,
        response_ids: set[str | None],
        settled: list[TrackedCall] | None,
        branch: str | None,
    ) -> None:
        """Keeps a placeholder from sending the builder on its walk back.

        The event just walked holds responses. When it directly follows a call
        event holding one of their ids, ADK's latest-response rearranger stops
        at once on the stored history. A placeholder for that call event's
        other, still open calls would sit between the two, and the rearranger
        would walk back instead; if an older call event shares an id with the
        call event, that walk raises ``ValueError: Last response event should
        only contain the responses...`` or truncates the history (see
        `adk_pairing.builder_traits`). Then the open calls of that event are
        withheld while the response event is the last one with parts: the
        view leaves them as stored, which is exactly what the unwrapped
        request holds. They keep their status (they are unanswered), and the
        next event with parts releases them (`_release_withheld`).
        """
        last = self._last_call_event
        if last is None or last[0] != self._previous_index:
            return
        call_index, call_ids = last
        open_calls = ledger._open
        slot = open_calls.get(call_index)
        if not slot or response_ids.isdisjoint(call_ids):
            return
        withheld = list(slot.values())
        if not branch_shows(branch, withheld[0].branch):
            # Another branch's call event: ADK builds each branch's request from
            # what it shows, where the two events are not neighbours. Which
            # request walks back is not this rule's to say; the view's check
            # against ADK's builder is (`adk_pairing.builder_check`).
            ledger.shapes.add(IrregularShape.RESULT_AFTER_ANOTHER_BRANCHS_CALLS)
            return
        del open_calls[call_index]
        # Open calls elsewhere with a withheld id lose their placeholders too:
        # ADK >= 2.10 drops a call no response carries the id of
        # (``drop_orphaned_function_calls``, 2.10.0 tools/_rearranger.py:247),
        # and a placeholder elsewhere would keep the withheld call on the wire
        # unanswered. Rare (a reused id), so the scan over open calls is fine.
        ids = {call.call_id for call in withheld if call.call_id is not None}
        if ids:
            for index in [
                i
                for i, calls in open_calls.items()
                if not ids.isdisjoint(call.call_id for call in calls.values())
            ]:
                withheld.extend(open_calls.pop(index).values())
        for call in withheld:
            call.withheld = True
            if settled is not None:
                settled.append(call)
        self._withheld = withheld

    def _release_withheld(self, ledger: PairingLedger) -> None:
        """Opens the withheld calls again: the response is no longer the last event."""
        assert self._withheld is not None
        calls = self._withheld
        self._withheld = None
        open_calls = ledger._open
        for call in calls:
            call.withheld = False
            if not call.answered:
                open_calls.setdefault(call.event_index, {})[call.part_index] = call
        # Each event's open calls are kept in part order.
        for index in {call.event_index for call in calls} & open_calls.keys():
            slot = open_calls[index]
            open_calls[index] = dict(sorted(slot.items()))

    def carry_into(
        self,
        successor: Self,
        ledger: PairingLedger,
        copies: Mapping[int, TrackedCall],
        copy_of: Callable[[TrackedCall], TrackedCall],
    ) -> None:
        # Withheld calls are unanswered too, and can still be answered.
        ledger.calls.extend(copy for copy in copies.values() if copy.withheld and not copy.answered)
        successor._seen_call_ids = set(self._seen_call_ids)
        successor._last_call_event = self._last_call_event
        successor._previous_index = self._previous_index
        if self._withheld is not None:
            successor._withheld = [copy_of(call) for call in self._withheld]
        super().carry_into(successor, ledger, copies, copy_of)


class _PairsByLastResponse(_OlderBuilderAdapter):
    """ADK <= 2.6: the last response with an id goes after every call with that id.

    Mirrors ``_rearrange_events_for_async_function_responses_in_history``
    (2.6.2 ``flows/llm_flows/contents.py:145``, run by ``contents.py:832``;
    1.20.0 ``contents.py:79``, run by :437), whose map from a call id to the
    *last* event holding a response with it (2.6.2 :149-155, 1.20.0 :84-90)
    puts that event after every call event with the id. So a response with an
    id answers every call with its id whose branch is shown the response,
    earlier or later: a placeholder for one would only replace that response.
    From 2.9 a response belongs to the newest call before it with its id
    (2.10.0 ``flows/llm_flows/tools/_rearranger.py:128-129``, 2.13.0
    :139-140), the ledger's own rule. An id-less response pairs by the
    ledger's rule here too.
    """

    def __init__(self, traits: BuilderTraits) -> None:
        super().__init__(traits)
        # Call id -> every open call with it, and the ids some response already carries.
        self._open_by_id: dict[str, list[TrackedCall]] = {}
        self._answered_ids: set[str] = set()
        # The same ids by the branch of the response (None for branch-less ones).
        self._answered_in: dict[str | None, set[str]] = {}

    def takes_response(
        self,
        ledger: PairingLedger,
        event: Event,
        index: int,
        parts: Sequence[Part],
        part_index: int,
        response: FunctionResponse,
        settled: list[TrackedCall] | None,
    ) -> bool:
        taken = super().takes_response(ledger, event, index, parts, part_index, response, settled)
        response_id = response.id
        if not response_id:
            return taken
        if response_id in self._answered_ids and _earlier_response_with(
            parts, part_index, response_id
        ):
            ledger.shapes.add(IrregularShape.ID_ANSWERED_TWICE_IN_ONE_EVENT)
        self._settle_every_call_with(
            ledger, response_id, settled, event.author, response.name, event.branch, index
        )
        return True

    def _settle_every_call_with(
        self,
        ledger: PairingLedger,
        call_id: str,
        settled: list[TrackedCall] | None,
        author: str,
        name: str | None,
        branch: str | None,
        by: int,
    ) -> None:
        """Settles every open call with `call_id`, before or after, whose branch is shown
        the response (`branch_shows`)."""
        branch = branch or None
        self._answered_ids.add(call_id)
        self._answered_in.setdefault(branch, set()).add(call_id)
        calls = self._open_by_id.pop(call_id, ())
        if branch is not None and ledger._by_branch is not None:
            unseen = [call for call in calls if not branch_shows(call.branch, branch)]
            if unseen:
                self._open_by_id[call_id] = unseen
                calls = [call for call in calls if branch_shows(call.branch, branch)]
        for call in calls:
            if ledger._holding:
                ledger._stop_holding(call)
            if (call.author != author and author != "user") or call.name != (name or ""):
                ledger.shapes.add(
                    IrregularShape.ANSWER_FROM_ANOTHER_AGENT
                    if call.name == (name or "")
                    else IrregularShape.RESULT_UNDER_ANOTHER_NAME
                )
            ledger._settle(call, settled, by)

    def takes_call(
        self,
        ledger: PairingLedger,
        call: TrackedCall,
        opened_ids: set[str],
        opened: dict[int, TrackedCall],
    ) -> bool:
        """Indexes `call` with every open call of its id, or settles it at once when a
        response with its id that its branch is shown came already."""
        call_id: str = call.call_id  # type: ignore[assignment]
        if call_id in opened_ids or call_id in self._open_by_id:
            ledger.shapes.add(
                IrregularShape.CALL_ID_TWICE_IN_ONE_EVENT
                if call_id in opened_ids
                else IrregularShape.CALL_ID_REUSED_WHILE_OPEN
            )
        opened_ids.add(call_id)
        branch = call.branch
        if call_id in self._answered_ids and (
            branch is None
            or any(
                call_id in self._answered_in.get(shown, ()) for shown in branches_shown_to(branch)
            )
        ):
            # The last response with this id its branch is shown goes after
            # this call too: a placeholder would only displace it.
            call.answered = True
            ledger.calls.append(call)
            return True
        self._open_by_id.setdefault(call_id, []).append(call)
        opened[call.part_index] = call
        return True

    def newest_open_call_with(self, call_id: str) -> TrackedCall | None:
        callers = self._open_by_id.get(call_id)
        return callers[-1] if callers else None

    def carry_into(
        self,
        successor: Self,
        ledger: PairingLedger,
        copies: Mapping[int, TrackedCall],
        copy_of: Callable[[TrackedCall], TrackedCall],
    ) -> None:
        successor._open_by_id = {
            call_id: [copy_of(call) for call in calls]
            for call_id, calls in self._open_by_id.items()
        }
        successor._answered_ids = set(self._answered_ids)
        successor._answered_in = {branch: set(ids) for branch, ids in self._answered_in.items()}
        super().carry_into(successor, ledger, copies, copy_of)


class _PairsByLastResponseAndWalksBack(_PairsByLastResponse, _WalksBack):
    """ADK <= 2.6 (1.20.0 to 2.6.2): both differences, each as its own adapter says."""


def _adapter_for(traits: BuilderTraits) -> _OlderBuilderAdapter | None:
    """The adapter for the builder `traits` describe; None for the newest builder's."""
    by_last_response = traits.history_pairs_by_last_response
    if traits.latest_response_walks_back:
        return _PairsByLastResponseAndWalksBack(traits) if by_last_response else _WalksBack(traits)
    return _PairsByLastResponse(traits) if by_last_response else None


def _earlier_response_with(
    parts: Sequence[Part], before: int, response_id: str | None = None
) -> bool:
    """Whether a response among ``parts[:before]`` carries `response_id` (any id if None)."""
    for part in parts[:before]:
        response = part.function_response
        if response is not None and (response_id is None or response.id == response_id):
            return True
    return False


def build_ledger(
    events: Sequence[Event],
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
    for start, stop in _live_runs(live):
        ledger.walk(events[start:stop], start)
    return ledger


def _live_runs(live: Sequence[bool]) -> Iterator[tuple[int, int]]:
    """The [start, stop) ranges of consecutive live events."""
    start: int | None = None
    for index, alive in enumerate(live):
        if alive and start is None:
            start = index
        elif not alive and start is not None:
            yield start, index
            start = None
    if start is not None:
        yield start, len(live)


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


def analyze(events: Iterable[Event], *, traits: BuilderTraits | None = None) -> PairingReport:
    """Classifies every live function call in `events`, as the installed ADK pairs them.

    Pass ``traits=NEWEST_BUILDER`` for what the store holds whatever the ADK
    release: each response answering the newest call before it with its id.
    """
    event_list = events if isinstance(events, Sequence) else list(events)
    ledger = build_ledger(event_list, traits=traits)
    return PairingReport(calls=tuple(ledger.calls), shapes=frozenset(ledger.shapes))


def held_open_call_ids(events: Iterable[Event]) -> set[str]:
    """The ids of the calls ADK holds open and nothing has answered yet, as the view decides.

    For the request pass, which sees contents without ``long_running_tool_ids``
    or branches: the ledger's own decision (`TrackedCall.held_open`, so a call
    waiting on its child run counts too), for the *newest* call with each id.
    Model ids such as ``call_1`` repeat across turns: an id once held open and
    later reused by an ordinary call that was lost is not held open.
    """
    newest: dict[str, TrackedCall] = {}
    for call in analyze(events, traits=NEWEST_BUILDER).calls:
        if call.call_id:
            newest[call.call_id] = call
    return {call_id for call_id, call in newest.items() if call.held_open and not call.answered}
