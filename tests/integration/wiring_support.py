"""Helpers shared by the wiring tests (test_wiring_*.py).

The executed snippets of README.md and docs/*.md, the example agent
directory, seeding an interrupted session through the *unwrapped*
`DatabaseSessionService`, and reading the raw rows a store holds, so tests
can compare what is stored before and after a turn.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import shutil
import socket
import sqlite3
import subprocess
import sys
import time
import uuid
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from google.adk.events.event import Event
from google.adk.sessions import DatabaseSessionService
from google.adk.sessions.base_session_service import BaseSessionService
from google.genai import types

from adk_pairing import METADATA_KEY
from adk_pairing.adk import close_session_service

from .support.backends import create_to_append

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"
#: Every file whose marked regions hold executed snippets.
DOCUMENTS = (README, *sorted((REPO / "docs").glob("*.md")))
EXAMPLE_AGENTS = REPO / "examples" / "agents"
DEMO_AGENT = EXAMPLE_AGENTS / "pairing_demo"
DEMO_APP = "pairing_demo"  # ADK names the app after the agent's folder
INTERRUPTED_TOOL = "book_flight"

_FENCE = re.compile(
    r"^(?P<indent>[ \t]*)```(?P<lang>[\w+-]*)(?P<info>[^\n]*)\n(?P<body>.*?)^(?P=indent)```[ \t]*$",
    re.DOTALL | re.MULTILINE,
)
_TITLE = re.compile(r'title="(?P<title>[^"]+)"')
#: A stretch of executed snippets: the wiring section, or any other marked stretch.
_REGION = re.compile(
    r"<!-- (?P<kind>wiring|snippets):start -->(?P<text>.*?)<!-- (?P=kind):end -->", re.DOTALL
)
#: Languages whose blocks are code or configuration a reader copies: each must be executed.
EXECUTABLE_LANGUAGES = frozenset({"python", "yaml", "toml"})


def _body(match: re.Match[str]) -> str:
    """A block's text without the indentation of its fence (blocks inside list items)."""
    indent = match["indent"]
    return "".join(line.removeprefix(indent) for line in match["body"].splitlines(keepends=True))


def fenced_blocks(document: Path) -> list[tuple[str | None, str, str]]:
    """Every fenced block of `document`, marked or not, as (title, language, body)."""
    return [
        (
            title["title"] if (title := _TITLE.search(match["info"])) else None,
            match["lang"],
            _body(match),
        )
        for match in _FENCE.finditer(document.read_text())
    ]


def readme_blocks() -> list[tuple[str | None, str, str]]:
    """Every fenced block between snippet markers in README.md and docs/*.md.

    As (title, language, body). The markers are ``<!-- wiring:start -->`` /
    ``<!-- wiring:end -->`` and ``<!-- snippets:start -->`` / ``<!-- snippets:end -->``.
    """
    blocks = []
    for document in DOCUMENTS:
        for region in _REGION.finditer(document.read_text()):
            for match in _FENCE.finditer(region["text"]):
                title = _TITLE.search(match["info"])
                blocks.append((title["title"] if title else None, match["lang"], _body(match)))
    return blocks


def unexecuted_blocks() -> list[str]:
    """Python, YAML and TOML blocks outside every marked stretch, as ``file: first line``."""
    found = []
    for document in DOCUMENTS:
        text = _REGION.sub("", document.read_text())
        for match in _FENCE.finditer(text):
            if match["lang"] in EXECUTABLE_LANGUAGES:
                first = _body(match).strip().splitlines()[0]
                found.append(f"{document.relative_to(REPO)}: {first}")
    return found


def readme_snippet(title: str) -> str:
    """The body of the executed block titled `title` (README.md or docs/*.md)."""
    found = [body for block_title, _, body in readme_blocks() if block_title == title]
    assert len(found) == 1, f"README and docs hold {len(found)} executed blocks titled {title!r}"
    return found[0]


