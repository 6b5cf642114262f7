"""Whole turns: what the decorator adds to one `Runner` turn.

The store suites time `get_session` and `append_event` alone; an operator pays
for turns. A turn here is what ADK does with one user message to a tool-using
agent whose model answers in text: read the session, append the message,
build the model request from the whole history, call the model and append its
answer. The model is scripted and answers at once, so a real model's latency
(hundreds of milliseconds at least) is left out and each ratio is an upper
bound on what a production turn pays. The history is the store suites'
realistic one; every timed turn adds its two events to it.

The decorator's own CPU time per turn comes from metered rounds, as in the
store suites (see `metering`). Before anything is timed, one turn through
each runner checks what the model was sent: with the decorator, one
placeholder per unanswered call; without it, none. A decorator that silently
stopped repairing would otherwise look free.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable, Sequence
from typing import Any

from backends import Backend
from google.adk.agents.llm_agent import LlmAgent
from google.adk.apps import App
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.plugins.base_plugin import BasePlugin
from google.adk.runners import Runner
from google.adk.sessions.base_session_service import BaseSessionService
from google.genai import types
from metering import Row, Stopwatch, cell_row, plain_or_metered, with_metered_rounds
from pydantic import PrivateAttr
from settings import Settings
from timing import interleave
from workloads import (
    AGENT,
    APP,
    CACHE_SIZE_BY_READ,
    HEALTHS,
    USER,
    USER_TEXT,
    realistic_history,
    unanswered_call_count,
    usage_metadata,
)

from adk_pairing.core.placeholders import (
    DEFAULT_MISSING_TEXT,
    DEFAULT_PENDING_TEXT,
    placeholder_text,
)
from adk_pairing.shells.service import PairingSessionService

_PLACEHOLDER_TEXTS = frozenset({DEFAULT_MISSING_TEXT, DEFAULT_PENDING_TEXT})


def search_documents(query: str) -> dict[str, Any]:
    """The tool the seeded history calls; declared so the request carries it, never run."""
    return {"status": "ok", "query": query, "results": []}


class TextReplyModel(BaseLlm):
    """Answers every request at once with one line of text.

    While inspecting (only in `_checked_turn`), it counts the adk-pairing
    placeholders in the request it was sent. Timed turns skip that loop, which
    would add the same history-sized cost to both runners and flatten the ratio.
    """

    model: str = "scripted-text-reply"
    _inspecting: bool = PrivateAttr(default=False)
    _placeholders_seen: int = PrivateAttr(default=0)

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        if self._inspecting:
            self._placeholders_seen = _placeholder_count(llm_request)
        # A new content per answer: the stored event holds it, and ADK's flows may edit it.
        answer = types.Content(role="model", parts=[types.Part(text="Nothing new since then.")])
        yield LlmResponse(content=answer, usage_metadata=usage_metadata())


def _placeholder_count(request: LlmRequest) -> int:
    return sum(
        1
        for content in request.contents
        for part in content.parts or ()
        if part.function_response is not None
        and placeholder_text(part.function_response.response) in _PLACEHOLDER_TEXTS
    )


async def _run_turn(runner: Runner, session_id: str) -> None:
    message = types.Content(role="user", parts=[types.Part(text=USER_TEXT)])
    async for _ in runner.run_async(user_id=USER, session_id=session_id, new_message=message):
        pass


async def _checked_turn(
    runner: Runner, model: TextReplyModel, session_id: str, expected: int, where: str
) -> None:
    model._inspecting, model._placeholders_seen = True, -1
    try:
        await _run_turn(runner, session_id)
    finally:
        model._inspecting = False
    seen = model._placeholders_seen
    if seen != expected:
        raise RuntimeError(f"{where}: the model was sent {seen} placeholders, not {expected}")


def _runner(
    model: BaseLlm, service: BaseSessionService, plugins: Sequence[BasePlugin] = ()
) -> Runner:
    agent = LlmAgent(
        name=AGENT,
        model=model,
        instruction="Answer questions about the quarterly reports.",
        tools=[search_documents],
    )
    app = App(name=APP, root_agent=agent, plugins=list(plugins))
    return Runner(app=app, session_service=service)


async def bench_turn(backend: Backend, settings: Settings, progress: Callable) -> list[Row]:
    """Times whole turns through a runner on the decorator against one on the bare store.

    Metered rounds (see `metering`) run the turn through a decorator between
    two stopwatches: the CPU time inside the outer one minus the time inside
    the inner one (the store) is what the decorator itself used in that turn.
    """
    inner = backend.service
    store_stopwatch = Stopwatch(inner)
    model = TextReplyModel()
    bare = _runner(model, inner)
    rows: list[Row] = []
    for size in settings.turn_sizes:
        for health in HEALTHS:
            events = realistic_history(size, broken=health == "broken")
            synthetic = unanswered_call_count(events)
            session_id = await backend.seeded_session(APP, USER, events)
            for read, cache_size in CACHE_SIZE_BY_READ.items():
                where = f"turn {backend.name} {size} {health} {read}"
                service = PairingSessionService(inner, analysis_cache_size=cache_size)
                paired = _runner(model, service)
                decorator_stopwatch = Stopwatch(
                    PairingSessionService(store_stopwatch, analysis_cache_size=cache_size)
                )
                metered = _runner(model, decorator_stopwatch)
                # For a warm service this first turn is also the read it resumes from.
                for runner, label in ((paired, "wrapped"), (metered, "metered")):
                    await _checked_turn(runner, model, session_id, synthetic, f"{where} {label}")
                await _checked_turn(bare, model, session_id, 0, f"{where} unwrapped")
                own_cpu: dict[int, int] = {}

                async def turn_wrapped(
                    _: int, sid: str = session_id, runner: Runner = paired
                ) -> None:
                    await _run_turn(runner, sid)

                async def turn_metered(
                    _: int,
                    sid: str = session_id,
                    runner: Runner = metered,
                    decorator_stopwatch: Stopwatch = decorator_stopwatch,
                ) -> int:
                    decorator_stopwatch.inside_cpu_ns = store_stopwatch.inside_cpu_ns = 0
                    await _run_turn(runner, sid)
                    return decorator_stopwatch.inside_cpu_ns - store_stopwatch.inside_cpu_ns

                async def turn_bare(_: int, sid: str = session_id) -> None:
                    await _run_turn(bare, sid)

                comparison = await interleave(
                    plain_or_metered(turn_wrapped, turn_metered, own_cpu),
                    turn_bare,
                    max_rounds=settings.max_rounds,
                    budget_s=settings.budget_s,
                    min_rounds=with_metered_rounds(settings.min_rounds_for(size)),
                    warmup=settings.warmup,
                )
                row = cell_row(backend, size, health, synthetic, comparison, own_cpu, read=read)
                rows.append(row)
                progress("turn", row)
            await inner.delete_session(app_name=APP, user_id=USER, session_id=session_id)
    return rows
