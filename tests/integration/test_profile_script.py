"""`make profile` runs: every profiled path executes and its tree shows the decorator.

Not a timed test. It guards the script RESULTS.md cites for its profiles
against rotting when the code it profiles changes.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

# The benchmark scripts are our tooling: which google-adk runs them changes nothing they prove.
pytestmark = pytest.mark.version_independent

ROOT = Path(__file__).resolve().parents[2]
PATHS = ("cold-read", "append", "wide-turn", "pending-run")


def test_profile_script_profiles_every_path_behind_a_missed_target(tmp_path: Path) -> None:
    completed = subprocess.run(
        [
            sys.executable,
            "benchmarks/profile_misses.py",
            "--size",
            "200",
            # Coarser than the default: every sample is kept in memory while the
            # collector is paused, so on a busy machine the default interval grew
            # the run to gigabytes and several minutes.
            "--interval",
            "0.001",
            "--html",
            str(tmp_path),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        # A guard against a hang, not a timing: on a slow or busy machine the
        # four profiled paths have taken over 300 s.
        timeout=1200,
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    sections = completed.stdout.split("\n== ")[1:]
    assert [section.split(":")[0] for section in sections] == list(PATHS)
    for section in sections:
        # Each tree is rooted in the decorator's own frames, not only in the store's.
        assert "PairingSessionService" in section or "PairingLedger" in section, section
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(f"{p}.html" for p in PATHS)
