"""What the installed ADK's request builder does, probed once on its own functions.

ADK's contents request processor changed between releases in ways that decide
where a placeholder may go and whether a call nothing answers is sent. Each is
detected by running (or looking up) ADK's own function, never from a version
number: a backport, a patch release or a vendored fork is judged by what it
does. The releases, behaviours and ADK files behind each trait are tabled in
docs/compatibility.md ("What the request builder does, by release").

``history_pairs_by_last_response``
    The builder maps every call id to the *last* event holding a response with
    that id and puts that event after *every* call with that id, so a
    placeholder for a reused id that comes last replaces the real result of an
    earlier call. Newer builders give a response to the newest call before it
    with its id.

``latest_response_walks_back``
    When the trailing response event does not directly follow its call event,
    the builder walks back through the history. It raises ``ValueError: Last
    response event should only contain the responses...`` when that event
    answers calls of two call events, and an older call event sharing an id
    with the one it found either raises so too or becomes the new start of a
    merge that drops everything after it. This runs before any
    ``before_model_callback``, so nothing later can catch it. Newer builders
    find each result's own call event instead.

``drops_orphan_responses``
    The builder drops a response no call carries the id of before its
    rearrangers run, so such an event is never its last one.

``drops_unanswered_calls``
    The builder drops a call nothing answers (`adk_drops_unanswered_calls`),
    so the stored request of a parallel turn with a call left open between
    answered ones holds the answered calls alone, their answers in call order.

The probes run ADK's pure rearranging functions on plain events (no I/O). If a
function or its module is absent, or fails in an unforeseen way, the newest
behaviour is assumed (`NEWEST_BUILDER`): the probe can only get more careful,
never less (tests/unit/test_adk_probes.py removes the module and checks it).
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import inspect
import logging
from collections.abc import Callable, Iterator
from typing import Any, NamedTuple

from google.adk.events.event import Event
from google.genai import types

from ..wire import LEFT_OUT_CALL_NAMES
from ._modules import imported_or_none

#: ADK's ask-the-user call (``REQUEST_INPUT_FUNCTION_CALL_NAME``).
INPUT_REQUEST = "adk_request_input"


class BuilderTraits(NamedTuple):
    """How the installed ADK's request builder attributes responses (module docstring)."""

    history_pairs_by_last_response: bool
    latest_response_walks_back: bool
    drops_orphan_responses: bool = True
    drops_unanswered_calls: bool = False


#: The newest builder's traits: no reused-id hazard in the request builder.
NEWEST_BUILDER = BuilderTraits(
    history_pairs_by_last_response=False,
    latest_response_walks_back=False,
    drops_unanswered_calls=True,
)

_CONTENTS = "google.adk.flows.llm_flows.contents"
_REARRANGER = "google.adk.flows.llm_flows.tools._rearranger"


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


def _probe_history_pairs_by_last_response(contents: object) -> bool:
    rearrange = contents._rearrange_events_for_async_function_responses_in_history  # type: ignore[attr-defined]
    first_result, second_result = _responses("reused"), _responses("reused")
    events = [_calls("reused"), first_result, _calls("reused"), second_result]
    rearranged = rearrange(events)
    # Pairing by the newest preceding call keeps the first result after the first call.
    return rearranged[1] is not first_result


def _probe_latest_response_walks_back(contents: object) -> bool:
    rearrange = contents._rearrange_events_for_latest_function_response  # type: ignore[attr-defined]
    events = [_calls("a"), _calls("a", "b"), _responses("b"), _responses("a")]
    try:
        rearrange(events)
    except ValueError:
        return True
    return False


