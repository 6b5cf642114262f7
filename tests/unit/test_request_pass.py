"""The request pass (`adk_pairing.passes.request_pass`): its five rules hold, nothing else moves.

The rules are checked here by `rule_violations`, written for these tests from
the rules' statement (not the module's own scan), and by
ADK's Anthropic converter through `adk_pairing.rules.checks`. Hypothesis generates
request contents, malformed ones included: any role, text and a call in one
part, a call and a result in one part, results before any call, ids reused,
ids missing, empty contents.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import replace

import pytest
from google.adk.version import __version__ as adk_version
from google.genai import types
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from adk_pairing import PlaceholderTexts
from adk_pairing.adk import converter_sends_signed_thoughts
from adk_pairing.core.placeholders import OPENING_NOTE_TEXT
from adk_pairing.passes.request_pass import _opened_by_the_user, repair_contents
from adk_pairing.passes.request_prepare import prepare
from adk_pairing.passes.request_records import ContentRule
from adk_pairing.passes.request_rewrite import repair_segments
from adk_pairing.passes.request_scan import scan
from adk_pairing.rules.checks import anthropic_pairing_violations, request_violations
from adk_pairing.wire import MODEL_ROLES, is_mixed

# -- building contents --------------------------------------------------------


def call(call_id: str | None, name: str = "lookup", text: str | None = None) -> types.Part:
    return types.Part(function_call=types.FunctionCall(id=call_id, name=name, args={}), text=text)


def result(call_id: str | None, name: str = "lookup", text: str | None = None) -> types.Part:
    return types.Part(
        function_response=types.FunctionResponse(id=call_id, name=name, response={"ok": True}),
        text=text,
    )


def say(text: str) -> types.Part:
    return types.Part(text=text)


def model(*parts: types.Part) -> types.Content:
    return types.Content(role="model", parts=list(parts))


def user(*parts: types.Part) -> types.Content:
    return types.Content(role="user", parts=list(parts))


def dump(contents: Sequence[types.Content]) -> list[dict]:
    return [content.model_dump(mode="json", exclude_none=True) for content in contents]


def shape(contents: Sequence[types.Content]) -> list[tuple[str | None, list[str]]]:
    """role -> parts as short labels: text, C:<id> for a call, R:<id>[:status] for a result."""
    labels = []
    for content in contents:
        row = []
        for part in content.parts or ():
            if part.function_call is not None:
                row.append(f"C:{part.function_call.id}")
            elif part.function_response is not None:
                status = (part.function_response.response or {}).get("status")
                row.append(f"R:{part.function_response.id}" + (f":{status}" if status else ""))
            else:
                row.append(part.text or "")
        labels.append((content.role, row))
    return labels


# -- the rules, as stated -----------------------------------------------------

MODEL_SIDE = {"model", "assistant"}


def rule_violations(contents: Sequence[types.Content], *, ids_required: bool) -> list[str]:
    """Every way `contents` break the rules (empty when they hold)."""
    found: list[str] = []
    ids_seen: list[str] = []
    first = next((content for content in contents if content.parts), None)
    if first is not None and first.role in MODEL_SIDE and any(p.function_call for p in first.parts):
        found.append("0: the request opens with the model's calls")
    for index, content in enumerate(contents):
        parts = content.parts or []
        if not parts:
            found.append(f"{index}: empty content")
        is_model = content.role in MODEL_SIDE
        if index and (contents[index - 1].role in MODEL_SIDE) == is_model:
            found.append(f"{index}: same role as the content before it")
        calls = [p.function_call for p in parts if p.function_call is not None]
        results = [p.function_response for p in parts if p.function_response is not None]
        for part in parts:
            if (part.function_call or part.function_response) and part.text:
                found.append(f"{index}: a call or result shares a part with text")
        if not is_model and calls:
            found.append(f"{index}: a call outside a model content")
        if is_model and results:
            found.append(f"{index}: a result inside a model content")
        if is_model:
            for fc in calls:
                if fc.id:
                    ids_seen.append(fc.id)
                elif ids_required:
                    found.append(f"{index}: call {fc.name} has no id")
            following = contents[index + 1] if index + 1 < len(contents) else None
            if calls:
                leading: list[types.FunctionResponse] = []
                for part in (following.parts or []) if following is not None else []:
                    if part.function_response is None:
                        break
                    leading.append(part.function_response)
                if following is None or following.role in MODEL_SIDE:
                    found.append(f"{index}: calls without a user content after them")
                elif len(leading) != len(calls) or any(
                    r.name != c.name or ((r.id != c.id) if c.id else bool(r.id))
                    for c, r in zip(calls, leading, strict=False)
                ):
                    found.append(f"{index}: calls not answered one-to-one in order")
        elif results:
            previous = contents[index - 1] if index else None
            prior_calls = (
                [p for p in previous.parts or [] if p.function_call is not None]
                if previous is not None and previous.role in MODEL_SIDE
                else []
            )
            leading_results = 0
            for part in parts:
                if part.function_response is None:
                    break
                leading_results += 1
            if len(results) != len(prior_calls) or leading_results != len(results):
                found.append(f"{index}: results not exactly the leading answers of the calls")
    if len(ids_seen) != len(set(ids_seen)):
        found.append(f"call ids repeat: {sorted(ids_seen)}")
    return found


# -- the same list when nothing is wrong ---------------------------------------


def test_valid_request_comes_back_as_the_same_list_object() -> None:
    contents = [
        user(say("hi")),
        model(say("let me look"), call("c1")),
        user(result("c1")),
        model(say("done")),
    ]
    repaired = repair_contents(contents)
    assert repaired.contents is contents
    assert repaired.repairs == ()


def test_changed_request_reuses_every_untouched_content_object() -> None:
    first, second = user(say("hi")), model(call("c1"))
    contents = [first, second, user(say("again"))]
    repaired = repair_contents(contents)
    assert repaired.contents[0] is first
    assert repaired.contents[1] is second


# -- rule 1: every call answered, in call order ---------------------------------


def test_unanswered_call_before_user_text_gets_missing_placeholder_leading_that_turn() -> None:
    contents = [user(say("hi")), model(call("c1")), user(say("are you there?"))]
    repaired = repair_contents(contents)
    assert shape(repaired.contents) == [
        ("user", ["hi"]),
        ("model", ["C:c1"]),
        ("user", ["R:c1:missing", "are you there?"]),
    ]
    assert [(r.rule, r.call) for r in repaired.notable] == [(ContentRule.PLACEHOLDER, "c1")]


def test_held_open_call_gets_pending_placeholder_with_the_views_text() -> None:
    texts = PlaceholderTexts(missing="gone", pending="wait for it")
    contents = [user(say("hi")), model(call("lr1", "start_job")), user(say("status?"))]
    repaired = repair_contents(contents, held_open_ids={"lr1"}, texts=texts)
    placeholder = repaired.contents[2].parts[0].function_response
    assert placeholder.response == {"status": "pending", "message": "wait for it"}
    assert placeholder.name == "start_job"


def test_confirmation_request_is_held_open_by_name_without_any_session_id() -> None:
    contents = [user(say("hi")), model(call("x", "adk_request_confirmation")), user(say("?"))]
    repaired = repair_contents(contents)
    assert shape(repaired.contents)[2] == ("user", ["R:x:pending", "?"])


def test_held_open_ids_are_read_only_when_a_placeholder_is_needed() -> None:
    reads: list[int] = []

    def held_open() -> set[str]:
        reads.append(1)
        return set()

    healthy = [user(say("hi")), model(call("c1")), user(result("c1"))]
    repair_contents(healthy, held_open_ids=held_open)
    assert reads == []
    repair_contents([user(say("hi")), model(call("c1"))], held_open_ids=held_open)
    assert reads == [1]


def test_placeholder_and_real_result_are_merged_in_call_order_without_a_warning() -> None:
    # The view answers a pending call right after its event; the real result of
    # the parallel ordinary call arrives in a later event.
    contents = [
        user(say("go")),
        model(call("a"), call("b", "start_job")),
        user(result("b", "start_job")),
        user(result("a")),
    ]
    repaired = repair_contents(contents)
    assert shape(repaired.contents)[2] == ("user", ["R:a", "R:b"])
    assert repaired.notable == []


def test_trailing_unanswered_call_gets_a_user_content_of_its_own() -> None:
    repaired = repair_contents([user(say("hi")), model(call("c1"))])
    assert shape(repaired.contents)[-1] == ("user", ["R:c1:missing"])


# -- rule 2: no result without its call just before -----------------------------


def test_result_with_no_call_is_dropped() -> None:
    contents = [user(result("ghost"), say("hi")), model(say("hello"))]
    repaired = repair_contents(contents)
    assert shape(repaired.contents) == [("user", ["hi"]), ("model", ["hello"])]
    assert [(r.rule, r.call) for r in repaired.notable] == [(ContentRule.ORPHAN_RESPONSE, "ghost")]


def test_older_long_running_result_posted_after_a_newer_call_is_moved_to_its_call() -> None:
    # ADK's rearranger keeps such a result after the newer call; on the wire it
    # must follow its own call.
    contents = [
        user(say("start both")),
        model(call("lr_old", "start_job")),
        user(say("and the other")),
        model(call("lr_new", "start_job")),
        user(result("lr_new", "start_job"), result("lr_old", "start_job")),
    ]
    repaired = repair_contents(contents, held_open_ids={"lr_old", "lr_new"})
    assert shape(repaired.contents) == [
        ("user", ["start both"]),
        ("model", ["C:lr_old"]),
        ("user", ["R:lr_old", "and the other"]),
        ("model", ["C:lr_new"]),
        ("user", ["R:lr_new"]),
    ]
    assert [(r.rule, r.call) for r in repaired.notable] == [(ContentRule.MOVED_RESPONSE, "lr_old")]


def test_result_in_the_same_content_as_its_call_does_not_answer_it() -> None:
    contents = [user(say("hi")), model(call("c1"), result("c1"))]
    repaired = repair_contents(contents)
    assert shape(repaired.contents) == [
        ("user", ["hi"]),
        ("model", ["C:c1"]),
        ("user", ["R:c1:missing"]),
    ]


# -- rule 3: no two adjacent contents of one role --------------------------------


def test_adjacent_model_contents_are_merged_and_answered_together() -> None:
    contents = [user(say("hi")), model(call("a")), model(call("b")), user(result("a"), result("b"))]
    repaired = repair_contents(contents)
    assert shape(repaired.contents) == [
        ("user", ["hi"]),
        ("model", ["C:a", "C:b"]),
        ("user", ["R:a", "R:b"]),
    ]
    assert repaired.notable == []


def test_empty_content_between_two_user_contents_is_dropped_and_they_merge() -> None:
    contents = [user(say("one")), types.Content(role="model", parts=[]), user(say("two"))]
    repaired = repair_contents(contents)
    assert shape(repaired.contents) == [("user", ["one", "two"])]


# -- rule 4: unique ids, filled where the provider needs them --------------------


def test_reused_call_id_is_renamed_together_with_its_result() -> None:
    contents = [
        user(say("one")),
        model(call("call_1")),
        user(result("call_1")),
        model(call("call_1")),
        user(result("call_1")),
    ]
    repaired = repair_contents(contents)
    assert shape(repaired.contents)[3:] == [("model", ["C:call_1-2"]), ("user", ["R:call_1-2"])]
    assert [(r.rule, r.call) for r in repaired.notable] == [(ContentRule.DUPLICATE_ID, "call_1")]


def test_renamed_id_skips_ids_already_in_the_request() -> None:
    contents = [
        user(say("one")),
        model(call("x")),
        user(result("x")),
        model(call("x"), call("x-2")),
        user(result("x"), result("x-2")),
    ]
    repaired = repair_contents(contents)
    assert shape(repaired.contents)[3:] == [
        ("model", ["C:x-3", "C:x-2"]),
        ("user", ["R:x-3", "R:x-2"]),
    ]


def test_an_id_reused_many_times_numbers_its_copies_in_order_around_taken_ones() -> None:
    # Each copy's suffix is the smallest free one after the previous copy's.
    contents = [user(say("one"))]
    for call_id in ("x", "x", "x-3", "x", "x"):
        contents += [model(call(call_id)), user(result(call_id))]
    repaired = repair_contents(contents)
    calls = [part for _, parts in shape(repaired.contents) for part in parts if part[0] == "C"]
    assert calls == ["C:x", "C:x-2", "C:x-3", "C:x-4", "C:x-5"]


def test_idless_calls_get_ids_only_when_asked() -> None:
    contents = [user(say("hi")), model(call(None), call(None)), user(result(None), result(None))]
    assert repair_contents(contents).contents is contents
    repaired = repair_contents(contents, fill_missing_ids=True)
    assert shape(repaired.contents)[1:] == [
        ("model", ["C:call_pairing_1", "C:call_pairing_2"]),
        ("user", ["R:call_pairing_1", "R:call_pairing_2"]),
    ]


# -- malformed parts -------------------------------------------------------------


def test_text_and_call_in_one_part_are_split_so_the_call_survives_conversion() -> None:
    contents = [user(say("hi")), model(call("c1", text="Let me check.")), user(result("c1"))]
    assert anthropic_pairing_violations(contents)  # ADK's converter drops the call
    repaired = repair_contents(contents)
    assert shape(repaired.contents)[1] == ("model", ["Let me check.", "C:c1"])
    assert anthropic_pairing_violations(repaired.contents) == []


@pytest.mark.skipif(
    not converter_sends_signed_thoughts(),
    reason=f"google-adk {adk_version}'s Anthropic converter sends no thinking (1.20.0 and older)",
)
def test_thought_part_with_a_signature_and_a_call_is_split_so_the_call_survives() -> None:
    """ADK's Anthropic converter sends such a part as redacted thinking and drops the call."""
    thought_call = types.Part(
        function_call=types.FunctionCall(id="c1", name="lookup", args={}),
        thought=True,
        thought_signature=b"c2lnbmF0dXJl",
    )
    contents = [user(say("hi")), model(thought_call), user(result("c1"))]
    assert anthropic_pairing_violations(contents)  # the result answers no tool_use
    repaired = repair_contents(contents)
    assert [r.rule for r in repaired.repairs] == [ContentRule.SPLIT_PART]
    model_parts = repaired.contents[1].parts
    assert [(p.thought, p.function_call is not None) for p in model_parts] == [
        (True, False),
        (None, True),
    ]
    assert anthropic_pairing_violations(repaired.contents) == []


