"""The snippets of README.md and docs/*.md, executed, so the docs cannot rot.

Each titled code block between the markers (README's wiring section and
one-liners, ``<!-- snippets:start -->`` stretches in docs/) is run against a
real store: the Python snippets in a scratch directory (SQLite files) or
against this test session's PostgreSQL database, the config files written to
disk as shown. The ADK CLI snippets (``adk api_server``, ``services.yaml``,
``services.py``) are executed by test_wiring_adk_cli.py, the metrics export by
test_metrics.py. A block without a title, a title no test runs, or a Python,
YAML or TOML block outside the markers fails
`test_every_snippet_of_readme_and_docs_is_executed`.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3

import pytest
from google.adk.sessions import DatabaseSessionService

from adk_pairing import (
    DEFAULT_MISSING_TEXT,
    CallStatus,
    PairingPlugin,
    PairingSessionService,
    PlaceholderTexts,
    is_synthetic,
)
from adk_pairing.core.placeholders import placeholder_part

from .wiring_support import (
    INTERRUPTED_TOOL,
    REPO,
    answer_gemini_locally,
    fenced_blocks,
    readme_blocks,
    readme_snippet,
    seed_interrupted_session,
    unexecuted_blocks,
)

#: Every titled block and the test that runs it.
EXECUTED_BLOCKS = {
    "one-liners": "test_one_liners_wrap_sqlite_by_object_and_by_uri_and_add_the_plugin",
    "runner-setup": "test_runner_setup_snippet_runs_a_turn_on_sqlite_and_closes",
    "uri-factory": "test_uri_factory_snippet_builds_a_working_wrapped_service",
    "session_service.yaml": "test_yaml_config_snippets_load_a_postgres_service",
    "load-config": "test_yaml_config_snippets_load_a_postgres_service",
    "session_service.toml": "test_toml_config_snippet_loads_a_plain_uri_with_pairing_block",
    "adk-api-server": "test_wiring_adk_cli.py",
    "adk-web-sqlite": "test_wiring_adk_cli.py",
    "services.yaml": "test_wiring_adk_cli.py",
    "services.py": "test_wiring_adk_cli.py",
    "otel-export": "test_metrics.py",
    "sqlite-wal": "test_sqlite_wal_snippet_switches_new_connections_to_write_ahead_logging",
    "quick-start": "test_quick_start_snippet_answers_an_interrupted_call_for_the_model",
}


def run_snippet(title: str) -> dict:
    """Executes a documented Python block as a script, as printed; returns its globals."""
    namespace = {"__name__": "__main__"}
    exec(compile(readme_snippet(title), f"docs[{title}]", "exec"), namespace)
    return namespace


def test_every_snippet_of_readme_and_docs_is_executed():
    titles = [title for title, _, _ in readme_blocks()]

    assert None not in titles, "an untitled code block would never be executed"
    assert len(titles) == len(set(titles))
    assert set(titles) == set(EXECUTED_BLOCKS)
    assert unexecuted_blocks() == [], "move these blocks between snippet markers"


def test_one_liners_wrap_sqlite_by_object_and_by_uri_and_add_the_plugin(
    tmp_path, monkeypatch, capsys
):
    from google.adk.runners import Runner
    from google.adk.sessions.sqlite_session_service import SqliteSessionService
    from google.genai import types

    monkeypatch.chdir(tmp_path)
    answer_gemini_locally(monkeypatch)

    namespace = run_snippet("one-liners")

    by_object = namespace["PairingSessionService"]  # the class the snippet imported
    session_service = namespace["session_service"]  # the URI's, built last
    assert by_object is PairingSessionService
    assert isinstance(session_service, PairingSessionService)
    assert isinstance(session_service.inner, SqliteSessionService)
    app = namespace["app"]
    assert [type(plugin) for plugin in app.plugins] == [PairingPlugin]

    async def one_turn() -> list[str]:
        async with session_service:
            runner = Runner(app=app, session_service=session_service)
            session = await session_service.create_session(app_name=app.name, user_id="ada")
            message = types.Content(role="user", parts=[types.Part(text="Hello")])
            return [
                part.text
                async for event in runner.run_async(
                    user_id="ada", session_id=session.id, new_message=message
                )
                for part in (event.content.parts if event.content else ())
                if part.text
            ]

    texts = asyncio.run(one_turn())
    assert json.loads(texts[-1])["paired"] is True
    with sqlite3.connect(tmp_path / "sessions.db") as db:
        assert db.execute("SELECT count(*) FROM events").fetchone() == (2,)


def test_quick_start_snippet_answers_an_interrupted_call_for_the_model(tmp_path, monkeypatch):
    """The home page's two lines, as printed, on a store a killed turn left a call in."""
    from google.adk.events.event import Event
    from google.adk.sessions.sqlite_session_service import SqliteSessionService
    from google.genai import types

    monkeypatch.chdir(tmp_path)
    answer_gemini_locally(monkeypatch)
    namespace = run_snippet("quick-start")
    session_service, runner = namespace["session_service"], namespace["runner"]
    assert isinstance(session_service, PairingSessionService)
    assert [type(plugin) for plugin in namespace["app"].plugins] == [PairingPlugin]

    async def interrupted_then_one_turn() -> dict:
        plain = SqliteSessionService(db_path="sessions.db")
        session = await plain.create_session(app_name="my_app", user_id="ada")
        for author, part in (
            ("user", types.Part(text="Refund order 42")),
            (
                "assistant",
                types.Part(function_call=types.FunctionCall(id="toolu_q1", name="refund", args={})),
            ),
        ):
            role = "user" if author == "user" else "model"
            content = types.Content(role=role, parts=[part])
            await plain.append_event(
                session, Event(invocation_id="inv-killed", author=author, content=content)
            )
        message = types.Content(role="user", parts=[types.Part(text="Did it go through?")])
        async with session_service:
            texts = [
                part.text
                async for event in runner.run_async(
                    user_id="ada", session_id=session.id, new_message=message
                )
                for part in (event.content.parts if event.content else ())
                if part.text
            ]
        return json.loads(texts[-1])

    report = asyncio.run(interrupted_then_one_turn())

    assert report["paired"] is True
    assert {"id": "toolu_q1", "name": "refund"} in report["calls"]
    [answer] = [result for result in report["results"] if result["id"] == "toolu_q1"]
    assert answer["status"] == "missing"
    assert answer["message"] == DEFAULT_MISSING_TEXT
    with sqlite3.connect(tmp_path / "sessions.db") as db:
        stored = [repr(row) for row in db.execute("SELECT * FROM events")]  # any schema
    assert len(stored) == 4  # the killed turn's two events, the new message and the answer
    assert not any("adk_pairing" in row for row in stored), "a placeholder was stored"


