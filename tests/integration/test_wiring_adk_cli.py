"""ADK's own CLI serves ``pairing+`` sessions: a real ``adk api_server`` and ``adk web``.

Each test starts ``.venv/bin/adk api_server`` as a subprocess on a free
loopback port, on a copy of the agents root ``examples/agents`` holding
``pairing_demo`` (whose model
raises on any request that breaks Anthropic's pairing rule and otherwise
reports the calls and results it received). The command line is the README's
``adk-api-server`` snippet with the URI pointed at this test session's
database, and the scheme is registered the README's way: the example's
``services.yaml`` (checked to equal the README's), or the README's
``services.py`` snippet.

The session is seeded through the unwrapped `DatabaseSessionService` with a
turn that died after a function_call. One HTTP ``/run`` turn must then
succeed; the model must have seen the call *and* a "missing" placeholder
result (so the server really used the decorator: unwrapped, ADK would drop
the call); the README's ``--extra_plugins adk_pairing.PairingPlugin`` must
have run (the placeholder and the user's text arrive as one merged turn); and
the stored rows must be the rows before plus the new turn's events, with no
adk-pairing marker anywhere. The README's ``adk web`` line does the same on
``pairing+sqlite://``, the store ``adk web`` keeps by default
(`SqliteSessionService`), and the example's ``services.yaml`` registers
exactly the schemes the README's ``services.py`` does.
"""

from __future__ import annotations

import shlex
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from google.adk.sessions.sqlite_session_service import SqliteSessionService

from adk_pairing import register_pairing_schemes

from .wiring_support import (
    ADK,
    SeededSession,
    agents_copy,
    api_server,
    assert_model_saw_placeholder,
    assert_store_untouched,
    demo_report,
    raw_event_rows,
    raw_sqlite_event_rows,
    readme_snippet,
    seed_interrupted_session,
    seed_interrupted_session_into,
    server_that_must_not_start,
)


def readme_api_server_args(session_service_uri: str, agents_root: Path) -> list[str]:
    """The README's ``adk api_server`` command, aimed at this test's store and agents copy."""
    argv = shlex.split(readme_snippet("adk-api-server"))
    assert argv[:2] == ["adk", "api_server"]
    uri_at = argv.index("--session_service_uri") + 1
    assert argv[uri_at].startswith("pairing+postgresql+asyncpg://")
    argv[uri_at] = session_service_uri
    assert argv[argv.index("--extra_plugins") + 1] == "adk_pairing.PairingPlugin"
    assert argv[-1] == "examples/agents"
    argv[-1] = str(agents_root)
    return [str(ADK), *argv[1:]]


async def run_interrupted_session_through(base_url: str, postgres_url: str) -> dict[str, Any]:
    """Seeds a broken PostgreSQL session, runs one turn over HTTP, checks request and store.

    Returns the placeholder result the model was shown.
    """
    seeded = await seed_interrupted_session(postgres_url)
    return await run_checked_turn(base_url, seeded, lambda: raw_event_rows(postgres_url, seeded))


async def run_checked_turn(
    base_url: str, seeded: SeededSession, stored_rows: Callable[[], Awaitable[list[Any]]]
) -> dict[str, Any]:
    """One ``/run`` turn on the seeded broken session; checks the request and the store.

    Returns the placeholder result the model was shown.
    """
    before = await stored_rows()
    assert len(before) == 2

    async with httpx.AsyncClient(base_url=base_url, timeout=60.0) as client:
        response = await client.post(
            "/run",
            json={
                "app_name": seeded.app_name,
                "user_id": seeded.user_id,
                "session_id": seeded.session_id,
                "new_message": {"role": "user", "parts": [{"text": "Did my booking go through?"}]},
            },
        )
    assert response.status_code == 200, response.text
    events = response.json()
    texts = [part.get("text") for event in events for part in event["content"]["parts"]]
    report = demo_report(texts)
    placeholder = assert_model_saw_placeholder(report, seeded)
    # --extra_plugins adk_pairing.PairingPlugin ran: the view's placeholder and
    # the user's new text reached the model as one user turn (user text, model
    # call, results + text), not two; ADK only logs a plugin it fails to load.
    assert report["contents"] == 3, report

    assert_store_untouched(before, await stored_rows(), [event["id"] for event in events])
    return placeholder