def test_call_in_a_user_content_is_dropped() -> None:
    contents = [user(say("hi"), call("u1")), model(say("ok"))]
    repaired = repair_contents(contents)
    assert shape(repaired.contents) == [("user", ["hi"]), ("model", ["ok"])]


def test_input_contents_and_parts_are_never_mutated() -> None:
    contents = [
        user(say("hi")),
        model(call("c1", text="mixed")),
        model(call("c1")),
        user(result("c1"), say("x")),
        user(result("c1")),
    ]
    before = dump(contents)
    part_ids = [[id(p) for p in c.parts] for c in contents]
    repair_contents(contents, fill_missing_ids=True)
    assert dump(contents) == before
    assert [[id(p) for p in c.parts] for c in contents] == part_ids


# -- properties over generated contents -----------------------------------------

IDS = ["call_1", "call_2", "x-2", None, ""]
NAMES = ["lookup", "fetch", "adk_request_confirmation"]
ROLES = ["user", "model", None, "assistant"]


@st.composite
def any_part(draw: st.DrawFn) -> types.Part:
    kind = draw(
        st.sampled_from(["text", "call", "result", "text+call", "text+result", "call+result"])
    )
    call_id, name = draw(st.sampled_from(IDS)), draw(st.sampled_from(NAMES))
    text = draw(st.sampled_from(["a", "b", ""]))
    if kind == "text":
        return say(text or "t")
    if kind == "call":
        return call(call_id, name)
    if kind == "result":
        return result(call_id, name)
    if kind == "text+call":
        return call(call_id, name, text=text)
    if kind == "text+result":
        return result(call_id, name, text=text)
    both = call(call_id, name)
    return both.model_copy(update={"function_response": result(call_id, name).function_response})


