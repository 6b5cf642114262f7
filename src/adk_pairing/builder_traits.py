"""What the installed ADK's request builder does with reused call ids, probed once.

ADK's contents request processor changed between releases in two ways that
decide where a placeholder may go. Each is detected by running ADK's own
function on a four-event probe, never from a version number: a backport, a
patch release or a vendored fork is judged by what it does.

``history_pairs_by_last_response``
    ADK 1.20 to 2.6 (``contents.py``, ``_rearrange_events_for_async_function_
    responses_in_history``, 1.20.0:84-90, 2.6.2:145-155) map every call id to
    the *last* event in the whole history holding a response with that id, and
    put that event after *every* call with that id. A placeholder for a reused
    id that comes last therefore replaces the real result of an earlier call.
    From 2.9 a response belongs to the newest call before it with its id
    (``_tool_call_rearranger.py`` 2.9.2:99-129).

``latest_response_walks_back``
    Up to 2.10, ``_rearrange_events_for_latest_function_response`` returns at
    once when the event before the trailing response event holds one of its
    calls; otherwise it walks back through the history, and its ``break``
    (1.20.0:186, 2.6.2:254, 2.9.2:288, 2.10.0:371) leaves only the inner loop:
    every older call event sharing an id with the one it found either raises
    ``ValueError: Last response event should only contain the responses...``
    (1.20.0:177, 2.10.0:362) or becomes the new start of a merge that drops
    everything after it. 2.11 rewrote it (``_find_owning_call_event_index``,
    2.11.0:359). This runs in the contents request processor, before any
    ``before_model_callback``, so nothing later can catch it.

Both probes run ADK's pure rearranging functions on plain events (no I/O).
If a function is absent or fails in an unforeseen way, the newest behaviour is
assumed (2.13's): the probe can only get more careful, never less.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

from google.adk.events.event import Event
from google.genai import types


class BuilderTraits(NamedTuple):
    """How the installed ADK's request builder attributes responses."""

    history_pairs_by_last_response: bool
    latest_response_walks_back: bool
    #: 2.9 and later drop a response no call carries the id of before the
    #: rearrangers run (``_drop_orphaned_function_responses``), so such an
    #: event is never the builder's last one.
    drops_orphan_responses: bool = True


#: ADK 2.11 and later: no reused-id hazard in the request builder.
NEWEST_BUILDER = BuilderTraits(
    history_pairs_by_last_response=False, latest_response_walks_back=False
)


def _event(author: str, role: str, parts: list[types.Part]) -> Event:
    return Event(
        author=author, invocation_id="probe", content=types.Content(role=role, parts=parts)
    )


def _calls(*ids: str) -> Event:
    parts = [types.Part(function_call=types.FunctionCall(id=i, name="probe")) for i in ids]
    return _event("agent", "model", parts)


def _responses(*ids: str) -> Event:
    parts = [
        types.Part(function_response=types.FunctionResponse(id=i, name="probe", response={}))
        for i in ids
    ]
    return _event("agent", "user", parts)


def _probe_history_pairs_by_last_response() -> bool:
    from google.adk.flows.llm_flows import contents

    rearrange = contents._rearrange_events_for_async_function_responses_in_history
    first_result, second_result = _responses("reused"), _responses("reused")
    events = [_calls("reused"), first_result, _calls("reused"), second_result]
    rearranged = rearrange(events)
    # Pairing by the newest preceding call keeps the first result after the first call.
    return rearranged[1] is not first_result


def _probe_latest_response_walks_back() -> bool:
    from google.adk.flows.llm_flows import contents

    rearrange = contents._rearrange_events_for_latest_function_response
    events = [_calls("a"), _calls("a", "b"), _responses("b"), _responses("a")]
    try:
        rearrange(events)
    except ValueError:
        return True
    return False


@functools.cache
def builder_traits() -> BuilderTraits:
    """The installed ADK's traits (see the module docstring); probed on first use."""
    try:
        by_last = _probe_history_pairs_by_last_response()
    except Exception:  # absent or reshaped: assume the newest builder
        by_last = False
    try:
        walks_back = _probe_latest_response_walks_back()
    except Exception:
        walks_back = False
    try:
        from google.adk.flows.llm_flows import contents
    except Exception:  # the shim is gone: the newest builder drops orphans too
        return BuilderTraits(by_last, walks_back)
    drops_orphans = hasattr(contents, "_drop_orphaned_function_responses")
    return BuilderTraits(by_last, walks_back, drops_orphans)
