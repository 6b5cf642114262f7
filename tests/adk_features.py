"""The google-adk features the suite exercises that not every supported version has.

The suite runs on every google-adk release we support (1.20 to 2.x; see
.ci/run). A test is skipped only when the installed ADK lacks the feature it
exercises, detected here by import or attribute, never by version number; the
skip reason names the feature and the installed version. Where an old ADK
does the same thing differently (another exception type, another close
method), the test uses the version's way instead of skipping.
"""

from __future__ import annotations

import importlib.util
import inspect
from pathlib import Path

import pytest
from google.adk.runners import Runner

from adk_pairing.adk_compat import (
    ADK_VERSION,
    adk_drops_unanswered_calls,
    close_session_service,
    has_adk_redis_session_service,
)

__all__ = [
    "ADK_VERSION",
    "HAS_ABORT_SIGNAL",
    "HAS_ADK_REDIS",
    "STALE_WRITER_ERROR",
    "adk_drops_unanswered_calls",
    "close_session_service",
    "requires",
]


def _module_exists(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except ImportError:
        return False


#: ``google.adk.integrations.redis`` (google-adk >= 2.9).
HAS_ADK_REDIS = has_adk_redis_session_service()

#: ``Runner.run_async(abort_signal=...)`` (google-adk >= 2.11).
HAS_ABORT_SIGNAL = "abort_signal" in inspect.signature(Runner.run_async).parameters

if _module_exists("google.adk.errors._stale_session_error"):
    from google.adk.errors._stale_session_error import StaleSessionError as _Stale

    #: What ADK's SQL stores raise on an append from an out-of-date session:
    #: ``StaleSessionError`` (a ``ValueError``) from 2.9, a plain ``ValueError`` before.
    STALE_WRITER_ERROR: type[Exception] = _Stale
else:
    STALE_WRITER_ERROR = ValueError


def _builder_can_preserve_call_ids() -> bool:
    from google.adk.flows.llm_flows.contents import _get_contents

    return "preserve_function_call_ids" in inspect.signature(_get_contents).parameters


#: ADK's request builder can keep its own ``adk-`` call ids (for Claude) (>= 1.39).
BUILDER_CAN_PRESERVE_CALL_IDS = _builder_can_preserve_call_ids()


def requires(present: bool, feature: str) -> pytest.MarkDecorator:
    """Skips a test when the installed google-adk lacks `feature`."""
    return pytest.mark.skipif(not present, reason=f"google-adk {ADK_VERSION} has no {feature}")


# -- known gaps on older versions, owned elsewhere -----------------------------
# Tests that fail on some versions because of the view's or the checker's
# semantics against an older ADK (issue 11, items 2-4) are marked with
# `known_gap`: a strict xfail, so the mark must go once the gap is fixed. The
# conditions are probes of ADK's own code, not version numbers.


def _adk_source_contains(text: str, *modules: str) -> bool:
    for name in modules:
        try:
            spec = importlib.util.find_spec(name)
        except ImportError:
            continue
        if spec is not None and spec.origin and text in Path(spec.origin).read_text():
            return True
    return False


#: ADK's request builder still checks that the last response event answers
#: only the calls of one call event, and raises ``ValueError: Last response
#: event should only contain the responses...`` otherwise (1.20 to 2.10).
BUILDER_CHECKS_LAST_RESPONSE = _adk_source_contains(
    "Last response event should only contain",
    "google.adk.flows.llm_flows.contents",
    "google.adk.flows.llm_flows._tool_call_rearranger",
    "google.adk.flows.llm_flows.tools._rearranger",
)


#: ADK's request builder raises ``ValueError: No function call event found for
#: function responses ids`` on a result whose call is not in the history,
#: instead of dropping it as later versions do.
#: (A probe: 2.9 still has the message but drops such a result before it.)
def _builder_rejects_orphan_responses() -> bool:
    from google.adk.events.event import Event
    from google.adk.flows.llm_flows.contents import _get_contents
    from google.genai import types

    orphan = types.Part(function_response=types.FunctionResponse(id="x", name="f", response={}))
    events = [
        Event(author="user", content=types.Content(role="user", parts=[types.Part(text="hi")])),
        Event(author="user", content=types.Content(role="user", parts=[orphan])),
    ]
    try:
        _get_contents(None, events, "agent")
    except ValueError:
        return True
    return False


BUILDER_REJECTS_ORPHAN_RESPONSES = _builder_rejects_orphan_responses()


def _builder_moves_the_latest_result_to_an_earlier_call_with_its_id() -> bool:
    """Whether ADK's request builder answers an earlier call with a later result of its id.

    History: ``call_1`` answered "real", later another ``call_1`` answered by a
    placeholder. Older builders (google-adk <= 2.6) index results by id, so the
    first call is sent with the placeholder instead of its own result.
    """
    from google.adk.events.event import Event
    from google.adk.flows.llm_flows.contents import _get_contents
    from google.genai import types

    def said(author: str, role: str, part: types.Part) -> Event:
        return Event(author=author, content=types.Content(role=role, parts=[part]))

    def called(name: str) -> types.Part:
        return types.Part(function_call=types.FunctionCall(id="call_1", name=name, args={}))

    def answered(name: str, value: str) -> types.Part:
        return types.Part(
            function_response=types.FunctionResponse(id="call_1", name=name, response={"v": value})
        )

    events = [
        said("user", "user", types.Part(text="one")),
        said("agent", "model", called("lookup")),
        said("user", "user", answered("lookup", "real")),
        said("agent", "model", types.Part(text="done")),
        said("user", "user", types.Part(text="two")),
        said("agent", "model", called("hang")),
        said("agent", "user", answered("hang", "placeholder")),
        said("user", "user", types.Part(text="three")),
    ]
    try:
        contents = _get_contents(None, events, "agent")
    except ValueError:
        return False  # another gap (BUILDER_CHECKS_LAST_RESPONSE), not this one
    for index, content in enumerate(contents[:-1]):
        if any(part.function_call for part in content.parts or ()):
            after = contents[index + 1]
            values = [p.function_response.response for p in after.parts if p.function_response]
            return values[:1] == [{"v": "placeholder"}]
    return False


BUILDER_PAIRS_REUSED_IDS_BY_LATEST = (
    _builder_moves_the_latest_result_to_an_earlier_call_with_its_id()
)


def _checker_sees_an_unanswered_idless_call() -> bool:
    """Whether `adk_pairing.checks` flags one of two id-less calls left unanswered.

    ADK's Anthropic converter on <= 2.9 gives every id-less call the same
    fallback id, so one answer seems to answer both.
    """
    from google.genai import types

    from adk_pairing.checks import anthropic_pairing_violations

    def idless_call() -> types.Part:
        return types.Part(function_call=types.FunctionCall(name="search", args={}))

    contents = [
        types.Content(role="user", parts=[types.Part(text="go")]),
        types.Content(role="model", parts=[idless_call(), idless_call()]),
        types.Content(
            role="user",
            parts=[
                types.Part(function_response=types.FunctionResponse(name="search", response={}))
            ],
        ),
    ]
    return bool(anthropic_pairing_violations(contents))


CHECKER_SEES_IDLESS_CALLS = _checker_sees_an_unanswered_idless_call()


def _compaction_generation_counting_the_view_differently() -> bool:
    """The sliding-window compaction of 1.39 to 2.11 (``_summarize_events_with_trace``
    without 2.12's ``_request_content``), which covers more stored events through
    the view than unwrapped. 1.20's first version and 2.12's rewrite do not."""
    from google.adk.apps import compaction

    return hasattr(compaction, "_summarize_events_with_trace") and not hasattr(
        compaction, "_request_content"
    )


COMPACTION_COVERS_MORE_THROUGH_THE_VIEW = _compaction_generation_counting_the_view_differently()


def known_gap(condition: bool, behaviour: str) -> pytest.MarkDecorator:
    """A strict xfail for a gap of an older google-adk that is being fixed elsewhere."""
    return pytest.mark.xfail(
        condition, reason=f"google-adk {ADK_VERSION}: {behaviour}", strict=True
    )