@st.composite
def any_contents(draw: st.DrawFn) -> list[types.Content]:
    return [
        types.Content(
            role=draw(st.sampled_from(ROLES)), parts=draw(st.lists(any_part(), max_size=4))
        )
        for _ in range(draw(st.integers(min_value=0, max_value=8)))
    ]


@st.composite
def valid_contents(draw: st.DrawFn, ids: bool) -> list[types.Content]:
    """Well-formed requests: alternating turns, every call answered next, in order."""
    contents = [user(say("start"))]
    counter = 0
    for _ in range(draw(st.integers(min_value=0, max_value=5))):
        width = draw(st.integers(min_value=0, max_value=3))
        calls = []
        for _ in range(width):
            counter += 1
            calls.append((f"id{counter}" if ids else None, draw(st.sampled_from(NAMES))))
        text = [say("thinking")] if draw(st.booleans()) or not calls else []
        contents.append(model(*text, *(call(i, n) for i, n in calls)))
        after = [say("more")] if draw(st.booleans()) else []
        answers = [result(i, n) for i, n in calls]
        if answers or after:
            contents.append(user(*answers, *after))
        else:
            contents.append(user(say("next")))
    return contents


RELAXED = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@RELAXED
@given(contents=any_contents(), fill=st.booleans())
def test_every_generated_request_satisfies_all_four_rules_afterwards(
    contents: list[types.Content], fill: bool
) -> None:
    repaired = repair_contents(contents, held_open_ids={"call_2"}, fill_missing_ids=fill)
    assert rule_violations(repaired.contents, ids_required=fill) == []
    # Kept as it is: the module's own scan finds the guarantee kept.
    assert repair_contents(repaired.contents, fill_missing_ids=fill).contents is repaired.contents
    if fill:
        assert anthropic_pairing_violations(repaired.contents) == []


