"""The benchmark harness runs end to end on every store and computes every figure.

This is not a timed test: nothing here depends on how fast anything is. It
runs ``benchmarks/run.py --quick`` exactly as ``make bench`` would (a separate
process, real SQLite files, the local PostgreSQL and Redis servers) and checks
that every ratio the harness promises was computed and is a finite, positive
number, so a harness that silently stopped measuring something fails here.
"""

from __future__ import annotations

import asyncio
import json
import math
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from tests.adk_features import HAS_ADK_REDIS
from tests.conftest import PG_HOST, PG_PORT, PG_USER, require_server

# The benchmark scripts are our tooling: which google-adk runs them changes nothing they
# prove, so .ci/run runs them on the newest release only (version_independent).
pytestmark = [pytest.mark.postgres, pytest.mark.redis, pytest.mark.version_independent]

ROOT = Path(__file__).resolve().parents[2]
# ADK's Redis service, and so the benchmark's redis store, exists from google-adk 2.9.
BACKENDS = {"inmemory", "sqlite", "db-sqlite", "postgres"} | ({"redis"} if HAS_ADK_REDIS else set())
QUICK_SIZES = {10, 40}
QUICK_APPEND_SIZES = {10}
QUICK_TURN_SIZES = {10}
QUICK_REQUEST_SIZES = {40}
HEALTHS = {"healthy", "broken"}
READS = {"warm", "cold"}


def _finite_positive(value: object) -> bool:
    return isinstance(value, float) and math.isfinite(value) and value > 0


