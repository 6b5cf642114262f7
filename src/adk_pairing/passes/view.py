"""The repaired view of a session, and its upkeep on every append.

A view is a `PairedSession`: a plain ADK `Session` whose ``events`` are the
stored events plus a synthetic result after every unanswered call (built by
`adk_pairing.core.repair` from a ledger of `adk_pairing.ledger`). Like the core,
this module never awaits, logs or touches a store; the session decorator
(`adk_pairing.shells.service`) does the I/O and hands this module what the store
returned. The rules it keeps:

* A view remembers the inner service's own session object (`ViewState.inner`)
  and every append goes to the inner service with that object, never with the
  view. ADK's stores append to the session object they are given
  (``BaseSessionService.append_event`` ends in ``session.events.append``) and
  check it against their revision markers (``DatabaseSessionService``
  compares ``_storage_update_marker``): given the view they would persist
  synthetic events and compare the wrong marker.
* After an append the view equals what a fresh read would return, including
  inside a running turn: ADK's runner appends to the very session object the
  next request is built from (``append_event(session=invocation_context.session,
  ...)`` in ``runners.py``), so a view that lagged one event would send an
  unanswered call to the model.
* The upkeep is incremental: O(parts of the new events), plus one re-render of
  each call event an appended response settles. Only a rewind, a store that
  shrank the history, an append after a response event that made the ledger
  withhold calls, an answer to a call event whose placeholders sit after a
  later event or which goes as stored, or an append to an irregular history
  with unanswered calls that its repair without a check does not cover
  (`PairingLedger.still_repairs_apart`; such a view must be checked whole
  against ADK's builder, `adk_pairing.rules.builder_check`)
  makes it rebuild the whole view: a rewind can annul
  events already shown (ADK drops every event from the first event of the
  rewound invocation up to the rewind, ``events/_rewind_events.py``), and the
  withheld calls' placeholders come back once the response event is no longer
  last (the walk-back hazard of older builders, `adk_pairing.ledger`).
* The view mirrors the inner session's ``state``, ``last_update_time`` and the
  storage revision marker after every append, so code that reads them from the
  session it holds (the runner does) sees what the store wrote.
"""

from __future__ import annotations

from bisect import bisect_left

from google.adk.events.event import Event
from google.adk.sessions.session import Session
from pydantic import PrivateAttr

from ..core.placeholders import PlaceholderTexts, RepairedSlot
from ..core.repair import Fallback, RepairedHistory, repair_history
from ..ledger import Observation, PairingLedger, answers_nothing_open, build_ledger, is_rewind
from ..wire import IrregularShape

_NO_SHAPES: frozenset[IrregularShape] = frozenset()

#: Whether the running ADK's `Session` carries a storage revision marker (not
#: every release's does); a view mirrors it.
HAS_STORAGE_MARKER = "_storage_update_marker" in Session.__private_attributes__