@pytest.mark.parametrize("status", [CallStatus.MISSING, CallStatus.PENDING])
def test_quick_start_shows_the_placeholders_exactly_as_the_model_receives_them(status):
    """The JSON the home page prints is the placeholder's response, default texts and keys."""
    printed = [
        json.loads(body)
        for _, language, body in fenced_blocks(REPO / "docs" / "index.md")
        if language == "json"
    ]
    part = placeholder_part("toolu_1", "refund", status, PlaceholderTexts())

    assert part.function_response.response in printed


async def test_sqlite_wal_snippet_switches_new_connections_to_write_ahead_logging(
    tmp_path, monkeypatch
):
    monkeypatch.chdir(tmp_path)

    store = run_snippet("sqlite-wal")["store"]

    try:
        await store.create_session(app_name="docs", user_id="u")
    finally:
        await store.db_engine.dispose()
    with sqlite3.connect(tmp_path / "sessions.db") as db:
        assert db.execute("PRAGMA journal_mode").fetchone() == ("wal",)


def test_runner_setup_snippet_runs_a_turn_on_sqlite_and_closes(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    answer_gemini_locally(monkeypatch)

    namespace = run_snippet("runner-setup")

    report = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert report["paired"] is True
    # The app the runner ran carries the request pass.
    assert [type(plugin) for plugin in namespace["app"].plugins] == [PairingPlugin]
    with sqlite3.connect(tmp_path / "sessions.db") as db:
        rows = db.execute("SELECT id FROM events").fetchall()  # any schema version
    # The user's message and the model's answer, both stored; nothing else.
    assert len(rows) == 2


def test_uri_factory_snippet_builds_a_working_wrapped_service(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)

    session_service = run_snippet("uri-factory")["session_service"]

    assert isinstance(session_service, PairingSessionService)
    assert isinstance(session_service.inner, DatabaseSessionService)
    assert session_service.inner.db_engine.pool.size() == 5
    assert session_service.texts.missing.startswith("No result was recorded")

    async def round_trip() -> None:
        async with session_service:
            session = await session_service.create_session(app_name="docs", user_id="u")
            again = await session_service.get_session(
                app_name="docs", user_id="u", session_id=session.id
            )
            assert again is not None and again.id == session.id

    asyncio.run(round_trip())
    assert (tmp_path / "sessions.db").exists()


@pytest.mark.postgres
async def test_yaml_config_snippets_load_a_postgres_service(
    tmp_path, monkeypatch, postgres_url, postgres_database
):
    (tmp_path / "session_service.yaml").write_text(readme_snippet("session_service.yaml"))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DB_USER", "postgres")
    # Trust auth ignores it; a "@" or "#" in it broke the URI before the password key.
    monkeypatch.setenv("DB_PASSWORD", "p@ss#word")
    monkeypatch.setenv("DB_NAME", postgres_database)
    monkeypatch.delenv("DB_HOST", raising=False)  # the snippet's default, 127.0.0.1
    seeded = await seed_interrupted_session(postgres_url, app_name="docs_yaml")

    session_service = run_snippet("load-config")["session_service"]

    async with session_service:
        assert session_service.inner.db_engine.pool.size() == 10
        view = await session_service.get_session(
            app_name=seeded.app_name, user_id=seeded.user_id, session_id=seeded.session_id
        )
    placeholder = view.events[-1]
    assert is_synthetic(placeholder)
    response = placeholder.content.parts[0].function_response
    assert (response.id, response.name) == (seeded.call_id, INTERRUPTED_TOOL)
    assert response.response["error"] == session_service.texts.missing
    assert session_service.texts.missing.startswith("No result was recorded for this call.")


async def test_toml_config_snippet_loads_a_plain_uri_with_pairing_block(tmp_path, monkeypatch):
    from adk_pairing import load_session_service

    path = tmp_path / "session_service.toml"
    path.write_text(readme_snippet("session_service.toml"))
    monkeypatch.setenv("STATE_DIR", str(tmp_path))

    session_service = load_session_service(path)

    assert session_service.texts.pending.startswith("This call is still running.")
    async with session_service:
        session = await session_service.create_session(app_name="docs", user_id="u")
        assert session.id
    assert (tmp_path / "sessions.db").exists()
