"""The process `adk-pairing demo` kills: one real ADK turn against the demo store.

Usage (by the demo only): ``python -m adk_pairing.cli._demo_child DB_PATH SESSION_ID``.
The session must exist. The turn's model call is persisted by the Runner, then
the tool starts and sleeps until the parent sends SIGKILL: a real interrupted
turn, with nothing cleaned up.
"""

from __future__ import annotations

import asyncio
import logging
import sys
import warnings

from google.adk.runners import Runner
from google.adk.sessions.sqlite_session_service import SqliteSessionService

from ._demo_agent import APP_NAME, FIRST_MESSAGE, USER_ID, ScriptedModel, build_agent, user_message


async def run_turn(db_path: str, session_id: str) -> None:
    service = SqliteSessionService(db_path=db_path)
    runner = Runner(
        agent=build_agent(ScriptedModel(model="scripted-demo-model")),
        app_name=APP_NAME,
        session_service=service,
    )
    async for _event in runner.run_async(
        user_id=USER_ID, session_id=session_id, new_message=user_message(FIRST_MESSAGE)
    ):
        pass
    # Only reached if nobody killed us: the parent treats that as a failure.
    print("turn-finished", flush=True)


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: python -m adk_pairing.cli._demo_child DB_PATH SESSION_ID", file=sys.stderr)
        return 2
    warnings.simplefilter("ignore")
    logging.getLogger("google_adk").addHandler(logging.NullHandler())
    logging.getLogger("google_adk").propagate = False
    asyncio.run(run_turn(argv[0], argv[1]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
