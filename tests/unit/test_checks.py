"""Guard tests for the four provider rules in `adk_pairing.rules.checks`.

Each rule gets the broken input it exists for (it must report it) and the
valid neighbour of that input (it must stay silent). The rules convert with
ADK's real converters, so these run on whatever google-adk is installed and
must give the verdicts below on every supported version.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from google.genai import types
from hypothesis import given, settings
from hypothesis import strategies as st

from adk_pairing.rules import checks
from adk_pairing.rules.checks import (
    RULES,
    anthropic_pairing_violations,
    anthropic_violations,
    gemini_violations,
    openai_chat_message_violations,
    openai_chat_violations,
    request_violations,
    strict_alternation_violations,
    to_openai_chat_messages,
)


def call(name: str, call_id: str | None = None) -> types.Part:
    return types.Part(function_call=types.FunctionCall(name=name, args={}, id=call_id))


def response(name: str, call_id: str | None = None) -> types.Part:
    return types.Part(
        function_response=types.FunctionResponse(name=name, response={"ok": True}, id=call_id)
    )


def text(value: str) -> types.Part:
    return types.Part(text=value)


def user(*parts: types.Part) -> types.Content:
    return types.Content(role="user", parts=list(parts))


def model(*parts: types.Part) -> types.Content:
    return types.Content(role="model", parts=list(parts))


ANSWERED = [
    user(text("weather?")),
    model(call("lookup", "c1")),
    user(response("lookup", "c1")),
    model(text("Sunny.")),
    user(text("thanks")),
]
DANGLING = [user(text("weather?")), model(call("lookup", "c1")), user(text("hello?"))]


def test_a_valid_request_passes_every_rule() -> None:
    assert request_violations(ANSWERED) == {rule: [] for rule in RULES}


def test_request_violations_reports_each_rule_by_name() -> None:
    found = request_violations(DANGLING)
    assert list(found) == list(RULES)
    assert found["anthropic"] and found["gemini"]


# -- Anthropic ----------------------------------------------------------------


def test_anthropic_rejects_a_call_answered_by_plain_text() -> None:
    assert anthropic_violations(DANGLING) == [
        "message 1: tool_use ids ['c1'] were found without tool_result blocks immediately after"
    ]
    assert anthropic_pairing_violations(DANGLING)
    assert not anthropic_pairing_violations(ANSWERED)


def test_anthropic_rejects_a_result_that_is_not_leading() -> None:
    contents = [
        user(text("q")),
        model(call("a", "c1")),
        user(text("by the way"), response("a", "c1")),
    ]
    assert anthropic_pairing_violations(contents)
    assert not anthropic_pairing_violations(
        [user(text("q")), model(call("a", "c1")), user(response("a", "c1"), text("by the way"))]
    )


def test_anthropic_rejects_a_result_without_its_call() -> None:
    assert anthropic_pairing_violations(
        [user(text("q")), model(text("hm")), user(response("a", "x"))]
    )


def test_anthropic_sees_an_unanswered_id_less_call_after_an_answered_one() -> None:
    """On google-adk 1.39.1 -> 2.9.2 ADK's converter gives both id-less calls the
    id ``toolu_fallback_0``, so the second looks answered by the first's result.
    The checker pairs id-less calls positionally and sees it on every version."""
    contents = [
        user(text("q")),
        model(call("lookup")),
        user(response("lookup")),
        model(text("ok")),
        user(text("again")),
        model(call("lookup")),
        user(text("hello?")),
    ]
    assert anthropic_pairing_violations(contents) == [
        "message 5: tool_use ids ['<no id: lookup>'] were found without tool_result "
        "blocks immediately after"
    ]
    assert not anthropic_pairing_violations(contents[:5])


def test_anthropic_does_not_let_an_id_less_result_answer_a_call_two_turns_back() -> None:
    """2.10+ pairs an id-less result with the oldest pending call of its name
    anywhere in the request; pairing on the wire is positional."""
    contents = [
        user(text("q")),
        model(call("lookup")),
        user(text("hello?")),
        model(call("lookup", "c2")),
        user(response("lookup")),
    ]
    violations = anthropic_pairing_violations(contents)
    assert any("<no id: lookup>" in v and "message 1" in v for v in violations)
    assert any("'c2'" in v for v in violations)


def test_anthropic_pairs_id_less_parallel_calls_by_name() -> None:
    contents = [
        user(text("q")),
        model(call("a"), call("b")),
        user(response("b"), response("a")),
    ]
    assert not anthropic_pairing_violations(contents)
    assert anthropic_pairing_violations([*contents[:2], user(response("b"), text("?"))])


def test_anthropic_keeps_ids_the_api_would_refuse_apart() -> None:
    """Ids with characters outside [a-zA-Z0-9_-] are rewritten by ADK >= 1.39; the
    checker maps each to its own id, so a mismatch stays a mismatch."""
    broken = [user(text("q")), model(call("a", "call.1")), user(response("a", "call.2"))]
    assert anthropic_pairing_violations(broken)
    assert not anthropic_pairing_violations(
        [user(text("q")), model(call("a", "call.1")), user(response("a", "call.1"))]
    )


def test_anthropic_rejects_text_and_call_in_one_part() -> None:
    """ADK's converter reads ``part.text`` first and drops the call, so the
    result answers nothing (every version)."""
    both = types.Part(text="let me look", function_call=types.FunctionCall(name="a", id="c1"))
    contents = [user(text("q")), model(both), user(response("a", "c1"))]
    assert anthropic_pairing_violations(contents) == [
        "message 2: tool_result 'c1' has no tool_use in the previous message"
    ]


def test_anthropic_rejects_duplicate_tool_use_ids() -> None:
    contents = [
        user(text("q")),
        model(call("a", "call_1")),
        user(response("a", "call_1")),
        model(call("b", "call_1")),
        user(response("b", "call_1")),
    ]
    assert not anthropic_pairing_violations(contents), "pairing alone is positional"
    assert anthropic_violations(contents) == [
        "tool_use id 'call_1' is used by 2 calls; ids must be unique"
    ]
    renamed = [*contents[:3], model(call("b", "call_2")), user(response("b", "call_2"))]
    assert not anthropic_violations(renamed)


# -- OpenAI chat through LiteLlm ------------------------------------------------


def test_openai_chat_messages_are_what_lite_llm_builds() -> None:
    messages = to_openai_chat_messages(ANSWERED)
    assert [m["role"] for m in messages] == ["user", "assistant", "tool", "assistant", "user"]
    assert messages[2]["tool_call_id"] == "c1"


def test_openai_chat_rejects_calls_stored_without_ids() -> None:
    contents = [user(text("q")), model(call("lookup")), user(response("lookup"))]
    violations = openai_chat_violations(contents)
    assert "message 1: a tool_call has an empty id" in violations
    assert "message 2: tool message with an empty tool_call_id" in violations
    assert not openai_chat_violations(ANSWERED)


def test_openai_chat_rejects_a_tool_message_without_a_call() -> None:
    contents = [user(text("q")), model(text("hm")), user(response("lookup", "c9"))]
    assert openai_chat_violations(contents) == [
        "message 2: tool message for 'c9' follows no assistant message with tool_calls"
    ]


def test_openai_chat_message_rule_rejects_uncovered_and_foreign_tool_calls() -> None:
    """The message-level rule, on messages as LiteLlm 1.20.0 sends them (it has
    no ``_ensure_tool_results``) and as any client may build them."""

    def assistant(*ids: str) -> dict:
        calls = [{"type": "function", "id": i, "function": {"name": "f"}} for i in ids]
        return {"role": "assistant", "content": None, "tool_calls": calls}

    def tool(tool_call_id: str) -> dict:
        return {"role": "tool", "tool_call_id": tool_call_id, "content": "{}"}

    question = {"role": "user", "content": "q"}
    assert openai_chat_message_violations([question, assistant("a", "b"), tool("a"), question]) == [
        "message 1: tool_calls ['b'] are not followed by tool messages"
    ]
    assert openai_chat_message_violations([question, assistant("a"), tool("z")]) == [
        "message 2: tool message for 'z' answers no tool_call of message 1",
        "message 1: tool_calls ['a'] are not followed by tool messages",
    ]
    assert openai_chat_message_violations([question, assistant("a", "a"), tool("a")]) == [
        "message 1: tool_call id 'a' appears 2 times"
    ]
    assert not openai_chat_message_violations(
        [question, assistant("a", "b"), tool("b"), tool("a"), question]
    )


# -- Gemini ---------------------------------------------------------------------


def test_gemini_rejects_fewer_responses_than_calls() -> None:
    contents = [
        user(text("q")),
        model(call("a", "c1"), call("b", "c2")),
        user(response("a", "c1")),
    ]
    assert gemini_violations(contents) == [
        "content 1: function calls [('c2', 'b')] have no response in the next content"
    ]
    assert not gemini_violations([*contents[:2], user(response("a", "c1"), response("b", "c2"))])


def test_gemini_rejects_responses_out_of_call_order() -> None:
    # The view puts a placeholder right after its call event, so a real result
    # posted later lands after it; ADK merges both into one content.
    contents = [
        user(text("q")),
        model(call("a", "c1"), call("b", "c2")),
        user(response("b", "c2"), response("a", "c1")),
    ]
    assert gemini_violations(contents) == [
        "content 2: function responses [('c2', 'b'), ('c1', 'a')] are not in the order "
        "of the calls of content 1"
    ]
    # Id-less calls of one name are paired by position only.
    same_name = [user(text("q")), model(call("a"), call("a")), user(response("a"), response("a"))]
    assert not gemini_violations(same_name)


def test_gemini_rejects_extra_or_foreign_responses() -> None:
    contents = [
        user(text("q")),
        model(call("a", "c1")),
        user(response("a", "c1"), response("a", "c7")),
    ]
    assert gemini_violations(contents) == [
        "content 2: function responses [('c7', 'a')] answer no call of content 1"
    ]


def test_gemini_rejects_responses_after_a_turn_without_calls() -> None:
    contents = [user(text("q")), model(text("hm")), user(response("a", "c1"))]
    assert gemini_violations(contents) == [
        "content 2: function responses [('c1', 'a')] follow no function call turn"
    ]


def test_gemini_matches_id_less_calls_by_name() -> None:
    assert not gemini_violations([user(text("q")), model(call("a")), user(response("a"))])
    assert gemini_violations([user(text("q")), model(call("a")), user(response("b"))])


# -- strict alternation ---------------------------------------------------------


def test_strict_alternation_rejects_a_result_followed_by_user_text() -> None:
    """What a placeholder followed by the user's next message looks like."""
    contents = [
        user(text("q")),
        model(call("a", "c1")),
        user(response("a", "c1")),
        user(text("hello?")),
    ]
    assert strict_alternation_violations(contents) == [
        "messages 2 and 3: two consecutive 'user' messages"
    ]
    merged = [*contents[:2], user(response("a", "c1"), text("hello?"))]
    assert not strict_alternation_violations(merged)