#: The one strict-alternation fault the pass leaves: a request whose first
#: content is the model's. Inventing a user turn to put before it would put
#: words in the user's mouth; README lists it under the plugin's limits.
STARTS_WITH_MODEL = "message 0: the conversation starts with 'assistant'"


@RELAXED
@given(contents=any_contents())
def test_every_generated_request_passes_the_four_provider_checks_after_the_pass(
    contents: list[types.Content],
) -> None:
    # adk_pairing.rules.checks converts with ADK's Anthropic converter and LiteLlm's
    # message conversion; ids are filled, as the plugin does for those models.
    repaired = repair_contents(contents, held_open_ids={"call_2"}, fill_missing_ids=True)
    found = request_violations(repaired.contents)
    found["strict_alternation"] = [v for v in found["strict_alternation"] if v != STARTS_WITH_MODEL]
    assert found == {rule: [] for rule in found}


def test_result_under_another_name_answers_its_call_by_id_and_takes_the_calls_name() -> None:
    contents = [user(say("hi")), model(call("c1", "lookup")), user(result("c1", "fetch"))]
    repaired = repair_contents(contents)
    answer = repaired.contents[2].parts[0].function_response
    assert (answer.id, answer.name, answer.response) == ("c1", "lookup", {"ok": True})
    assert [r.rule for r in repaired.notable] == [ContentRule.RESPONSE_NAME]