class ViewState:
    """What a view needs to forward appends and stay current."""

    __slots__ = ("as_stored", "checked", "inner", "ledger", "slot_order", "slots", "texts")

    def __init__(
        self, inner: Session, ledger: PairingLedger | None, texts: PlaceholderTexts
    ) -> None:
        self.inner = inner
        #: None after a failed upkeep: the next append rebuilds the view.
        self.ledger = ledger
        self.texts = texts
        # Stored-event index -> the repair of that call event, while it has
        # open calls; each slot knows the synthetic event it placed.
        self.slots: dict[int, RepairedSlot] = {}
        # The keys of `slots`, sorted: how many synthetic events precede a
        # stored index, hence where its synthetic event sits in the view.
        self.slot_order: list[int] = []
        #: The view was checked whole against ADK's builder
        #: (`RepairedHistory.checked`): the verdict, and which call events go
        #: as stored, depend on the whole history, so each append repairs the
        #: view again, as a fresh read would.
        self.checked = False
        #: The call events the ledger sends as stored, their answers in call
        #: order (`PairingLedger.serves_as_stored`): an answer to one of them
        #: that keeps them so (`PairingLedger.still_serves_as_stored`) changes
        #: nothing in the view.
        self.as_stored: set[int] = set()

    def index_slots(self, repaired: RepairedHistory) -> None:
        self.slots = repaired.slots
        self.slot_order = list(repaired.slots)  # built in index order
        self.checked = repaired.checked
        self.as_stored = (
            set(repaired.served_as_stored)
            if repaired.fallback is Fallback.ANSWERS_OUT_OF_ORDER and not repaired.checked
            else set()
        )

    def catch_up(self, view: PairedSession, stored_before: int) -> None:
        """Brings `view` up to date with the inner session, which held `stored_before` events.

        Event by event while `_can_observe`, and each one's `_apply`; whatever
        either refuses, the view is repaired again from the store's history,
        which the rebuild walks to its end.
        """
        inner_events = self.inner.events
        stored_now = len(inner_events)
        if stored_now == stored_before:
            return
        ledger = self.ledger
        new_events = inner_events[stored_before:]
        if ledger is None or stored_now < stored_before or _holds_a_rewind(new_events):
            self.rebuild(view)
            return
        view_events = view.events
        index = stored_before
        for event in new_events:
            if not self._can_observe(ledger):
                self.rebuild(view)
                return
            view_events.append(event)
            # Empty but in an irregular history, where it holds a shape or two:
            # copied only then.
            shapes_before = frozenset(ledger.shapes) if ledger.shapes else _NO_SHAPES
            observed = ledger.observe(event, index)
            # A long-running mark on another event's open call changes what ADK
            # keeps of that call, and so where its call event's answers go.
            if ledger.marks_open_calls_elsewhere(event, index) or not self._apply(
                view, ledger, observed, shapes_before
            ):
                self.rebuild(view)
                return
            index += 1

    def _can_observe(self, ledger: PairingLedger) -> bool:
        """Whether the next event may be observed into the view as it stands.

        Not while the ledger withholds calls: the next event with parts
        releases them (older builders, `adk_pairing.ledger.older_builders`),
        and `observe` does not report that release. Not after a check of the
        whole view (`checked`): which call events it lets keep their
        placeholders depends on the whole history
        (`adk_pairing.rules.builder_check`).
        """
        return not (ledger.withholding or self.checked)

    def _apply(
        self,
        view: PairedSession,
        ledger: PairingLedger,
        observed: Observation,
        shapes_before: frozenset[IrregularShape],
    ) -> bool:
        """Applies what observing the view's last event changed; False when it cannot.

        It cannot when some placeholders must move back to their call events,
        when an irregular history with open calls leaves the repair that
        needs no check (`PairingLedger.still_repairs_apart`: its placeholders
        would hold only once ADK's builder checked the whole view), or when a
        call settled whose call event goes as stored
        (`PairingLedger.serves_as_stored`) or whose placeholders sit, or must
        now sit, after a later event than the call (`PairingLedger.placement`).
        """
        settled, opened, held, placements_moved = observed
        if placements_moved:
            return False
        if (
            ledger.open_calls
            and (ledger.irregular or shapes_before)
            and not ledger.still_repairs_apart(self.inner.events, observed, shapes_before)
        ):
            return False
        if self.as_stored and answers_nothing_open(view.events[-1], settled):
            return False
        if settled or held:
            touched: dict[int, None] = {}
            as_stored: dict[int, list[int]] = {}
            for call in settled:
                call_index = call.event_index
                slot = self.slots.get(call_index)
                if slot is None and call_index in self.as_stored:
                    as_stored.setdefault(call_index, []).append(call.part_index)
                    continue
                if (
                    slot is None
                    or slot.anchor != call_index
                    or ledger.placement(call_index) != call_index
                ):
                    return False
                slot.settle(call.part_index)
                touched[call_index] = None
            for call_index, parts in as_stored.items():
                if not ledger.still_serves_as_stored(
                    call_index, self.inner.events[call_index], view.events[-1], parts
                ):
                    return False
                if call_index not in ledger.open_calls:
                    self.as_stored.discard(call_index)  # nothing left to place there
            for call in held:
                # Its placeholder's status changed (a child run began or
                # stopped waiting): the slot is made again from the ledger,
                # where the view still holds its synthetic event.
                previous = self.slots.get(call.event_index)
                if previous is None:
                    continue  # withheld from the view (`WalksBack`), or served as stored
                slot = RepairedSlot(
                    previous.call_event,
                    ledger.open_calls[call.event_index],
                    self.texts,
                    previous.anchor,
                )
                slot.synthetic = previous.synthetic
                self.slots[call.event_index] = slot
                touched[call.event_index] = None
            for call_index in touched:
                self._refresh_slot(view, call_index)
        if opened is not None:
            self._open_slot(view, opened)
        return True

    def rebuild(self, view: PairedSession) -> None:
        """Repairs the inner session's whole history again."""
        events = self.inner.events
        ledger = build_ledger(events)
        repaired = repair_history(events, ledger, self.texts)
        view.events = repaired.events
        self.ledger = ledger
        self.index_slots(repaired)

    def serve_unrepaired(self, view: PairedSession) -> None:
        """Shows the stored events as they are, until the next append rebuilds the view."""
        self.ledger = None
        self.slots = {}
        self.slot_order = []
        self.as_stored = set()
        view.events = list(self.inner.events)

    def _open_slot(self, view: PairedSession, index: int) -> None:
        """Repairs the call event just appended at stored `index` (the view's last event)."""
        calls = self.ledger.open_calls[index]  # all of a new event's calls are open
        slot = RepairedSlot(self.inner.events[index], calls, self.texts, index)
        view.events[-1], synthetic = slot.render()
        view.events.append(synthetic)
        self.slots[index] = slot
        self.slot_order.append(index)  # the newest index is the largest

    def _refresh_slot(self, view: PairedSession, index: int) -> None:
        """Re-renders the call event at stored `index` after some of its calls were answered."""
        slot = self.slots[index]
        previous = slot.synthetic
        # Stored index i sits at i + (synthetic events before it) in the view,
        # and its synthetic event right after. Searching the view for it instead
        # costs O(history) per answer: quadratic over a long run of open calls.
        rank = bisect_left(self.slot_order, index)
        position = index + rank + 1
        if position >= len(view.events) or view.events[position] is not previous:
            position = _rfind_identity(view.events, previous)
        if slot:
            view.events[position - 1], view.events[position] = slot.render()
            return
        view.events[position - 1] = slot.call_event
        del view.events[position]
        del self.slot_order[rank]
        del self.slots[index]