def answer_gemini_locally(monkeypatch: pytest.MonkeyPatch) -> None:
    """Snippets naming a ``gemini-…`` model run as printed, without a key or a network.

    ADK resolves the name to its own `Gemini` class; only the provider call is
    replaced, by the example model's (``examples/agents/pairing_demo``): it
    raises on a request that breaks Anthropic's pairing rule (ADK's converter)
    and otherwise answers with a JSON report of the calls and results it got.
    """
    from google.adk.models.google_llm import Gemini

    monkeypatch.syspath_prepend(str(EXAMPLE_AGENTS))
    from pairing_demo.agent import PairingReportModel

    monkeypatch.setattr(Gemini, "generate_content_async", PairingReportModel.generate_content_async)
    monkeypatch.setenv("GOOGLE_API_KEY", "unused: the provider call is replaced")


def asyncpg_dsn(sqlalchemy_url: str) -> str:
    """The same database as a DSN asyncpg accepts (no ``+asyncpg`` driver part)."""
    return sqlalchemy_url.replace("postgresql+asyncpg://", "postgresql://", 1)


@dataclass(frozen=True)
class SeededSession:
    app_name: str
    user_id: str
    session_id: str
    call_id: str


async def seed_interrupted_session(
    db_url: str, *, app_name: str = DEMO_APP, **engine_kwargs: Any
) -> SeededSession:
    """A stored session whose last turn died after the model called a tool.

    Written through the unwrapped `DatabaseSessionService`, as a turn killed
    between the call and its result leaves it: a user message, then a model
    event with a function_call that nothing answers.
    """
    return await seed_interrupted_session_into(
        DatabaseSessionService(db_url=db_url, **engine_kwargs), app_name=app_name
    )


async def seed_interrupted_session_into(
    service: BaseSessionService, *, app_name: str = DEMO_APP
) -> SeededSession:
    """`seed_interrupted_session` through any unwrapped `service`; closes it."""
    token = uuid.uuid4().hex[:12]
    seeded = SeededSession(app_name, f"user-{token}", f"session-{token}", f"toolu_{token}")
    try:
        session = await create_to_append(
            service, app_name=app_name, user_id=seeded.user_id, session_id=seeded.session_id
        )
        await service.append_event(
            session,
            Event(
                invocation_id="inv-interrupted",
                author="user",
                content=types.Content(role="user", parts=[types.Part(text="Book me a flight")]),
            ),
        )
        await service.append_event(
            session,
            Event(
                invocation_id="inv-interrupted",
                author=DEMO_APP,
                content=types.Content(
                    role="model",
                    parts=[
                        types.Part(
                            function_call=types.FunctionCall(
                                id=seeded.call_id, name=INTERRUPTED_TOOL, args={"to": "LIS"}
                            )
                        )
                    ],
                ),
            ),
        )
    finally:
        await close_session_service(service)
    return seeded


def raw_sqlite_event_rows(db_path: Path, seeded: SeededSession) -> list[tuple[str, str]]:
    """`raw_event_rows` of an SQLite file (`SqliteSessionService`'s), read with sqlite3."""
    with contextlib.closing(sqlite3.connect(db_path)) as connection:
        cursor = connection.execute(
            "SELECT * FROM events WHERE app_name = ? AND user_id = ? AND session_id = ? "
            "ORDER BY timestamp, id",
            (seeded.app_name, seeded.user_id, seeded.session_id),
        )
        id_at = [column[0] for column in cursor.description].index("id")
        return [(row[id_at], repr(row)) for row in cursor.fetchall()]


async def raw_event_rows(postgres_url: str, seeded: SeededSession) -> list[tuple[str, str]]:
    """(id, the whole row as stored) of every row of the session, oldest first.

    The whole row as text, not ``event_data``: google-adk 1.20's schema stores an
    event in columns of its own.
    """
    import asyncpg

    connection = await asyncpg.connect(asyncpg_dsn(postgres_url))
    try:
        rows = await connection.fetch(
            "SELECT id, events::text AS data FROM events "
            "WHERE app_name = $1 AND user_id = $2 AND session_id = $3 "
            "ORDER BY timestamp, id",
            seeded.app_name,
            seeded.user_id,
            seeded.session_id,
        )
    finally:
        await connection.close()
    return [(row["id"], row["data"]) for row in rows]


def demo_report(event_texts: Iterable[str]) -> dict[str, Any]:
    """The JSON report of the example model (the last text it produced)."""
    texts = [text for text in event_texts if text]
    assert texts, "the model produced no text"
    return json.loads(texts[-1])


