"""Many sessions at once through a real Runner on PostgreSQL, with cancels.

50 sessions x 20 turns, 10 sessions in flight, on ``DatabaseSessionService``
over asyncpg: the same seeded plan (see `load`) once over the unwrapped store
(plain ADK, the baseline) and once over `PairingSessionService` with
`PairingPlugin` in the app. About one turn in seven is cancelled, either while
its tool runs or after a seeded delay, anywhere.

Proven: the decorator raises no more errors than the store does alone, never
persists anything of its own (the raw rows are searched), and every request
the model received with it passes all four provider rules of
`adk_pairing.rules.checks` (Anthropic, OpenAI chat, Gemini, strict alternation).
The unwrapped run must break Anthropic's rule, or the check proves nothing.
Shown to fail: without the plugin, 25 of the decorator's 1,310 requests break
Anthropic's rule (an older long-running call answered after a newer one: ADK's
``_rearrange_events_for_latest_function_response`` drops the older answer).
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from adk_pairing import PairingPlugin
from tests.conftest import require_server
from tests.integration.conftest import make_spec
from tests.integration.support.backends import (
    Backend,
    assert_nothing_synthetic_stored,
    synthetic_markers,
)
from tests.integration.support.scenario import Harness

from .load import keep_out_of_the_rule_table, run_load, violations_by_rule

pytestmark = pytest.mark.postgres

SESSIONS = int(os.environ.get("RELIABILITY_SESSIONS", "50"))
TURNS = 20
IN_FLIGHT = 10
SEED = 20261130


@pytest.fixture
def postgres_specs(request: pytest.FixtureRequest, tmp_path: Path) -> dict[str, dict[str, Any]]:
    """Two isolated apps in this session's PostgreSQL database (sync: may create it)."""
    require_server("PostgreSQL", "127.0.0.1", 5432)
    return {run: make_spec("db-postgres", request, tmp_path) for run in ("unwrapped", "wrapped")}


def _synthetic_rows(raw: str) -> int:
    markers = synthetic_markers()
    return sum(1 for row in raw.splitlines() if any(marker in row for marker in markers))


async def test_concurrent_turns_with_cancels_on_postgres_no_worse_than_unwrapped(
    postgres_specs: dict[str, dict[str, Any]],
    open_store: Callable[[dict[str, Any]], Awaitable[Backend]],
    figures: Callable[[str], None],
) -> None:
    figures(
        f"{SESSIONS} sessions x {TURNS} turns, {IN_FLIGHT} in flight, seed {SEED}, PostgreSQL; "
        "unwrapped = plain ADK, wrapped = PairingSessionService + PairingPlugin"
    )
    results: dict[str, dict[str, Any]] = {}
    for run, wrapped in (("unwrapped", False), ("wrapped", True)):
        backend = await open_store(postgres_specs[run])
        harness = Harness.build(
            backend, wrapped=wrapped, plugins=[PairingPlugin()] if wrapped else ()
        )
        load = await run_load(
            harness, sessions=SESSIONS, turns=TURNS, in_flight=IN_FLIGHT, seed=SEED
        )
        raw = await backend.raw_storage_text()
        broken = violations_by_rule(harness.script.requests)
        keep_out_of_the_rule_table(harness.script.requests)
        results[run] = {"load": load, "raw": raw, "broken": broken, "harness": harness}
        figures(
            f"{run}: turns {load.turns}, cancelled {load.cancelled}, errors {load.error_count}, "
            f"model requests {len(harness.script.requests)}, requests breaking each rule "
            f"{dict(broken)}, synthetic rows {_synthetic_rows(raw)} of "
            f"{len(raw.splitlines())} ({len(raw) / 1e6:.1f} MB raw)"
        )
        figures(f"{run}: intents {dict(sorted(load.intents.items()))}")
        for error, count in load.errors.most_common(5):
            figures(f"{run}: error x{count}: {error}")

    baseline, decorated = results["unwrapped"], results["wrapped"]
    assert baseline["load"].turns == decorated["load"].turns == SESSIONS * TURNS
    assert decorated["load"].error_count <= baseline["load"].error_count, decorated["load"].errors
    assert baseline["broken"]["anthropic"] > 0, (
        "plain ADK sent no invalid request: the load no longer exercises unanswered calls"
    )
    assert_nothing_synthetic_stored(baseline["raw"])
    assert_nothing_synthetic_stored(decorated["raw"])
    invalid = {rule: count for rule, count in decorated["broken"].items() if count}
    if invalid:
        examples = decorated["harness"].script.all_rule_violations()
        pytest.fail(f"requests breaking a rule with the decorator: {invalid}; e.g. {examples[:3]}")
