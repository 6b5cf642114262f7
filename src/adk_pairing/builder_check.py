"""The view checked against ADK's own builder: its request is never worse than the store's.

On a regular history the view's rules (`adk_pairing.analysis`) say where
ADK's request builder puts each placeholder: right after its call, answering
it. On an irregular one (`PairingLedger.irregular`: a call id twice in one
event, an id reused while its earlier call is open, text and a call in one
``Part``, an id-less response nothing is waiting for) the builder's own
rearranging decides, and it is keyed on ids in ways no event-level rule can
follow on every release:

* ``merge_function_response_events`` (2.13.0
  ``flows/llm_flows/tools/_rearranger.py:29``) merges the response events of
  one call event *keyed by response id*; id-less responses share the key
  ``None``, so when a placeholder event and a stored event both answer one call
  event, every id-less response after the first collapses into one slot;
* the call event takes only the *last* response event per id
  (``response_indices[-1]``, same file :181), so a placeholder can displace
  an event the stored request used, or be displaced;
* ``drop_orphaned_function_calls`` (>= 2.10) keeps a call whose id any
  response carries, so a placeholder can bring back a call the stored request
  left out, next to a reused id it now collides with;
* the latest-response rearranger cuts the history at the call event that owns
  the trailing response, found by id, differently before and after 2.11.

So for an irregular history, and for a call event whose placeholders no
placement keeps in call order (`PairingLedger.placement`), the view is
checked against the very builder that will run: `view_never_worse` builds the
request contents from the stored events and from the view with the installed
ADK's ``_get_contents``, once for every agent that authored an event, and
compares them rule by rule. If some agent's request would keep a rule from
the store and break it from the view, that view is not served: the caller
(`adk_pairing.repair`) keeps the placeholders of every call event it can
prove, and serves only the others as stored. A regular history is never
checked: it costs nothing.

The rules, each on the contents ADK's builder made, through the real
converters:

* Anthropic's (`anthropic_holds`): `adk_pairing.checks.anthropic_violations`,
  which converts with ADK's own Anthropic converter, pairing and unique
  ``tool_use`` ids both. The ``anthropic`` package is an optional extra, and
  that converter needs it. Without it the check applies `pairing_holds` (the
  pairing rule on the blocks `adk_pairing.wire.anthropic_block` says the
  converter makes, id-less calls paired as `adk_pairing.wire.IdlessCalls`
  says) and `unique_call_ids_on_the_wire` (two calls sharing an id share one
  ``tool_use`` id, fallback or not); `tests/unit/test_builder_check.py` holds the two
  equal to the real converter's verdict on seeded histories.
* Gemini's (`adk_pairing.checks.gemini_violations`): calls answered in call
  order and count; Gemini receives the contents as they are.
* OpenAI's (`openai_holds`), on ADK's LiteLlm conversion, once the app has
  imported ``litellm`` (only apps that send through LiteLlm do).

Like the core, this module never awaits and touches no store. ADK's builder
logs what it drops; while it runs here those records are filtered out, since
ADK logs them again when it builds the real request.
"""

from __future__ import annotations

import contextlib
import contextvars
import inspect
import logging
import sys
from collections.abc import Callable, Iterator, Sequence
from functools import cache

from google.adk.events.event import Event
from google.genai import types

from .checks import gemini_violations
from .wire import MODEL_ROLES, Block, IdlessCalls, anthropic_block, branches_shown_to

_quiet = contextvars.ContextVar("adk_pairing_quiet_builder", default=False)

#: ADK's request builder for one agent in one branch: events -> request contents.
Builder = Callable[[list[Event], str, str | None], list[types.Content]]