class PairedSession(Session):
    """A session as `PairingSessionService` returns it: a repaired view.

    It is a plain `Session` to every reader. The private link to the inner
    service's session object is what lets appends bypass the view.
    """

    _pairing: ViewState | None = PrivateAttr(default=None)

    def __eq__(self, other: object) -> bool:
        """Equal to any `Session` (view or not) with the same fields and storage state.

        The link to the inner session is bookkeeping, not content: a view of a
        healthy session equals the stored `Session` (the same events), and a
        repaired view equals whatever holds its events, synthetic ones included.
        ADK's own session tests compare a read with the created session.
        """
        if not isinstance(other, Session):
            return NotImplemented
        return _comparable(self) == _comparable(other)


def _comparable(session: Session) -> tuple[object, ...]:
    """What pydantic compares on a `Session`, less a view's private link."""
    private = session.__pydantic_private__ or {}
    return (
        _fields_of(session),
        {name: value for name, value in private.items() if name != "_pairing"},
        session.__pydantic_extra__ or {},
    )


def _fields_of(session: Session) -> dict[str, object]:
    """A `Session`'s fields by name: what a view copies of its stored session, and compares."""
    return {name: getattr(session, name) for name in Session.model_fields}


def paired_view(
    stored: Session, ledger: PairingLedger, repaired: RepairedHistory, texts: PlaceholderTexts
) -> PairedSession:
    """The view of `stored`, whose history `ledger` analysed and `repaired` repaired."""
    view = PairedSession.model_construct(**{**_fields_of(stored), "events": repaired.events})
    view_state = ViewState(stored, ledger, texts)
    if repaired.slots or repaired.serves_some_as_stored:
        view_state.index_slots(repaired)
    view._pairing = view_state
    mirror_fields(view, stored)
    return view


def view_state_of(session: Session) -> ViewState | None:
    """The view's link to its inner session; None for any other session.

    Reads pydantic's private-attribute dict directly: ``session._pairing``
    goes through ``BaseModel.__getattr__`` on every append (its cost:
    benchmarks/RESULTS.md, "Figures behind the core's choices").
    """
    if not isinstance(session, PairedSession):
        return None
    private = session.__pydantic_private__
    return private.get("_pairing") if private else None


def mirror_fields(view: Session, stored: Session) -> None:
    """Keeps state, update time and the storage revision marker in step.

    Runs on every append, so it assigns only what changed: each assignment
    goes through pydantic's ``__setattr__``. The state is usually the very
    dict the inner service updates in place.
    """
    if view.state is not stored.state:
        view.state = stored.state
    # Straight into the field values: the field is already marked set (the
    # view is built with it), and pydantic's __setattr__ adds two frames.
    view.__dict__["last_update_time"] = stored.last_update_time
    if HAS_STORAGE_MARKER:
        # Direct reads for the same reason as in `view_state_of`.
        marker = (stored.__pydantic_private__ or {}).get("_storage_update_marker")
        if marker is not (view.__pydantic_private__ or {}).get("_storage_update_marker"):
            view._storage_update_marker = marker


def _holds_a_rewind(events: list[Event]) -> bool:
    return any(map(is_rewind, events))  # map: no generator frame per append


def _rfind_identity(events: list[Event], target: Event) -> int:
    for position in range(len(events) - 1, -1, -1):
        if events[position] is target:
            return position
    raise LookupError("synthetic event is no longer in the view")
