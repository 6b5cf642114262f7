"""One normal form of a request, as the provider rules read it (`adk_pairing.rules.provider_rules`).

**The normal form** (`WireRequest`) is a request as ADK's Anthropic converter
sends it: the turns in order, each a list of blocks (a call, a result, or
anything else, `wire.Block`), empty turns left out; `WireRequest.turns` merges
consecutive turns of one role, as the Messages API does. It is made from the
converter's own messages (`request_of_anthropic_messages`) or, where the
``anthropic`` package is not installed, from the contents, each part
classified as the converter would send it (`request_of_contents`,
`wire.anthropic_block`). Either way every call and result first gets an id
of its own (`with_positional_ids`): an id the converter keeps stays, any
other id is mapped one-to-one to a fresh one, each id-less call gets a fresh
one, and an id-less result takes the id of the call it answers on the wire
(`wire.IdlessCalls`: an unanswered id-less call of the model turn right
before it, the same name first, else the oldest). So a verdict never rests
on what a release's id sanitizer does to missing or refused ids.

The one turn boundary every reader of a request uses is here too
(`starts_a_model_turn`). Pure, like the rules: it imports no converter.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from google.genai import types

from ..wire import Block, IdlessCalls, anthropic_block, anthropic_keeps_id, is_model_role

__all__ = [
    "POSITIONAL_ID_PREFIX",
    "PositionalIds",
    "Turn",
    "WireBlock",
    "WireRequest",
    "call_ids_as_sent",
    "field_of",
    "request_of_anthropic_messages",
    "request_of_contents",
    "starts_a_model_turn",
    "with_positional_ids",
]

#: How the ids `with_positional_ids` hands out start; every converter keeps them.
POSITIONAL_ID_PREFIX = "adkpairingcheck_"


def field_of(item: Any, name: str) -> Any:
    """`name` of a converter's message or block, whether a dict or an object."""
    return item.get(name) if isinstance(item, dict) else getattr(item, name, None)


# -- turns -----------------------------------------------------------------------


def starts_a_model_turn(is_model: bool, previous_is_model: bool | None) -> bool:
    """Whether a content starts a model turn: a model content right after a user-side one.

    `previous_is_model` is None before the first content. The one turn
    boundary every reader of a request uses: there the id-less calls of the
    model turn before stop waiting for answers (`wire.IdlessCalls`), a segment
    of the request pass begins, and a new run of model turns starts.
    """
    return is_model and previous_is_model is False


# -- the normal form -------------------------------------------------------------


class PositionalIds:
    """Hands out ids no content of a request uses, and remembers what each stands for."""

    def __init__(self, contents: Sequence[types.Content]) -> None:
        self.taken = {
            ident
            for content in contents
            for part in content.parts or ()
            for ident in (
                part.function_call.id if part.function_call else None,
                part.function_response.id if part.function_response else None,
            )
            if ident
        }
        self.labels: dict[str, str] = {}
        self._aliases: dict[str, str] = {}
        self._next = 0

    def fresh(self, label: str) -> str:
        while f"{POSITIONAL_ID_PREFIX}{self._next}" in self.taken:
            self._next += 1
        ident = f"{POSITIONAL_ID_PREFIX}{self._next}"
        self._next += 1
        self.taken.add(ident)
        self.labels[ident] = label
        return ident

    def alias(self, original: str) -> str:
        """`original` itself when every converter keeps it, else its own fresh id."""
        if anthropic_keeps_id(original) and not original.startswith(POSITIONAL_ID_PREFIX):
            return original
        if original not in self._aliases:
            self._aliases[original] = self.fresh(original)
        return self._aliases[original]

    def label(self, ident: Any) -> Any:
        """The stored id `ident` stands for, or ``<no id: name>`` for an id-less call."""
        return self.labels.get(ident, ident)


def with_positional_ids(
    contents: Sequence[types.Content],
) -> tuple[list[types.Content], PositionalIds]:
    """Copies of `contents` whose sent calls and results carry ids every converter keeps.

    Only parts the converter sends as a call or a result (`wire.anthropic_block`)
    are given ids: a call it drops (beside text, say) waits for no answer.
    """
    ids = PositionalIds(contents)
    idless = IdlessCalls()  # the id-less calls of the last model turn
    previous_is_model: bool | None = None
    rewritten: list[types.Content] = []
    for content in contents:
        is_model = is_model_role(content.role)
        if starts_a_model_turn(is_model, previous_is_model):
            idless.start_turn()
        if content.parts:
            previous_is_model = is_model
        parts: list[types.Part] = []
        for part in content.parts or ():
            kind = anthropic_block(part)
            if kind is Block.CALL:
                call = part.function_call
                assert call is not None
                if call.id:
                    new_id = ids.alias(call.id)
                else:
                    new_id = ids.fresh(f"<no id: {call.name}>")
                    idless.open(call.name, new_id)
                part = _carrying(part, "function_call", new_id)
            elif kind is Block.RESULT:
                response = part.function_response
                assert response is not None
                new_id = (
                    ids.alias(response.id)
                    if response.id
                    else idless.answer(response.name) or ids.fresh(f"<no id: {response.name}>")
                )
                part = _carrying(part, "function_response", new_id)
            parts.append(part)
        rewritten.append(content.model_copy(update={"parts": parts}))
    return rewritten, ids