def test_strict_alternation_rejects_a_conversation_opened_by_the_model() -> None:
    assert strict_alternation_violations([model(text("hi")), user(text("q"))]) == [
        "message 0: the conversation starts with 'assistant'"
    ]


def test_strict_alternation_ignores_turns_the_converter_drops() -> None:
    """An empty content sends nothing, so it separates nothing either."""
    contents = [user(text("q")), types.Content(role="model", parts=[]), user(text("again"))]
    assert strict_alternation_violations(contents) == [
        "messages 0 and 1: two consecutive 'user' messages"
    ]


# -- the Anthropic verdict does not depend on the installed ADK ---------------------

_IDS = st.sampled_from([None, "", "c1", "c2", "c3", "bad.id"])
_NAMES = st.sampled_from(["a", "b"])
_MODEL_PART = st.one_of(
    st.builds(text, st.sampled_from(["ok", "hm"])),
    st.builds(call, _NAMES, _IDS),
)
_USER_PART = st.one_of(
    st.builds(text, st.sampled_from(["q", "and?"])),
    st.builds(response, _NAMES, _IDS),
)
_HISTORIES = st.lists(
    st.one_of(
        st.builds(user, _USER_PART, _USER_PART) | st.builds(user, _USER_PART),
        st.builds(model, _MODEL_PART, _MODEL_PART) | st.builds(model, _MODEL_PART),
    ),
    min_size=1,
    max_size=7,
)


