"""What an older ADK request builder does differently from the newest, as hooks.

Older request builders pair reused ids differently, and the view must never
make their request worse than the stored history's. Two traits, detected by
running ADK's own functions once (`adk_pairing.adk.builder`), choose the
ledger's older builder (`older_builder_for`); under the newest builder there is
none. docs/compatibility.md gives the releases and ADK's lines for each.

* `PairsByLastResponse`: the builder puts the *last* response with an id after
  *every* call with that id. There, a response answers every call with its id,
  earlier or later: a placeholder for a call whose id some response carries
  would only replace that response, including after an earlier call it really
  answers. A call whose id only a response out of its branch's sight carries
  stays open in its branch, but an agent above both branches is shown that
  response after both calls: the history is irregular there, and ADK's
  builder decides (`IrregularShape.CALL_ID_ANSWERED_OUT_OF_SIGHT`).
* `WalksBack`: the builder walks back through the history from a trailing
  response event that does not directly follow its call event, and raises (or
  truncates) when an older call event reuses one of the found event's ids.
  When a response event directly follows a call event that shares an id with
  an older call event, that event's other open calls are *withheld* while the
  response event is the last one with parts: the view adds no placeholder
  between the two and leaves the calls as stored (the unwrapped request), since
  that is the only place a placeholder can go. The next event with parts ends
  the hazard and brings the placeholder back. Two more shapes are irregular
  there, because the fuzz run finds them misplaced there and only there: a
  result before any call with its id, and a result under another name than its
  call's.

An older builder works on the ledger only through `LedgerForOlderBuilders`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import NamedTuple, Protocol, Self

from ..adk.builder import BuilderTraits
from ..wire import IrregularShape, branch_shows, branches_shown_to
from .calls import CallCopies, TrackedCall, earlier_response_with
from .reads import CallRead, EventRead, PartRead

#: An event's parts that hold a call, with their part indices.
CallParts = list[tuple[int, "PartRead"]]
#: The calls an event opened so far, by part index.
Opened = dict[int, TrackedCall]


class EventAt(NamedTuple):
    """The event an older builder's hook sees, where it stands, and what it settles into."""

    event: EventRead
    index: int
    parts: Sequence[PartRead]
    #: The walk's list of settled calls, if it keeps one (`PairingLedger.walk`).
    settled: list[TrackedCall] | None


class LedgerForOlderBuilders(Protocol):
    """What an older builder may read and change of the ledger (`PairingLedger`)."""

    #: The irregular shapes found so far; an older builder adds its own.
    shapes: set[IrregularShape]

    @property
    def has_branches(self) -> bool:
        """Whether a call event with a branch has been seen."""
        ...

    def answer(self, call: TrackedCall, settled: list[TrackedCall] | None, by: int) -> None:
        """Settles the open `call` as answered by the event at index `by`."""
        ...

    def answered_as_it_opens(self, call: TrackedCall) -> None:
        """Records the new `call` as answered already, never opened."""
        ...

    def open_calls_at(self, index: int) -> Mapping[int, TrackedCall] | None:
        """The open calls of event `index` by part index, if it has any."""
        ...

    def withhold_event(self, index: int) -> list[TrackedCall]:
        """Takes the open calls of event `index` out of the view's open calls."""
        ...

    def withhold_events_with_ids(self, ids: set[str]) -> list[TrackedCall]:
        """Takes the open calls of every event with an open call of `ids` out, too."""
        ...

    def reopen(self, calls: Sequence[TrackedCall]) -> None:
        """Puts withheld `calls` back among the open calls (those still unanswered)."""
        ...

    def keep_calls(self, calls: Sequence[TrackedCall]) -> None:
        """Adds `calls` to the ledger's calls (a ledger carried forward)."""
        ...


