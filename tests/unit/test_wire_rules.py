"""Every converter rule `adk_pairing.wire` states, held equal to the real converter.

`adk_pairing.wire` predicts what ADK's Anthropic converter (``models/anthropic_llm.py``)
and LiteLlm's message conversion (``models/lite_llm.py``) make of a content,
a part and an id, so that the ledger and the checks need not convert. Each
test here draws inputs with hypothesis, converts them with the installed
ADK's own converter, and compares its output with wire's prediction: one
test per rule. A rule a release's converter does not have (ADK's Anthropic id
sanitizer before 1.39) is skipped by feature, the version in the reason.
"""

from __future__ import annotations

from typing import Any

import pytest
from google.genai import types
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from adk_pairing.rules.checks import (
    anthropic_violations,
    to_anthropic_messages,
    to_openai_chat_messages,
)
from adk_pairing.wire import (
    ANTHROPIC_FALLBACK_PREFIX,
    Block,
    anthropic_block,
    anthropic_keeps_id,
    is_mixed,
    is_model_role,
    may_collide_with_a_fallback,
    never_sent_as_a_call,
)
from tests.adk_features import ADK_VERSION, requires

from .events import call, model_event, response, response_event, user_text
from .test_properties import adk_request_contents

anthropic_llm = pytest.importorskip("google.adk.models.anthropic_llm")

#: ADK's Anthropic id sanitizer (1.39.1 and later; 1.20 sends every id as it is).
HAS_ID_SANITIZER = hasattr(anthropic_llm, "_ToolUseIdSanitizer")

rules = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

ROLES = st.one_of(
    st.sampled_from([None, "user", "model", "assistant", "tool", "system", "function", ""]),
    st.text(max_size=6),
)
#: Ids of every kind the fuzz draws: kept, rewritten, fallback-like, empty, long.
IDS = st.one_of(
    st.sampled_from(
        ["c1", "ïd 1", "call.1", "toolu_fallback_0", "toolu_fallback_1", "", "adk-5c1e"]
    ),
    st.just("L" * 20_000),
    st.just("L" * 19_999 + " "),
    st.text(max_size=12),
)


def _field(block: Any, name: str) -> Any:
    return block.get(name) if isinstance(block, dict) else getattr(block, name, None)


def _anthropic_message(content: types.Content) -> dict[str, Any]:
    """ADK's conversion of one content, with one sanitizer (as `to_anthropic_messages`)."""
    convert = getattr(anthropic_llm, "_content_to_message_param", None)
    sanitizer = getattr(anthropic_llm, "_ToolUseIdSanitizer", None)
    if convert is None or sanitizer is None:
        return anthropic_llm.content_to_message_param(content)
    return convert(content, sanitizer())


@rules
@given(role=ROLES)
def test_model_roles_are_the_anthropic_converters_assistant(role: str | None) -> None:
    content = types.Content(role=role, parts=[types.Part(text="hi")])
    sent = _anthropic_message(content)["role"]
    assert (sent == "assistant") == is_model_role(role), role


@rules
@given(role=ROLES)
def test_model_roles_are_litellms_assistant(role: str | None) -> None:
    content = types.Content(role=role, parts=[types.Part(text="hi")])
    [message] = to_openai_chat_messages([content])
    assert (_field(message, "role") == "assistant") == is_model_role(role), role


@st.composite
def parts(draw: st.DrawFn) -> types.Part:
    """A part with any mix of text, thought, signature, call and result."""
    call_id = draw(st.sampled_from(["c1", None]))
    return types.Part(
        text=draw(st.sampled_from([None, "", "some text"])),
        thought=draw(st.sampled_from([None, False, True])),
        thought_signature=draw(st.sampled_from([None, b"c2lnbmF0dXJl"])),
        function_call=draw(
            st.sampled_from([None, types.FunctionCall(id=call_id, name="lookup", args={})])
        ),
        function_response=draw(
            st.sampled_from(
                [None, types.FunctionResponse(id=call_id, name="lookup", response={"ok": 1})]
            )
        ),
    )


_BLOCKS = {
    "tool_use": Block.CALL,
    "tool_result": Block.RESULT,
    "text": Block.OTHER,
    "thinking": Block.OTHER,
    "redacted_thinking": Block.OTHER,
}


def _converted_block(part: types.Part) -> Block | None:
    """What ADK's Anthropic converter makes of `part`; None when it cannot convert it.

    A part it sends nothing for is `Block.NOTHING` when a user turn of it
    alone gets the converter's stand-in text ``"."`` (empty text, 2.13), else
    `Block.DROPPED`.
    """
    try:
        blocks = _anthropic_message(types.Content(role="model", parts=[part]))["content"]
        if blocks:
            [block] = blocks
            return _BLOCKS[_field(block, "type")]
        alone = _anthropic_message(types.Content(role="user", parts=[part]))["content"]
    except (NotImplementedError, ValueError, AssertionError):
        return None
    return Block.NOTHING if alone else Block.DROPPED


@rules
@given(part=parts())
def test_what_a_part_is_sent_as_is_the_anthropic_converters_block(part: types.Part) -> None:
    """`anthropic_block`: a part the converter cannot convert is never a call or result."""
    converted = _converted_block(part)
    if converted is None:
        assert anthropic_block(part) not in (Block.CALL, Block.RESULT), part
    else:
        assert anthropic_block(part) is converted, part


@rules
@given(part=parts())
def test_a_call_never_sent_as_one_is_what_the_converter_sends_as_something_else(
    part: types.Part,
) -> None:
    """`never_sent_as_a_call`, on every part holding a call."""
    if part.function_call is None:
        return
    converted = _converted_block(part)
    assert never_sent_as_a_call(part) == (converted is not Block.CALL), part


