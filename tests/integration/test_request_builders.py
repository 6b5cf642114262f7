"""The view against each ADK release's request builder, through a real Runner.

Every scenario runs twice on the same store kind, unwrapped and wrapped, with
the same script; the scripted model records each request and checks it against
Anthropic's rule. The view must never be worse: no turn raises wrapped that
does not raise unwrapped, no request is invalid wrapped that is valid
unwrapped, and a real result is never displaced by a placeholder. What the
builders do differently (and so what the view adds) is in the docstrings of
`adk_pairing.ledger` and `adk_pairing.adk.builder`.

Model ids such as ``call_1`` repeat across turns (OpenAI-style and some
LiteLLM providers number them per response), which is what puts the older
builders on their wrong paths.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from google.genai import types

from adk_pairing import CallStatus
from adk_pairing.adk.builder import builder_traits
from adk_pairing.core.placeholders import placeholder_text

from .conftest import backend_params
from .support.backends import Backend
from .support.scenario import Harness
from .support.scripted_model import RecordedRequest, Script, Step, call, calls, text

pytestmark = pytest.mark.parametrize(
    "backend_spec", backend_params(("memory", "db-postgres")), indirect=True
)


@dataclass
class Outcome:
    """What one run of a scenario gave: the requests, and the error a turn raised."""

    script: Script
    error: str | None

    @property
    def last(self) -> RecordedRequest:
        return self.script.last


Scenario = list[tuple[str, str | None]]  # (kind, message): kind "turn" or "interrupt"


async def run(backend: Backend, *, wrapped: bool, steps: list[Step], scenario: Scenario) -> Outcome:
    harness = Harness.build(backend, wrapped=wrapped, steps=steps)
    session_id = await harness.new_session()
    try:
        for kind, message in scenario:
            if kind == "interrupt":
                await harness.interrupted_turn(session_id, message)
            else:
                await harness.turn(session_id, message)
    except Exception as error:  # what ADK raises is what the user of that store gets
        return Outcome(harness.script, f"{type(error).__name__}: {error}")
    return Outcome(harness.script, None)


async def both(backend: Backend, steps: list[Step], scenario: Scenario) -> tuple[Outcome, Outcome]:
    unwrapped = await run(backend, wrapped=False, steps=list(steps), scenario=scenario)
    wrapped = await run(backend, wrapped=True, steps=list(steps), scenario=scenario)
    return unwrapped, wrapped


def assert_not_worse(unwrapped: Outcome, wrapped: Outcome) -> None:
    if unwrapped.error is None:
        assert wrapped.error is None, f"the view makes the turn fail: {wrapped.error}"
    for number, (plain, viewed) in enumerate(
        zip(unwrapped.script.requests, wrapped.script.requests, strict=False)
    ):
        if not plain.violations:
            assert not viewed.violations, f"request {number}: {viewed.violations}"


def result_after_each_call(request: RecordedRequest, call_id: str) -> list[str]:
    """For each tool_use `call_id` in `request`, what answers it: "real" or a placeholder status."""
    answers: list[str] = []
    contents = request.contents
    for position, content in enumerate(contents):
        if content.role != "model":
            continue
        if not any(p.function_call and p.function_call.id == call_id for p in content.parts or ()):
            continue
        following = contents[position + 1] if position + 1 < len(contents) else None
        found = "none"
        for part in (following.parts or ()) if following is not None else ():
            response = part.function_response
            if response is not None and response.id == call_id:
                payload = response.response or {}
                found = str(payload.get("status", "real")) if placeholder_text(payload) else "real"
        answers.append(found)
    return answers


async def test_a_reused_id_keeps_the_earlier_real_result_when_the_later_call_is_interrupted(
    backend: Backend,
) -> None:
    """ADK <= 2.6 pairs every call with the last response of its id: never a placeholder."""
    steps: list[Step] = [
        calls(call("lookup", {"city": "Oslo"}, id="call_1")),
        text("Sunny in Oslo."),
        calls(call("hang", {"reason": "slow"}, id="call_1")),
        text("Sorry about that."),
    ]
    scenario: Scenario = [("turn", "weather?"), ("interrupt", "slow thing"), ("turn", "hello?")]
    unwrapped, wrapped = await both(backend, steps, scenario)

    assert_not_worse(unwrapped, wrapped)
    assert unwrapped.error is None and wrapped.error is None
    assert not wrapped.last.violations
    answers = result_after_each_call(wrapped.last, "call_1")
    # The first call keeps its real result on every release.
    assert answers[0] == "real"
    if builder_traits().history_pairs_by_last_response:
        # ADK sends the earlier real result after the later call too; a
        # placeholder would have replaced both. The view adds nothing.
        assert answers == ["real", "real"]
        assert wrapped.last.contents == unwrapped.last.contents
    else:
        assert answers == ["real", CallStatus.MISSING.value]


async def test_an_interrupted_call_whose_id_is_reused_later_gets_no_real_result_of_another_call(
    backend: Backend,
) -> None:
    steps: list[Step] = [
        calls(call("hang", {"reason": "slow"}, id="call_1")),
        calls(call("lookup", {"city": "Oslo"}, id="call_1")),
        text("Sunny in Oslo."),
        text("You're welcome."),
    ]
    scenario: Scenario = [("interrupt", "slow thing"), ("turn", "weather?"), ("turn", "thanks")]
    unwrapped, wrapped = await both(backend, steps, scenario)

    assert_not_worse(unwrapped, wrapped)
    assert wrapped.error is None
    assert not wrapped.last.violations
    answers = result_after_each_call(wrapped.last, "call_1")
    if builder_traits().history_pairs_by_last_response:
        # ADK itself answers the interrupted call with the later real result.
        assert answers == ["real", "real"]
        assert wrapped.last.contents == unwrapped.last.contents
    else:
        assert answers == [CallStatus.MISSING.value, "real"]


async def test_parallel_call_with_a_reused_id_mid_turn_does_not_make_the_builder_raise(
    backend: Backend,
) -> None:
    """ADK <= 2.10 walks back from a placeholder between a call event and its result, and raises."""
    steps: list[Step] = [
        calls(call("lookup", {"city": "Oslo"}, id="call_1")),
        text("Sunny in Oslo."),
        # The same id again, in parallel with a long-running call: ADK runs
        # lookup, stores its result, and asks the model again in the same turn
        # with the long-running call still open.
        calls(
            call("lookup", {"city": "Rome"}, id="call_1"),
            call("start_job", {"name": "x"}, id="call_2"),
        ),
        text("Started."),
        text("Still waiting."),
    ]
    scenario: Scenario = [("turn", "weather?"), ("turn", "Rome, and start x"), ("turn", "done?")]
    unwrapped, wrapped = await both(backend, steps, scenario)

    assert_not_worse(unwrapped, wrapped)
    assert unwrapped.error is None
    assert wrapped.error is None
    mid_turn = 2  # weather?, Rome (first call), Rome (after lookup's result)
    if builder_traits().latest_response_walks_back:
        # While lookup's result is the last event, the view withholds the
        # pending call's placeholder (it would sit between the call event and
        # that result and send ADK walking back into the older call_1): that
        # request is exactly the unwrapped one.
        assert wrapped.script.requests[mid_turn].contents == (
            unwrapped.script.requests[mid_turn].contents
        )
    else:
        assert not wrapped.script.requests[mid_turn].violations
    # Once the turn moved on, the pending call is answered by its placeholder.
    assert not wrapped.last.violations
    assert result_after_each_call(wrapped.last, "call_2") == [CallStatus.PENDING.value]


async def test_text_and_call_in_one_part_gets_no_orphan_placeholder(backend: Backend) -> None:
    """Malformed: the Anthropic converter sends such a part as text only."""
    combined = types.Part(
        text="Let me check.",
        function_call=types.FunctionCall(id="call_1", name="hang", args={"reason": "slow"}),
    )
    steps: list[Step] = [
        calls(combined),
        text("Hello again."),
    ]
    scenario: Scenario = [("interrupt", "slow thing"), ("turn", "hello?")]
    unwrapped, wrapped = await both(backend, steps, scenario)

    assert_not_worse(unwrapped, wrapped)
    assert not wrapped.last.violations
    assert wrapped.last.responses_with_status(CallStatus.MISSING.value) == []


async def test_duplicate_call_ids_in_one_response_are_never_worse(backend: Backend) -> None:
    steps: list[Step] = [
        calls(
            call("lookup", {"city": "Oslo"}, id="call_1"),
            call("lookup", {"city": "Rome"}, id="call_1"),
        ),
        text("Both sunny."),
        text("Bye."),
    ]
    scenario: Scenario = [("turn", "weather twice?"), ("turn", "thanks")]
    unwrapped, wrapped = await both(backend, steps, scenario)

    assert_not_worse(unwrapped, wrapped)