def assert_model_saw_placeholder(
    report: Mapping[str, Any], seeded: SeededSession
) -> dict[str, Any]:
    """The request held the interrupted call *and* a 'missing' result for it; returns that."""
    assert report["paired"] is True
    assert {"id": seeded.call_id, "name": INTERRUPTED_TOOL} in report["calls"]
    results = [result for result in report["results"] if result["id"] == seeded.call_id]
    assert len(results) == 1, report
    assert results[0]["name"] == INTERRUPTED_TOOL
    assert results[0]["status"] == "missing"
    return results[0]


def assert_store_untouched(
    before: list[tuple[str, str]], after: list[tuple[str, str]], new_event_ids: Iterable[str]
) -> None:
    """Stored rows after a turn are the rows before plus that turn's own events."""
    assert after[: len(before)] == before, "rows stored before the turn changed"
    added_ids = {row_id for row_id, _ in after[len(before) :]}
    new_ids = set(new_event_ids)
    # The turn stores the user's message plus every event the runner yielded.
    assert new_ids <= added_ids
    assert len(added_ids) == len(new_ids) + 1
    for _, data in after:
        assert METADATA_KEY not in data, "an adk-pairing marker reached the store"


async def pg_connection_count(postgres_url: str, application_name: str) -> int:
    """Server-side connections that identify as `application_name`."""
    import asyncpg

    connection = await asyncpg.connect(asyncpg_dsn(postgres_url))
    try:
        return await connection.fetchval(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1",
            application_name,
        )
    finally:
        await connection.close()


async def eventually(
    condition: Callable[[], Awaitable[bool]], *, timeout: float = 15.0, what: str
) -> None:
    """Polls `condition` until true; fails naming `what` after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while not await condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for: {what}")
        await asyncio.sleep(0.05)


ADK = Path(sys.executable).with_name("adk")
IGNORED = shutil.ignore_patterns("__pycache__", ".adk")
READY_TIMEOUT = 90.0


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def server_that_must_not_start(argv: list[str], cwd: Path, log: Path) -> tuple[int, str]:
    """Runs ADK's server command `argv` until it exits, which it must before it is ready:
    its exit code and what it printed (`log`). A server still running then is killed."""
    with log.open("wb") as output:
        process = subprocess.Popen(
            [*argv, "--host", "127.0.0.1", "--port", str(free_port()), "--no-reload"],
            cwd=cwd,
            stdout=output,
            stderr=subprocess.STDOUT,
        )
    try:
        returncode = process.wait(timeout=READY_TIMEOUT)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=10)
    return returncode, log.read_text()


def _log_tail(log: Path, lines: int = 40) -> str:
    return "\n".join(log.read_text(errors="replace").splitlines()[-lines:])


@contextlib.contextmanager
def api_server(argv: list[str], workdir: Path) -> Iterator[str]:
    """Runs an ADK server command (``adk api_server`` or ``adk web``) on a free
    loopback port until it answers /list-apps; yields its base URL; kills it."""
    port = free_port()
    log = workdir / f"{Path(argv[1]).name}.log"
    command = [*argv, "--host", "127.0.0.1", "--port", str(port), "--no-reload"]
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "PYTHONUNBUFFERED": "1"}
    with log.open("wb") as output:
        process = subprocess.Popen(
            command, cwd=workdir, stdout=output, stderr=subprocess.STDOUT, env=env
        )
    base_url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + READY_TIMEOUT
        while True:
            if process.poll() is not None:
                pytest.fail(f"adk {argv[1]} exited with {process.returncode}:\n{_log_tail(log)}")
            with contextlib.suppress(httpx.TransportError):
                # /list-apps exists on every version; /health only from google-adk 2.x.
                if httpx.get(f"{base_url}/list-apps", timeout=1.0).status_code == 200:
                    break
            if time.monotonic() > deadline:
                pytest.fail(f"adk {argv[1]} not ready in {READY_TIMEOUT}s:\n{_log_tail(log)}")
            time.sleep(0.1)
        yield base_url
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)


def agents_copy(tmp_path: Path, agents: Iterable[Path] = (DEMO_AGENT,)) -> Path:
    """The example agents root (`agents` and services.yaml), copied so the server
    writes nothing into the repo."""
    target = tmp_path / "agents"
    for agent in agents:
        shutil.copytree(agent, target / agent.name, ignore=IGNORED)
    shutil.copy(DEMO_AGENT.parent / "services.yaml", target / "services.yaml")
    return target
