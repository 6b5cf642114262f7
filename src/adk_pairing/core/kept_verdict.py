"""The builder check's verdict, kept while appended events cannot change it.

An irregular history's view is checked whole against ADK's own request
builder (`adk_pairing.builder_check`), which is O(history) per agent. The
verdict is a function of the whole history; yet an event appended after a
*quiet* end, one sharing nothing with what came before, leaves what ADK's
builder makes of that history as it was, so a view the check accepted whole
stays accepted. `KeptVerdict` is that verdict with what it needs to tell such
an event from one that can change it, updated in O(parts) per event. Like the
core, it never awaits and touches no store.

When the verdict is kept (every clause is needed; each names the step of
ADK's builder it keeps out of reach):

* The check accepted the *whole* view. Appending events with the same
  contents to both sides keeps an accepted view accepted, but can turn a
  rejection into an acceptance (the stored request may break a rule for the
  first time), so a partial fallback (`adk_pairing.repair.Fallback`) is
  checked again on every event, as a fresh read would.
* The checked history ends quiet: its last event is visible text with no call
  or result, and no placeholder follows it. That event is then the last of
  every request on both sides, so the latest-response rearranger had nothing
  to move there, and whatever follows meets the same content on both sides.
* No event has a branch, a compaction, a rewind or a scope: ADK filters and
  summarizes those by what the whole history holds.
* Each appended event: no branch, no scope, no ADK request or transfer, no
  held-open calls, written by the user or an agent the check built a request
  for; calls and results not in one event, none beside text, each with an id
  ADK's Anthropic converter keeps as it is and that no converter or builder
  rewrites; every result answers the newest call with its id, a call made
  since the check that nothing answered yet (so it reaches back into nothing
  checked); every call's id is new to the history, or, under a builder that
  gives a result to the newest call before it (`BuilderTraits`), an id the
  checked history already called by the same agent only and already
  answered, whose newest call since the check is answered (the builder's map
  of ids to results and authors, and its set of answered ids, stay as they
  were for every earlier event).
* The ledger found no new irregular shape (the caller compares
  `shape_count`): what was appended is regular on its own.

Then each request is the checked one followed by the appended events' own,
the same on both sides but for the placeholders of calls made since, which
only answer them (a regular repair); each provider rule reads its two parts
and the boundary apart, and the calls and results the view carries stay a
superset. The view fuzz (tests/reliability/test_fuzz.py) holds every view
served this way equal to a fresh read that checks it whole.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from google.adk.events.event import Event

from ..adk.builder import adk_drops_unanswered_calls, builder_keeps_call_ids, left_out_call_names
from ..ledger import PairingLedger
from ..wire import (
    ANTHROPIC_ID,
    IrregularShape,
    builder_leaves_out,
    is_mixed,
    may_collide_with_a_fallback,
)

#: An id whose calls in the checked history come from more than one agent.
_SEVERAL_AUTHORS = ""


@dataclass(slots=True)
class KeptVerdict:
    """A whole view's acceptance by the check, kept over the events appended since."""

    #: How many stored events the verdict covers: the checked ones and those admitted since.
    event_count: int
    #: How many irregular shapes the ledger had found at the check.
    shape_count: int
    #: Every author the check built a request for.
    agents: frozenset[str]
    #: Every call id ADK's builder sees -> the one agent that called it ('' when several did).
    call_authors: dict[str, str]
    #: Every result id ADK's builder sees.
    response_ids: set[str]
    #: The ids of calls and results it does not see as such: in an event it
    #: leaves out whole, or in a part beside text.
    unseen_ids: frozenset[str]
    #: Call id -> whether its newest call since the check is still open.
    open_since: dict[str, bool]
    #: Whether an appended call may reuse an id (module docstring).
    reuses_ids: bool
    #: The index of the first event appended after the check.
    checked_count: int
    #: The one call event the check served as stored, or None when it accepted the whole view.
    served_as_stored: int | None = None
    #: With `served_as_stored`: the first call id of each call event appended
    #: since, while open -> the ids of its calls, in order.
    pending: dict[str, tuple[str, ...]] | None = None

    @classmethod
    def after_check(
        cls,
        events: Sequence[Event],
        ledger: PairingLedger,
        view: Sequence[Event],
        served_as_stored: int | None = None,
    ) -> KeptVerdict | None:
        """The verdict on `events`, whose `view` the check accepted; None if it cannot keep.

        Either the whole view, or every repair but that of the one call event
        `served_as_stored`, the only one with open calls (module docstring).
        O(parts of `events`), once per check, which is itself O(history).
        """
        if not events or view[-1] is not events[-1] or not _quiet(events[-1]):
            return None
        if ledger.withholding or IrregularShape.CALL_ID_LIKE_A_FALLBACK in ledger.shapes:
            return None
        agents: set[str] = set()
        call_authors: dict[str, str] = {}
        response_ids: set[str] = set()
        unseen_ids: set[str] = set()
        left_out_names = left_out_call_names()
        for event in events:
            if event.branch or _filtered_by_history(event):
                return None
            author = event.author
            if author and author != "user":
                agents.add(author)
            content = event.content
            parts = content.parts if content is not None else None
            if not parts:
                continue
            left_out = builder_leaves_out(parts, left_out_names)
            for part in parts:
                call, response = part.function_call, part.function_response
                if call is not None and call.id:
                    if left_out or is_mixed(part):
                        unseen_ids.add(call.id)
                    else:
                        known = call_authors.get(call.id)
                        call_authors[call.id] = (
                            author if known is None or known == author else _SEVERAL_AUTHORS
                        )
                if response is not None and response.id:
                    if left_out or is_mixed(part):
                        unseen_ids.add(response.id)
                    else:
                        response_ids.add(response.id)
        traits = ledger.traits
        return cls(
            event_count=len(events),
            shape_count=len(ledger.shapes),
            agents=frozenset(agents),
            call_authors=call_authors,
            response_ids=response_ids,
            unseen_ids=frozenset(unseen_ids),
            open_since={},
            reuses_ids=served_as_stored is None
            and not (traits.history_pairs_by_last_response or traits.latest_response_walks_back),
            checked_count=len(events),
            served_as_stored=served_as_stored,
            pending={} if served_as_stored is not None else None,
        )

    def copy(self) -> KeptVerdict:
        """A copy to advance apart (the analysis cache keeps one, each view its own)."""
        return KeptVerdict(
            self.event_count,
            self.shape_count,
            self.agents,
            dict(self.call_authors),
            set(self.response_ids),
            self.unseen_ids,
            dict(self.open_since),
            self.reuses_ids,
            self.checked_count,
            self.served_as_stored,
            dict(self.pending) if self.pending is not None else None,
        )

    def admits(self, event: Event) -> bool:
        """Whether appending `event` keeps the verdict (module docstring); if so, records it.

        After False the verdict is spent: the caller checks the view again.
        """
        if event.branch or _filtered_by_history(event) or event.long_running_tool_ids:
            return False
        actions = event.actions
        if actions is not None and (
            actions.requested_auth_configs
            or actions.requested_tool_confirmations
            or actions.transfer_to_agent
        ):
            return False
        author = event.author
        if author != "user" and author not in self.agents:
            return False
        if event.error_code:
            return False
        content = event.content
        parts = content.parts if content is not None else None
        if not parts:
            # ADK turns a transcription without content into one, merged with its neighbours'.
            if event.input_transcription is not None or event.output_transcription is not None:
                return False
            self.event_count += 1
            return True
        call_ids: list[str] = []
        response_ids: list[str] = []
        for part in parts:
            call, response = part.function_call, part.function_response
            if call is None and response is None:
                continue
            if is_mixed(part):
                return False
            named = call if call is not None else response
            ident = named.id  # type: ignore[union-attr]
            name = named.name or ""  # type: ignore[union-attr]
            if not ident or not _kept_as_is(ident) or name.startswith("adk_"):
                return False
            (call_ids if call is not None else response_ids).append(ident)
        if call_ids and response_ids:
            return False
        pending = self.pending
        if pending is not None and not _keeps_every_rule_since(pending, call_ids, response_ids):
            return False
        open_since = self.open_since
        for ident in response_ids:
            if not open_since.get(ident) or ident in self.unseen_ids:
                return False  # answers a checked call, or nothing
            open_since[ident] = False
            self.response_ids.add(ident)
        if len(set(call_ids)) != len(call_ids):
            return False
        for ident in call_ids:
            if ident in self.unseen_ids:
                return False
            if ident in self.call_authors or ident in self.response_ids:
                if not (
                    self.reuses_ids
                    and self.call_authors.get(ident) == author
                    and ident in self.response_ids
                    and not open_since.get(ident)
                ):
                    return False
            else:
                self.call_authors[ident] = author
            open_since[ident] = True
        self.event_count += 1
        return True

    def advance(self, events: Sequence[Event], ledger: PairingLedger) -> bool:
        """Admits `events[event_count:]`, the appended events `ledger` has walked; False if one
        can change the verdict, or the ledger found a new irregular shape."""
        for event in events[self.event_count :]:
            if not self.admits(event):
                return False
        return len(ledger.shapes) == self.shape_count


