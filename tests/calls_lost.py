"""Calls lost: the calls of an agent's history that the model does not receive answered.

What users buy is that the model knows it acted (issue 23, item 4). So, per
request, count the calls in the agent's history that are absent from the
contents the model receives, or there unanswered.

Which calls count is ADK's own builder's answer, not ours: in a copy of the
history every unanswered call gets a real result (an ordinary event, the kind
a tool writes: no adk-pairing metadata), and the calls that ADK's builder (the
installed release's ``_get_contents``, called as `adk_pairing.rules.builder_check`
calls it) then shows the agent are the ones that count. That leaves out what
ADK leaves out on purpose whatever the pieces do: other branches, rewound
events, compacted ranges, confirmation and credential requests, other agents'
calls (shown as text). A call counts as lost when no call of the received
contents matches it (by id and name; by name and position where an id was
renamed or stripped), or the matching call is there unanswered.

`plugin_request` drives the real `PairingPlugin` through its public callback,
on the request ADK's contents processor built in a real `InvocationContext`,
so the measure is of whatever plugin is installed.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from google.adk.agents.callback_context import CallbackContext
from google.adk.events.event import Event
from google.adk.events.event_actions import EventActions
from google.adk.sessions.base_session_service import BaseSessionService
from google.adk.sessions.session import Session
from google.genai import types

from adk_pairing import PairingPlugin
from adk_pairing.adk.builder import quieted_contents_builder
from adk_pairing.core.placeholders import (
    DEFAULT_MISSING_TEXT,
    DEFAULT_PENDING_TEXT,
    placeholder_text,
)
from adk_pairing.ledger import build_ledger
from adk_pairing.wire import MODEL_ROLES, never_sent_as_a_call
from tests.adk_request import agent_named, build_session_request_async
from tests.unit.events import AGENT

#: What the oracle's real results say; never read by anything but ADK's builder.
ORACLE_RESULT = {"result": "the oracle's result"}


@dataclass(slots=True)
class SentCall:
    """One function call in request contents, and whether a later content answers it."""

    call_id: str | None
    name: str
    answered: bool = False


def sent_calls(contents: Sequence[types.Content]) -> list[SentCall]:
    """Every call of the model turns of `contents`, in order, each answered or not.

    A result answers the newest earlier call with its id (by name, for an
    id-less one) in an earlier content. One id twice in one content is one
    call (one ``tool_use`` id on the wire); a call sharing its part with text
    is sent as the text (`adk_pairing.wire.never_sent_as_a_call`), not a call.
    """
    found: list[SentCall] = []
    waiting: dict[tuple[str | None, str | None], list[int]] = {}
    for content in contents:
        answers: list[types.FunctionResponse] = []
        opened: list[tuple[tuple[str | None, str | None], int]] = []
        ids_here: set[str] = set()
        for part in content.parts or ():
            call, response = part.function_call, part.function_response
            if call is not None and content.role in MODEL_ROLES:
                if never_sent_as_a_call(part) or (call.id and call.id in ids_here):
                    continue
                if call.id:
                    ids_here.add(call.id)
                key = (call.id, None) if call.id else (None, call.name)
                opened.append((key, len(found)))
                found.append(SentCall(call.id or None, call.name or ""))
            elif response is not None:
                answers.append(response)
        for response in answers:  # before this content's calls wait: never answers them
            key = (response.id, None) if response.id else (None, response.name)
            stack = waiting.get(key)
            if stack:
                found[stack.pop()].answered = True
        for key, index in opened:
            waiting.setdefault(key, []).append(index)
    return found


def _stored_id(event: Event, part_index: int, call_id: str | None) -> str | None:
    """The id of the call at `part_index` as stored; the ledger reads ``""`` as None."""
    parts = (event.content.parts if event.content else None) or ()
    call = parts[part_index].function_call if part_index < len(parts) else None
    return call.id if call is not None and (call.id or None) == call_id else call_id


def with_real_results(history: Sequence[Event]) -> list[Event]:
    """A copy of `history` where a real result event follows every event with unanswered calls.

    Unanswered as the installed release's builder pairs (`build_ledger`); each
    result event is what a tool writes: authored by the calling agent, in its
    invocation and branch, role ``user``, no metadata of ours, and the call's id
    exactly as stored (a tool answers with its call's id: ``""`` stays ``""``,
    which older rearrangers match by equality, as the view's placeholders do).
    """
    open_calls = build_ledger(history).open_calls
    copy: list[Event] = []
    for index, event in enumerate(history):
        copy.append(event)
        calls = open_calls.get(index)
        if not calls:
            continue
        parts = [
            types.Part(
                function_response=types.FunctionResponse(
                    id=_stored_id(event, call.part_index, call.call_id),
                    name=call.name,
                    response=ORACLE_RESULT,
                )
            )
            for call in calls
        ]
        copy.append(
            event.model_copy(
                update={
                    "id": Event.new_id(),
                    "content": types.Content(role="user", parts=parts),
                    "actions": EventActions(),
                    "long_running_tool_ids": None,
                    "custom_metadata": None,
                    "partial": None,
                    "error_code": None,
                    "error_message": None,
                }
            )
        )
    return copy


def calls_that_count(
    history: Sequence[Event], agent: str = AGENT, branch: str | None = None
) -> list[SentCall]:
    """The calls ADK's builder shows `agent` once every unanswered call has a real result."""
    contents = quieted_contents_builder()(with_real_results(history), agent, branch)
    return sent_calls(contents)


def calls_lost(
    history: Sequence[Event],
    received: Sequence[types.Content],
    agent: str = AGENT,
    branch: str | None = None,
) -> list[SentCall]:
    """The calls that count (`calls_that_count`) missing from `received`, or there unanswered."""
    expected = calls_that_count(history, agent, branch)
    got = sent_calls(received)
    expected_ids = {call.call_id for call in expected}
    free = list(range(len(got)))  # the received calls not matched yet, in order
    lost: list[SentCall] = []
    for call in expected:
        renamed = [i for i in free if got[i].call_id not in expected_ids]
        match = next(
            (i for i in free if (got[i].call_id, got[i].name) == (call.call_id, call.name)), None
        )
        if match is None:  # an id the request renamed apart, or stripped: by name and position
            match = next((i for i in renamed if got[i].name == call.name), None)
        if match is None or not got[match].answered:
            lost.append(call)
            continue
        free = [i for i in free if i > match]
    return lost


def results_replaced(unwrapped: Sequence[types.Content], received: Sequence[types.Content]) -> int:
    """How many fewer calls `received` answers with a result a tool wrote than `unwrapped` does.

    `unwrapped` is the request ADK builds from the stored history. A repair
    may give a result to another call (one id twice in one event is one call
    on the wire, and the request pass renames the copies apart), but it never
    trades a real result for "no result was recorded": the model would be
    told a call failed that did not.
    """
    return max(0, answered_for_real(unwrapped) - answered_for_real(received))


def answered_for_real(contents: Sequence[types.Content]) -> int:
    """How many calls of `contents` a result a tool wrote answers, as a strict provider pairs them.

    A model turn's calls are answered by the results of the user-side content
    right after it, by id (by name where the call has none; one id twice in
    one turn is one call, as in `sent_calls`); our placeholders
    (`is_a_placeholder`) are not results a tool wrote.
    """
    answered = 0
    for turn, reply in itertools.pairwise(contents):
        if turn.role not in MODEL_ROLES or reply.role in MODEL_ROLES:
            continue
        calls = [
            part.function_call
            for part in turn.parts or ()
            if part.function_call is not None and not never_sent_as_a_call(part)
        ]
        asked = Counter(_pairing_key(call) for call in calls if not call.id)
        asked.update({_pairing_key(call) for call in calls if call.id})
        written = Counter(
            _pairing_key(part.function_response)
            for part in reply.parts or ()
            if part.function_response is not None and not is_a_placeholder(part.function_response)
        )
        answered += (asked & written).total()
    return answered


def is_a_placeholder(response: types.FunctionResponse) -> bool:
    """Whether `response` is one of our placeholders, with its default text."""
    return placeholder_text(response.response) in (DEFAULT_MISSING_TEXT, DEFAULT_PENDING_TEXT)


def _pairing_key(
    part: types.FunctionCall | types.FunctionResponse,
) -> tuple[str | None, str | None]:
    return (part.id, None) if part.id else (None, part.name)


class RefusedBeforeThePlugin(Exception):
    """ADK's contents processor raised on the session: the plugin's callback never ran."""


async def request_contents(
    session: Session,
    session_service: BaseSessionService,
    *,
    plugin: PairingPlugin | None = None,
    agent: str = AGENT,
    branch: str | None = None,
) -> list[types.Content]:
    """What the model receives for `session`: ADK's contents processor, then `plugin` if any.

    The plugin runs as ADK runs it: ``before_model_callback`` with a real
    ``CallbackContext`` over the very ``InvocationContext`` the request was
    built in. With a plugin, ADK's own refusal to build the request is raised
    as `RefusedBeforeThePlugin`, so it is never taken for the plugin's.
    """
    try:
        request, context = await build_session_request_async(
            session, session_service, agent=agent_named(agent), branch=branch
        )
    except Exception as error:
        if plugin is None:
            raise
        raise RefusedBeforeThePlugin(str(error)) from error
    if plugin is not None:
        await plugin.before_model_callback(
            callback_context=CallbackContext(context), llm_request=request
        )
    return list(request.contents or ())


#: The setups measured: neither piece (the baseline), each piece alone, both.
SETUPS = ("unwrapped", "decorator alone", "plugin alone", "both")
#: The keys of `lost_per_setup`'s result that count, per setup but the unwrapped
#: one, the calls its requests answer with a placeholder where the unwrapped
#: request gave a tool's result (`results_replaced`).
REPLACED = {setup: f"{setup}: results replaced" for setup in SETUPS[1:]}
#: The key of `lost_per_setup`'s result that holds how many calls count.
COUNTED = "calls that count"
#: The key that counts requests whose calls could not be counted: ADK's builder
#: refused the history even with every call answered.
UNMEASURED = "requests not measured"
#: The key that counts the calls of the plugin alone's requests that ADK's
#: builder refused on the stored history (releases up to 2.10 raise on some
#: malformed ones): request processors run before any model callback, so the
#: plugin is never asked. Lost to the unwrapped setup, not to the plugin.
BEFORE_THE_PLUGIN = "calls ADK refused before the plugin ran"


def agents_of(history: Sequence[Event]) -> list[tuple[str, str | None]]:
    """Every author but the user, with each branch it wrote in: each builds its own requests."""
    return list(
        dict.fromkeys((e.author, e.branch or None) for e in history if e.author not in ("", "user"))
    )


async def lost_per_setup(history: Sequence[Event]) -> dict[str, int]:
    """How many calls of `history` each setup's requests lose (`calls_lost`), per `SETUPS`.

    Also how many calls count (`COUNTED`), summed over the same requests, and
    how many requests the oracle could not measure (`UNMEASURED`). A setup
    whose request ADK's builder refuses loses every call that counts there,
    but for the plugin alone on the stored history: those go to
    `BEFORE_THE_PLUGIN` (the unwrapped setup loses them). Behind the view the
    history is the decorator's, so a refusal there is lost to both.

    The history is appended event by event to an ``InMemorySessionService``,
    through the decorator (`PairingSessionService`); its stored events (read
    unwrapped) are the agents' history. Each setup's request is built, for
    every agent in every branch it wrote in (`agents_of`), from the session
    its service returns; the counts are summed over those requests.
    """
    from google.adk.sessions import InMemorySessionService

    from adk_pairing import PairingSessionService

    inner = InMemorySessionService()
    wrapped = PairingSessionService(inner)
    key = {"app_name": "calls-lost", "user_id": "user", "session_id": "s"}
    session = await wrapped.create_session(**key)
    for event in history:
        await wrapped.append_event(session, event)
    stored = await inner.get_session(**key)
    view = await wrapped.get_session(**key)
    assert stored is not None and view is not None
    plugin = PairingPlugin()
    lost = dict.fromkeys((*SETUPS, *REPLACED.values(), COUNTED, UNMEASURED, BEFORE_THE_PLUGIN), 0)
    sessions = {
        SETUPS[0]: (stored, inner, None),
        SETUPS[1]: (view, wrapped, None),
        SETUPS[2]: (stored, inner, plugin),
        SETUPS[3]: (view, wrapped, plugin),
    }
    for agent, branch in agents_of(stored.events):
        try:
            counted = len(calls_that_count(stored.events, agent, branch))
        except Exception:  # ADK's builder refuses the history (1.20: an orphan result)
            lost[UNMEASURED] += 1
            continue
        lost[COUNTED] += counted
        unwrapped: list[types.Content] | None = None
        for setup, (session, service, with_plugin) in sessions.items():
            try:
                got = await request_contents(
                    session, service, plugin=with_plugin, agent=agent, branch=branch
                )
            except RefusedBeforeThePlugin:
                lost[BEFORE_THE_PLUGIN if service is inner else setup] += counted
                continue
            except Exception:  # no request at all: the model is told nothing
                lost[setup] += counted
                continue
            lost[setup] += len(calls_lost(stored.events, got, agent, branch))
            if setup == SETUPS[0]:
                unwrapped = got
            elif unwrapped is not None:
                lost[REPLACED[setup]] += results_replaced(unwrapped, got)
    return lost


@dataclass(slots=True)
class Tally:
    """Calls lost per setup over many histories, and how often the view lost more than none."""

    lost: Counter[str] = field(default_factory=Counter)
    histories: int = 0
    #: Histories whose request lost more calls with the decorator than with neither piece.
    decorator_worse: int = 0

    async def add(self, history: Sequence[Event]) -> None:
        found = await lost_per_setup(history)
        self.lost.update(found)
        self.histories += 1
        self.decorator_worse += found[SETUPS[1]] > found[SETUPS[0]]

    def figure(self) -> str:
        counted, unmeasured = self.lost[COUNTED], self.lost[UNMEASURED]
        per_setup = ", ".join(f"{setup} {self.lost[setup]}" for setup in SETUPS)
        replaced = ", ".join(f"{setup} {self.lost[key]}" for setup, key in REPLACED.items())
        return (
            f"{self.histories} histories, {counted} calls that count "
            f"({unmeasured} requests not measured; {self.lost[BEFORE_THE_PLUGIN]} "
            f"refused by ADK before the plugin ran); lost: {per_setup}; "
            f"real results replaced by a placeholder: {replaced}"
        )