@RELAXED
@given(contents=any_contents(), fill=st.booleans())
def test_repair_is_idempotent(contents: list[types.Content], fill: bool) -> None:
    once = repair_contents(contents, held_open_ids={"call_2"}, fill_missing_ids=fill)
    twice = repair_contents(once.contents, held_open_ids={"call_2"}, fill_missing_ids=fill)
    assert twice.contents is once.contents
    assert twice.repairs == ()


@RELAXED
@given(contents=any_contents(), fill=st.booleans())
def test_repair_is_deterministic_and_never_mutates_its_input(
    contents: list[types.Content], fill: bool
) -> None:
    before = dump(contents)
    twin = copy.deepcopy(contents)
    first = repair_contents(contents, fill_missing_ids=fill)
    second = repair_contents(twin, fill_missing_ids=fill)
    assert dump(contents) == before
    assert dump(first.contents) == dump(second.contents)
    assert first.repairs == second.repairs


@RELAXED
@given(contents=any_contents())
def test_repair_keeps_every_text_in_order(contents: list[types.Content]) -> None:
    def texts(items: Sequence[types.Content]) -> list[str]:
        return [p.text for c in items for p in c.parts or () if p.text]

    sent = texts(repair_contents(contents).contents)
    if sent[:1] == [OPENING_NOTE_TEXT]:  # rule 5's note opens a request that began with calls
        sent = sent[1:]
    assert sent == texts(contents)


