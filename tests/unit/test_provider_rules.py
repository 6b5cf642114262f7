"""The providers' rules (`rules.provider_rules`): the normal form, each rule, the registry.

Pure logic, so most of this runs without a converter; where ADK's own
Anthropic converter is the proof, the request is converted with it
(`adk_pairing.rules.checks.anthropic_request`) and both normal forms must agree.
"""

from __future__ import annotations

import pytest
from google.genai import types

from adk_pairing.rules import checks
from adk_pairing.rules.checks import anthropic_request
from adk_pairing.rules.provider_rules import (
    PROVIDER_RULES,
    Reading,
    anthropic_pairing,
    strict_alternation,
    unique_tool_use_ids,
)
from adk_pairing.rules.request_form import (
    WireRequest,
    request_of_contents,
    starts_a_model_turn,
    with_positional_ids,
)
from adk_pairing.wire import Block

from .test_checks import ANSWERED, DANGLING, call, model, response, text, user


def _kinds(request: WireRequest) -> list[tuple[bool, list[Block]]]:
    return [(turn.is_model, [block.kind for block in turn.blocks]) for turn in request.turns]


@pytest.mark.parametrize(
    ("is_model", "previous", "starts"),
    [(True, False, True), (True, True, False), (True, None, False), (False, False, False)],
)
def test_a_model_turn_starts_only_after_a_user_side_content(
    is_model: bool, previous: bool | None, starts: bool
) -> None:
    assert starts_a_model_turn(is_model, previous) is starts


def test_the_registry_is_the_checks_rules_in_their_order() -> None:
    assert (
        checks.RULES
        == tuple(PROVIDER_RULES)
        == (
            "anthropic",
            "openai_chat",
            "gemini",
            "strict_alternation",
        )
    )
    assert {rule.reads for rule in PROVIDER_RULES.values()} == set(Reading)
    assert [r.name for r in PROVIDER_RULES.values() if not r.view_checked] == ["strict_alternation"]


def test_each_id_less_call_gets_its_own_id_and_its_result_the_call_it_answers() -> None:
    contents = [
        user(text("q")),
        model(call("a"), call("b"), call("a")),
        user(response("a"), response("b"), response("a")),
    ]
    rewritten, ids = with_positional_ids(contents)
    calls = [p.function_call.id for p in rewritten[1].parts or ()]  # type: ignore[union-attr]
    results = [p.function_response.id for p in rewritten[2].parts or ()]  # type: ignore[union-attr]
    assert len(set(calls)) == 3 and results == calls
    assert [ids.label(i) for i in calls] == ["<no id: a>", "<no id: b>", "<no id: a>"]


def test_an_id_the_converter_rewrites_is_mapped_one_to_one() -> None:
    contents = [user(text("q")), model(call("a", "ïd 1")), user(response("a", "ïd 1"))]
    rewritten, ids = with_positional_ids(contents)
    sent = rewritten[1].parts[0].function_call.id  # type: ignore[index,union-attr]
    assert sent != "ïd 1" and ids.label(sent) == "ïd 1"
    assert rewritten[2].parts[0].function_response.id == sent  # type: ignore[index,union-attr]


def test_a_call_the_converter_drops_takes_no_positional_slot() -> None:
    """A call beside text is not sent, so an id-less result answers the call that is.

    The converter sends the text of that part and drops its call; before the
    rules had one home, the checks gave it a slot and reported the sent call
    unanswered, while the view's check did not.
    """
    contents = [
        user(text("q")),
        model(
            types.Part(text="thinking aloud", function_call=types.FunctionCall(name="a")), call("a")
        ),
        user(response("a")),
    ]
    assert anthropic_pairing(request_of_contents(contents)) == []
    request = anthropic_request(contents)
    assert not isinstance(request, str)
    assert anthropic_pairing(request) == []


@pytest.mark.parametrize("contents", [ANSWERED, DANGLING], ids=["answered", "dangling"])
def test_both_normal_forms_agree_with_adks_converter(contents: list[types.Content]) -> None:
    converted = anthropic_request(contents)
    assert not isinstance(converted, str)
    modelled = request_of_contents(contents)
    assert _kinds(modelled) == _kinds(converted)
    assert anthropic_pairing(modelled) == anthropic_pairing(converted)


def test_the_pairing_rule_wants_the_answers_leading_the_next_turn() -> None:
    late = [user(text("q")), model(call("a", "c1")), user(text("by the way"), response("a", "c1"))]
    assert anthropic_pairing(request_of_contents(late)) == [
        "message 1: tool_use ids ['c1'] were found without tool_result blocks immediately after"
    ]
    assert anthropic_pairing(request_of_contents(ANSWERED)) == []


def test_one_id_on_two_calls_is_one_violation_whichever_turns_hold_them() -> None:
    twice = [
        user(text("q")),
        model(call("a", "c1")),
        user(response("a", "c1"), call("a", "c1")),
    ]
    assert unique_tool_use_ids(request_of_contents(twice)) == [
        "tool_use id 'c1' is used by 2 calls; ids must be unique"
    ]


def test_strict_alternation_reads_the_turns_before_merging() -> None:
    contents = [model(text("hi")), user(text("a")), user(text("b"))]
    assert strict_alternation(request_of_contents(contents)) == [
        "message 0: the conversation starts with 'assistant'",
        "messages 1 and 2: two consecutive 'user' messages",
    ]