@pytest.mark.postgres
async def test_adk_api_server_with_services_yaml_repairs_interrupted_postgres_session(
    tmp_path, postgres_url
):
    agents_root = agents_copy(tmp_path)
    # The README shows exactly the file the example ships.
    assert (agents_root / "services.yaml").read_text() == readme_snippet("services.yaml")
    argv = readme_api_server_args("pairing+" + postgres_url, agents_root)

    with api_server(argv, tmp_path) as base_url:
        await run_interrupted_session_through(base_url, postgres_url)


@pytest.mark.postgres
async def test_adk_api_server_with_readme_services_py_repairs_interrupted_postgres_session(
    tmp_path, postgres_url
):
    agents_root = agents_copy(tmp_path)
    (agents_root / "services.yaml").unlink()
    (agents_root / "services.py").write_text(readme_snippet("services.py"))
    argv = readme_api_server_args("pairing+" + postgres_url, agents_root)

    with api_server(argv, tmp_path) as base_url:
        placeholder = await run_interrupted_session_through(base_url, postgres_url)

    # The snippet's text reached the server's decorator.
    assert (
        placeholder["message"] == "No result was recorded for this call. Check before retrying it."
    )


@pytest.mark.postgres
def test_adk_api_server_without_registration_refuses_a_pairing_uri(tmp_path, postgres_url):
    """Why the registration is needed: ADK's fallback cannot load a pairing+ URL."""
    agents_root = agents_copy(tmp_path)
    (agents_root / "services.yaml").unlink()
    argv = readme_api_server_args("pairing+" + postgres_url, agents_root)
    returncode, text = server_that_must_not_start(argv, tmp_path, tmp_path / "refused.log")

    assert returncode != 0
    assert "Failed to create database engine for URL 'pairing+postgresql" in text


async def test_readme_adk_web_line_repairs_interrupted_sqlite_session_store(tmp_path):
    """``pairing+sqlite://``, registered by the example's services.yaml: SqliteSessionService."""
    argv = shlex.split(readme_snippet("adk-web-sqlite"))
    assert argv[:2] == ["adk", "web"]
    uri = argv[argv.index("--session_service_uri") + 1]
    assert uri == "pairing+sqlite:///sessions.db"  # relative: the server's working directory
    assert argv[argv.index("--extra_plugins") + 1] == "adk_pairing.PairingPlugin"
    argv[-1] = str(agents_copy(tmp_path))
    db_path = tmp_path / "sessions.db"
    seeded = await seed_interrupted_session_into(SqliteSessionService(db_path=str(db_path)))

    async def stored_rows() -> list[tuple[str, str]]:
        return raw_sqlite_event_rows(db_path, seeded)

    with api_server([str(ADK), *argv[1:]], tmp_path) as base_url:
        await run_checked_turn(base_url, seeded, stored_rows)


def test_services_yaml_registers_what_register_pairing_schemes_does():
    """Every scheme ADK's CLI accepts (its registry's and the SQLAlchemy URLs of its
    fallback) and Redis, whichever of the two registrations a reader copies."""
    from google.adk.cli.service_registry import ServiceRegistry, _register_builtin_services

    registry = ServiceRegistry()
    _register_builtin_services(registry)
    from_services_py = register_pairing_schemes(registry=registry)
    listed = yaml.safe_load(readme_snippet("services.yaml"))["services"]

    assert sorted(entry["scheme"] for entry in listed) == from_services_py
    assert "pairing+sqlite" in from_services_py
    assert {(entry["type"], entry["class"]) for entry in listed} == {
        ("session", "adk_pairing.PairingSessionService")
    }
