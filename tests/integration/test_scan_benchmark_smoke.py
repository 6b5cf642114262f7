"""benchmarks/scan_scale.py runs end to end at tiny scale and computes every figure.

Not a timed test: nothing here depends on how fast anything is. The script
seeds PostgreSQL and two SQLite stores, runs the real console script in the
default mode, with ``--strict`` and on the get_session path (it exits non-zero
when any count differs from the seed's), and must report every ratio and the
projection as finite, positive numbers, then drop its databases.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from tests.adk_features import HAS_SESSION_SCHEMAS, requires
from tests.conftest import PG_HOST, PG_PORT, PG_USER, require_server

# Benchmark tooling: the scan itself is tested on every release in test_scan_direct.py.
pytestmark = [pytest.mark.postgres, pytest.mark.version_independent]

ROOT = Path(__file__).resolve().parents[2]
RATIOS = (
    "default_vs_loop_wall",
    "default_vs_loop_scanning",
    "default_vs_loop_cpu",
    "strict_vs_loop_wall",
    "strict_vs_loop_cpu",
    "default_vs_floor",
)


def _finite_positive(value: object) -> bool:
    return isinstance(value, float) and math.isfinite(value) and value > 0


async def _databases_like(prefix: str) -> list[str]:
    import asyncpg

    connection = await asyncpg.connect(
        host=PG_HOST, port=PG_PORT, user=PG_USER, database="postgres"
    )
    try:
        rows = await connection.fetch(
            "SELECT datname FROM pg_database WHERE datname LIKE $1", f"{prefix}%"
        )
        return [row[0] for row in rows]
    finally:
        await connection.close()


@requires(HAS_SESSION_SCHEMAS, "sessions.schemas (the direct reader of DatabaseSessionService)")
def test_scan_benchmark_reports_every_ratio_and_drops_its_databases(tmp_path: Path) -> None:
    import asyncio

    require_server("PostgreSQL", PG_HOST, PG_PORT)
    database = f"adk_pairing_scan_smoke_{uuid.uuid4().hex[:8]}"
    out = tmp_path / "figures.json"
    done = subprocess.run(
        [sys.executable, "benchmarks/scan_scale.py", "--db", database,
         "--sessions", "30", "--events", "6", "--sqlite-sessions", "20",
         "--big-sessions", "45", "--big-events", "5", "--issue-sessions", "40",
         "--issue-events", "6", "--million-sessions", "50", "--million-events", "5",
         "--million-sample", "3", "--scan-jobs", "1", "2", "--json", str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=900, check=False,
    )  # fmt: skip
    leftovers = asyncio.run(_databases_like(database))
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert leftovers == []
    figures = json.loads(out.read_text())
    for store in ("postgres", "database", "sqlite"):
        for name in RATIOS:
            assert _finite_positive(figures[store][name]), (store, name, figures[store][name])
        runs = figures[store]["runs"]
        assert set(runs) == {"default", "strict", "get_session"}
        for run in runs.values():
            assert run["peak_rss_mb"] > 0 and run["cpu"] > 0
    assert figures["postgres"]["runs"]["default"]["sessions"] == 30
    assert figures["database"]["runs"]["get_session"]["sessions"] == 20
    scale = figures["scale"]
    assert scale["big_sessions"] == 45
    assert _finite_positive(scale["projected_million_seconds"])
    assert math.isfinite(scale["projected_million_rss_mb"])
    assert "projection for 1,000,000 sessions" in done.stdout
    # Issue 25's form: one comparison per broken share, and the large store.
    assert set(figures["issue"]) == {"1%", "7%"}
    for share in figures["issue"].values():
        assert share["sessions"] == 40
        for name in ("wall_ratio", "cpu_ratio", "scanning_vs_floor", "wall_vs_floor"):
            assert _finite_positive(share[name]), (name, share[name])
        assert set(share["load_average"]) == {"floor", "scan", "scan --jobs 2", "loop", "end"}
        by_jobs = share["scanning_vs_floor_by_jobs"]
        assert set(by_jobs) == {"1", "2"}
        assert all(_finite_positive(r) for rs in by_jobs.values() for r in rs), by_jobs
    large = figures["million"]
    assert large["sessions"] == 50 and large["loop_how"].startswith("projected from shard 0/3")
    assert _finite_positive(large["wall_ratio"]) and _finite_positive(large["cpu_ratio"])
