"""Property: with `PairingPlugin`, every call the agent's history holds reaches the model answered.

The oracle is ADK's own builder. From google-adk 2.10 it drops a call whose id
no response carries and that ADK does not hold open
(``drop_orphaned_function_calls``); older releases drop none. So in a copy of
the history every such call gets a real result right after its event, and
ADK's contents processor builds the request from that copy: the calls it then
shows are the ones the agent's history holds (in its branch, not rewound, not
compacted, not in an event ADK leaves out on purpose). A call sharing its
``Part`` with text is not given one: the ledger does not count it as a call
(ADK's Anthropic converter sends only the text), so the plugin does not
restore it when ADK drops it (docs/request-pass.md); nor, on google-adk 2.10
alone, are the calls the ledger withholds while a result event is last. The request ADK builds
from the session, after the plugin, must carry each of them (a reused id may
come back renamed ``<id>-<n>``, `adk_pairing.passes.request_pass` rule 4), answered,
and pass every provider rule of `adk_pairing.rules.checks` on the real converters.

Two setups: the plugin alone (the session holds the stored events) and both
pieces (the session holds the view, `repaired_events`, which serves some
histories as stored). Run on each builder generation (<= 2.6, 2.9/2.10,
>= 2.11). Deterministic and bounded (``ADK_PAIRING_GUARANTEE_EXAMPLES``).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable

import pytest
from google.adk.agents.callback_context import CallbackContext
from google.adk.events.event import Event
from google.genai import types
from hypothesis import HealthCheck, given, settings
from hypothesis import event as hypothesis_event
from hypothesis import strategies as st

from adk_pairing import PairingPlugin, repaired_events
from adk_pairing.ledger import build_ledger
from adk_pairing.rules.checks import RULES, request_violations
from tests.adk_features import adk_drops_unanswered_calls
from tests.adk_request import AGENT_NAME, build_request_async, build_request_contents_async
from tests.calls_lost import calls_lost, sent_calls

from .events import call, model_event, response, response_event, user_text
from .history_strategies import describe, histories

EXAMPLES = int(os.environ.get("ADK_PAIRING_GUARANTEE_EXAMPLES", "300"))

_GEMINI_RULES = tuple(rule for rule in RULES if rule != "openai_chat")

HISTORIES = st.one_of(histories(malformed=False), histories(malformed=True))


async def sent_after_plugin(session_events: list[Event]) -> list[types.Content]:
    """The contents the model receives after the plugin, for a session holding `session_events`."""
    request, invocation = await build_request_async(session_events)
    response = await PairingPlugin().before_model_callback(
        callback_context=CallbackContext(invocation), llm_request=request
    )
    assert response is None
    return request.contents


def _no_oracle(events: list[Event]) -> bool:
    """Where the oracle does not apply: google-adk 2.10's builder withholds calls it drops.

    google-adk 2.10 alone both drops unanswered calls and walks back from a
    trailing result: while a result event that follows a call event reusing an
    older call's id is the last one, the ledger withholds that event's other
    calls, since no placeholder there keeps ADK's builder from raising or
    cutting the history. The next event releases them; until then they stay
    dropped (docs/request-pass.md).
    """
    return adk_drops_unanswered_calls() and build_ledger(events).withholding


def assert_every_call_reaches_the_model_answered(events: list[Event], *, both: bool) -> None:
    session_events = repaired_events(events) if both else list(events)
    history = f"\nstored:\n{describe(events)}"
    try:
        sent = asyncio.run(sent_after_plugin(session_events))
    except Exception:
        # Releases before 2.10 raise in their rearrangers on some malformed
        # histories, before any plugin runs (tests/unit/test_request_guarantee.py).
        hypothesis_event("ADK's builder raises on this history")
        return
    broken = {rule: v for rule, v in request_violations(sent, RULES).items() if v}
    assert not broken, f"the request after the plugin breaks {broken}{history}"
    if _no_oracle(events):
        hypothesis_event("no oracle: 2.10 withholds calls")
        return
    try:
        lost = calls_lost(events, sent, AGENT_NAME)
    except Exception:  # ADK's builder refuses the answered copy (1.20 on an orphan result)
        hypothesis_event("no oracle: ADK raises on the copy")
        return
    assert not lost, f"calls lost on the way to the model, or unanswered: {lost}{history}"
    if sent != asyncio.run(build_request_contents_async(session_events)):
        hypothesis_event("the plugin changed the request")


@pytest.mark.parametrize("both", [False, True], ids=["plugin-alone", "view-and-plugin"])
@settings(
    max_examples=EXAMPLES,
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=list(HealthCheck),
)
@given(events=HISTORIES)
def test_every_call_of_the_history_reaches_the_model_answered(
    both: bool, events: list[Event]
) -> None:
    assert_every_call_reaches_the_model_answered(events, both=both)


def test_a_request_that_carries_every_call_runs_no_second_builder(monkeypatch) -> None:
    # The cost promise: a healthy history, or one whose open call ADK still
    # sends (held open), pays for a ledger read, never for ADK's builder.
    import adk_pairing.shells.plugin as plugin_module

    builds: list[int] = []
    real_build = plugin_module.rerun_contents_processor

    async def counting_build(*args, **kwargs):  # type: ignore[no-untyped-def]
        builds.append(1)
        return await real_build(*args, **kwargs)

    monkeypatch.setattr(plugin_module, "rerun_contents_processor", counting_build)

    def event(role: str, part: types.Part, **fields: object) -> Event:
        author = "user" if role == "user" and part.text else AGENT_NAME
        content = types.Content(role=role, parts=[part])
        return Event(author=author, invocation_id="i", content=content, **fields)

    def call_part(call_id: str) -> types.Part:
        return types.Part(function_call=types.FunctionCall(id=call_id, name="lookup"))

    answer = types.Part(
        function_response=types.FunctionResponse(id="c1", name="lookup", response={})
    )
    healthy = [
        event("user", types.Part(text="hi")),
        event("model", call_part("c1")),
        event("user", answer),
    ]
    held_open = [
        event("user", types.Part(text="hi")),
        event("model", call_part("job"), long_running_tool_ids={"job"}),
        event("user", types.Part(text="and?")),
    ]
    interrupted = [event("user", types.Part(text="hi")), event("model", call_part("c9"))]
    for events in (healthy, held_open):
        asyncio.run(sent_after_plugin(events))
    assert builds == []
    sent = asyncio.run(sent_after_plugin(interrupted))
    assert builds == ([1, 1] if adk_drops_unanswered_calls() else [])
    assert "c9" in {call.call_id for call in sent_calls(sent)}


def test_a_restore_is_paid_once_then_remembered(monkeypatch) -> None:
    # The restore's cost promise: ADK's builder runs for the first request that
    # lacks a call; the session's later requests, a turn later, get the call
    # back from what that run showed, with no builder run.
    import adk_pairing.shells.plugin as plugin_module

    builds: list[int] = []
    real_build = plugin_module.rerun_contents_processor

    async def counting_build(*args, **kwargs):  # type: ignore[no-untyped-def]
        builds.append(1)
        return await real_build(*args, **kwargs)

    monkeypatch.setattr(plugin_module, "rerun_contents_processor", counting_build)
    interrupted = [user_text("hi", "i0"), model_event([call("c9")], invocation_id="i0")]
    asked = [*interrupted, user_text("and?", "i1")]
    answered = [
        *asked,
        model_event([call("c10")], invocation_id="i1"),
        response_event([response("c10")], invocation_id="i1"),
    ]
    plugin = PairingPlugin()

    async def sent_by(events: list[Event]) -> list[types.Content]:
        request, invocation = await build_request_async(events)
        await plugin.before_model_callback(
            callback_context=CallbackContext(invocation), llm_request=request
        )
        return request.contents

    first = asyncio.run(sent_by(asked))
    paid = len(builds)
    assert paid == (2 if adk_drops_unanswered_calls() else 0)
    later = asyncio.run(sent_by(answered))
    assert len(builds) == paid
    for sent in (first, later):
        assert "c9" in {call.call_id for call in sent_calls(sent)}
    assert later == asyncio.run(sent_after_plugin(answered))


def test_a_dropped_call_with_adks_own_id_comes_back_for_gemini() -> None:
    # ADK strips its own `adk-` ids from a Gemini request, after dropping the
    # unanswered call: the request's other, id-less calls must not hide it.
    from google.adk.agents.llm_agent import LlmAgent
    from google.adk.models.google_llm import Gemini

    agent = LlmAgent(name=AGENT_NAME, model=Gemini(model="gemini-2.5-flash"), instruction="x")

    def event(role: str, parts: list[types.Part]) -> Event:
        author = "user" if role == "user" and parts[0].text else AGENT_NAME
        return Event(
            author=author, invocation_id="i", content=types.Content(role=role, parts=parts)
        )

    def call_part(call_id: str) -> types.Part:
        return types.Part(function_call=types.FunctionCall(id=call_id, name="lookup"))

    answered = types.Part(
        function_response=types.FunctionResponse(id="adk-1", name="lookup", response={})
    )
    events = [
        event("user", [types.Part(text="hi")]),
        event("model", [call_part("adk-1")]),
        event("user", [answered]),
        event("model", [call_part("adk-2")]),
        event("user", [types.Part(text="and?")]),
    ]

    async def sent() -> list[types.Content]:
        request, invocation = await build_request_async(events, agent=agent)
        await PairingPlugin().before_model_callback(
            callback_context=CallbackContext(invocation), llm_request=request
        )
        return request.contents

    contents = asyncio.run(sent())
    calls = [p.function_call for c in contents for p in c.parts or () if p.function_call]
    results = [p.function_response for c in contents for p in c.parts or () if p.function_response]
    assert len(calls) == 2, contents
    assert len(results) == 2, contents
    assert not {rule: v for rule, v in request_violations(contents, _GEMINI_RULES).items() if v}


def _cut_by_a_walk_back() -> list[Event]:
    # Older builders walk back from the trailing result to the newest call
    # event with its id, then cut the history at an older call event sharing
    # it: the middle call, answered as the ledger pairs, never reaches the model.
    return [
        model_event([call("c2")], invocation_id="inv-0"),
        model_event([call("c2", "fetch")], invocation_id="inv-2"),
        user_text("message", invocation_id="inv-3"),
        model_event([response("c2"), call("c2")], invocation_id="inv-5"),
    ]


def _cut_from_the_view() -> list[Event]:
    # The view answers the call ADK's walk back cuts, so only the other open
    # call (whose id an earlier call carries) is left for the restore to see.
    return [
        model_event([call("c3", "fetch")]),
        response_event([response("c3", "fetch")]),
        model_event([response("ïd 1"), call("c1", "fetch")]),
        model_event([call("ïd 1")]),
        model_event([call("c3"), response("c1", "fetch")]),
    ]


def _held_open_beside_results() -> list[Event]:
    # A held-open call in an event of results, answered later, that ADK's
    # merge puts on the user side: the ledger holds nothing open for it.
    return [
        response_event([response("adk-5c1e")], invocation_id="inv-0", branch="fan.a"),
        model_event(
            [response("c3", "fetch"), call("c2", "fetch")],
            invocation_id="inv-1",
            long_running={"c2"},
            branch="fan",
        ),
        model_event(
            [call("c3", "fetch"), call("adk-5c1e", "adk_request_input")],
            invocation_id="inv-2",
            branch="fan.b",
        ),
        response_event([response("c2", "fetch")], invocation_id="inv-2"),
        model_event([types.Part(text="ok")], invocation_id="inv-4"),
    ]


def _calls_beside_an_idless_result() -> list[Event]:
    # ADK's builder takes the first event for the result event of the id-less
    # calls after it; a placeholder for those calls displaces it, and its call
    # with it: neither the view nor the restore may serve that build.
    return [
        model_event([call("c2", "fetch"), response("")], invocation_id="inv-0"),
        model_event([call(""), call(None, "fetch")], invocation_id="inv-0"),
        model_event(
            [call("c3", "fetch"), call(None, "adk_request_credential")],
            invocation_id="inv-0",
            long_running={"c3"},
        ),
    ]


def _calls_beside_results_reusing_an_answered_id() -> list[Event]:
    # Up to 2.6 the last result with an id goes after every call event with it,
    # but never after an event holding results: the reused id's calls there
    # stay unanswered, whatever answers the first call with it.
    return [
        model_event([call("ïd 1", "fetch")], invocation_id="inv-0", branch="fan"),
        model_event([call("adk-5c1e")], invocation_id="inv-2", branch="fan"),
        response_event([response("adk-5c1e")], invocation_id="inv-2", branch="fan.b"),
        model_event(
            [call("ïd 1"), call("ïd 1", "adk_request_input"), response("adk-5c1e")],
            invocation_id="inv-2",
            branch="fan",
        ),
    ]


@pytest.mark.parametrize("both", [False, True], ids=["plugin-alone", "view-and-plugin"])
@pytest.mark.parametrize(
    "history",
    [
        _cut_by_a_walk_back,
        _cut_from_the_view,
        _held_open_beside_results,
        _calls_beside_an_idless_result,
        _calls_beside_results_reusing_an_answered_id,
    ],
)
def test_a_call_an_older_builder_cuts_from_the_request_comes_back(
    both: bool, history: Callable[[], list[Event]]
) -> None:
    # The restore runs for these although every open call's id is on the
    # request: a reused id hides that a call is missing; and a repaired build
    # that displaces a call the stored one carried is never served. Each is
    # lost on some release from 1.20 to 2.10 without these.
    events = history()
    session_events = repaired_events(events) if both else list(events)
    sent = asyncio.run(sent_after_plugin(session_events))
    assert not calls_lost(events, sent, AGENT_NAME), describe(events)
    stored = asyncio.run(build_request_contents_async(events))
    kept = {rule for rule, found in request_violations(stored, RULES).items() if not found}
    assert not {r: v for r, v in request_violations(sent, RULES).items() if v and r in kept}


def _real_results(contents: list[types.Content]) -> int:
    return sum(
        1
        for content in contents
        for part in content.parts or ()
        if part.function_response is not None
        and (part.function_response.response or {}).get("status") not in ("missing", "pending")
    )


@pytest.mark.parametrize("both", [False, True], ids=["plugin alone", "both"])
def test_a_restore_never_drops_the_real_results_of_idless_calls(both: bool) -> None:
    """A parallel turn of id-less calls, most answered, then a turn whose call was interrupted.

    ADK's builder keeps one event of id-less results per call event: a
    placeholder event for the open ones, put in the history the restore
    builds (ADK >= 2.10 dropped the interrupted call, so the restore runs),
    would push the stored results out of that build, and the splice sent the
    model placeholders for calls it had real results for (found by the
    turn-cost benchmark's id-less shape). The request ADK built carries
    them; the request after the plugin must too.
    """
    events = [
        user_text("three lookups"),
        model_event([call(None, "search"), call(None, "search"), call(None, "search")]),
        response_event([response(None, "search"), response(None, "search")]),
        user_text("one more"),
        model_event([call("call_9", "fetch")]),
        user_text("still there?"),
    ]
    session_events = repaired_events(events) if both else list(events)
    built = asyncio.run(build_request_contents_async(session_events))
    sent = asyncio.run(sent_after_plugin(session_events))
    assert _real_results(sent) == _real_results(built) == 2
