"""How `PairingPlugin` ends an agent's ``before_model_callback`` chain (`shells.agent_pass`).

Pure logic over stand-ins for ADK's agent and callback context: the Runner
tests (tests/integration/test_request_after_others.py) show ADK running the
chain as placed here.
"""

from __future__ import annotations

import logging
from types import SimpleNamespace
from typing import Any

import pytest
from google.adk.models.llm_request import LlmRequest
from google.genai import types

from adk_pairing import pair_request
from adk_pairing.core.placeholders import PlaceholderTexts
from adk_pairing.shells import agent_pass
from adk_pairing.shells.agent_pass import final_request_pass, place_final_pass
from adk_pairing.shells.once import OncePerKey


class Agent:
    """The two things ADK reads of an agent's chain: the field, and its list form."""

    def __init__(self, chain: Any, name: str = "assistant") -> None:
        self.name = name
        self.before_model_callback = chain

    @property
    def canonical_before_model_callbacks(self) -> list[Any]:
        chain = self.before_model_callback
        return [] if chain is None else chain if isinstance(chain, list) else [chain]


class Context:
    """A callback context: ADK hands one to every callback of one request."""

    def __init__(self, agent: object) -> None:
        self._invocation_context = SimpleNamespace(agent=agent, session=None)


def mine(callback_context: object, llm_request: object) -> None:
    return None


PLACED = "placed adk_pairing.shells.agent_pass.final_request_pass"


@pytest.fixture(autouse=True)
def fresh_log_memory(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(agent_pass, "logged_once", OncePerKey())


@pytest.mark.parametrize(
    ("chain", "placed"),
    [
        (None, [final_request_pass]),
        (mine, [mine, final_request_pass]),
        ([mine], [mine, final_request_pass]),
        ([final_request_pass, mine], [mine, final_request_pass]),  # moved back to the end
        ([mine, final_request_pass], [mine, final_request_pass]),
        ([mine, pair_request], [mine, pair_request]),  # the user's own final pass
        (pair_request, pair_request),
    ],
    ids=["none", "one", "list", "moved", "in-place", "pair_request-last", "pair_request-alone"],
)
def test_the_final_pass_ends_every_chain_once(
    chain: Any, placed: Any, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="adk_pairing")
    original = list(chain) if isinstance(chain, list) else chain
    agent = Agent(chain)
    assert place_final_pass(Context(agent)) is True
    assert agent.before_model_callback == placed
    assert place_final_pass(Context(agent)) is True  # idempotent
    assert agent.before_model_callback == placed
    if isinstance(chain, list):
        assert chain == original  # the agent's own list is not mutated
    said = [r for r in caplog.records if PLACED in r.message]
    assert len(said) == (placed != chain and placed != [chain])


def test_an_agent_without_a_chain_is_said_once_with_the_fix(
    caplog: pytest.LogCaptureFixture,
) -> None:
    agent = SimpleNamespace(name="custom")
    assert place_final_pass(Context(agent)) is False
    assert place_final_pass(Context(agent)) is False
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert "adk_pairing.pair_request" in warnings[0].message


def test_an_agent_whose_chain_does_not_take_the_final_pass_is_said(
    caplog: pytest.LogCaptureFixture,
) -> None:
    class Frozen(Agent):
        @property
        def canonical_before_model_callbacks(self) -> list[Any]:
            return [mine]  # reads something else than the field

    assert place_final_pass(Context(Frozen(mine))) is False
    assert [r.levelno for r in caplog.records] == [logging.WARNING]


def contents() -> list[types.Content]:
    call = types.Part(function_call=types.FunctionCall(id="c1", name="f", args={}))
    result = types.Part(function_response=types.FunctionResponse(id="c1", name="f", response={}))
    return [
        types.Content(role="user", parts=[types.Part(text="hi")]),
        types.Content(role="model", parts=[call]),
        types.Content(role="user", parts=[result, types.Part(text="and?")]),
    ]


async def test_the_final_pass_repairs_only_requests_the_plugin_saw_and_others_changed() -> None:
    agent = Agent([mine])
    context = Context(agent)
    request = LlmRequest(contents=contents())

    # A request the plugin never saw (a runner without it): left alone.
    cut = request.contents[2:]
    request.contents = cut
    await final_request_pass(context, request)
    assert request.contents is cut

    # Seen and left as it is: nothing to do.
    request = LlmRequest(contents=contents())
    left = request.contents
    agent_pass.remember_what_the_plugin_left(context, request, PlaceholderTexts(), True)
    await final_request_pass(context, request)
    assert request.contents is left

    # Seen, then a window cut the call away from its result: the orphan is dropped.
    agent_pass.remember_what_the_plugin_left(context, request, PlaceholderTexts(), True)
    request.contents = request.contents[2:]
    await final_request_pass(context, request)
    assert [p.text for c in request.contents for p in c.parts] == ["and?"]
