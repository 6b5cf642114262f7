"""The ledger's records of calls, and what observing an event reports."""

from __future__ import annotations

import enum
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import ClassVar, NamedTuple

from ..wire import call_key
from .reads import PartRead


@dataclass(slots=True)
class TrackedCall:
    """One function call and, once known, whether something answered it."""

    event_index: int
    """The index of the call's event in the history."""
    part_index: int
    """The index of the call's part in that event's content."""
    call_id: str | None
    """The call's id, as the model or ADK gave it; None when it has none."""
    name: str
    """The function's name."""
    held_open: bool
    """ADK holds the call open: a long-running tool, a confirmation, a credential or input."""
    author: str
    """The author of the call's event (the agent that made it)."""
    answered: bool = False
    """A real result answers the call."""
    withheld: bool = False
    """Left unanswered in the view on purpose (`adk_pairing.ledger.older_builders.WalksBack`)."""
    #: The branch of the call's event: None here, set on a `BranchedCall`.
    branch: ClassVar[str | None] = None

    @property
    def status(self) -> CallStatus:
        """Answered, pending (held open, unanswered) or missing (unanswered, not held open)."""
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


class CallStatus(enum.StrEnum):
    """What the history says about one function call: answered, pending or missing.

    A value is also the ``status`` of the placeholder that answers such a call in
    the view and the request (``{"status": "missing", "error": ...}``), and the
    word the CLI's reports use.
    """

    ANSWERED = "answered"
    """A result answers the call; nothing is added for it."""
    PENDING = "pending"
    """Held open by ADK and not answered yet: answered with the pending text meanwhile.

    ADK holds a call open for a long-running tool, a confirmation, a credential or
    an input request; its real result replaces the placeholder when it arrives
    (the text: `DEFAULT_PENDING_TEXT`, or ``pending_text=``).
    """
    MISSING = "missing"
    """Not answered, and nothing will answer it: answered with the missing text.

    The turn that made the call ended before its result was recorded (the text:
    `DEFAULT_MISSING_TEXT`, or ``missing_text=``).
    """


class CallCopies:
    """Copies calls once each, for a ledger carried forward (`PairingLedger.carry_forward`)."""

    __slots__ = ("made",)

    def __init__(self) -> None:
        #: The copies made so far, by the id() of the original.
        self.made: dict[int, TrackedCall] = {}

    def of(self, call: TrackedCall) -> TrackedCall:
        """The copy of `call`, made on first use; the same copy afterwards."""
        copy = self.made.get(id(call))
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
            copy = self.made[id(call)] = (
                TrackedCall(*fields) if branch is None else BranchedCall(*fields, branch=branch)
            )
        return copy


class Observation(NamedTuple):
    """What observing one event changed."""

    #: Earlier calls this event answered, or withheld from the view.
    settled: Sequence[TrackedCall]
    #: The event's own index when it made calls (all open at first), else None.
    opened: int | None
    #: Earlier open calls whose status changed (pending <-> missing) as a child
    #: run they started began or stopped waiting (`held_by_child`).
    held: Sequence[TrackedCall] = ()
    #: Some placement (`PairingLedger.placement`) moved back to its call event
    #: since the ledger last reported it: whoever keeps a view current rebuilds it.
    placements_moved: bool = False

    @property
    def changed(self) -> set[int]:
        """Indices of the events whose open calls changed."""
        indices = {call.event_index for call in (*self.settled, *self.held)}
        if self.opened is not None:
            indices.add(self.opened)
        return indices


NOTHING_CHANGED = Observation((), None)


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


def earlier_response_with(
    parts: Sequence[PartRead], before: int, response_id: str | None = None
) -> bool:
    """Whether a response among ``parts[:before]`` carries `response_id` (any id if None)."""
    for part in parts[:before]:
        response = part.function_response
        if response is not None and (response_id is None or response.id == response_id):
            return True
    return False
