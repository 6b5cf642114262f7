"""ADK's own CLI serves ``pairing+postgresql+asyncpg://`` sessions: a real ``adk api_server``.

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
adk-pairing marker anywhere.
"""

from __future__ import annotations

import shlex
import subprocess
from pathlib import Path
from typing import Any

import httpx
import pytest

from .wiring_support import (
    ADK,
    READY_TIMEOUT,
    agents_copy,
    api_server,
    assert_model_saw_placeholder,
    assert_store_untouched,
    demo_report,
    free_port,
    raw_event_rows,
    readme_snippet,
    seed_interrupted_session,
)

pytestmark = pytest.mark.postgres


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
    """Seeds a broken session, runs one turn over HTTP, checks request and store.

    Returns the placeholder result the model was shown.
    """
    seeded = await seed_interrupted_session(postgres_url)
    before = await raw_event_rows(postgres_url, seeded)
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

    after = await raw_event_rows(postgres_url, seeded)
    assert_store_untouched(before, after, [event["id"] for event in events])
    return placeholder


async def test_adk_api_server_with_services_yaml_repairs_interrupted_postgres_session(
    tmp_path, postgres_url
):
    agents_root = agents_copy(tmp_path)
    # The README shows exactly the file the example ships.
    assert (agents_root / "services.yaml").read_text() == readme_snippet("services.yaml")
    argv = readme_api_server_args("pairing+" + postgres_url, agents_root)

    with api_server(argv, tmp_path) as base_url:
        await run_interrupted_session_through(base_url, postgres_url)


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


def test_adk_api_server_without_registration_refuses_a_pairing_uri(tmp_path, postgres_url):
    """Why the registration is needed: ADK's fallback cannot load a pairing+ URL."""
    agents_root = agents_copy(tmp_path)
    (agents_root / "services.yaml").unlink()
    argv = readme_api_server_args("pairing+" + postgres_url, agents_root)
    log = tmp_path / "refused.log"

    with log.open("wb") as output:
        process = subprocess.Popen(
            [*argv, "--host", "127.0.0.1", "--port", str(free_port()), "--no-reload"],
            cwd=tmp_path,
            stdout=output,
            stderr=subprocess.STDOUT,
        )
    try:
        returncode = process.wait(timeout=READY_TIMEOUT)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=10)

    assert returncode != 0
    assert "Failed to create database engine for URL 'pairing+postgresql" in log.read_text()