async def _database_exists(name: str) -> bool:
    import asyncpg

    connection = await asyncpg.connect(
        host=PG_HOST, port=PG_PORT, user=PG_USER, database="postgres"
    )
    try:
        return bool(await connection.fetchval("SELECT 1 FROM pg_database WHERE datname=$1", name))
    finally:
        await connection.close()


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """Runs the quick benchmark once for this module; returns paths and parsed rows."""
    require_server("PostgreSQL", PG_HOST, PG_PORT)
    require_server("Redis", "127.0.0.1", 6379)
    out = tmp_path_factory.mktemp("bench")
    database = f"adk_pairing_bench_smoke_{uuid.uuid4().hex[:10]}"
    completed = subprocess.run(
        [
            sys.executable,
            "benchmarks/run.py",
            "--quick",
            "--output",
            str(out / "RESULTS.md"),
            "--json",
            str(out / "results.json"),
            "--pg-database",
            database,
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert completed.returncode == 0, completed.stdout[-3000:] + completed.stderr[-3000:]
    return {
        "results": json.loads((out / "results.json").read_text()),
        "markdown": (out / "RESULTS.md").read_text(),
        "database": database,
    }


def test_quick_benchmark_times_every_store_size_and_history_on_both_calls_and_turns(quick_run):
    results = quick_run["results"]
    gets = [(r["backend"], r["size"], r["health"], r["read"]) for r in results["get_session"]]
    assert sorted(gets) == sorted(
        (b, s, h, read) for b in BACKENDS for s in QUICK_SIZES for h in HEALTHS for read in READS
    )
    appends = [(r["backend"], r["size"], r["health"]) for r in results["append_event"]]
    assert sorted(appends) == sorted(
        (b, s, h) for b in BACKENDS for s in QUICK_APPEND_SIZES for h in HEALTHS
    )
    turns = [(r["backend"], r["size"], r["health"], r["read"]) for r in results["turn"]]
    assert sorted(turns) == sorted(
        (b, s, h, read)
        for b in BACKENDS
        for s in QUICK_TURN_SIZES
        for h in HEALTHS
        for read in READS
    )


def test_only_cold_reads_get_a_walk_floor(quick_run):
    for row in quick_run["results"]["get_session"]:
        assert ("walk_ns" in row) == (row["read"] == "cold"), row


def test_every_wrapped_over_unwrapped_ratio_is_finite_and_positive(quick_run):
    results = quick_run["results"]
    for section in ("get_session", "append_event", "turn"):
        for row in results[section]:
            label = f"{section} {row['backend']} {row['size']} {row['health']}"
            assert row["rounds"] >= 3, label
            for key in ("ratio", "ratio_q1", "ratio_q3", "wrapped_ns", "unwrapped_ns"):
                assert _finite_positive(row[key]), f"{label} {key}={row[key]!r}"
    for row in results["append_event"]:
        assert set(row["ratio_by_kind"]) == {
            "user text",
            "function_call",
            "function_response",
            "model text",
        }
        assert all(_finite_positive(v) for v in row["ratio_by_kind"].values()), row


def test_decorator_cpu_comes_from_metered_rounds_kept_out_of_the_wall_clock_ratio(quick_run):
    for section in ("get_session", "append_event", "turn"):
        for row in quick_run["results"][section]:
            label = f"{section} {row['backend']} {row['size']} {row['health']}"
            assert row["metered_rounds"] >= 1, label
            assert isinstance(row["own_cpu_ns"], float) and row["own_cpu_ns"] >= 0, label
            assert _finite_positive(row["cpu_ratio"]), label


def test_metered_rounds_are_separate_from_timed_rounds() -> None:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        from metering import METER_EVERY, is_metered_round, with_metered_rounds
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    for wall in (1, 3, 5, 30):
        total = with_metered_rounds(wall)
        # Whatever index the recorded rounds start at, enough are left for the wall clock.
        for start in range(METER_EVERY):
            indices = range(start, start + total)
            assert sum(not is_metered_round(i) for i in indices) >= wall
    # Every event kind of the four-event append cycle gets metered.
    assert {i % 4 for i in range(40) if is_metered_round(i)} == {0, 1, 2, 3}


def test_broken_histories_are_timed_with_their_synthetic_results_in_the_view(quick_run):
    # The harness refuses to time a view without the expected synthetic events;
    # here we only check it reported some for every broken history.
    for section in ("get_session", "append_event", "turn"):
        for row in quick_run["results"][section]:
            assert (row["synthetic"] > 0) == (row["health"] == "broken"), row


def test_core_growth_ratios_are_computed_for_every_shape_and_measured_path(quick_run):
    core = quick_run["results"]["core"]
    shapes = {r["shape"] for r in core}
    assert len(shapes) == 6
    for row in core:
        assert row["events"] > 0 and row["parts"] > 0, row
        # The view and analyze paths are linear, so the quick run always measures them.
        assert _finite_positive(row["view_s"]) and _finite_positive(row["analyze_s"]), row
        if row["size"] > min(r["size"] for r in core):
            for path in ("view", "analyze", "incremental"):
                if f"{path}_s" in row:
                    assert _finite_positive(row[f"{path}_growth"]), (row["shape"], path)
                else:
                    assert row[f"{path}_skipped"].startswith("skipped: projected"), row


def test_memory_ratios_are_computed_for_healthy_and_broken_views(quick_run):
    memory = quick_run["results"]["memory"]
    assert {(r["backend"], r["health"]) for r in memory} == {
        (b, h) for b in ("inmemory", "sqlite") for h in HEALTHS
    }
    for row in memory:
        assert _finite_positive(row["peak_ratio"]), row
        assert _finite_positive(row["retained_ratio"]), row
        assert isinstance(row["cache_entry"], int), row


def test_results_file_names_the_machine_the_command_and_every_target(quick_run):
    markdown = quick_run["markdown"]
    for needle in (
        "benchmarks/run.py --quick",
        "| CPU |",
        "| PostgreSQL |",
        "| Redis |",
        "| google-adk |",
        "### Targets",
        "### get_session",
        "### append_event",
        "### Pure core",
        "### Memory",
        "### Whole turns",
        "### Request pass",
        "PairingPlugin ≤ 1.02×",
    ):
        assert needle in markdown, needle
    assert "not measured" not in markdown.split("### Targets")[1].split("###")[0]


def test_request_pass_ratio_and_plugin_cpu_are_computed_for_every_request(quick_run):
    rows = quick_run["results"]["request"]
    assert sorted((r["size"], r["health"]) for r in rows) == sorted(
        (s, h) for s in QUICK_REQUEST_SIZES for h in (*HEALTHS, "dropped")
    )
    for row in rows:
        assert row["rounds"] >= 3, row
        for key in ("ratio", "ratio_q1", "ratio_q3", "cpu_ratio", "wrapped_ns", "unwrapped_ns"):
            assert _finite_positive(row[key]), (row["health"], key, row[key])
        # The broken request is the decorator's view: its placeholders are in it.
        assert (row["synthetic"] > 0) == (row["health"] == "broken"), row


def test_the_benchmark_database_is_dropped_after_the_run(quick_run):
    assert not asyncio.run(_database_exists(quick_run["database"]))


async def test_turn_suite_refuses_to_time_a_runner_that_sent_no_placeholders() -> None:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        from turns import TextReplyModel, _checked_turn, _runner
        from workloads import APP, USER, realistic_history, unanswered_call_count
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    from google.adk.sessions.in_memory_session_service import InMemorySessionService

    from adk_pairing import PairingSessionService

    store = InMemorySessionService()
    session = await store.create_session(app_name=APP, user_id=USER)
    events = realistic_history(8, broken=True)
    for event in events:
        await store.append_event(session, event)
    expected = unanswered_call_count(events)
    assert expected == 1
    model = TextReplyModel()
    paired = _runner(model, PairingSessionService(store))
    await _checked_turn(paired, model, session.id, expected, "paired")
    with pytest.raises(RuntimeError, match="sent 0 placeholders, not 1"):
        await _checked_turn(_runner(model, store), model, session.id, expected, "bare")


def test_the_irregular_sessions_benchmark_computes_every_ratio() -> None:
    """benchmarks/irregular_sessions.py end to end, tiny: the histories are what they claim."""
    done = subprocess.run(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "irregular_sessions.py"),
            *("--events", "40", "--rounds", "3", "--json"),
        ],
        check=True,
        capture_output=True,
        text=True,
        timeout=300,
    )
    rows = {row["history"]: row for row in json.loads(done.stdout)}
    assert {name: (row["irregular"], row["unanswered"] > 0) for name, row in rows.items()} == {
        "regular, 1% unanswered": (False, True),
        "irregular, unanswered": (True, True),
        "irregular, all answered": (True, False),
    }
    for row in rows.values():
        for key in ("get_session wrapped/unwrapped", "append_event wrapped/unwrapped"):
            assert all(_finite_positive(value) for value in row[key]), (key, row)


