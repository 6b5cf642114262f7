"""Repaired requests keep provider prompt caches warm: the same bytes for the same history.

A provider caches a prompt by its prefix. A repair that changed from one
read to the next (an id, a text, an order) would miss the cache on every
turn of every repaired session, forever. For the decorator, the plugin and
both, over a SQLite store holding an interrupted call
(`support.request_bytes`):

* the first request of a turn, converted with ADK's Anthropic converter, is
  the same bytes in this process and in a fresh one over a copy of the same
  store (no cache of ours, warm or cold, changes a byte);
* after one more turn, the earlier request is a byte prefix of the new one:
  every message sent before is sent again, unchanged, in the same place.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sys
from pathlib import Path

from .support.request_bytes import SETUPS, first_requests, seed

ROOT = Path(__file__).parents[2]


async def test_requests_are_the_same_bytes_across_processes_and_grow_by_appending(
    tmp_path: Path,
) -> None:
    seeded = tmp_path / "seeded.db"
    await seed(str(seeded))
    for setup in SETUPS:
        shutil.copy(seeded, tmp_path / f"{setup}-here.db")
        shutil.copy(seeded, tmp_path / f"{setup}-there.db")
    # A fresh process, over its own copy of the same store: the first turn only.
    # It starts first, so its imports overlap the turns run here.
    environment = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)]),
        "PYTHONHASHSEED": "1313",  # a fixed hash order; this process's is random
    }
    child = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "tests.integration.support.request_bytes",
        "are you there?",
        *(f"{setup}={tmp_path / f'{setup}-there.db'}" for setup in SETUPS),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        cwd=ROOT,
        env=environment,
    )
    here: dict[str, list[list[str]]] = {}
    try:
        for setup in SETUPS:
            path = str(tmp_path / f"{setup}-here.db")
            here[setup] = await first_requests(path, setup, ["are you there?", "and now?"])
    except BaseException:
        child.kill()
        await child.wait()
        raise

    for setup, (first, second) in here.items():
        # The interrupted call reaches the model, answered, in both turns.
        assert any('"id":"call_S"' in message for message in first), (setup, first)
        assert second[: len(first)] == first, f"{setup}: turn 2 does not extend turn 1"
        assert "".join(second).startswith("".join(first))

    out, err = await child.communicate()
    assert child.returncode == 0, err.decode()[-3000:]
    there = json.loads(out.decode().strip().splitlines()[-1])
    assert there == {setup: turns[:1] for setup, turns in here.items()}