class _WhileProving(logging.Filter):
    """Drops ADK's builder log records while `view_never_worse` runs the builder."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not _quiet.get()


@cache
def _request_builder() -> Builder:
    """ADK's ``_get_contents``, called as the contents request processor calls it.

    Ids are kept as stored where the release can (``preserve_function_call_ids``,
    1.39 and later); 1.20 strips only ADK's own ``adk-`` ids
    (``flows/llm_flows/functions.py:68``), from both lists alike. Its loggers
    (``contents``; ``_tool_call_rearranger`` in 2.9; ``context._contents`` and
    ``tools._rearranger`` from 2.10) get the filter that quiets them here.
    """
    from google.adk.flows.llm_flows import contents

    get_contents = contents._get_contents
    quiet = _WhileProving()
    prefix = "google_adk.google.adk.flows.llm_flows"
    for name in list(logging.Logger.manager.loggerDict):
        if name.startswith(prefix):
            logging.getLogger(name).addFilter(quiet)
    if "preserve_function_call_ids" in inspect.signature(get_contents).parameters:
        return lambda events, agent, branch: get_contents(
            branch, events, agent, preserve_function_call_ids=True
        )
    return lambda events, agent, branch: get_contents(branch, events, agent)


@contextlib.contextmanager
def _quiet_builder() -> Iterator[None]:
    token = _quiet.set(True)
    try:
        yield
    finally:
        _quiet.reset(token)


@contextlib.contextmanager
def builder_logs_quieted() -> Iterator[None]:
    """ADK's builder log records dropped while a build that is not the request's own runs.

    For `PairingPlugin`, which runs ADK's contents processor again: ADK has
    logged what it dropped when it built the real request.
    """
    _request_builder()  # puts the filter on ADK's builder loggers
    with _quiet_builder():
        yield


def _agents(events: Sequence[Event]) -> list[tuple[str, str | None]]:
    """Every author but the user with each branch it wrote in and every branch above it.

    Each builds its own request there: ADK shows an agent what its branch shows
    (`adk_pairing.wire.branch_shows`), and a workflow can run one agent in
    several branches. An agent above a branch (the root after a
    ``ParallelAgent``, at no branch) is shown the events of every branch
    below it at once, so its request pairs calls of sibling branches that no
    branch's own request holds together (`adk_pairing.wire.branches_shown_to`).
    In order of first appearance.
    """
    return list(
        dict.fromkeys(
            (e.author, shown)
            for e in events
            if e.author and e.author != "user"
            for shown in (branches_shown_to(e.branch) if e.branch else [None])
        )
    )


def _verdicts(
    build: Builder, events: Sequence[Event], agent: str, branch: str | None
) -> tuple[bool, ...] | None:
    """Which rules ADK's request for `agent` in `branch` keeps; None when the builder raises.

    Anthropic's rule (`anthropic_holds`), Gemini's (call order and counts,
    `adk_pairing.checks.gemini_violations`, which reads the contents as sent)
    and OpenAI's (`openai_holds`).
    """
    try:
        contents = build(list(events), agent, branch)
    except Exception:
        return None
    return anthropic_holds(contents), not gemini_violations(contents), openai_holds(contents)


def _worse(view: tuple[bool, ...] | None, stored: tuple[bool, ...] | None) -> bool:
    if stored is None:
        return False
    if view is None:
        return True
    return any(kept and not still for kept, still in zip(stored, view, strict=True))


#: (agent, branch) -> the rules ADK's request from the stored events keeps (`_verdicts`).
StoredVerdicts = dict[tuple[str, str | None], tuple[bool, ...] | None]


def view_never_worse(
    stored: Sequence[Event],
    view: Sequence[Event],
    *,
    stored_verdicts: StoredVerdicts | None = None,
) -> bool:
    """Whether every agent's request from `view` keeps every rule the one from `stored` keeps.

    Builds each request with the installed ADK's own builder (see the module
    docstring); O(history) per agent, so it is meant for irregular histories.
    A caller that checks several views of one stored history passes one
    `stored_verdicts` dict to all the calls: the stored requests are then
    built once.
    """
    try:
        build = _request_builder()
    except Exception:  # a release without ADK's builder where we look: nothing is proven
        return False
    if stored_verdicts is None:
        stored_verdicts = {}
    with _quiet_builder():
        for agent, branch in _agents(view):
            key = (agent, branch)
            if key not in stored_verdicts:
                stored_verdicts[key] = _verdicts(build, stored, agent, branch)
            if _worse(_verdicts(build, view, agent, branch), stored_verdicts[key]):
                return False
    return True


def anthropic_holds(contents: Sequence[types.Content]) -> bool:
    """Anthropic's rule on `contents`: ADK's real converter when installed, else `pairing_holds`.

    The ``anthropic`` package is an optional extra, and ADK's converter needs
    it; without it the rule is `pairing_holds` on the contents, with the ids
    ADK's converter would send (`unique_call_ids_on_the_wire`).
    """
    if _anthropic_installed():
        from .checks import anthropic_violations

        return not anthropic_violations(contents)
    return pairing_holds(contents) and unique_call_ids_on_the_wire(contents)


def openai_holds(contents: Sequence[types.Content]) -> bool:
    """OpenAI's rule on ADK's LiteLlm conversion of `contents`, once the app imported litellm.

    Only an app that sends through ``LiteLlm`` has imported ``litellm``; for
    any other the rule does not apply, and importing litellm here would cost
    seconds on the request path. True when it does not apply.
    """
    if "litellm" not in sys.modules:
        return True
    from .checks import openai_chat_violations

    try:
        return not openai_chat_violations(contents)
    except Exception:  # the conversion itself failed: nothing to compare
        return True


@cache
def _anthropic_installed() -> bool:
    try:
        import google.adk.models.anthropic_llm  # noqa: F401
    except ImportError:
        return False
    return True


# -- the pairing rule on request contents -------------------------------------


def pairing_holds(contents: Sequence[types.Content]) -> bool:
    """Whether the request `contents` pair every tool call with its result (module docstring)."""
    # (is the model, [(block, id)]) per non-empty turn, consecutive roles merged.
    turns: list[tuple[bool, list[tuple[Block, str]]]] = []
    idless = IdlessCalls()  # the id-less calls of the last model turn
    fresh = 0
    previous_is_model: bool | None = None
    for content in contents:
        is_model = content.role in MODEL_ROLES
        if is_model and previous_is_model is False:
            idless.start_turn()
        blocks: list[tuple[Block, str]] = []
        empty_text = False
        for part in content.parts or ():
            kind = anthropic_block(part)
            if kind is Block.DROPPED:
                continue
            if kind is Block.NOTHING:
                empty_text = True
                continue
            ident = ""
            if kind is Block.CALL:
                call = part.function_call
                ident = call.id or ""  # type: ignore[union-attr]
                if not ident:
                    fresh += 1
                    ident = f"\0{fresh}"
                    idless.open(call.name, ident)  # type: ignore[union-attr]
            elif kind is Block.RESULT:
                response = part.function_response
                ident = response.id or ""  # type: ignore[union-attr]
                if not ident:
                    match = idless.answer(response.name)  # type: ignore[union-attr]
                    if match is not None:
                        ident = match
                    else:
                        fresh += 1
                        ident = f"\0{fresh}"
            blocks.append((kind, ident))
        if content.parts:
            previous_is_model = is_model
        if not blocks and empty_text and not is_model:
            blocks.append((Block.OTHER, ""))
        if not blocks:
            continue
        if turns and turns[-1][0] == is_model:
            turns[-1][1].extend(blocks)
        else:
            turns.append((is_model, blocks))
    for position, (is_model, blocks) in enumerate(turns):
        if is_model:
            calls = [ident for kind, ident in blocks if kind is Block.CALL]
            if not calls:
                continue
            following = turns[position + 1][1] if position + 1 < len(turns) else []
            leading: set[str] = set()
            for kind, ident in following:
                if kind is not Block.RESULT:
                    break
                leading.add(ident)
            if not leading.issuperset(calls):
                return False
        else:
            previous = turns[position - 1] if position else None
            allowed = (
                {ident for kind, ident in previous[1] if kind is Block.CALL}
                if previous is not None and previous[0]
                else set()
            )
            if any(kind is Block.RESULT and ident not in allowed for kind, ident in blocks):
                return False
    return True


def unique_call_ids_on_the_wire(contents: Sequence[types.Content]) -> bool:
    """Whether no two calls ADK's Anthropic converter sends share a ``tool_use`` id.

    The converter keeps ids of ``[a-zA-Z0-9_-]+`` and maps every other id to a
    fallback of its own, one per distinct id, so two calls sharing an id share
    it on the wire whatever its characters; id-less calls are paired by
    position (`pairing_holds`), not by id. Two distinct ids that ADK's id
    sanitizer sends as one fallback (`adk_pairing.wire.may_collide_with_a_fallback`)
    take that sanitizer, which comes with the ``anthropic`` package: without
    it there is none on the wire.
    """
    seen: set[str] = set()
    for content in contents:
        # Every role: ADK's builder can merge a malformed event's calls into a
        # user turn, and the converter sends them as tool_use blocks there too.
        for part in content.parts or ():
            call = part.function_call
            if call is None or not call.id or anthropic_block(part) is not Block.CALL:
                continue
            if call.id in seen:
                return False
            seen.add(call.id)
    return True