@functools.cache
def builder_traits() -> BuilderTraits:
    """The installed ADK's traits (see the module docstring); probed on first use."""
    contents = imported_or_none(_CONTENTS)
    if contents is None:  # the shim is gone: assume the newest builder
        return NEWEST_BUILDER
    try:
        by_last = _probe_history_pairs_by_last_response(contents)
    except Exception:  # absent or reshaped: assume the newest builder
        by_last = False
    try:
        walks_back = _probe_latest_response_walks_back(contents)
    except Exception:
        walks_back = False
    drops_orphans = hasattr(contents, "_drop_orphaned_function_responses")
    return BuilderTraits(by_last, walks_back, drops_orphans, adk_drops_unanswered_calls())


@functools.cache
def adk_drops_unanswered_calls() -> bool:
    """Whether ADK's request builder drops a call nothing answers, logging a warning.

    Builders without ``drop_orphaned_function_calls`` send the call as stored
    (and Anthropic's API rejects it); its module is absent from those releases,
    so absence means an older builder here, not an unforeseen one.
    """
    rearranger = imported_or_none(_REARRANGER)
    return rearranger is not None and hasattr(rearranger, "drop_orphaned_function_calls")


@functools.cache
def left_out_call_names() -> frozenset[str]:
    """The call names whose event ADK's request builder leaves out whole, on this release.

    `adk_pairing.wire.LEFT_OUT_CALL_NAMES`, the newest builder's, plus
    ``adk_request_input`` where the builder leaves input requests out too (it
    then has ``_is_request_input_event``, asked of a plain event here).
    """
    contents = imported_or_none(_CONTENTS)
    is_input_request = getattr(contents, "_is_request_input_event", None)
    if not callable(is_input_request):
        return LEFT_OUT_CALL_NAMES
    request = _event(
        "agent",
        "model",
        [types.Part(function_call=types.FunctionCall(id="a", name=INPUT_REQUEST, args={}))],
    )
    try:
        leaves_out = bool(is_input_request(request))
    except Exception:  # reshaped: assume the newest builder
        return LEFT_OUT_CALL_NAMES
    return LEFT_OUT_CALL_NAMES | {INPUT_REQUEST} if leaves_out else LEFT_OUT_CALL_NAMES


def contents_builder() -> Callable[[list[Event], Any, str | None], list[types.Content]]:
    """ADK's ``_get_contents`` as ``(events, agent, branch)``, as its contents processor calls it.

    Ids are kept as stored where the release can (``preserve_function_call_ids``);
    a builder without it strips only ADK's own ``adk-`` ids, from both lists alike.
    """
    from google.adk.flows.llm_flows import contents

    get_contents = contents._get_contents
    if "preserve_function_call_ids" in inspect.signature(get_contents).parameters:
        return lambda events, agent, branch: get_contents(
            branch, events, agent, preserve_function_call_ids=True
        )
    return lambda events, agent, branch: get_contents(branch, events, agent)


_quiet = contextvars.ContextVar("adk_pairing_quiet_builder", default=False)


class _WhileProving(logging.Filter):
    """Drops ADK's builder log records inside `builder_logs_quieted`."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not _quiet.get()


@functools.cache
def quieted_contents_builder() -> Callable[[list[Event], Any, str | None], list[types.Content]]:
    """`contents_builder`, with a filter on ADK's builder loggers for `builder_logs_quieted`.

    Its loggers (``contents``, and the rearrangers' own modules where a
    release has them) exist once it is imported.
    """
    build = contents_builder()
    quiet = _WhileProving()
    prefix = "google_adk.google.adk.flows.llm_flows"
    for name in list(logging.Logger.manager.loggerDict):
        if name.startswith(prefix):
            logging.getLogger(name).addFilter(quiet)
    return build


@contextlib.contextmanager
def builder_logs_quieted() -> Iterator[None]:
    """ADK's builder log records dropped while a build that is not the request's own runs.

    ADK logs what its builder drops when it builds the real request; a build
    that proves a view, or that `PairingPlugin` runs again, would log it twice.
    """
    quieted_contents_builder()  # puts the filter on ADK's builder loggers
    token = _quiet.set(True)
    try:
        yield
    finally:
        _quiet.reset(token)
