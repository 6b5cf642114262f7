"""Memory: what serving sessions costs with the decorator, and the bounds of what it keeps.

Two fresh child processes (spawned, not forked: a fork inherits the memory
earlier tests freed, and grows into it) serve the same sessions over
``InMemorySessionService``, one unwrapped and one through
`PairingSessionService` with its defaults; each
reports its resident set growth per 1,000 sessions. A session is served as a
Runner serves a turn: a full read, then the user's message, a call, its
result or not (a call left missing or held open in half the sessions) and a
text. The figures are printed, never asserted.

Asserted instead, in this process with small limits so they are reached:
the analysis cache never holds more than its size, and the memory of
missing calls already logged (``OncePerKey``) never more than its limit,
while every session still gets served and logged.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import multiprocessing
import os
from collections.abc import Callable
from multiprocessing.connection import Connection

import pytest
from google.adk.sessions import InMemorySessionService
from google.adk.sessions.base_session_service import BaseSessionService
from google.genai import types

from adk_pairing import PairingSessionService
from adk_pairing.shells import service as service_module
from adk_pairing.shells import view_warnings
from adk_pairing.shells.once import OncePerKey
from tests.unit.events import call, model_event, response, response_event, user_text

SESSIONS = int(os.environ.get("RELIABILITY_MEMORY_SESSIONS", "2000"))
WARM_UP_SESSIONS = 200
TURNS = 2
APP, USER = "memory", "user"


async def serve(service: BaseSessionService, first: int, count: int) -> None:
    """Serves sessions ``first .. first + count - 1``, `TURNS` turns each.

    Session n leaves its calls answered when n is even, held open
    (long-running) when n % 4 == 1, and missing when n % 4 == 3.
    """
    for n in range(first, first + count):
        session_id = f"s{n}"
        await service.create_session(app_name=APP, user_id=USER, session_id=session_id)
        for turn in range(TURNS):
            session = await service.get_session(app_name=APP, user_id=USER, session_id=session_id)
            invocation = f"inv-{turn}"
            call_id = f"c{turn}"
            await service.append_event(session, user_text("hi", invocation_id=invocation))
            long_running = [call_id] if n % 4 == 1 else None
            await service.append_event(
                session,
                model_event([call(call_id)], invocation_id=invocation, long_running=long_running),
            )
            if n % 2 == 0:
                await service.append_event(
                    session, response_event([response(call_id)], invocation_id=invocation)
                )
            await service.append_event(
                session, model_event([types.Part(text="ok")], invocation_id=invocation)
            )


def _rss_bytes() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _measure(wrapped: bool, sessions: int, pipe: Connection) -> None:
    """Runs in a spawned child: serves `sessions` and sends back its RSS growth."""
    logging.getLogger("adk_pairing").disabled = True  # a real handler writes logs out

    async def run() -> dict[str, int]:
        inner = InMemorySessionService()
        service = PairingSessionService(inner) if wrapped else inner
        await serve(service, 0, WARM_UP_SESSIONS)
        gc.collect()
        before = _rss_bytes()
        await serve(service, WARM_UP_SESSIONS, sessions)
        gc.collect()
        figures = {"growth": _rss_bytes() - before}
        if wrapped:
            figures["cache_entries"] = len(service._analysis_cache)
            figures["logged_calls"] = len(view_warnings.logged_once)
        return figures

    pipe.send(asyncio.run(run()))
    pipe.close()


def _in_child(wrapped: bool, sessions: int) -> dict[str, int]:
    context = multiprocessing.get_context("spawn")
    receiver, sender = context.Pipe(duplex=False)
    child = context.Process(target=_measure, args=(wrapped, sessions, sender))
    child.start()
    sender.close()
    try:
        figures = receiver.recv()
    finally:
        child.join(timeout=120)
    assert child.exitcode == 0, f"the measuring child failed ({child.exitcode})"
    return figures


def test_rss_growth_per_thousand_sessions_wrapped_against_unwrapped(
    figures: Callable[[str], None],
) -> None:
    unwrapped = _in_child(False, SESSIONS)
    wrapped = _in_child(True, SESSIONS)
    per_thousand = {
        run: result["growth"] / SESSIONS * 1000 / 2**20
        for run, result in (("unwrapped", unwrapped), ("wrapped", wrapped))
    }
    figures(
        f"{SESSIONS} sessions x {TURNS} turns over InMemorySessionService, after "
        f"{WARM_UP_SESSIONS} warm-up sessions: RSS growth per 1,000 sessions "
        f"unwrapped {per_thousand['unwrapped']:.2f} MB, wrapped {per_thousand['wrapped']:.2f} MB "
        f"(difference {per_thousand['wrapped'] - per_thousand['unwrapped']:+.2f} MB)"
    )
    figures(
        f"wrapped, default limits: analysis cache entries {wrapped['cache_entries']}, "
        f"missing calls remembered as logged {wrapped['logged_calls']}"
    )
    served = WARM_UP_SESSIONS + SESSIONS
    assert wrapped["cache_entries"] == min(served, service_module.DEFAULT_ANALYSIS_CACHE_SIZE)
    assert wrapped["logged_calls"] == served // 4  # one missing call per n % 4 == 3 session


async def test_analysis_cache_and_logged_call_memory_stay_within_their_bounds(
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    figures: Callable[[str], None],
) -> None:
    cache_size, log_limit, sessions = 64, 50, 400
    once = OncePerKey(limit=log_limit)
    monkeypatch.setattr(view_warnings, "logged_once", once)
    service = PairingSessionService(InMemorySessionService(), analysis_cache_size=cache_size)
    with caplog.at_level(logging.WARNING, logger="adk_pairing"):
        await serve(service, 0, sessions)
    warned = [r for r in caplog.records if "has no recorded result" in r.getMessage()]
    figures(
        f"{sessions} sessions, cache size {cache_size}, log memory limit {log_limit}: "
        f"cache entries {len(service._analysis_cache)}, remembered calls {len(once)}, "
        f"missing-call warnings {len(warned)}"
    )
    assert len(service._analysis_cache) == cache_size
    assert len(once) == log_limit
    assert len(warned) == sessions // 4, "each missing call is logged once"
