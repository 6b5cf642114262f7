"""Calls kept pending while the child run they started waits.

A sub-agent with ``mode="single_turn"`` or ``"task"`` runs as a tool in the
caller's session, in a branch whose segment ``<agent>@<call id>`` names the
call (`adk_pairing.wire.held_by_child`, the way ADK's
``should_pause_invocation`` finds it). While an event of that run holds an
unanswered call ADK holds open, every call its branch names waits on it; once
that call is answered the caller's call is missing again unless something
answers it (not every release does, docs/branches-and-agent-tools.md). A task
run (its events scoped to the call, ``isolation_scope == <call id>``) holds
its call open until the task ends.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import NamedTuple

from ..wire import held_by_child
from .calls import CallCopies, TrackedCall
from .reads import EventRead


class WaitedOn(NamedTuple):
    """A call kept pending by held-open calls in its child runs."""

    caller: TrackedCall
    #: How many such held-open calls keep it waiting.
    waiting: int
    #: Whether ADK held it open before any did.
    held_before: bool


class ChildRuns:
    """Which open calls wait on held-open calls of their child runs."""

    __slots__ = ("held_now", "holding", "waited_on")

    def __init__(self) -> None:
        #: A held-open call in a child run -> the calls whose runs it is in (by its id()).
        self.holding: dict[int, list[TrackedCall]] = {}
        #: A call kept waiting, by its id().
        self.waited_on: dict[int, WaitedOn] = {}
        #: While the ledger observes one event: the open calls whose status it changed.
        self.held_now: list[TrackedCall] | None = None

    def hold_callers(
        self,
        event: EventRead,
        branch: str,
        opened: Mapping[int, TrackedCall],
        newest_open_call_with: Callable[[str], TrackedCall | None],
    ) -> None:
        """Makes pending the open calls whose child run `event` (in `branch`) holds open."""
        waiting = [call for call in opened.values() if call.held_open]
        scope = getattr(event, "isolation_scope", None)
        for run_id in held_by_child(branch, scope, bool(waiting)):
            caller = newest_open_call_with(run_id)
            if caller is None or caller.answered:
                continue
            was_pending = caller.held_open
            if run_id == scope:
                # A task's call: open until the task ends, whatever waits.
                self.waited_on.pop(id(caller), None)
            elif waiting:
                known = self.waited_on.get(id(caller))
                if known is None:
                    known = WaitedOn(caller, 0, was_pending)
                self.waited_on[id(caller)] = known._replace(waiting=known.waiting + len(waiting))
                for call in waiting:
                    self.holding.setdefault(id(call), []).append(caller)
            caller.held_open = True
            if not was_pending and self.held_now is not None:
                self.held_now.append(caller)

    def stop_holding(self, call: TrackedCall) -> None:
        """`call`, answered, no longer keeps the calls whose child runs it was in waiting."""
        for caller in self.holding.pop(id(call), ()):
            known = self.waited_on.get(id(caller))
            if known is None:
                continue  # a task's call
            if known.waiting > 1:
                self.waited_on[id(caller)] = known._replace(waiting=known.waiting - 1)
                continue
            del self.waited_on[id(caller)]
            if not known.held_before and not caller.answered:
                caller.held_open = False
                if self.held_now is not None:
                    self.held_now.append(caller)

    def copy(self, copies: CallCopies) -> ChildRuns:
        """A copy over the calls `copies` makes; a held-open call not copied yet is dropped.

        Only an unanswered held-open call can still stop holding, and the
        ledger copies those (its open calls) first.
        """
        copied = ChildRuns()
        for key, callers in self.holding.items():
            held = copies.made.get(key)
            if held is not None:
                copied.holding[id(held)] = [copies.of(caller) for caller in callers]
        for caller, waiting, held_before in self.waited_on.values():
            copy = copies.of(caller)
            copied.waited_on[id(copy)] = WaitedOn(copy, waiting, held_before)
        return copied
