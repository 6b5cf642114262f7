"""`PairingPlugin` alone keeps a dropped call in every request of a turn, after ADK's own plugins.

ADK runs plugins in the order they are listed, so a plugin listed before
`PairingPlugin` has already edited ``llm_request.contents`` when the restore
runs (issue 35). The restore places the calls ADK's builder dropped where that
builder would have put them, in whatever contents are there
(`adk_pairing.passes.restore_pass.place`): parts another plugin added to the last
content, or a window that keeps the calls' turn, leave them in place; a
window that cut their turn left them out on purpose, and they stay out. Real
`Runner`, scripted model, ADK's real `MultimodalToolResultsPlugin` and
`ContextFilterPlugin`, which exist on every release CI runs (1.20 to 2.13).

The history is the one a process killed mid-tool leaves: the user's message
and the model's call ``call_1``, nothing after. The next turn's model calls a
tool, then answers: two requests.
"""

from __future__ import annotations

import logging
from typing import Any

import pytest
from google.adk.plugins.context_filter_plugin import ContextFilterPlugin
from google.adk.plugins.multimodal_tool_results_plugin import MultimodalToolResultsPlugin
from google.genai import types

from adk_pairing import PairingPlugin
from tests.adk_features import adk_drops_unanswered_calls

from .conftest import backend_params
from .support.backends import Backend
from .support.scenario import Harness, Toolbox
from .support.scripted_model import call, calls, text
from .test_plugin_restores_dropped_calls import assert_answered, killed_mid_tool, store_history

pytestmark = pytest.mark.parametrize(
    "backend_spec", backend_params(("memory", "sqlite")), indirect=True
)

NOTE = "(the snapshot's caption)"


class WithSnapshot(Toolbox):
    """The usual tools and ``snapshot``, which returns a part, as multimodal tools do."""

    def tools(self) -> list[Any]:
        box = self

        def snapshot(city: str) -> types.Part:
            """Takes a snapshot of a city's weather map."""
            box.started["snapshot"] += 1
            box.finished["snapshot"] += 1
            return types.Part(text=NOTE)

        return [*super().tools(), snapshot]


def one_tool_then_text() -> list:
    return [calls(call("snapshot", {"city": "Oslo"}, id="call_2")), text("Done.")]


def calls_sent(harness: Harness) -> list[list[str | None]]:
    return [[c.id for c in request.function_calls] for request in harness.script.requests]


async def test_parts_another_plugin_added_keep_the_call_in_every_request(
    backend: Backend, caplog: pytest.LogCaptureFixture
) -> None:
    # MultimodalToolResultsPlugin adds the tool's part to the last content of
    # the turn's second request, before PairingPlugin runs.
    harness = Harness.build(
        backend,
        wrapped=False,
        plugins=[MultimodalToolResultsPlugin(), PairingPlugin()],
        steps=one_tool_then_text(),
        toolbox=WithSnapshot(),
    )
    session_id = await store_history(harness, killed_mid_tool())
    with caplog.at_level(logging.INFO, logger="adk_pairing"):
        await harness.turn(session_id, "are you still there?")

    first, second = harness.script.requests
    assert NOTE in [p.text for c in second.contents for p in c.parts or ()]  # the plugin acted
    for request in (first, second):
        assert_answered(request, "call_1")
    assert_answered(second, "call_2")
    assert harness.toolbox.started == {"snapshot": 1}
    assert not [r for r in caplog.records if "could not be put back" in r.getMessage()]


async def test_a_window_that_keeps_the_calls_turn_keeps_the_call(backend: Backend) -> None:
    # Two invocations kept: the killed one and this one, in both requests.
    harness = Harness.build(
        backend,
        wrapped=False,
        plugins=[ContextFilterPlugin(num_invocations_to_keep=2), PairingPlugin()],
        steps=one_tool_then_text(),
        toolbox=WithSnapshot(),
    )
    session_id = await store_history(harness, killed_mid_tool())
    await harness.turn(session_id, "are you still there?")

    for request in harness.script.requests:
        assert_answered(request, "call_1")
    assert harness.toolbox.started == {"snapshot": 1}


async def test_a_window_that_cut_the_calls_turn_leaves_the_call_out(
    backend: Backend, caplog: pytest.LogCaptureFixture
) -> None:
    # A custom filter keeping the last two contents: the killed turn is cut
    # on purpose, so the call stays out, said once, and every request holds.
    harness = Harness.build(
        backend,
        wrapped=False,
        plugins=[ContextFilterPlugin(custom_filter=lambda c: c[-2:]), PairingPlugin()],
        steps=one_tool_then_text(),
        toolbox=WithSnapshot(),
    )
    session_id = await store_history(harness, killed_mid_tool())
    with caplog.at_level(logging.INFO, logger="adk_pairing"):
        await harness.turn(session_id, "are you still there?")

    assert calls_sent(harness)[-1] == ["call_2"]
    assert_answered(harness.script.last, "call_2")
    ours = [r for r in caplog.records if r.name == "adk_pairing"]
    left_out = [r for r in ours if "stay out" in r.getMessage()]
    # Said once where the window cut a call ADK sends (on releases before
    # 2.10 ADK keeps it until the window does), and where ADK dropped it.
    assert len(left_out) <= 1, caplog.text
    if adk_drops_unanswered_calls():
        assert len(left_out) == 1, caplog.text
    assert not [r for r in ours if "could not be put back" in r.getMessage()]


async def test_contents_changed_where_the_call_goes_are_said_once_naming_the_fix(
    backend: Backend, caplog: pytest.LogCaptureFixture
) -> None:
    # A filter that opens the request with an exchange of its own: the start
    # is not what ADK built, so where the dropped call goes is not certain; the
    # request pass runs alone, and that is said once.
    def greet_first(contents: list[types.Content]) -> list[types.Content]:
        opening = [
            types.Content(role="user", parts=[types.Part(text="(earlier, in short)")]),
            types.Content(role="model", parts=[types.Part(text="Noted.")]),
        ]
        return [*opening, *contents]

    harness = Harness.build(
        backend,
        wrapped=False,
        plugins=[ContextFilterPlugin(custom_filter=greet_first), PairingPlugin()],
        steps=one_tool_then_text(),
        toolbox=WithSnapshot(),
    )
    session_id = await store_history(harness, killed_mid_tool())
    with caplog.at_level(logging.WARNING, logger="adk_pairing"):
        await harness.turn(session_id, "are you still there?")

    for request in harness.script.requests:
        assert request.function_calls is not None
    said = [r for r in caplog.records if "could not be put back" in r.getMessage()]
    if adk_drops_unanswered_calls():
        assert len(said) == 1, caplog.text
        assert "list PairingPlugin before that plugin" in said[0].getMessage()
        assert session_id in said[0].getMessage()
    else:
        # Before 2.10 ADK keeps the call: nothing to restore, the request pass answers it.
        assert said == []
        assert_answered(harness.script.last, "call_1")