def _carrying(part: types.Part, field: str, new_id: str) -> types.Part:
    """A copy of `part` whose call or result (`field`) carries `new_id`."""
    named = getattr(part, field)
    return part.model_copy(update={field: named.model_copy(update={"id": new_id})})


class WireBlock(NamedTuple):
    """One block of a turn as sent: a call, a result or anything else, with its id."""

    kind: Block
    #: The call's or the result's id (positional, `with_positional_ids`); "" for others.
    key: str


@dataclass(frozen=True, slots=True)
class Turn:
    """One message as sent, or several of one role merged (`WireRequest.turns`)."""

    is_model: bool
    blocks: tuple[WireBlock, ...]

    @property
    def role(self) -> str:
        return "assistant" if self.is_model else "user"


def _no_sent_ids() -> Sequence[tuple[str | None, str]] | None:
    return None


@dataclass(frozen=True)
class WireRequest:
    """A request in the normal form the rules read (module docstring)."""

    #: The turns as sent, each non-empty, consecutive ones of one role not merged.
    messages: tuple[Turn, ...]
    #: What each positional id stands for.
    ids: PositionalIds
    #: Reads each sent ``tool_use``'s (stored call id, id the converter sends), in
    #: order; None when they cannot be matched (no converter, or one this module
    #: does not know). Called once, when a rule first asks (`sent_ids`).
    read_sent_ids: Callable[[], Sequence[tuple[str | None, str]] | None] = _no_sent_ids

    @functools.cached_property
    def turns(self) -> tuple[Turn, ...]:
        """The turns with consecutive ones of one role merged, as the Messages API does."""
        merged: list[Turn] = []
        for turn in self.messages:
            if merged and merged[-1].is_model == turn.is_model:
                merged[-1] = Turn(turn.is_model, merged[-1].blocks + turn.blocks)
            else:
                merged.append(turn)
        return tuple(merged)

    @functools.cached_property
    def sent_ids(self) -> Sequence[tuple[str | None, str]] | None:
        return self.read_sent_ids()


def request_of_contents(contents: Sequence[types.Content]) -> WireRequest:
    """`contents` in the normal form, each part as ADK's Anthropic converter would send it.

    For where that converter is not installed: `wire.anthropic_block` is held
    equal to it on every release (tests/unit/test_wire_rules.py). A user turn
    of empty text alone still goes out (the converter sends ``"."``).
    """
    rewritten, ids = with_positional_ids(contents)
    messages: list[Turn] = []
    for content in rewritten:
        is_model = is_model_role(content.role)
        blocks: list[WireBlock] = []
        empty_text = False
        for part in content.parts or ():
            kind = anthropic_block(part)
            if kind is Block.DROPPED:
                continue
            if kind is Block.NOTHING:
                empty_text = True
                continue
            key = ""
            if kind is Block.CALL:
                key = part.function_call.id or ""  # type: ignore[union-attr]
            elif kind is Block.RESULT:
                key = part.function_response.id or ""  # type: ignore[union-attr]
            blocks.append(WireBlock(kind, key))
        if not blocks and empty_text and not is_model:
            blocks.append(WireBlock(Block.OTHER, ""))
        if blocks:
            messages.append(Turn(is_model, tuple(blocks)))
    return WireRequest(tuple(messages), ids)


_BLOCK_OF_TYPE = {"tool_use": Block.CALL, "tool_result": Block.RESULT}


def request_of_anthropic_messages(
    messages: Iterable[Mapping[str, Any]],
    ids: PositionalIds,
    read_sent_ids: Callable[[], Sequence[tuple[str | None, str]] | None] = _no_sent_ids,
) -> WireRequest:
    """The messages ADK's Anthropic converter built (of `with_positional_ids`), normalised."""
    turns: list[Turn] = []
    for message in messages:
        blocks = []
        for block in message["content"]:
            kind = _BLOCK_OF_TYPE.get(field_of(block, "type"), Block.OTHER)
            if kind is Block.CALL:
                key = field_of(block, "id")
            elif kind is Block.RESULT:
                key = field_of(block, "tool_use_id")
            else:
                key = ""
            blocks.append(WireBlock(kind, key))
        if blocks:
            turns.append(Turn(message["role"] == "assistant", tuple(blocks)))
    return WireRequest(tuple(turns), ids, read_sent_ids)


def call_ids_as_sent(
    contents: Sequence[types.Content], messages: Iterable[Mapping[str, Any]]
) -> list[tuple[str | None, str]] | None:
    """Each sent call's stored id beside the ``tool_use`` id ADK's converter gave it.

    `messages` are the converter's, of `contents` as stored. The ``tool_use``
    blocks are matched to the parts sent as calls (`wire.anthropic_block`) by
    order; None when the counts differ (a converter this module does not know).
    """
    sent = [
        field_of(block, "id")
        for message in messages
        for block in message["content"]
        if field_of(block, "type") == "tool_use"
    ]
    stored = [
        part.function_call.id
        for content in contents
        for part in content.parts or ()
        if part.function_call is not None and anthropic_block(part) is Block.CALL
    ]
    if len(sent) != len(stored):
        return None
    return list(zip(stored, sent, strict=True))
