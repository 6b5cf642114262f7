"""Stores holding what a model can emit: sessions appended to ADK's real `DatabaseSessionService`.

Function names, call ids and arguments are model output; ADK stores and reads
back any text. The operator tools (``scan``, ``show``) must print it all.
Shared by the hostile-store tests and the fuzz of the tools.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from google.adk.events.event import Event
from google.adk.sessions.database_session_service import DatabaseSessionService
from google.genai import types

from adk_pairing.adk import close_session_service


@dataclass(frozen=True)
class StoredCall:
    call_id: str
    name: str
    args: dict[str, Any] = field(default_factory=dict)
    answered: bool = False


@dataclass(frozen=True)
class StoredSession:
    app: str
    user: str
    session: str
    calls: tuple[StoredCall, ...]

    @property
    def missing(self) -> list[StoredCall]:
        return [call for call in self.calls if not call.answered]


def _events(session: StoredSession) -> list[Event]:
    """A model event with every call (parallel), then one event answering the answered ones."""
    calls = Event(
        author="agent",
        invocation_id="inv-1",
        content=types.Content(
            role="model",
            parts=[
                types.Part(
                    function_call=types.FunctionCall(
                        id=call.call_id, name=call.name, args=call.args
                    )
                )
                for call in session.calls
            ],
        ),
    )
    answers = [
        types.Part(
            function_response=types.FunctionResponse(
                id=call.call_id, name=call.name, response={"result": "done"}
            )
        )
        for call in session.calls
        if call.answered
    ]
    if not answers:
        return [calls]
    return [
        calls,
        Event(
            author="agent", invocation_id="inv-1", content=types.Content(role="user", parts=answers)
        ),
    ]


async def write_sessions(path: Path, sessions: list[StoredSession]) -> str:
    """Appends `sessions` to a `DatabaseSessionService` store at `path`; returns its URI."""
    uri = f"sqlite+aiosqlite:///{path}"
    service = DatabaseSessionService(db_url=uri)
    try:
        for stored in sessions:
            session = await service.create_session(
                app_name=stored.app, user_id=stored.user, session_id=stored.session
            )
            for event in _events(stored):
                await service.append_event(session, event)
    finally:
        await close_session_service(service)
    return uri


def write_store(path: Path, sessions: list[StoredSession]) -> str:
    return asyncio.run(write_sessions(path, sessions))


def raw_characters(text: str) -> set[str]:
    """The characters of `text` a terminal would act on or not show: none may be printed raw."""
    return {char for char in text if not char.isprintable() and char != "\n"}
