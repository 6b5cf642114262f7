"""Child process for the SIGKILL scenario: start turns that hang, then wait to die.

Run as ``python -m tests.integration.support.sigkill_child '<json>'`` where the
JSON is a list of ``{"spec": <backend spec>, "session_id": ...}``. For each
store it runs a wrapped runner whose model calls ``hang`` (id ``call_1``); once
every call event is in its store it prints ``READY`` and blocks until the
parent kills it with SIGKILL, so no cleanup, cancellation handler or abort
sealing can run.
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

from .backends import open_backend
from .scenario import USER_ID, Harness, eventually
from .scripted_model import call, calls


async def _main(jobs: list[dict[str, Any]]) -> None:
    harnesses: list[tuple[Harness, str]] = []
    tasks: list[asyncio.Task[Any]] = []
    for job in jobs:
        backend = await open_backend({**job["spec"], "cleanup": False})
        harness = Harness.build(
            backend, wrapped=True, steps=[calls(call("hang", {"reason": "slow"}, id="call_1"))]
        )
        await harness.service.create_session(
            app_name=backend.app_name, user_id=USER_ID, session_id=job["session_id"]
        )
        tasks.append(asyncio.create_task(harness.turn(job["session_id"], "do the slow thing")))
        harnesses.append((harness, job["session_id"]))

    async def all_calls_stored() -> bool:
        for harness, session_id in harnesses:
            events = await harness.stored_events(session_id)
            if not any(e.get_function_calls() for e in events):
                return False
        return True

    await eventually(all_calls_stored, timeout=60, what="every call event to be stored")
    print("READY", flush=True)
    await asyncio.sleep(3600)


if __name__ == "__main__":
    asyncio.run(_main(json.loads(sys.argv[1])))