def _plain_block(part: types.Part) -> dict:
    """One block per part, ids exactly as the checker hands them over."""
    if part.function_call:
        return {"type": "tool_use", "id": part.function_call.id, "name": part.function_call.name}
    if part.function_response:
        return {"type": "tool_result", "tool_use_id": part.function_response.id}
    return {"type": "text", "text": part.text}


def _plain_converter() -> Callable[[types.Content], dict]:
    def convert(content: types.Content) -> dict:
        role = "user" if content.role == "user" else "assistant"
        return {"role": role, "content": [_plain_block(p) for p in content.parts or ()]}

    return convert


@settings(max_examples=300, deadline=None)
@given(_HISTORIES)
def test_anthropic_verdict_is_the_one_of_a_converter_without_id_rewriting(
    contents: list[types.Content],
) -> None:
    """Whatever ADK's converter does to ids (empty ids share ``toolu_fallback_0`` on
    1.39.1 -> 2.9.2, pair with the oldest pending call on 2.10+, stay ``""`` on
    1.20.0), the checker's findings equal those with a converter that keeps ids
    as given: so they are the same on every installed google-adk."""
    with_adk = anthropic_violations(contents)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(checks, "_anthropic_converter", _plain_converter)
        plain = anthropic_violations(contents)
    assert with_adk == plain


