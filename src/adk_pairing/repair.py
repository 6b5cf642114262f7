"""Building the repaired event list: stored events plus synthetic results.

Pure functions over events. A synthetic event is placed right after the event
whose calls it answers and is shaped so that ADK's request builder pairs it with
those calls while ADK's decision logic ignores it:

* its author is the calling agent (never ``"user"``): ADK's interrupt index,
  confirmation and credential processors only act on user-authored responses;
* its ``invocation_id`` is empty: resume/replay and interrupt logic read only
  the current invocation's events, and compaction counts only non-empty
  invocation ids, so the synthetic event belongs to no invocation;
* it keeps the call event's branch, isolation scope, node path and timestamp,
  so it is visible to exactly the agents (and compaction windows) that see
  the call;
* a confirmation/credential placeholder keeps the request's function name, so
  ADK strips it from the model request exactly as it strips the request itself.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

from google.adk.events.event import Event
from google.genai import types

from .analysis import CallStatus, PairingLedger, TrackedCall, build_ledger

#: Key under ``Event.custom_metadata`` that marks everything adk-pairing adds.
METADATA_KEY = "adk_pairing"

#: Author used only when the calling event itself has no agent author.
FALLBACK_AUTHOR = "adk_pairing"

DEFAULT_MISSING_TEXT = (
    "No result was recorded for this call: the turn that made it ended before "
    "the tool returned. The tool may or may not have run. Check before "
    "repeating an action that has side effects."
)
DEFAULT_PENDING_TEXT = (
    "This call is awaiting a response: it is still open (a long-running "
    "operation, a confirmation or a request for input) and its result has not "
    "arrived yet. Do not call it again; its result will follow when it arrives."
)


@dataclass(frozen=True, slots=True)
class PlaceholderTexts:
    """What the model reads in place of a result that is not there."""

    missing: str = DEFAULT_MISSING_TEXT
    pending: str = DEFAULT_PENDING_TEXT

    def for_status(self, status: CallStatus) -> str:
        return self.pending if status is CallStatus.PENDING else self.missing


def synthetic_event_id(call_event: Event) -> str:
    """A deterministic id, so the same history always yields the same view."""
    seed = f"{call_event.id}|{call_event.invocation_id}|{call_event.timestamp!r}"
    return "adk-pairing-" + hashlib.sha1(seed.encode(), usedforsecurity=False).hexdigest()[:24]


def is_synthetic(event: Event) -> bool:
    """Whether `event` was added by adk-pairing (and so is not in the store)."""
    metadata = event.custom_metadata
    return bool(metadata and (metadata.get(METADATA_KEY) or {}).get("synthetic"))


def _copy_scope(source: Event, fields: dict[str, object]) -> None:
    """Copies the scoping fields the running ADK version has (feature-detected)."""
    for name in ("isolation_scope", "node_info"):
        if name in type(source).model_fields:
            value = getattr(source, name)
            fields[name] = value.model_copy() if hasattr(value, "model_copy") else value


#: Every synthetic part is a shallow copy of this one with only
#: ``function_response`` set, as ``types.Part(function_response=...)`` would be.
_EMPTY_PART = types.Part()


def _response_part(call: TrackedCall, texts: PlaceholderTexts) -> types.Part:
    """The placeholder result for `call`, built without google-genai's validation.

    ``types.Part(...)`` and ``types.FunctionResponse(...)`` each run
    google-genai's before-validator (a Python loop over every field of the
    model); for a call event appended through a view that was 40% of building
    its synthetic event. The values are strings and a dict made right here,
    so there is nothing to validate, and the result equals the validated one
    (same values, same fields set, same JSON).
    """
    response = types.FunctionResponse.model_construct(
        id=call.call_id,
        name=call.name,
        response={"status": call.status.value, "message": texts.for_status(call.status)},
    )
    return _EMPTY_PART.model_copy(update={"function_response": response})


def make_synthetic_event(
    call_event: Event,
    open_calls: Sequence[TrackedCall],
    texts: PlaceholderTexts,
    part_cache: dict[int, types.Part] | None = None,
) -> Event:
    """One event answering every unanswered call of `call_event`, in call order.

    `part_cache` (part index -> placeholder part) lets a caller that re-renders
    the same call event as its calls are answered one by one reuse the parts
    it already built: the parts are never mutated, and a call's placeholder
    does not change while it stays open. Without it, answering the calls of one
    wide event one response at a time would rebuild every remaining part each
    time, quadratic in the event's width.
    """
    statuses = {call.status for call in open_calls}
    overall = CallStatus.MISSING if CallStatus.MISSING in statuses else CallStatus.PENDING
    if part_cache is None:
        parts = [_response_part(call, texts) for call in open_calls]
    else:
        parts = []
        for call in open_calls:
            part = part_cache.get(call.part_index)
            if part is None:
                part = part_cache[call.part_index] = _response_part(call, texts)
            parts.append(part)
    author = call_event.author if call_event.author and call_event.author != "user" else None
    fields: dict[str, object] = {
        "id": synthetic_event_id(call_event),
        "invocation_id": "",
        "author": author or FALLBACK_AUTHOR,
        "branch": call_event.branch,
        "timestamp": call_event.timestamp,
        # Unvalidated for the same reason as the parts: it holds only them.
        "content": types.Content.model_construct(role="user", parts=parts),
        "custom_metadata": {
            METADATA_KEY: {
                "synthetic": True,
                "status": overall.value,
                "call_event_id": call_event.id,
                "calls": [
                    {"id": call.call_id, "name": call.name, "status": call.status.value}
                    for call in open_calls
                ],
            }
        },
    }
    _copy_scope(call_event, fields)
    return Event(**fields)


def annotate_call_event(call_event: Event, open_calls: Sequence[TrackedCall]) -> Event:
    """A copy of `call_event` naming its unanswered calls; the original is untouched."""
    pending = [c.key for c in open_calls if c.status is CallStatus.PENDING]
    missing = [c.key for c in open_calls if c.status is CallStatus.MISSING]
    metadata = dict(call_event.custom_metadata or {})
    metadata[METADATA_KEY] = {
        "synthetic_event_id": synthetic_event_id(call_event),
        "pending": pending,
        "missing": missing,
    }
    return call_event.model_copy(update={"custom_metadata": metadata})


def repaired_events(
    events: Sequence[Event],
    texts: PlaceholderTexts = PlaceholderTexts(),
    *,
    ledger: PairingLedger | None = None,
) -> list[Event]:
    """The stored events with a synthetic result after every unanswered call.

    Healthy events are the very objects passed in; only events with unanswered
    calls are replaced, by annotated copies. Pass `ledger` when it was already
    built over `events` to avoid a second pass.
    """
    if ledger is None:
        ledger = build_ledger(events)
    if not ledger.open_calls:
        return list(events)
    result: list[Event] = []
    open_calls = ledger.open_calls
    start = 0
    # Copy the runs of healthy events between repaired ones as slices: a
    # Python loop over every event cost more than the repairs themselves.
    for index in sorted(open_calls):
        result.extend(events[start:index])
        event = events[index]
        calls = open_calls[index]
        result.append(annotate_call_event(event, calls))
        result.append(make_synthetic_event(event, calls, texts))
        start = index + 1
    result.extend(events[start:])
    return result
