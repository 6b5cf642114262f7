"""`adk_pairing.adk`: every probe of the installed ADK, by name, and its fallback.

A probe that cannot tell (its ADK module gone, as on a release that moved it)
assumes the newest release's behaviour, as each probe's docstring says.
"""

from __future__ import annotations

import sys

import pytest

import adk_pairing.adk as adk
from adk_pairing.adk import builder, events
from adk_pairing.wire import LEFT_OUT_CALL_NAMES


def test_every_probe_is_exposed_by_name() -> None:
    for name in adk.__all__:
        assert getattr(adk, name) is not None, name


def test_a_release_without_the_contents_module_is_taken_for_the_newest_builder(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A None entry in sys.modules makes the import raise ImportError, as on a
    # release that moved the module.
    from google.adk.flows import llm_flows

    monkeypatch.delattr(llm_flows, "contents")
    monkeypatch.setitem(sys.modules, "google.adk.flows.llm_flows.contents", None)
    assert builder.builder_traits.__wrapped__() == builder.NEWEST_BUILDER
    assert builder.left_out_call_names.__wrapped__() == LEFT_OUT_CALL_NAMES


def test_a_reshaped_rearranger_is_taken_for_the_newest_builder(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from google.adk.flows.llm_flows import contents

    def reshaped(*_: object) -> None:
        raise TypeError("a new signature")

    for name in (
        "_rearrange_events_for_async_function_responses_in_history",
        "_rearrange_events_for_latest_function_response",
    ):
        monkeypatch.setattr(contents, name, reshaped, raising=False)
    traits = builder.builder_traits.__wrapped__()
    assert not traits.history_pairs_by_last_response
    assert not traits.latest_response_walks_back


def test_without_the_rearranger_module_no_call_is_taken_for_dropped(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Its module is absent from the releases whose builder sends such a call.
    monkeypatch.setitem(sys.modules, "google.adk.flows.llm_flows.tools._rearranger", None)
    assert builder.adk_drops_unanswered_calls.__wrapped__() is False


def test_a_failing_error_code_probe_answers_as_the_newest_release(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from google.adk.events.event import Event

    def reshaped(self: Event) -> bool:
        raise AttributeError("gone")

    monkeypatch.setattr(Event, "is_final_response", reshaped)
    assert events.adk_reads_error_code_of_responses.__wrapped__() is True


def test_without_workflows_only_the_event_itself_is_read(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "google.adk.workflow.utils._rehydration_utils", None)
    from google.adk.events.event import Event
    from google.genai import types

    part = types.Part(function_response=types.FunctionResponse(id="p", name="p", response={}))
    failed = Event(
        author="p",
        content=types.Content(role="user", parts=[part]),
        error_code="X",
        error_message="x",
    )
    reads_it = bool(Event.is_final_response(failed)) != bool(
        Event.is_final_response(failed.model_copy(update={"error_code": None}))
    )
    assert events.adk_reads_error_code_of_responses.__wrapped__() is reads_it


def test_the_wire_rules_ask_adks_converter_probe_once_the_package_is_imported() -> None:
    """Importing any module of ours sets the probe before a wire rule runs (a fresh process)."""
    import subprocess

    code = (
        "import adk_pairing.wire as wire, sys\n"
        "probe = sys.modules['adk_pairing.adk.models'].converter_sends_signed_thoughts\n"
        "assert wire._sends_signed_thoughts is probe, wire._sends_signed_thoughts\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_without_the_anthropic_converter_a_signed_thought_is_taken_for_thinking(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import google.adk.models

    from adk_pairing.adk import models

    monkeypatch.delattr(google.adk.models, "anthropic_llm", raising=False)
    monkeypatch.setitem(sys.modules, "google.adk.models.anthropic_llm", None)
    assert models.converter_sends_signed_thoughts.__wrapped__() is True
