"""The request pass: what `PairingPlugin` adds to ADK's own building of a model request.

Before every model call ADK runs its request processors over the session
(the agent flow's ``_preprocess_async``): instructions, tools, and the
contents, a copy of every event's content. The plugin then runs once on the
result. This suite times, in interleaved pairs, ADK's building alone against
ADK's building followed by the plugin's ``before_model_callback`` and the final
pass it places last in the agent's callbacks (`agent_pass.final_request_pass`), on one
in-memory session (no store: reading it would cost both sides the same) with
the store suites' realistic history. The ratio is (building + plugin) ÷
building.

Two requests per size:

* *healthy*: the stored history, every call answered. The request already
  satisfies the rules, so the plugin checks it and sends the very same list;
* *broken (view)*: the decorator's view of a history with 1% of its turns
  unanswered. Each placeholder stands right before the next user message,
  two user contents in a row, so the plugin rebuilds the request and merges
  them (the repair path);
* *dropped (stored)*: the same history as stored, read without the
  decorator (the plugin alone). From google-adk 2.10 ADK's builder drops the
  unanswered calls, so the plugin restores them: two more runs of ADK's
  contents processor, the splice and the request pass (the restore path).
  Before 2.10 ADK keeps the calls, and this is the repair path again.

For the healthy request, the *walk floor*: the thread CPU time merely to read
every content's role and every part's call and result once, right after ADK's
building (`_walk_floor`). No check of the request can cost less.

Before anything is timed, each request is checked: the healthy one must come
back as the same list object, the broken and dropped ones must be changed and
satisfy the rules, and the dropped one must carry every call of the history.
A plugin that silently stopped checking would otherwise look free.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from google.adk.agents.callback_context import CallbackContext
from google.adk.agents.llm_agent import LlmAgent
from google.adk.agents.run_config import RunConfig
from google.adk.models.llm_request import LlmRequest
from google.adk.runners import Runner
from google.adk.sessions.in_memory_session_service import InMemorySessionService
from google.adk.sessions.session import Session
from google.genai import types
from metering import Row
from settings import Settings
from timing import interleave, timed_without_collector
from turns import TextReplyModel, search_documents
from workloads import AGENT, APP, HEALTHS, USER, USER_TEXT, realistic_history

from adk_pairing.core.placeholders import is_synthetic
from adk_pairing.passes.request_pass import repair_contents
from adk_pairing.shells.agent_pass import final_request_pass
from adk_pairing.shells.plugin import PairingPlugin
from adk_pairing.shells.service import PairingSessionService

#: How each history reaches ADK's request builder.
SOURCE_BY_HEALTH = {"healthy": "stored", "broken": "view", "dropped": "stored"}


async def _session(size: int, health: str) -> tuple[Session, PairingSessionService]:
    store = InMemorySessionService()
    service = PairingSessionService(store)
    session = await store.create_session(app_name=APP, user_id=USER)
    for event in realistic_history(size, broken=health != "healthy"):
        await store.append_event(session, event)
    read = service if SOURCE_BY_HEALTH[health] == "view" else store
    loaded = await read.get_session(app_name=APP, user_id=USER, session_id=session.id)
    assert loaded is not None
    return loaded, service


def _request_builder(session: Session, service: PairingSessionService) -> Callable:
    """ADK's own request building for `session`, as a turn runs it before the model call."""
    agent = LlmAgent(
        name=AGENT,
        model=TextReplyModel(),
        instruction="Answer questions about the quarterly reports.",
        tools=[search_documents],
    )
    runner = Runner(app_name=APP, agent=agent, session_service=service)
    message = types.Content(role="user", parts=[types.Part(text=USER_TEXT)])
    context = runner._new_invocation_context(session, new_message=message, run_config=RunConfig())
    flow = agent._llm_flow

    async def build() -> tuple[LlmRequest, CallbackContext]:
        request = LlmRequest()
        async for _ in flow._preprocess_async(context, request):
            pass
        # ADK makes the callback context before the model callbacks run,
        # whether or not there is a plugin: it is part of its own building.
        return request, CallbackContext(context)

    return build


