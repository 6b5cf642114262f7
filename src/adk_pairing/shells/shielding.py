"""Calls that run to their end when their caller is cancelled: a SQLite store's reads and appends.

Why (`adk_pairing.shells.service`'s docstring): cancelled while it awaits a query, a
call of ``DatabaseSessionService`` over SQLite leaves the database locked.
`ShieldedCalls` runs such a call as a task of its own, keeps it until it
ends, and makes later reads and appends of the same session wait for the
append still running.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable
from typing import Any, TypeVar

from ..core.analysis_cache import SessionKey
from ..core.ownership import key_label

__all__ = ["ShieldedCalls"]

logger = logging.getLogger("adk_pairing")

_T = TypeVar("_T")


class ShieldedCalls:
    """The shielded calls of one decorator still running, and each session's last append."""

    def __init__(self) -> None:
        # Shielded calls run on when their caller is cancelled; kept here so
        # the event loop does not drop them and `drain` can wait for them.
        self.in_flight: set[asyncio.Future[Any]] = set()
        # The last shielded append of each session still running: the next
        # read or append of that session waits for it.
        self._writes: dict[SessionKey, asyncio.Future[Any]] = {}

    async def drain(self) -> None:
        """Waits for every call still running, those whose callers were cancelled too."""
        while self.in_flight:
            # A call that fails was logged already (`_report_abandoned`).
            await asyncio.gather(*self.in_flight, return_exceptions=True)

    async def after_writes_to(self, key: SessionKey) -> None:
        """Waits until no shielded append of session `key` is running.

        Cancelling the wait leaves the append running. The loop re-checks
        because another caller may have started an append while this one waited.
        """
        while (write := self._writes.get(key)) is not None and not write.done():
            await asyncio.wait([write])

    async def run(self, call: Awaitable[_T], *, writes_to: SessionKey | None = None) -> _T:
        """Awaits `call`, which runs to its end even if the caller is cancelled.

        `writes_to` names the session an append writes, which later reads and
        appends of it wait for.
        """
        task = asyncio.ensure_future(call)
        self.in_flight.add(task)
        task.add_done_callback(self.in_flight.discard)
        if writes_to is not None:
            self._writes[writes_to] = task
            task.add_done_callback(lambda done: self._write_finished(writes_to, done))
        try:
            return await asyncio.shield(task)
        except asyncio.CancelledError:
            if task.done():
                _report_abandoned(task, writes_to)
            else:
                task.add_done_callback(lambda done: _report_abandoned(done, writes_to))
            raise

    def _write_finished(self, key: SessionKey, write: asyncio.Future[Any]) -> None:
        if self._writes.get(key) is write:
            del self._writes[key]


def _report_abandoned(call: asyncio.Future[Any], writes_to: SessionKey | None) -> None:
    """Logs how a shielded call whose caller was cancelled ended, if it failed.

    Nobody is left to raise to; retrieving the exception here also keeps
    asyncio from logging it as never retrieved. A failed append matters (its
    event is not stored), a failed read does not.
    """
    if writes_to is None:
        if not call.cancelled():
            call.exception()
        return
    if call.cancelled():
        logger.error(
            "adk-pairing: an append to session %s whose caller was "
            "cancelled was itself cancelled before it finished (was the event loop shut down "
            "before close()?); the event may not be stored",
            key_label(writes_to),
        )
    elif (error := call.exception()) is not None:
        logger.error(
            "adk-pairing: an append to session %s whose caller was "
            "cancelled failed; the event is not stored",
            key_label(writes_to),
            exc_info=error,
        )