class OlderBuilder:
    """The hooks `PairingLedger` consults; each here is the newest builder's answer.

    `PairingLedger.walk` and its call opening consult them at the marked
    points; under the newest builder there is no older builder, so its walk
    pays only an ``is None`` test at each. The builders are mixins (one release
    line has both differences: `PairsByLastResponseAndWalksBack`), so a hook both
    implement passes on through ``super()``.
    """

    @property
    def withholding(self) -> bool:
        """Whether calls are withheld from the view (`PairingLedger.withholding`)."""
        return False

    def takes_response(
        self, ledger: LedgerForOlderBuilders, at: EventAt, part_index: int, response: CallRead
    ) -> bool:
        """Sees each response first; True when it attributed the response itself."""
        return False

    def check_answer(
        self, ledger: LedgerForOlderBuilders, call: TrackedCall, response: CallRead
    ) -> None:
        """Sees each response the newest rules attribute to `call`, from its agent or the user."""

    def end_parts(
        self, ledger: LedgerForOlderBuilders, at: EventAt, calls_here: CallParts | None
    ) -> None:
        """Runs once per event with parts: after its responses, before its calls open."""

    def takes_call(
        self, ledger: LedgerForOlderBuilders, call: TrackedCall, ids: set[str], opened: Opened
    ) -> bool:
        """Sees each new call with an id; True when it indexed (or settled) the call itself.

        `ids` are the ids of the calls its event opened so far, `opened` those calls.
        """
        return False

    def newest_open_call_with(self, call_id: str) -> TrackedCall | None:
        """The newest open call with `call_id` in this builder's own index, if it keeps one."""
        return None

    def carry_into(
        self, successor: Self, ledger: LedgerForOlderBuilders, copies: CallCopies
    ) -> None:
        """Copies this builder's state into `successor`, the older builder of `ledger`.

        For `PairingLedger.carry_forward`, whose `copies` copies each call once.
        """


class WalksBack(OlderBuilder):
    """The latest-response rearranger walks back from a trailing result event.

    It returns at once when the event before the trailing response event holds
    one of its calls; otherwise it walks back to the newest call event holding
    one of them. It raises when the trailing event also answers calls of an
    older event, and an older call event sharing an id with the one it found
    raises or becomes the new start of a merge that drops everything after it.
    Newer builders find each result's own call event instead.

    So it withholds (`_withhold_before_a_walk_back`), and marks two shapes the
    fuzz run finds misplaced only here: a result before any call with its id,
    and a result under another name than its call's. Where the builder drops
    results no call carries the id of before the rearranger runs
    (`BuilderTraits.drops_orphan_responses`), an event of such results does
    not end the hazard.
    """

    def __init__(self, traits: BuilderTraits) -> None:
        self._drops_orphan_responses = traits.drops_orphan_responses
        # Every call id seen (None for id-less); the newest call event's index,
        # its ids and whether it reuses one; the index of the last event with parts.
        self._seen_call_ids: set[str | None] = set()
        self._last_call_event: tuple[int, frozenset[str | None], bool] | None = None
        self._previous_index = -1
        # The calls withheld while a response event is the last one.
        self._withheld: list[TrackedCall] | None = None
        # Within one event's parts: the ids of its responses (None for id-less).
        self._response_ids: set[str | None] | None = None

    @property
    def withholding(self) -> bool:
        return self._withheld is not None

    def takes_response(
        self, ledger: LedgerForOlderBuilders, at: EventAt, part_index: int, response: CallRead
    ) -> bool:
        response_id = response.id
        if self._response_ids is None:
            self._response_ids = {response_id or None}
        else:
            self._response_ids.add(response_id or None)
        if response_id and response_id not in self._seen_call_ids:
            # A result before any call with its id.
            ledger.shapes.add(IrregularShape.RESULT_BEFORE_ITS_CALL)
        return super().takes_response(ledger, at, part_index, response)

    def check_answer(
        self, ledger: LedgerForOlderBuilders, call: TrackedCall, response: CallRead
    ) -> None:
        if call.name != (response.name or ""):
            ledger.shapes.add(IrregularShape.RESULT_UNDER_ANOTHER_NAME)

    def end_parts(
        self, ledger: LedgerForOlderBuilders, at: EventAt, calls_here: CallParts | None
    ) -> None:
        """Ends or starts the hazard after the event's responses, then notes its calls."""
        response_ids, self._response_ids = self._response_ids, None
        if self._withheld is not None and not (
            # ADK drops an event of orphan responses before looking for
            # the last one, so it does not end the hazard.
            calls_here is None
            and response_ids is not None
            and self._drops_orphan_responses
            and len(response_ids) == len(at.parts)
            and None not in response_ids
            and response_ids.isdisjoint(self._seen_call_ids)
        ):
            # The result is no longer last: the placeholder is safe again.
            # (A withheld call this event answered stays answered.)
            self._release_withheld(ledger)
        if response_ids is not None:
            self._withhold_before_a_walk_back(ledger, response_ids, at.settled, at.event.branch)
        if calls_here is not None:
            # Every call the builder sees, sent or not: its walk reads them all.
            ids = frozenset(
                part.function_call.id or None  # type: ignore[union-attr]
                for _, part in calls_here
            )
            reuses = not self._seen_call_ids.isdisjoint(ids)
            self._seen_call_ids |= ids
            self._last_call_event = (at.index, ids, reuses)
        self._previous_index = at.index

    def _withhold_before_a_walk_back(
        self,
        ledger: LedgerForOlderBuilders,
        response_ids: set[str | None],
        settled: list[TrackedCall] | None,
        branch: str | None,
    ) -> None:
        """Keeps a placeholder from sending the builder on its walk back.

        The event just walked holds responses. When it directly follows a call
        event holding one of their ids, ADK's latest-response rearranger stops
        at once on the stored history. A placeholder for that call event's
        other, still open calls would sit between the two, and the rearranger
        would walk back to that call event instead. The walk raises
        ``ValueError: Last response event should only contain the
        responses...`` when the responses also answer calls of another event,
        and when an older call event shares an id with the call event it raises
        or truncates the history. In those two cases the open calls of that
        event are withheld while the response event is the last one with parts:
        the view leaves them as stored, which is exactly what the unwrapped
        request holds. They keep their status (they are unanswered), and the
        next event with parts releases them (`_release_withheld`).
        """
        last = self._last_call_event
        if last is None or last[0] != self._previous_index:
            return
        call_index, call_ids, reuses = last
        if not reuses and response_ids <= call_ids:
            return  # the walk would stop at this call event, as ADK's plain case does
        slot = ledger.open_calls_at(call_index)
        if not slot or response_ids.isdisjoint(call_ids):
            return
        if not branch_shows(branch, next(iter(slot.values())).branch):
            # Another branch's call event: ADK builds each branch's request from
            # what it shows, where the two events are not neighbours. Which
            # request walks back is not this rule's to say; the view's check
            # against ADK's builder is (`adk_pairing.rules.builder_check`).
            ledger.shapes.add(IrregularShape.RESULT_AFTER_ANOTHER_BRANCHS_CALLS)
            return
        withheld = ledger.withhold_event(call_index)
        # Open calls elsewhere with a withheld id lose their placeholders too:
        # a builder that drops a call no response carries the id of
        # (`adk_pairing.adk.adk_drops_unanswered_calls`) would otherwise keep
        # the withheld call on the wire unanswered. Rare (a reused id), so the
        # scan over open calls is fine.
        ids = {call.call_id for call in withheld if call.call_id is not None}
        if ids:
            withheld.extend(ledger.withhold_events_with_ids(ids))
        for call in withheld:
            call.withheld = True
            if settled is not None:
                settled.append(call)
        self._withheld = withheld

    def _release_withheld(self, ledger: LedgerForOlderBuilders) -> None:
        """Opens the withheld calls again: the response is no longer the last event."""
        assert self._withheld is not None
        calls = self._withheld
        self._withheld = None
        for call in calls:
            call.withheld = False
        ledger.reopen(calls)

    def carry_into(
        self, successor: Self, ledger: LedgerForOlderBuilders, copies: CallCopies
    ) -> None:
        # Withheld calls are unanswered too, and can still be answered.
        ledger.keep_calls(
            [copy for copy in copies.made.values() if copy.withheld and not copy.answered]
        )
        successor._seen_call_ids = set(self._seen_call_ids)
        successor._last_call_event = self._last_call_event
        successor._previous_index = self._previous_index
        if self._withheld is not None:
            successor._withheld = [copies.of(call) for call in self._withheld]
        super().carry_into(successor, ledger, copies)