def test_a_request_the_converters_cannot_build_is_a_violation_not_an_exception() -> None:
    """ADK raises before sending such a request, so no provider accepts it."""
    nameless = [user(text("q")), model(types.Part(function_call=types.FunctionCall(id="c1")))]
    found = request_violations(nameless)
    assert found["anthropic"] == [
        "ADK's Anthropic converter cannot send this request: AssertionError"
    ]
    # LiteLlm's conversion differs by release: 2.x refuses a nameless call,
    # 1.20.0 sends it without a tool message, 1.39.1 sends it with a tool
    # message of its own (`_ensure_tool_results`). The rule reports what that
    # conversion gives, and never raises.
    try:
        messages = to_openai_chat_messages(nameless)
    except Exception:
        assert found["openai_chat"] and "cannot" in found["openai_chat"][0]
    else:
        assert found["openai_chat"] == openai_chat_message_violations(messages)


def test_the_openai_rule_never_reaches_for_the_internet() -> None:
    """litellm fetches its price map on import unless told not to; a check needs none.

    In a fresh process without LITELLM_LOCAL_MODEL_COST_MAP (once ADK itself is
    imported), every name lookup other than loopback fails the run.
    """
    import os
    import subprocess
    import sys

    code = (
        # google-adk 1.20 imports litellm itself when google.adk is imported: that
        # import is ADK's, not ours, so it happens before the guard, offline.
        "import os\n"
        "os.environ['LITELLM_LOCAL_MODEL_COST_MAP'] = 'True'\n"
        "import google.adk.models\n"
        "del os.environ['LITELLM_LOCAL_MODEL_COST_MAP']\n"
        "import socket\n"
        "real = socket.getaddrinfo\n"
        "def guard(host, *args, **kwargs):\n"
        "    if host not in ('127.0.0.1', 'localhost', '::1'):\n"
        "        raise SystemExit(f'network lookup of {host}')\n"
        "    return real(host, *args, **kwargs)\n"
        "socket.getaddrinfo = guard\n"
        "from google.genai import types\n"
        "from adk_pairing.rules.checks import openai_chat_violations\n"
        "hello = types.Content(role='user', parts=[types.Part(text='hi')])\n"
        "assert openai_chat_violations([hello]) == []\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "LITELLM_LOCAL_MODEL_COST_MAP"}
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "network lookup" not in done.stdout + done.stderr
