"""Which function calls in an event history are answered, pending or missing.

This module is the pure half of adk-pairing: it reads events and never awaits,
logs or touches a store. The rules follow the ones ADK itself applies when it
builds a model request:

* A function response answers the *newest preceding* call with the same id
  (model-issued ids such as Gemini's ``call_1`` repeat across turns, so "a
  response with this id exists somewhere" does not mean "this call was
  answered"). A response in the same event as a call does not answer it.
* A call without an id is answered by a later id-less response of the same
  name. Like ADK's rearranger, the response belongs to the newest preceding
  event with an id-less call of that name; within that event, responses take
  the calls in order, one each. (Reaching back to an older event's open call
  instead would pair a result with a call it is not adjacent to on the wire.)
* Events annulled by a rewind (``actions.rewind_before_invocation_id``) are
  not sent to the model, so they neither answer calls nor need answers.
* An unanswered call is *pending* when ADK holds it open on purpose (its id is
  in the event's ``long_running_tool_ids``, or it is a confirmation,
  credential or input request) and *missing* otherwise.

`PairingLedger` keeps this state incrementally, one event at a time, so the
session-service decorator can keep a view current on every ``append_event``
without rescanning the history.
"""

from __future__ import annotations

import enum
from collections import deque
from collections.abc import Iterable, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass

from google.adk.events.event import Event
from google.genai.types import FunctionCall

#: Calls ADK answers only when a person (or client) does: confirmations,
#: credential requests and ask-user/request-input prompts.
HELD_OPEN_CALL_NAMES = frozenset(
    {"adk_request_confirmation", "adk_request_credential", "adk_request_input"}
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
    answered: bool = False

    @property
    def status(self) -> CallStatus:
        if self.answered:
            return CallStatus.ANSWERED
        return CallStatus.PENDING if self.held_open else CallStatus.MISSING

    @property
    def key(self) -> str:
        """The call's id, or its function name when the model gave it no id."""
        return self.call_id or self.name


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


def has_rewind(event: Event) -> bool:
    """Whether appending `event` can annul earlier events."""
    return bool(event.actions is not None and event.actions.rewind_before_invocation_id)


_NOTHING_CHANGED: frozenset[int] = frozenset()


class PairingLedger:
    """Attributes responses to calls, one event at a time, in O(parts) each.

    ``open_calls`` maps the index of every event that still has unanswered
    calls to those calls, in part order; it is what a repaired view needs.
    """

    __slots__ = ("_answered_in", "_idless_open", "_newest_by_id", "_open", "calls")

    def __init__(self) -> None:
        self.calls: list[TrackedCall] = []
        self._open: dict[int, list[TrackedCall]] = {}
        # Events with calls answered since `_open` was last compacted. Dropping
        # each answered call from its event's list right away costs O(width) per
        # answer, O(width²) for one event with many parallel calls.
        self._answered_in: set[int] = set()
        self._newest_by_id: dict[str, TrackedCall] = {}
        self._idless_open: dict[str, deque[TrackedCall]] = {}

    @property
    def open_calls(self) -> dict[int, list[TrackedCall]]:
        """Event index -> its unanswered calls, in part order (only events that have some)."""
        if self._answered_in:
            for index in self._answered_in:
                remaining = [c for c in self._open.get(index, ()) if not c.answered]
                if remaining:
                    self._open[index] = remaining
                else:
                    self._open.pop(index, None)
            self._answered_in.clear()
        return self._open

    def observe(self, event: Event, index: int) -> AbstractSet[int]:
        """Records `event` (at `index` in the history) and returns changed indices.

        The returned set holds the index of every event whose list of open calls
        changed: earlier events whose calls `event` answered, and `index` itself
        when `event` opens calls that are still unanswered.

        One pass over the parts, allocating nothing for an event without calls
        or responses: this runs for every event of every ``get_session``.
        """
        content = event.content
        if content is None:
            return _NOTHING_CHANGED
        parts = content.parts
        if not parts:
            return _NOTHING_CHANGED
        changed: set[int] | None = None
        calls_here: list[tuple[int, FunctionCall]] | None = None
        for part_index, part in enumerate(parts):
            function_call = part.function_call
            if function_call is not None:
                # Registered after the loop: a response never answers a call
                # in its own event.
                if calls_here is None:
                    calls_here = []
                calls_here.append((part_index, function_call))
            response = part.function_response
            if response is not None:
                call = self._owner_of(response.id, response.name)
                if call is not None and not call.answered:
                    call.answered = True
                    self._answered_in.add(call.event_index)
                    if changed is None:
                        changed = set()
                    changed.add(call.event_index)
        if calls_here is not None:
            self._open_calls_of(event, index, calls_here)
            if changed is None:
                changed = set()
            changed.add(index)
        return _NOTHING_CHANGED if changed is None else changed

    def _open_calls_of(
        self, event: Event, index: int, calls_here: list[tuple[int, FunctionCall]]
    ) -> None:
        held_open_ids = event.long_running_tool_ids or ()
        opened: list[TrackedCall] = []
        idless_here: dict[str, deque[TrackedCall]] = {}
        for part_index, function_call in calls_here:
            name = function_call.name or ""
            call_id = function_call.id or None
            # Positional: keyword construction costs a third more on this hot path.
            call = TrackedCall(
                index,
                part_index,
                call_id,
                name,
                name in HELD_OPEN_CALL_NAMES or (call_id is not None and call_id in held_open_ids),
            )
            opened.append(call)
            if call_id is not None:
                self._newest_by_id[call_id] = call
            else:
                idless_here.setdefault(name, deque()).append(call)
        self.calls.extend(opened)
        # This event now owns every later id-less response of these names.
        if idless_here:
            self._idless_open.update(idless_here)
        self._open[index] = opened

    def _owner_of(self, response_id: str | None, name: str | None) -> TrackedCall | None:
        if response_id:
            return self._newest_by_id.get(response_id)
        queue = self._idless_open.get(name or "")
        return queue.popleft() if queue else None


def build_ledger(events: Sequence[Event], live: Sequence[bool] | None = None) -> PairingLedger:
    """Runs a fresh ledger over `events`, skipping those annulled by rewinds.

    Without `live`, the common case (no rewind anywhere) costs one pass: the
    rewind check rides along, and only a history that has one is walked again
    with its mask. ADK writes a rewind as an event without content
    (``sessions/_rewind_utils.py``), so only such events are checked for one:
    reading ``actions`` of every event costs a cold object per event, a
    measurable share of a healthy ``get_session``. `live_event_mask` itself
    honours a rewind on any event.
    """
    ledger = PairingLedger()
    if live is None:
        for index, event in enumerate(events):
            if event.content is None and has_rewind(event):
                return build_ledger(events, live_event_mask(events))
            ledger.observe(event, index)
        return ledger
    for index, event in enumerate(events):
        if live[index]:
            ledger.observe(event, index)
    return ledger


@dataclass(frozen=True)
class PairingReport:
    """The status of every live function call in a history."""

    calls: tuple[TrackedCall, ...]

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


def analyze(events: Iterable[Event]) -> PairingReport:
    """Classifies every live function call in `events`."""
    event_list = events if isinstance(events, Sequence) else list(events)
    return PairingReport(calls=tuple(build_ledger(event_list).calls))