@rules
@given(part=parts())
def test_a_mixed_part_is_one_whose_call_or_result_the_converter_drops(part: types.Part) -> None:
    """`is_mixed`: the converter's block is not the part's call (or, with no call, its result)."""
    if part.function_call is None and part.function_response is None:
        assert not is_mixed(part)
        return
    kept = Block.CALL if part.function_call is not None else Block.RESULT
    dropped = _converted_block(part) is not kept or (
        part.function_call is not None and part.function_response is not None
    )
    assert is_mixed(part) == dropped, part


def _tool_use_ids(call_ids: list[str]) -> list[str]:
    contents = [
        types.Content(role="user", parts=[types.Part(text="q")]),
        types.Content(role="model", parts=[call(i) for i in call_ids]),
    ]
    return [
        _field(block, "id")
        for message in to_anthropic_messages(contents)
        for block in message["content"]
        if _field(block, "type") == "tool_use"
    ]


@requires(HAS_ID_SANITIZER, "Anthropic tool-id sanitizer (_ToolUseIdSanitizer)")
@rules
@given(call_id=IDS.filter(bool))
def test_the_ids_anthropics_converter_keeps_are_anthropic_ids(call_id: str) -> None:
    """`anthropic_keeps_id`: kept as it is, else a fallback ``toolu_fallback_<n>``."""
    [sent] = _tool_use_ids([call_id])
    if anthropic_keeps_id(call_id):
        assert sent == call_id
    else:
        assert sent != call_id and sent.startswith(ANTHROPIC_FALLBACK_PREFIX)
        assert may_collide_with_a_fallback(sent)


@requires(HAS_ID_SANITIZER, "Anthropic tool-id sanitizer (_ToolUseIdSanitizer)")
@rules
@given(call_ids=st.lists(IDS.filter(bool), min_size=1, max_size=5))
def test_the_converter_gives_each_distinct_id_one_wire_id_and_only_fallbacks_collide(
    call_ids: list[str],
) -> None:
    """One fallback per distinct id; two distinct ids share a wire id only through a
    kept id that looks like a fallback (`may_collide_with_a_fallback`)."""
    sent = _tool_use_ids(call_ids)
    by_id: dict[str, set[str]] = {}
    for original, on_the_wire in zip(call_ids, sent, strict=True):
        by_id.setdefault(original, set()).add(on_the_wire)
    assert all(len(wire_ids) == 1 for wire_ids in by_id.values())
    owners: dict[str, set[str]] = {}
    for original, on_the_wire in zip(call_ids, sent, strict=True):
        owners.setdefault(on_the_wire, set()).add(original)
    for originals in owners.values():
        if len(originals) > 1:
            assert any(may_collide_with_a_fallback(i) for i in originals), originals


@rules
@given(call_id=IDS)
def test_litellm_sends_every_call_and_result_id_as_it_is(call_id: str) -> None:
    """LiteLlm keeps ids (an id-less call's is ``""``; 1.20 sends ``None``)."""
    contents = [
        types.Content(role="user", parts=[types.Part(text="q")]),
        types.Content(role="model", parts=[call(call_id or None)]),
        types.Content(role="user", parts=[response(call_id or None)]),
    ]
    messages = to_openai_chat_messages(contents)
    [assistant] = [m for m in messages if _field(m, "role") == "assistant"]
    [tool_call] = _field(assistant, "tool_calls")
    tools = [m for m in messages if _field(m, "role") == "tool"]
    assert (_field(tool_call, "id") or "") == call_id
    assert [_field(m, "tool_call_id") or "" for m in tools] == [call_id]


def test_a_stored_fallback_like_id_and_a_rewritten_id_are_one_tool_use_id_to_the_check() -> None:
    """``ïd 1`` is sent as ``toolu_fallback_0``; so is a stored ``toolu_fallback_0``."""
    contents = adk_request_contents(
        [
            user_text(),
            model_event([call("ïd 1")]),
            response_event([response("ïd 1")]),
            model_event([call("toolu_fallback_0")]),
            response_event([response("toolu_fallback_0")]),
        ]
    )
    if HAS_ID_SANITIZER:
        assert anthropic_violations(contents) == [
            "2 distinct call ids are all sent as tool_use id 'toolu_fallback_0'; ids must be unique"
        ]
    else:  # google-adk 1.20 sends both ids as they are
        assert not anthropic_violations(contents), ADK_VERSION


def test_the_view_never_brings_back_a_call_whose_id_collides_with_a_fallback() -> None:
    """As stored, ADK's builder drops the unanswered ``toolu_fallback_0`` call (2.10+);
    a placeholder would bring it back beside ``ïd 1``, which the converter also
    sends as ``toolu_fallback_0``. The ledger marks the id irregular, and the
    check, seeing the collision, serves the stored events."""
    from adk_pairing.core.placeholders import PlaceholderTexts
    from adk_pairing.core.repair import repair_history
    from adk_pairing.ledger import build_ledger
    from adk_pairing.wire import IrregularShape

    events = [
        user_text(),
        model_event([call("ïd 1")]),
        response_event([response("ïd 1")]),
        user_text("more", invocation_id="inv-2"),
        model_event([call("toolu_fallback_0")], invocation_id="inv-2"),
        user_text("again", invocation_id="inv-3"),
    ]
    ledger = build_ledger(events)
    assert IrregularShape.CALL_ID_LIKE_A_FALLBACK in ledger.shapes
    repaired = repair_history(events, ledger, PlaceholderTexts())
    if not anthropic_violations(adk_request_contents(events)):
        assert not anthropic_violations(adk_request_contents(repaired.events))
