"""The scan's fast path: only the fields the analysis reads, from stored JSON.

Rebuilding a stored event with ADK's ``Event`` model validates every field of
every part; the analysis (`adk_pairing.ledger`) reads a handful, declared
once in `adk_pairing.ledger_reads`. `light_event` builds objects with exactly
those attributes (their slots are the declaration) from an event's
JSON document, and the core's own `analyze` and `is_rewind` run on them
unchanged (objects built with pydantic's ``model_construct`` cost more than
validating: ``benchmarks/RESULTS.md``).

Which rows can matter. An event without a call or a result part changes no
call's status: the ledger settles calls only on response parts and opens them
only on call parts, under every builder's traits (the older builders' hazard
that text events end changes what a view withholds, never a status). A rewind
can annul a stretch reaching back to events of either kind. So the stores are
asked only for rows whose stored text names a call, a result or a rewind
(`CALL_MARKERS`, in the snake_case names ADK writes and the camelCase aliases
its models also accept), and a session holding a rewind is always re-read in
full.

Exact findings. A session the fast path finds broken (or that holds a
rewind, or a row it cannot read) is *confirmed*: read again through ADK's own
row models, and only what that finds is reported (`needs_confirmation`). A
row ADK would reject in a session the fast path finds healthy is never
validated, so it counts as readable: the one difference from ``--strict``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from ..ledger import analyze, is_rewind
from ..ledger_reads import (
    ACTIONS_FIELDS,
    CALL_FIELDS,
    CONTENT_FIELDS,
    EVENT_FIELDS,
    PART_FIELDS,
)


def _json_parser() -> Callable[[str | bytes], Any]:
    """orjson's parser when installed (litellm brings it; faster), else json's."""
    try:
        import orjson
    except ImportError:  # pragma: no cover - depends on the environment
        return json.loads
    return orjson.loads


parse_json = _json_parser()

#: Substrings of a stored event that mark it as one the analysis needs: a call,
#: a result or a rewind, in both spellings ADK's models read.
CALL_MARKERS = (
    "function_call",
    "functionCall",
    "function_response",
    "functionResponse",
    "rewind_before_invocation_id",
    "rewindBeforeInvocationId",
)
CALL_MARKER_BYTES = tuple(marker.encode() for marker in CALL_MARKERS)


class UnexpectedShape(ValueError):
    """A stored event whose fields are not the types ADK writes."""


class LightCall:
    """A function call or response: the id and name the ledger pairs by."""

    __slots__ = CALL_FIELDS

    def __init__(self, call_id: str | None, name: str | None) -> None:
        self.id = call_id
        self.name = name


class LightPart:
    __slots__ = PART_FIELDS

    def __init__(
        self,
        function_call: LightCall | None,
        function_response: LightCall | None,
        text: str | None,
        thought: bool | None,
        thought_signature: object,
    ) -> None:
        self.function_call = function_call
        self.function_response = function_response
        self.text = text
        self.thought = thought
        self.thought_signature = thought_signature


class LightContent:
    __slots__ = CONTENT_FIELDS

    def __init__(self, parts: list[LightPart] | None) -> None:
        self.parts = parts


class LightActions:
    __slots__ = ACTIONS_FIELDS

    def __init__(self, rewind_before_invocation_id: str | None) -> None:
        self.rewind_before_invocation_id = rewind_before_invocation_id


class LightEvent:
    """The fields of an ``Event`` the analysis reads, and nothing else."""

    __slots__ = EVENT_FIELDS

    def __init__(
        self,
        content: LightContent | None,
        author: str,
        invocation_id: str,
        long_running_tool_ids: set[str] | None,
        actions: LightActions,
        branch: str | None = None,
        isolation_scope: str | None = None,
    ) -> None:
        self.content = content
        self.author = author
        self.invocation_id = invocation_id
        self.long_running_tool_ids = long_running_tool_ids
        self.actions = actions
        self.branch = branch
        self.isolation_scope = isolation_scope


_NO_REWIND = LightActions(None)


def _refuse(what: str, value: Any, expected: str) -> UnexpectedShape:
    return UnexpectedShape(f"{what} is {type(value).__name__}, not {expected}")


def _light_call(data: Any, what: str) -> LightCall:
    if type(data) is not dict:
        raise _refuse(what, data, "an object")
    call_id = data.get("id")
    name = data.get("name")
    if not (call_id is None or type(call_id) is str) or not (name is None or type(name) is str):
        raise UnexpectedShape(f"{what} has an id or name that is not a string")
    return LightCall(call_id, name)


def _light_part(data: Any) -> LightPart:
    if type(data) is not dict:
        raise _refuse("a part", data, "an object")
    get = data.get
    call = get("function_call")
    if call is None:
        call = get("functionCall")
    response = get("function_response")
    if response is None:
        response = get("functionResponse")
    text = get("text")
    if not (text is None or type(text) is str):
        raise _refuse("text", text, "a string")
    signature = get("thought_signature")
    if signature is None:
        signature = get("thoughtSignature")
    return LightPart(
        None if call is None else _light_call(call, "function_call"),
        None if response is None else _light_call(response, "function_response"),
        text,
        get("thought"),
        signature,
    )


_NO_PARTS = LightContent(None)


def light_event(data: Any, invocation_id: str | None = None) -> LightEvent:
    """The analysed fields of one stored event (`data`: its JSON, parsed).

    `invocation_id` overrides the document's, for layouts that keep it in a
    column (``DatabaseSessionService`` schema 1's ``to_event`` does the same).
    Raises `UnexpectedShape` for a field of a type ADK never writes. Written
    for speed (it runs once per fetched row): plain `dict` checks, as JSON
    parsers build, rather than `Mapping`.
    """
    if type(data) is not dict:
        raise _refuse("an event", data, "an object")
    get = data.get
    content = get("content")
    light_content: LightContent | None = None
    if content is not None:
        if type(content) is not dict:
            raise _refuse("content", content, "an object")
        parts = content.get("parts")
        if parts is None:
            light_content = _NO_PARTS
        elif type(parts) is list:
            light_content = LightContent([_light_part(part) for part in parts])
        else:
            raise _refuse("content.parts", parts, "a list")
    actions = get("actions")
    rewind = None
    if actions is not None:
        if type(actions) is not dict:
            raise _refuse("actions", actions, "an object")
        rewind = actions.get("rewind_before_invocation_id")
        if rewind is None:
            rewind = actions.get("rewindBeforeInvocationId")
        if not (rewind is None or type(rewind) is str):
            raise _refuse("actions.rewind_before_invocation_id", rewind, "a string")
    held_open = get("long_running_tool_ids")
    if held_open is None:
        held_open = get("longRunningToolIds")
        if held_open is not None and type(held_open) is not list:
            raise _refuse("long_running_tool_ids", held_open, "a list")
    elif type(held_open) is not list:
        raise _refuse("long_running_tool_ids", held_open, "a list")
    if invocation_id is None:
        invocation_id = get("invocation_id")
        if invocation_id is None:
            invocation_id = get("invocationId")
        if not (invocation_id is None or type(invocation_id) is str):
            raise _refuse("invocation_id", invocation_id, "a string")
    author = get("author")
    if not (author is None or type(author) is str):
        raise _refuse("author", author, "a string")
    branch = get("branch")
    if not (branch is None or type(branch) is str):
        raise _refuse("branch", branch, "a string")
    scope = get("isolation_scope")
    if scope is None:
        scope = get("isolationScope")
    if not (scope is None or type(scope) is str):
        raise _refuse("isolation_scope", scope, "a string")
    return LightEvent(
        light_content,
        author or "",
        invocation_id or "",
        set(held_open) if held_open else None,
        _NO_REWIND if rewind is None else LightActions(rewind),
        branch,
        scope,
    )


def needs_confirmation(events: Sequence[LightEvent]) -> bool:
    """Whether a session read by the fast path must be read again in full.

    True when the core's analysis finds a call unanswered, or a rewind is
    present (the fast path skips the rows that would say where its annulled
    stretch starts).
    """
    return any(is_rewind(event) for event in events) or not analyze(events).is_healthy
