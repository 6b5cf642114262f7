"""A mapping that keeps only its most recently put entries: the one bound on what is remembered.

The decorator's analysis cache and the plugin's memory of requests with nothing
to restore both grow with the sessions served; each keeps at most ``size``
entries and drops the one put longest ago first. Pure: no I/O, no locks (every
caller runs on one event loop).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Hashable, Iterator
from typing import Generic, TypeVar

_K = TypeVar("_K", bound=Hashable)
_V = TypeVar("_V")


class Lru(Generic[_K, _V]):
    """At most `size` entries; putting one makes it the newest. Size 0 keeps nothing."""

    __slots__ = ("_entries", "size")

    def __init__(self, size: int) -> None:
        self.size = size
        self._entries: OrderedDict[_K, _V] = OrderedDict()

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: object) -> bool:
        return key in self._entries

    def get(self, key: _K) -> _V | None:
        """The entry of `key`, or None; reading does not make it newer."""
        return self._entries.get(key)

    def put(self, key: _K, value: _V) -> None:
        """Keeps `value` under `key` as the newest entry, dropping the oldest beyond `size`."""
        self._entries[key] = value
        self._entries.move_to_end(key)
        while len(self._entries) > self.size:
            self._entries.popitem(last=False)

    def discard(self, key: _K) -> None:
        self._entries.pop(key, None)

    def values(self) -> Iterator[_V]:
        return iter(self._entries.values())
