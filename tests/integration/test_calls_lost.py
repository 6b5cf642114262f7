"""Calls lost (issue 23, item 4): per request, the agent's calls the model is not told about.

Measured with `tests.calls_lost` (ADK's own builder as the oracle) for four
setups: neither piece (the baseline), the decorator alone, the plugin alone,
both. Through a real `Runner` over a real store, and over a small sample of
seeded histories (`tests/reliability/test_fuzz.py` counts it over more), on
every CI release.

With the plugin installed, none is lost, on realistic and malformed histories
alike. A request ADK's builder refuses on the stored history (releases up to
2.10 raise on some malformed ones) is built before any model callback, so the
plugin alone is never asked: those calls are counted apart (the unwrapped
setup loses them; behind the view ADK builds the request). The decorator
alone is held to never worse: it loses no call the unwrapped request keeps.
"""

from __future__ import annotations

import pytest
from google.adk.agents.callback_context import CallbackContext
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.plugins.base_plugin import BasePlugin

from adk_pairing import PairingPlugin
from adk_pairing.passes.view import view_state_of
from tests.calls_lost import SETUPS, Tally, calls_lost
from tests.reliability.histories import HistoryGenerator
from tests.reliability.interrupted_histories import InterruptedHistories

from .conftest import backend_params
from .support.backends import Backend
from .support.scenario import Harness
from .support.scripted_model import call, calls, text

UNWRAPPED, DECORATOR, PLUGIN, BOTH = SETUPS

WITH_THE_PLUGIN = [PLUGIN, BOTH]


class HistoryRecorder(BasePlugin):
    """Records, before every model call, the agent's history as stored, its name and branch.

    Installed after `PairingPlugin`; returns None, so the request goes on as it is.
    """

    def __init__(self) -> None:
        super().__init__(name="history_recorder")
        self.seen: list[tuple[list, str, str | None]] = []

    async def before_model_callback(
        self, *, callback_context: CallbackContext, llm_request: LlmRequest
    ) -> LlmResponse | None:
        invocation = callback_context._invocation_context
        session = invocation.session
        view = view_state_of(session)
        stored = view.inner.events if view is not None else session.events
        self.seen.append((list(stored), invocation.agent.name, invocation.branch))
        return None


async def _killed_mid_tool(harness: Harness) -> None:
    session_id = await harness.new_session()
    await harness.interrupted_turn(session_id, "do the slow thing")
    await harness.turn(session_id, "are you still there?")


async def _long_running_beside_an_ordinary_call(harness: Harness) -> None:
    session_id = await harness.new_session()
    await harness.turn(session_id, "weather in Oslo, and start the report")
    await harness.turn(session_id, "how is it going?")


SCENARIOS = {
    "killed mid-tool": (
        _killed_mid_tool,
        lambda: [calls(call("hang", {"reason": "slow"}, id="call_1")), text("Sorry.")],
    ),
    "long-running beside an ordinary call, then user text": (
        _long_running_beside_an_ordinary_call,
        lambda: [
            calls(
                call("lookup", {"city": "Oslo"}, id="c1"),
                call("start_job", {"name": "report"}, id="job_1"),
            ),
            text("Started."),
            text("Still running."),
        ],
    ),
}


async def _lost_through_a_runner(backend: Backend, scenario: str, setup: str) -> int:
    """Calls lost over every request of `scenario` run in `setup`."""
    drive, steps = SCENARIOS[scenario]
    recorder = HistoryRecorder()
    plugins: list[BasePlugin] = [PairingPlugin()] if setup in (PLUGIN, BOTH) else []
    harness = Harness.build(
        backend,
        wrapped=setup in (DECORATOR, BOTH),
        plugins=[*plugins, recorder],
        steps=steps(),
    )
    await drive(harness)
    requests = harness.script.requests
    assert len(requests) == len(recorder.seen)
    return sum(
        len(calls_lost(history, request.contents, agent, branch))
        for (history, agent, branch), request in zip(recorder.seen, requests, strict=True)
    )


# A persistent store: on google-adk 2.13 `Harness.interrupted_turn` over an
# unwrapped InMemorySessionService cannot see the call stored and running.
RUNNER_STORES = backend_params({"sqlite"})


@pytest.mark.parametrize("backend_spec", RUNNER_STORES, indirect=True)
@pytest.mark.parametrize("scenario", list(SCENARIOS))
@pytest.mark.parametrize("setup", WITH_THE_PLUGIN)
async def test_with_the_plugin_no_call_is_lost_through_a_runner(
    backend: Backend, scenario: str, setup: str
) -> None:
    lost = await _lost_through_a_runner(backend, scenario, setup)
    print(f"calls lost, {setup}, {scenario}: {lost}")
    assert lost == 0


@pytest.mark.parametrize("backend_spec", RUNNER_STORES, indirect=True)
@pytest.mark.parametrize("scenario", list(SCENARIOS))
async def test_the_decorator_alone_loses_no_call_the_unwrapped_request_keeps(
    backend: Backend, scenario: str
) -> None:
    unwrapped = await _lost_through_a_runner(backend, scenario, UNWRAPPED)
    decorated = await _lost_through_a_runner(backend, scenario, DECORATOR)
    print(f"calls lost, {scenario}: unwrapped {unwrapped}, decorator alone {decorated}")
    assert decorated <= unwrapped


#: A sample small enough for every CI release (seconds); the reliability fuzz
#: counts the same over more.
SAMPLE = 80
_tallies: dict[str, Tally] = {}


async def _sampled(kind: str) -> Tally:
    """The tally of `SAMPLE` seeded histories of `kind`, measured once per test session."""
    if kind not in _tallies:
        generator = InterruptedHistories(23) if kind == "interrupted" else HistoryGenerator(23)
        tally = Tally()
        for _ in range(SAMPLE):
            await tally.add(generator.history())
        _tallies[kind] = tally
    return _tallies[kind]


KINDS = ("interrupted", "fuzzed")


@pytest.mark.parametrize("setup", WITH_THE_PLUGIN)
async def test_with_the_plugin_no_call_is_lost_over_sampled_realistic_histories(
    setup: str,
) -> None:
    tally = await _sampled("interrupted")
    print(f"interrupted: {tally.figure()}")
    assert tally.lost[setup] == 0


@pytest.mark.parametrize("setup", WITH_THE_PLUGIN)
async def test_with_the_plugin_no_call_is_lost_over_sampled_malformed_histories(
    setup: str,
) -> None:
    # Reused ids, text beside a call, calls beside ADK's requests, orphan results.
    tally = await _sampled("fuzzed")
    print(f"fuzzed: {tally.figure()}")
    assert tally.lost[UNWRAPPED] > 0  # the sample does reach calls the store loses
    assert tally.lost[setup] == 0


@pytest.mark.parametrize("kind", KINDS)
async def test_the_decorator_alone_never_loses_more_than_unwrapped_over_sampled_histories(
    kind: str,
) -> None:
    tally = await _sampled(kind)
    print(f"{kind}: {tally.figure()}")
    assert tally.lost[UNWRAPPED] > 0  # the sample does reach calls the store loses
    assert tally.decorator_worse == 0
