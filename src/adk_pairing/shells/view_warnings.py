"""What a read logs about the view it serves, once per session or call.

A call the view answers with a placeholder because it has no recorded result
(a missing call) is logged once, with its session (`log_missing_calls`). A view
served as stored, because the history's placeholders would make ADK's
request worse, is logged once per session, under one name for its shape
(`shape_name`, by `SHAPE_LABEL_PRIORITY`), with what helps on the installed
ADK (`log_unproven`). Pending calls stay quiet: ADK holds them open.
"""

from __future__ import annotations

import logging
from collections.abc import Collection

from google.adk.sessions.session import Session

from ..adk import adk_drops_unanswered_calls
from ..core.ownership import session_label
from ..core.repair import Fallback, RepairedHistory
from ..ledger import CallStatus, TrackedCall
from ..wire import IrregularShape
from .once import logged_once

__all__ = ["SHAPE_LABEL_PRIORITY", "log_missing_calls", "log_unproven", "shape_name"]

logger = logging.getLogger("adk_pairing")


def log_missing_calls(stored: Session, answered: list[TrackedCall]) -> None:
    """Logs once each missing call of `answered`, the calls the view answers."""
    for call in answered:
        if call.status is not CallStatus.MISSING:
            continue
        call_event = stored.events[call.event_index]
        key = (stored.app_name, stored.user_id, stored.id, call_event.id, call.key)
        if logged_once.first_time(key):
            logger.warning(
                "Unanswered function call %s (%s) has no recorded result; the view "
                "answers it with a placeholder. %s",
                call.call_id or "<no id>",
                call.name,
                session_label(stored),
            )


#: Which shape names a view served as stored when its history has several: the
#: first of them here, so a metric's ``shape`` label and the log say one name.
#: Written out rather than read from `IrregularShape`'s order, so reordering or
#: extending the enum cannot move a label silently; tests/unit/test_service_shell.py
#: fails until a new shape has its place.
SHAPE_LABEL_PRIORITY: tuple[IrregularShape, ...] = (
    IrregularShape.CALL_ID_TWICE_IN_ONE_EVENT,
    IrregularShape.CALL_ID_REUSED_WHILE_OPEN,
    IrregularShape.CALL_ID_LIKE_A_FALLBACK,
    IrregularShape.NOT_SENT_AS_A_CALL,
    IrregularShape.IDLESS_CALLS_IN_ONE_EVENT,
    IrregularShape.IDLESS_RESULT_NOTHING_WAITS_FOR,
    IrregularShape.ID_ANSWERED_TWICE_IN_ONE_EVENT,
    IrregularShape.CALLS_AND_RESULTS_IN_ONE_EVENT,
    IrregularShape.CALL_BESIDE_AN_ADK_REQUEST,
    IrregularShape.ANSWER_FROM_ANOTHER_AGENT,
    IrregularShape.RESULT_BEFORE_ITS_CALL,
    IrregularShape.RESULT_UNDER_ANOTHER_NAME,
    IrregularShape.RESULT_AFTER_ANOTHER_BRANCHS_CALLS,
    IrregularShape.CALL_ID_ANSWERED_OUT_OF_SIGHT,
)
_SHAPE_RANK = {shape: rank for rank, shape in enumerate(SHAPE_LABEL_PRIORITY)}


def shape_name(fallback: Fallback, shapes: Collection[IrregularShape]) -> str:
    """The one name a view served as stored has: its first shape by `SHAPE_LABEL_PRIORITY`.

    A shape missing from the priority comes after the listed ones, by name, so a
    label never depends on a set's order.
    """
    if fallback is Fallback.UNPROVEN and shapes:
        unranked = len(_SHAPE_RANK)
        return min(shapes, key=lambda shape: (_SHAPE_RANK.get(shape, unranked), shape.value)).value
    return fallback.value


def _fallback_advice() -> str:
    """What helps a view served as stored, on the installed ADK.

    Where ADK's builder drops the unanswered calls (`adk_drops_unanswered_calls`),
    the model no longer sees them, and `PairingPlugin` puts them back
    (`adk_pairing.passes.restore_pass`); elsewhere ADK sends them unanswered and
    the plugin answers them.
    """
    if adk_drops_unanswered_calls():
        return (
            "This ADK's request builder drops those calls, so the model is not told it "
            "made them unless PairingPlugin is in the runner's plugins: it puts them back, "
            "answered, in the request."
        )
    return (
        "This ADK sends those calls unanswered, which Anthropic, Bedrock and OpenAI-style "
        "providers reject, unless PairingPlugin is in the runner's plugins: it answers "
        "them in the request."
    )


def log_unproven(stored: Session, shape: str, repaired: RepairedHistory) -> None:
    if not logged_once.first_time((stored.app_name, stored.user_id, stored.id, "unproven")):
        return
    logger.warning(
        "Session %s has unanswered function calls in a history whose placeholders would "
        "make ADK's request worse (shape=%s: ADK's request builder pairs them by call id "
        "or merges them out of call order); the view serves %d of its %d call events "
        "with unanswered calls as stored. %s",
        session_label(stored),
        shape,
        len(repaired.served_as_stored),
        len(repaired.served_as_stored) + len(repaired.slots),
        _fallback_advice(),
    )
