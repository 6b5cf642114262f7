"""`make profile` runs: every profiled path executes and its tree shows our code.

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
DECORATOR_PATHS = ("cold-read", "append", "wide-turn", "pending-run")
PLUGIN_PATHS = ("plugin-wide-turn", "plugin-idless-turn", "plugin-reused-ids")


def _profiled(paths: tuple[str, ...], size: int, interval: str, html: Path) -> list[str]:
    """The script's sections for `paths`, each one profiled tree."""
    completed = subprocess.run(
        [
            sys.executable,
            "benchmarks/profile_misses.py",
            *paths,
            "--size",
            str(size),
            "--interval",
            interval,
            "--html",
            str(html),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        # A guard against a hang, not a timing: on a slow or busy machine the
        # four decorator paths have taken over 300 s.
        timeout=1200,
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    sections = completed.stdout.split("\n== ")[1:]
    assert [section.split(":")[0] for section in sections] == list(paths)
    assert sorted(p.name for p in html.iterdir()) == sorted(f"{p}.html" for p in paths)
    return sections


def test_profile_script_profiles_every_path_behind_a_missed_target(tmp_path: Path) -> None:
    # Coarser than the default: every sample is kept in memory while the collector
    # is paused, so on a busy machine the default interval grew the run to
    # gigabytes and several minutes.
    for section in _profiled(DECORATOR_PATHS, 200, "0.001", tmp_path / "decorator"):
        # Each tree is rooted in the decorator's own frames, not only in the store's.
        assert "PairingSessionService" in section or "PairingLedger" in section, section
    # Large enough that the plugin's passes, not only its entry, are sampled.
    for section in _profiled(PLUGIN_PATHS, 1_000, "0.0002", tmp_path / "plugin"):
        assert "adk_pairing/shells/plugin.py" in section, section
        assert "adk_pairing/passes/" in section, section