def test_a_request_opening_with_the_models_calls_is_opened_by_the_note() -> None:
    call = types.Part(function_call=types.FunctionCall(id="c1", name="lookup", args={}))
    answer = types.Part(
        function_response=types.FunctionResponse(id="c1", name="lookup", response={"ok": 1})
    )
    contents = [
        types.Content(role="model", parts=[call]),
        types.Content(role="user", parts=[answer, types.Part(text="and now?")]),
    ]
    repaired = repair_contents(contents)
    assert [c.role for c in repaired.contents] == ["user", "model", "user"]
    assert repaired.contents[0].parts[0].text == OPENING_NOTE_TEXT
    assert repaired.contents[1:] == contents  # the calls and their answers as they were
    assert [r.rule for r in repaired.repairs] == [ContentRule.OPENING_NOTE]
    assert repaired.contents is not contents
    assert not any(request_violations(repaired.contents).values())
    assert request_violations(contents)["strict_alternation"]
    again = repair_contents(repaired.contents)
    assert again.contents is repaired.contents  # idempotent


def test_a_request_opening_with_the_models_text_stays_as_it_is() -> None:
    contents = [
        types.Content(role="model", parts=[types.Part(text="Hello, how can I help?")]),
        types.Content(role="user", parts=[types.Part(text="hi")]),
    ]
    assert repair_contents(contents).contents is contents


@RELAXED
@given(contents=valid_contents(ids=True))
def test_valid_request_with_ids_is_returned_untouched(contents: list[types.Content]) -> None:
    assert rule_violations(contents, ids_required=True) == []
    assert repair_contents(contents, fill_missing_ids=True).contents is contents


@RELAXED
@given(contents=valid_contents(ids=False))
def test_valid_request_without_ids_is_returned_untouched_for_gemini(
    contents: list[types.Content],
) -> None:
    assert repair_contents(contents, fill_missing_ids=False).contents is contents


@RELAXED
@given(contents=any_contents(), fill=st.booleans())
def test_repairing_only_the_faulty_segments_gives_what_rebuilding_everything_gives(
    contents: list[types.Content], fill: bool
) -> None:
    held = {"call_2"}
    local = repair_contents(contents, held_open_ids=held, fill_missing_ids=fill)
    # Every segment faulty: nothing is reused or passed over.
    segments = [replace(segment, holds=False) for segment in scan(contents, fill)]
    everything = _opened_by_the_user(
        repair_segments(contents, segments, held, PlaceholderTexts(), fill)
    )
    assert dump(local.contents) == dump(everything.contents)
    assert sorted(map(repr, local.notable)) == sorted(map(repr, everything.notable))