# -- the turn-cost suite (benchmarks/turn_cost.py) -------------------------------


def _benchmarks_module(name: str):
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        return __import__(name)
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))


@pytest.fixture(scope="module")
def turn_cost_run(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """``run.py --sections turn_cost --quick`` once (a few seconds): its rows and Markdown."""
    out = tmp_path_factory.mktemp("turn_cost")
    completed = subprocess.run(
        [
            sys.executable,
            "benchmarks/run.py",
            *("--sections", "turn_cost", "--quick"),
            *("--output", str(out / "RESULTS.md"), "--json", str(out / "results.json")),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert completed.returncode == 0, completed.stdout[-3000:] + completed.stderr[-3000:]
    return {
        "rows": json.loads((out / "results.json").read_text())["turn_cost"],
        "markdown": (out / "RESULTS.md").read_text(),
    }


def test_turn_cost_measures_every_shape_size_and_setup(turn_cost_run):
    turn_cost = _benchmarks_module("turn_cost")
    rows = turn_cost_run["rows"]
    assert sorted((r["shape"], r["size"]) for r in rows) == sorted(
        (shape, size) for shape in turn_cost.TURN_SHAPES for size in (32, 64)
    )
    for row in rows:
        assert "skipped" not in row, row
        assert set(row["cpu_ns"]) == set(turn_cost.SETUPS), row["shape"]
        assert set(row["setups"]) == set(turn_cost.SETUPS) - {"unwrapped"}, row["shape"]
        assert row["events"] > 0
    markdown = turn_cost_run["markdown"]
    for title in ("### Turn cost (Runner", "### Turn cost: CPU added per turn"):
        assert title in markdown, title
    assert "| adk-pairing source |" in markdown
    ratio_table = markdown.split("### Turn cost (Runner")[1].split("###")[0]
    assert ratio_table.count("\n| inmemory |") == len(rows)
    growth_table = markdown.split("### Turn cost: CPU added per turn")[1].split("<!--")[0]
    # One line per history and setup other than unwrapped, each with its growth 32 -> 64.
    assert growth_table.count("\n| inmemory |") == len(turn_cost.TURN_SHAPES) * 2
    assert growth_table.count("(32 → 64)") + growth_table.count("n/a (adds nothing") == 2 * len(
        turn_cost.TURN_SHAPES
    )


def test_turn_cost_ratios_come_from_turns_of_the_same_rounds(turn_cost_run):
    timing = _benchmarks_module("timing")
    for row in turn_cost_run["rows"]:
        unwrapped = row["cpu_ns"]["unwrapped"]
        assert len(unwrapped) == row["turns"] >= 2, row["shape"]
        assert all(isinstance(ns, int) and ns > 0 for ns in unwrapped)
        for setup, figures in row["setups"].items():
            timed = row["cpu_ns"][setup]
            assert len(timed) == len(unwrapped), (row["shape"], setup)
            per_round = [t / u for t, u in zip(timed, unwrapped, strict=True)]
            assert figures["ratio"] == pytest.approx(timing.quartiles(per_round)[1])
            added = [float(t - u) for t, u in zip(timed, unwrapped, strict=True)]
            assert figures["added_ns"] == pytest.approx(timing.quartiles(added)[1])
            assert _finite_positive(figures["ratio"]), (row["shape"], setup)


def test_turn_cost_requests_of_both_repairing_setups_pass_the_check(turn_cost_run):
    # Every request valid and every stored call in it, with both pieces and the plugin alone.
    for row in turn_cost_run["rows"]:
        for setup in ("wrapped_plugin", "plugin_only"):
            assert row["checks"][setup] == "ok", (row["shape"], row["size"], setup)


def test_turn_cost_request_check_counts_unpaired_calls_and_results() -> None:
    from google.genai import types

    turn_cost = _benchmarks_module("turn_cost")

    def content(role: str, *parts: types.Part) -> types.Content:
        return types.Content(role=role, parts=list(parts))

    call = types.Part(function_call=types.FunctionCall(id="c1", name="t", args={}))
    result = types.Part(function_response=types.FunctionResponse(id="c1", name="t", response={}))
    text = types.Part(text="hi")
    check = turn_cost.request_pairing
    assert check([content("user", text), content("model", call), content("user", result)]) == (
        turn_cost.RequestPairing(calls=1, unpaired=0)
    )
    assert check([content("model", call), content("user", text)]).unpaired == 1
    assert check([content("model", call)]).unpaired == 1
    assert check([content("user", text), content("user", result)]).unpaired == 1
