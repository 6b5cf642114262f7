"""The one bound on what the decorator and the plugin remember (`adk_pairing.core.lru.Lru`)."""

from __future__ import annotations

import pytest

from adk_pairing.core.lru import Lru

pytestmark = pytest.mark.version_independent


def test_the_entry_put_longest_ago_goes_first() -> None:
    entries: Lru[str, int] = Lru(2)
    entries.put("a", 1)
    entries.put("b", 2)
    entries.put("a", 3)  # putting again makes it the newest
    entries.put("c", 4)
    assert "b" not in entries
    assert (entries.get("a"), entries.get("c"), len(entries)) == (3, 4, 2)


def test_reading_does_not_make_an_entry_newer() -> None:
    entries: Lru[str, int] = Lru(2)
    entries.put("a", 1)
    entries.put("b", 2)
    assert entries.get("a") == 1 and "a" in entries
    entries.put("c", 3)
    assert "a" not in entries and list(entries.values()) == [2, 3]


def test_size_zero_keeps_nothing_and_discard_forgets() -> None:
    nothing: Lru[str, int] = Lru(0)
    nothing.put("a", 1)
    assert len(nothing) == 0 and nothing.get("a") is None
    entries: Lru[str, int] = Lru(3)
    entries.put("a", 1)
    entries.discard("a")
    entries.discard("absent")
    assert len(entries) == 0