def _walk(contents: list[types.Content]) -> None:
    for content in contents:
        _ = content.role
        for part in content.parts or ():
            _ = part.function_call, part.function_response


async def _walk_floor(build: Callable, repeats: int = 15) -> float:
    """Median thread CPU ns to merely read every content's role and every part's call and result.

    Any check of the request has to look at every call and result, so this is a
    lower bound on what the plugin can add. It is measured right after ADK's
    building, as the plugin sees the request: freshly copied contents, partly
    out of the CPU caches.
    """
    times: list[int] = []
    for _ in range(repeats):
        request, _context = await build()
        times.append(timed_without_collector(time.thread_time_ns, _walk, request.contents))
    return sorted(times)[len(times) // 2]


def _calls(contents: list[types.Content]) -> int:
    return sum(1 for c in contents for part in c.parts or () if part.function_call is not None)


def _calls_in(session: Session) -> int:
    return sum(len(event.get_function_calls()) for event in session.events)


async def bench_request_pass(settings: Settings, progress: Callable) -> list[Row]:
    rows: list[Row] = []
    plugin = PairingPlugin()
    for size in settings.request_sizes:
        for health in (*HEALTHS, "dropped"):
            session, service = await _session(size, health)
            build = _request_builder(session, service)
            request, callback_context = await build()
            contents = request.contents
            await plugin.before_model_callback(
                callback_context=callback_context, llm_request=request
            )
            where = f"request {size} {health}"
            if health == "healthy" and request.contents is not contents:
                raise RuntimeError(f"{where}: the plugin changed a request that was valid")
            if health != "healthy" and request.contents is contents:
                raise RuntimeError(f"{where}: the plugin did not repair the request")
            if health == "dropped" and _calls(request.contents) != _calls_in(session):
                raise RuntimeError(f"{where}: the request lacks calls the history holds")
            if repair_contents(request.contents).contents is not request.contents:
                raise RuntimeError(f"{where}: the request breaks a rule after the plugin")

            own_cpu: dict[int, int] = {}

            async def build_and_pass(
                index: int, build: Callable = build, own_cpu: dict[int, int] = own_cpu
            ) -> None:
                request, callback_context = await build()
                start = time.thread_time_ns()
                await plugin.before_model_callback(
                    callback_context=callback_context, llm_request=request
                )
                # The last callback of the agent's chain, which the plugin placed there.
                await final_request_pass(callback_context, request)
                own_cpu[index] = time.thread_time_ns() - start

            async def build_only(_: int, build: Callable = build) -> None:
                await build()

            comparison = await interleave(
                build_and_pass,
                build_only,
                max_rounds=settings.max_rounds,
                budget_s=settings.budget_s,
                min_rounds=settings.min_rounds_for(size),
                warmup=settings.warmup,
            )
            row: Row = {
                "backend": "inmemory",
                "label": "no store",
                "size": size,
                "health": health,
                "source": SOURCE_BY_HEALTH[health],
                "contents": len(contents),
                "synthetic": sum(1 for event in session.events if is_synthetic(event)),
                **comparison.figures(),
            }
            # The plugin's own CPU time, measured inside every timed pair: the
            # figure to hold against the 2% target when the wall-clock ratio
            # of a ~10 ms build is within its own noise.
            cpu = sorted(own_cpu[i] for i in comparison.indices)
            row["own_cpu_ns"] = float(cpu[len(cpu) // 2])
            row["cpu_ratio"] = 1 + row["own_cpu_ns"] / row["unwrapped_ns"]
            if health == "healthy":
                row["walk_ns"] = await _walk_floor(build)
            rows.append(row)
            progress("request", row)
    return rows
