"""``adk web`` over the decorator on a real SQLite store, and the sessions it is shown.

Shared by the HTTP API test (test_adk_web_http_api.py, in CI on every
version) and the real-browser check (tests/browser/check_adk_web.py, ``make
web-check``), so both assert the same scenes:

* a **broken** session (``pairing_demo``): stored through the unwrapped
  service, its last turn died after a function call;
* a **healthy** session (``pairing_demo``): one plain turn;
* a **held-open** session (``approval_demo``): its tool is long-running and
  returned nothing, so its call waits for a person's answer.

The server is ``adk web`` started by ADK's own CLI on a free loopback port
(`wiring_support.api_server`), with ``pairing+sqlite+aiosqlite://`` registered
by the example's ``services.yaml``. Everything goes through ADK's FastAPI app.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import json
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from google.adk.events.event import Event
from google.genai import types

from adk_pairing.core.placeholders import METADATA_KEY, SYNTHETIC_ID_PREFIX, is_synthetic

from .wiring_support import (
    ADK,
    DEMO_AGENT,
    DEMO_APP,
    EXAMPLE_AGENTS,
    SeededSession,
    agents_copy,
    api_server,
    seed_interrupted_session,
)

APPROVAL_AGENT = EXAMPLE_AGENTS / "approval_demo"
APPROVAL_APP = "approval_demo"  # ADK names the app after the agent's folder
USER = "web-user"


@dataclass(frozen=True)
class WebServer:
    base_url: str
    db_path: Path

    @property
    def db_url(self) -> str:
        return f"sqlite+aiosqlite:///{self.db_path}"


@contextlib.contextmanager
def adk_web(workdir: Path) -> Iterator[WebServer]:
    """``adk web`` serving both example agents over the decorator on an SQLite file."""
    agents_root = agents_copy(workdir, [DEMO_AGENT, APPROVAL_AGENT])
    db_path = workdir / "sessions.db"
    uri = f"pairing+sqlite+aiosqlite:///{db_path}"
    argv = [str(ADK), "web", "--session_service_uri", uri, str(agents_root)]
    with api_server(argv, workdir) as base_url:
        yield WebServer(base_url, db_path)


class AdkWebClient:
    """The calls ``adk web``'s page makes, over its HTTP API."""

    def __init__(self, server: WebServer) -> None:
        self.server = server
        self.http = httpx.Client(base_url=server.base_url, timeout=60.0)

    def close(self) -> None:
        self.http.close()

    def create_session(self, app: str) -> str:
        response = self.http.post(f"/apps/{app}/users/{USER}/sessions", json={})
        response.raise_for_status()
        return response.json()["id"]

    def list_sessions(self, app: str, user_id: str = USER) -> list[str]:
        response = self.http.get(f"/apps/{app}/users/{user_id}/sessions")
        response.raise_for_status()
        return [session["id"] for session in response.json()]

    def events(self, app: str, session_id: str, user_id: str = USER) -> list[Event]:
        """The session's events as ``adk web`` loads them (GET session)."""
        response = self.http.get(f"/apps/{app}/users/{user_id}/sessions/{session_id}")
        response.raise_for_status()
        return [Event.model_validate(event) for event in response.json()["events"]]

    def run(self, app: str, session_id: str, message: types.Content) -> list[Event]:
        """One turn through ``/run``; the events it yielded."""
        response = self.http.post("/run", json=self._body(app, session_id, message))
        assert response.status_code == 200, response.text
        return [Event.model_validate(event) for event in response.json()]

    def run_sse(self, app: str, session_id: str, message: types.Content) -> list[Event]:
        """One turn through ``/run_sse``, as the page sends it; the events it streamed."""
        events = []
        body = {**self._body(app, session_id, message), "streaming": False}
        with self.http.stream("POST", "/run_sse", json=body) as response:
            assert response.status_code == 200, response.read()
            for line in response.iter_lines():
                if line.startswith("data: "):
                    data = json.loads(line.removeprefix("data: "))
                    assert "error" not in data, data
                    events.append(Event.model_validate(data))
        return events

    @staticmethod
    def _body(app: str, session_id: str, message: types.Content) -> dict[str, Any]:
        return {
            "app_name": app,
            "user_id": USER,
            "session_id": session_id,
            "new_message": message.model_dump(mode="json", by_alias=True, exclude_none=True),
        }


def user_text(text: str) -> types.Content:
    return types.Content(role="user", parts=[types.Part(text=text)])


def user_answer(call_id: str, name: str, response: dict[str, Any]) -> types.Content:
    """What ``adk web``'s answer box sends: the person's function response."""
    answer = types.FunctionResponse(id=call_id, name=name, response=response)
    return types.Content(role="user", parts=[types.Part(function_response=answer)])


def seed_broken_session(server: WebServer) -> SeededSession:
    """A ``pairing_demo`` session whose turn died after a call, stored unwrapped.

    Seeded on a thread of its own: Playwright's sync API keeps an event loop
    running on the caller's.
    """
    seeding = seed_interrupted_session(server.db_url, app_name=DEMO_APP)
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, seeding).result()


def held_open_call(events: list[Event]) -> types.FunctionCall:
    """The one long-running call among `events`."""
    calls = [
        call
        for event in events
        for call in event.get_function_calls()
        if call.id in (event.long_running_tool_ids or ())
    ]
    assert len(calls) == 1, events
    return calls[0]


def synthetic_events(events: list[Event]) -> list[Event]:
    return [event for event in events if is_synthetic(event)]


def model_texts(events: list[Event]) -> list[str]:
    return [
        part.text
        for event in events
        if event.content is not None
        for part in event.content.parts or ()
        if part.text
    ]


def stored_rows(server: WebServer) -> list[str]:
    """Every stored event row of every session, as text."""
    with contextlib.closing(sqlite3.connect(server.db_path)) as connection:
        return [repr(row) for row in connection.execute("SELECT * FROM events")]


def assert_store_holds_no_synthetic_row(server: WebServer) -> None:
    rows = stored_rows(server)
    assert rows, "the store holds no event at all"
    for row in rows:
        assert METADATA_KEY not in row, f"an adk-pairing marker reached the store: {row[:200]}"
        assert SYNTHETIC_ID_PREFIX not in row, f"a synthetic event reached the store: {row[:200]}"
