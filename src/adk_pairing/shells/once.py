"""What the shells log once per process: one bounded memory of the keys already logged.

The decorator logs each missing call and each session served as stored once,
the plugin each call it could not restore, the agent pass each agent it
placed its final pass in: one memory for all of them, bounded like every
other (`adk_pairing.core.lru.Lru`), so a process serving many sessions keeps
at most its ``limit`` keys and may log a key again once it was dropped.
"""

from __future__ import annotations

from ..core.lru import Lru

__all__ = ["OncePerKey", "logged_once"]


class OncePerKey:
    """Remembers which keys were already seen, within a memory bound."""

    def __init__(self, limit: int = 100_000) -> None:
        self._seen: Lru[tuple[str, ...], None] = Lru(limit)

    def __len__(self) -> int:
        return len(self._seen)

    def first_time(self, key: tuple[str, ...]) -> bool:
        """Whether `key` is new; it is remembered from now on."""
        if key in self._seen:
            return False
        self._seen.put(key, None)
        return True


#: The keys the shells have already logged in this process.
logged_once = OncePerKey()