class PairsByLastResponse(OlderBuilder):
    """The last response with an id goes after every call with that id.

    The builder's map from a call id to the *last* event holding a response
    with it puts that event after every call event with the id. So a response
    with an id answers every call with its id whose branch is shown the
    response, earlier or later: a placeholder for one would only replace that
    response. Newer builders give a response to the newest call before it with
    its id, the ledger's own rule. An id-less response pairs by the ledger's
    rule here too.
    """

    def __init__(self) -> None:
        # Call id -> every open call with it, and the ids some response already carries.
        self._open_by_id: dict[str, list[TrackedCall]] = {}
        self._answered_ids: set[str] = set()
        # The same ids by the branch of the response (None for branch-less ones).
        self._answered_in: dict[str | None, set[str]] = {}
        # Whether the event whose calls open next also holds responses.
        self._beside_results = False

    def takes_response(
        self, ledger: LedgerForOlderBuilders, at: EventAt, part_index: int, response: CallRead
    ) -> bool:
        taken = super().takes_response(ledger, at, part_index, response)
        response_id = response.id
        if not response_id:
            return taken
        if response_id in self._answered_ids and earlier_response_with(
            at.parts, part_index, response_id
        ):
            ledger.shapes.add(IrregularShape.ID_ANSWERED_TWICE_IN_ONE_EVENT)
        self._settle_every_call_with(ledger, response_id, response.name, at)
        return True

    def _settle_every_call_with(
        self, ledger: LedgerForOlderBuilders, call_id: str, name: str | None, at: EventAt
    ) -> None:
        """Settles every open call with `call_id`, before or after, whose branch is shown
        the response of `name` in event `at` (`branch_shows`)."""
        event, by, _, settled = at
        author = event.author
        branch = event.branch or None
        self._answered_ids.add(call_id)
        self._answered_in.setdefault(branch, set()).add(call_id)
        calls = self._open_by_id.pop(call_id, ())
        if branch is not None and ledger.has_branches:
            unseen = [call for call in calls if not branch_shows(call.branch, branch)]
            if unseen:
                self._open_by_id[call_id] = unseen
                calls = [call for call in calls if branch_shows(call.branch, branch)]
        for call in calls:
            if (call.author != author and author != "user") or call.name != (name or ""):
                ledger.shapes.add(
                    IrregularShape.ANSWER_FROM_ANOTHER_AGENT
                    if call.name == (name or "")
                    else IrregularShape.RESULT_UNDER_ANOTHER_NAME
                )
            ledger.answer(call, settled, by)

    def end_parts(
        self, ledger: LedgerForOlderBuilders, at: EventAt, calls_here: CallParts | None
    ) -> None:
        self._beside_results = calls_here is not None and any(
            part.function_response is not None for part in at.parts
        )
        super().end_parts(ledger, at, calls_here)

    def takes_call(
        self, ledger: LedgerForOlderBuilders, call: TrackedCall, ids: set[str], opened: Opened
    ) -> bool:
        """Indexes `call` with every open call of its id, or settles it at once when a
        response with its id that its branch is shown came already.

        A call in an event that also holds responses is neither: the builder
        takes such an event for a response event, and its map puts responses
        only after events without any, so no response ever answers the call
        where it stands. It stays open, its placement left to the view's
        check against ADK's builder (the history is irregular).
        """
        call_id: str = call.call_id  # type: ignore[assignment]
        if call_id in ids or call_id in self._open_by_id:
            ledger.shapes.add(
                IrregularShape.CALL_ID_TWICE_IN_ONE_EVENT
                if call_id in ids
                else IrregularShape.CALL_ID_REUSED_WHILE_OPEN
            )
        ids.add(call_id)
        if self._beside_results:
            opened[call.part_index] = call
            return True
        branch = call.branch
        if call_id in self._answered_ids and (
            branch is None
            or any(
                call_id in self._answered_in.get(shown, ()) for shown in branches_shown_to(branch)
            )
        ):
            # The last response with this id its branch is shown goes after
            # this call too: a placeholder would only displace it.
            ledger.answered_as_it_opens(call)
            return True
        if call_id in self._answered_ids:
            # A response with this id sits in a branch this call's is not
            # shown. An agent above both is shown them all, and the builder
            # puts the last response with the id, a placeholder for this call
            # with its siblings, after the earlier call too: only ADK's
            # builder can say whether that request still keeps the rules.
            ledger.shapes.add(IrregularShape.CALL_ID_ANSWERED_OUT_OF_SIGHT)
        self._open_by_id.setdefault(call_id, []).append(call)
        opened[call.part_index] = call
        return True

    def newest_open_call_with(self, call_id: str) -> TrackedCall | None:
        callers = self._open_by_id.get(call_id)
        return callers[-1] if callers else None

    def carry_into(
        self, successor: Self, ledger: LedgerForOlderBuilders, copies: CallCopies
    ) -> None:
        successor._open_by_id = {
            call_id: [copies.of(call) for call in calls]
            for call_id, calls in self._open_by_id.items()
        }
        successor._answered_ids = set(self._answered_ids)
        successor._answered_in = {branch: set(ids) for branch, ids in self._answered_in.items()}
        successor._beside_results = self._beside_results
        super().carry_into(successor, ledger, copies)


class PairsByLastResponseAndWalksBack(PairsByLastResponse, WalksBack):
    """Both differences, each as its own older builder says."""

    def __init__(self, traits: BuilderTraits) -> None:
        PairsByLastResponse.__init__(self)
        WalksBack.__init__(self, traits)


def older_builder_for(traits: BuilderTraits) -> OlderBuilder | None:
    """The older builder `traits` describe; None for the newest builder's."""
    if traits.latest_response_walks_back:
        if traits.history_pairs_by_last_response:
            return PairsByLastResponseAndWalksBack(traits)
        return WalksBack(traits)
    return PairsByLastResponse() if traits.history_pairs_by_last_response else None