def _kept_as_is(call_id: str) -> bool:
    """Whether every converter and builder sends `call_id` as it is, and no other id as it."""
    if ANTHROPIC_ID.fullmatch(call_id) is None or may_collide_with_a_fallback(call_id):
        return False
    return builder_keeps_call_ids() or not call_id.startswith("adk-")


def _filtered_by_history(event: Event) -> bool:
    """Whether ADK's builder decides `event`'s fate from other events: a rewind, a compaction,
    a scope or a workflow node's path."""
    actions = event.actions
    if actions is not None and (actions.rewind_before_invocation_id or actions.compaction):
        return True
    if getattr(event, "isolation_scope", None):
        return True
    node_info = getattr(event, "node_info", None)
    return bool(getattr(node_info, "path", None))


def _quiet(event: Event) -> bool:
    """Whether `event` is visible text alone: the last content of every request built up to it."""
    content = event.content
    if content is None or not content.parts:
        return False
    visible = False
    for part in content.parts:
        if part.function_call is not None or part.function_response is not None:
            return False
        if part.text and not part.thought:
            visible = True
    return visible and not event.error_code


def _keeps_every_rule_since(
    pending: dict[str, tuple[str, ...]], call_ids: list[str], response_ids: list[str]
) -> bool:
    """Whether the stored request still keeps every rule over what was appended since.

    Needed where the check served a call event as stored: a rule the
    appended events break in the stored request would no longer hold the
    view to it, and a fresh read could accept what the check rejected. So
    each call event appended since is answered whole, in call order, by one
    event; and while it is open, the builder must drop its calls
    (`adk_drops_unanswered_calls`), as the stored request then never
    carries them unanswered.
    """
    if call_ids:
        if not adk_drops_unanswered_calls():
            return False
        pending[call_ids[0]] = tuple(call_ids)
    elif response_ids and pending.pop(response_ids[0], None) != tuple(response_ids):
        return False
    return True