@RELAXED
@given(contents=any_contents(), fill=st.booleans())
def test_prepared_turns_are_non_empty_unmixed_and_hold_no_user_side_call(
    contents: list[types.Content], fill: bool
) -> None:
    prepared = prepare(contents, scan(contents, fill))
    faulty = [segment for segment in prepared.segments if not segment.holds]
    assert [t for s in faulty for t in s.turns] == list(range(len(prepared.turns)))
    for turn in prepared.turns:
        assert turn.parts
        assert not any(is_mixed(part) for part in turn.parts)
        assert turn.is_model == (turn.source.role in MODEL_ROLES)
        if not turn.is_model:
            assert all(part.function_call is None for part in turn.parts)


def test_segments_that_hold_are_reused_around_the_one_that_is_repaired() -> None:
    healthy_before = [user(say("a")), model(call("c1")), user(result("c1"))]
    broken = [model(call("c2")), user(say("b"))]
    healthy_after = [model(call("c3")), user(result("c3")), model(say("end"))]
    contents = healthy_before + broken + healthy_after
    repaired = repair_contents(contents)
    assert all(a is b for a, b in zip(repaired.contents[:3], healthy_before, strict=True))
    assert all(a is b for a, b in zip(repaired.contents[-3:], healthy_after, strict=True))
    assert shape(repaired.contents)[3:5] == [("model", ["C:c2"]), ("user", ["R:c2:missing", "b"])]


def test_a_later_result_still_reaches_its_call_across_segments_that_hold() -> None:
    contents = [
        user(say("a")),
        model(call("old", "start_job")),
        user(say("b")),
        model(call("c1")),
        user(result("c1")),
        model(call("c2")),
        user(result("c2"), result("old", "start_job")),
    ]
    repaired = repair_contents(contents)
    assert shape(repaired.contents)[1:3] == [("model", ["C:old"]), ("user", ["R:old", "b"])]
    assert shape(repaired.contents)[-1] == ("user", ["R:c2"])


def test_an_id_like_the_anthropic_converters_own_fallback_is_renamed_apart() -> None:
    # ADK's Anthropic converter (1.39 and later) sends an id it cannot keep as
    # `toolu_fallback_<n>`, and a stored `toolu_fallback_0` as it is: the two calls
    # below would be one tool_use id on the wire.
    from adk_pairing.rules.checks import anthropic_violations

    contents = [
        user(say("hi")),
        model(call("toolu_fallback_0")),
        user(result("toolu_fallback_0")),
        model(call("ïd 1")),
        user(result("ïd 1")),
    ]
    repaired = repair_contents(contents, fill_missing_ids=True)
    ids = [
        part.function_call.id
        for content in repaired.contents
        for part in content.parts or ()
        if part.function_call is not None
    ]
    assert ids == ["call_pairing_1", "ïd 1"]
    assert shape(repaired.contents)[2] == ("user", ["R:call_pairing_1"])
    assert not anthropic_violations(repaired.contents)
    assert repair_contents(repaired.contents, fill_missing_ids=True).contents is repaired.contents


def test_the_log_summary_counts_alike_repairs_and_stays_bounded():
    """A reused id repaired once per turn must not make the warning grow with the session."""
    from adk_pairing.passes.request_records import SUMMARY_MOST, ContentRepair, RepairedContents

    repeated = tuple(ContentRepair(ContentRule.DUPLICATE_ID, "call_0") for _ in range(500))
    assert RepairedContents([], repeated).summary() == "duplicate_id call_0 (x500)"

    many = tuple(ContentRepair(ContentRule.DUPLICATE_ID, f"c{i}") for i in range(50))
    line = RepairedContents([], (*many, *repeated)).summary()
    assert line.startswith("duplicate_id call_0 (x500); duplicate_id c0; ")
    assert line.count(";") == SUMMARY_MOST
    assert line.endswith(f"and {50 + 1 - SUMMARY_MOST} more")

    quiet = (ContentRepair(ContentRule.MERGED), ContentRepair(ContentRule.PLACEHOLDER, "c1"))
    assert RepairedContents([], quiet).summary() == "placeholder c1"
