"""A runner plugin that checks, at every step of a turn, the view the runner holds.

`PairingSessionService` updates the runner's view incrementally on every
append. If that bookkeeping drifted, the runner would build requests from a
view that differs from what ``get_session`` returns, and the difference would
only show in some later turn. The probe compares the two at each callback.
"""

from __future__ import annotations

from typing import Any

from google.adk.agents.invocation_context import InvocationContext
from google.adk.plugins.base_plugin import BasePlugin
from google.adk.sessions.base_session_service import BaseSessionService


class ViewConsistencyProbe(BasePlugin):
    """Records every point where the runner's session differs from a fresh read."""

    def __init__(self) -> None:
        super().__init__(name="view_consistency_probe")
        self._service: BaseSessionService | None = None
        self.checks: list[str] = []
        self.mismatches: list[str] = []

    def bind(self, service: BaseSessionService) -> None:
        """Reads fresh sessions through `service` (the runner's own service)."""
        self._service = service

    async def _compare(self, context: InvocationContext, where: str) -> None:
        from .scenario import event_signature

        assert self._service is not None, "bind() the probe to the runner's service"
        held = context.session
        fresh = await self._service.get_session(
            app_name=held.app_name, user_id=held.user_id, session_id=held.id
        )
        assert fresh is not None
        self.checks.append(where)
        held_events = [event_signature(e) for e in held.events]
        fresh_events = [event_signature(e) for e in fresh.events]
        if held_events != fresh_events:
            self.mismatches.append(
                f"{where} (check #{len(self.checks)}): "
                f"held {held_events!r} != fresh {fresh_events!r}"
            )

    async def before_model_callback(self, *, callback_context: Any, llm_request: Any) -> None:
        await self._compare(callback_context._invocation_context, "before_model")

    async def after_model_callback(self, *, callback_context: Any, llm_response: Any) -> None:
        await self._compare(callback_context._invocation_context, "after_model")

    async def before_tool_callback(self, *, tool: Any, tool_args: Any, tool_context: Any) -> None:
        await self._compare(tool_context._invocation_context, f"before_tool:{tool.name}")

    async def after_tool_callback(
        self, *, tool: Any, tool_args: Any, tool_context: Any, result: Any
    ) -> None:
        await self._compare(tool_context._invocation_context, f"after_tool:{tool.name}")

    async def on_event_callback(self, *, invocation_context: InvocationContext, event: Any) -> None:
        await self._compare(invocation_context, "on_event")

    async def after_run_callback(self, *, invocation_context: InvocationContext) -> None:
        await self._compare(invocation_context, "after_run")
