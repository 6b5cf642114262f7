"""A turn killed with SIGKILL in a real child process, then continued here.

One child process runs a wrapped runner on every persistent store at once
(starting Python with ADK costs seconds, so one child serves all stores). Its
tool blocks; once each call event is stored the child is killed with SIGKILL,
so nothing in it gets to run: no ``finally``, no cancellation handler, no
abort sealing. Each test then reopens its store in this process, checks
through the unwrapped service that the call is stored unanswered and unsealed,
and runs the next turn through a new wrapped runner.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from adk_pairing import CallStatus
from tests.adk_features import HAS_ADK_REDIS
from tests.conftest import IN_CI, PG_HOST, PG_PORT, _port_open

from .conftest import backend_params, make_spec
from .support.backends import (
    PERSISTENT_KINDS,
    Backend,
    assert_nothing_synthetic_stored,
    open_backend,
)
from .support.scenario import Harness, assert_every_request_valid, placeholder_ids
from .support.scripted_model import text

REPO_ROOT = Path(__file__).resolve().parents[2]
#: Generous bound on the child's start-up (importing ADK takes seconds); it only
#: keeps a broken child from hanging the suite.
CHILD_READY_TIMEOUT_SECONDS = 120
_SERVERS = {
    "db-postgres": ("PostgreSQL", PG_HOST, PG_PORT),
    "redis-adk": ("Redis", "127.0.0.1", 6379),
    "redis-community": ("Redis", "127.0.0.1", 6379),
}


@pytest.fixture(scope="module")
def killed_turns(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, dict[str, Any]]]:
    """Kind -> job (spec and session id) whose turn died by SIGKILL."""
    tmp = tmp_path_factory.mktemp("sigkill")
    jobs: dict[str, dict[str, Any]] = {}
    for kind in sorted(PERSISTENT_KINDS):
        if kind == "redis-adk" and not HAS_ADK_REDIS:
            continue  # its test skips itself: this google-adk has no such store
        server = _SERVERS.get(kind)
        if server is not None and not _port_open(server[1], server[2]):
            continue  # the test for this kind skips (or fails under CI) by itself
        spec = make_spec(kind, request, tmp)
        jobs[kind] = {"spec": spec, "session_id": f"{spec['session_prefix']}-killed"}
    child = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tests.integration.support.sigkill_child",
            json.dumps(list(jobs.values())),
        ],
        cwd=REPO_ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
    )
    # A child that never reports is killed, which ends the blocking readline.
    watchdog = threading.Timer(CHILD_READY_TIMEOUT_SECONDS, child.kill)
    watchdog.start()
    try:
        line = child.stdout.readline() if child.stdout else ""
        watchdog.cancel()
        if line.strip() != "READY":
            child.kill()
            _, errors = child.communicate(timeout=30)
            pytest.fail(f"the child never stored its calls: {line!r}\n{errors[-3000:]}")
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=30)
        assert child.returncode == -signal.SIGKILL
        yield jobs
    finally:
        watchdog.cancel()
        if child.poll() is None:
            child.kill()
            child.wait(timeout=30)
        for stream in (child.stdout, child.stderr):
            if stream is not None:
                stream.close()
        # Redis keys of a kind whose test was deselected would outlive the run.
        for job in jobs.values():
            if job["spec"]["kind"].startswith("redis"):
                asyncio.run(_delete_store_data(job["spec"]))


@pytest.mark.parametrize("kind", backend_params(PERSISTENT_KINDS))
async def test_turn_killed_by_sigkill_leaves_a_raw_unanswered_call_and_next_turn_is_valid(
    kind: str,
    killed_turns: dict[str, dict[str, Any]],
    open_store: Callable[[dict[str, Any]], Any],
) -> None:
    server = _SERVERS.get(kind)
    if kind not in killed_turns:
        message = f"{server[0]} is not reachable"
        if IN_CI:
            pytest.fail(f"{message}; CI=true requires it")
        pytest.skip(message)
    job = killed_turns[kind]
    backend: Backend = await open_store(job["spec"])
    session_id = job["session_id"]
    harness = Harness.build(backend, wrapped=True, steps=[text("Sorry, I was cut off.")])

    stored = await harness.stored_events(session_id)
    assert not any(e.error_code for e in stored), "the killed invocation was sealed"
    unanswered = await harness.unanswered_in_store(session_id)
    assert [(c.call_id, c.status) for c in unanswered] == [("call_1", CallStatus.MISSING)]

    await harness.turn(session_id, "hello? are you there?")
    assert_every_request_valid(harness.script)
    assert placeholder_ids(harness.script.last, CallStatus.MISSING.value) == ["call_1"]
    assert await harness.unanswered_in_store(session_id) == unanswered
    assert_nothing_synthetic_stored(await backend.raw_storage_text())


async def _delete_store_data(spec: dict[str, Any]) -> None:
    backend = await open_backend(spec)
    await backend.close()
