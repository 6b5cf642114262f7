"""The providers' rules (`rules.provider_rules`): the normal form, each rule, the registry.

Pure logic, so most of this runs without a converter; where ADK's own
Anthropic converter is the proof, the request is converted with it
(`adk_pairing.rules.checks.anthropic_request`) and both normal forms must agree.
"""

from __future__ import annotations

import pytest
from google.genai import types

from adk_pairing.rules import checks, provider_rules
from adk_pairing.rules.checks import anthropic_request
from adk_pairing.rules.provider_rules import (
    PROVIDER_RULES,
    Reading,
    anthropic_pairing,
    faulty_segments,
    refused_when_paired_by_id,
    request_of_contents,
    starts_a_model_turn,
    strict_alternation,
    unique_tool_use_ids,
    with_positional_ids,
)
from adk_pairing.wire import Block, may_collide_with_a_fallback

from .test_checks import ANSWERED, DANGLING, call, model, response, text, user


def _kinds(request: provider_rules.WireRequest) -> list[tuple[bool, list[Block]]]:
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


@pytest.mark.parametrize(
    ("call_id", "refused"),
    [(None, True), ("", True), ("toolu_fallback_0", True), ("c1", False), ("ïd 1", False)],
)
def test_an_id_a_provider_pairing_by_id_cannot_take(call_id: str | None, refused: bool) -> None:
    """No id (LiteLlm sends "", old Anthropic converters one shared fallback), or a fallback's."""
    assert refused_when_paired_by_id(call_id) is refused
    if call_id:  # the wire's own statement of the fallbacks' form
        assert refused_when_paired_by_id(call_id) is may_collide_with_a_fallback(call_id)


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


def test_faulty_segments_want_each_answer_in_its_calls_position() -> None:
    def faults(*answer: types.Part) -> list[range]:
        contents = [
            user(text("go")),
            model(call("a", "c1"), call("b")),
            user(*answer),
            model(text("done")),
        ]
        return faulty_segments(contents, fill=False)

    assert faults(response("a", "c1"), response("b"), text("ok")) == []
    for wrong in (
        [response("b"), response("a", "c1")],  # out of call order
        [response("a", "c1"), response("b", "c2")],  # an id the call does not have
        [response("a", "c1"), response("b"), response("b")],  # one result too many
        [response("a", "c1")],  # one too few
        [
            response("a", "c1"),
            types.Part(text="x", function_response=response("b").function_response),
        ],
        [response("a", "c1"), response("b"), call("c")],  # a call on the user's side
    ):
        assert faults(*wrong) == [range(1, 3)], wrong


def test_faulty_segments_find_each_faulty_segment_and_only_those() -> None:
    healthy_turn = [user(text("q")), model(call("a", "c1")), user(response("a", "c1"))]
    contents = [
        *healthy_turn,
        model(call("a", "c2")),  # 3..5: unanswered (user text follows)
        user(text("next")),
        model(call("a", "c1")),  # 5..7: reuses c1
        user(response("a", "c1")),
        model(text("fine")),  # 7..9: holds
        user(text("more")),
        model(text("ok")),
        model(text("again")),  # 9..11: two model contents in a row
    ]
    assert faulty_segments(contents, fill=False) == [range(3, 5), range(5, 7), range(9, 11)]
    # With `fill`, an id-less call is a fault for the providers that pair by id.
    idless = [user(text("q")), model(call("a")), user(response("a"))]
    assert faulty_segments(idless, fill=False) == []
    assert faulty_segments(idless, fill=True) == [range(1, 3)]
