"""The view checked against ADK's own builder: its request is never worse than the store's.

On a regular history the view's rules (`adk_pairing.ledger`) say where
ADK's request builder puts each placeholder: right after its call, answering
it. On an irregular one (`PairingLedger.irregular`: a call id twice in one
event, an id reused while its earlier call is open, text and a call in one
``Part``, an id-less response nothing is waiting for) the builder's own
rearranging decides, and it is keyed on ids in ways no event-level rule can
follow on every release:

* ``merge_function_response_events`` merges the response events of one call
  event *keyed by response id*; id-less responses share the key ``None``, so
  when a placeholder event and a stored event both answer one call event,
  every id-less response after the first collapses into one slot;
* the call event takes only the *last* response event per id
  (``response_indices[-1]``), so a placeholder can displace an event the
  stored request used, or be displaced;
* ``drop_orphaned_function_calls``, where the builder has it, keeps a call whose id any
  response carries, so a placeholder can bring back a call the stored request
  left out, next to a reused id it now collides with;
* the latest-response rearranger cuts the history at the call event that owns
  the trailing response, found by id, in a way that differs by release.

So for an irregular history, and for a call event whose placeholders no
placement keeps in call order (`PairingLedger.placement`), the view is
checked against the very builder that will run: `view_never_worse` builds the
request contents from the stored events and from the view with the installed
ADK's ``_get_contents``, once for every agent that authored an event, and
compares them rule by rule. If some agent's request would keep a rule from
the store and break it from the view, that view is not served: the caller
(`adk_pairing.core.repair`) keeps the placeholders of every call event it can
prove, and serves only the others as stored. A regular history is never
checked: it costs nothing.

The rules are the registry's (`adk_pairing.rules.provider_rules.PROVIDER_RULES`,
those with ``view_checked``), each on the contents ADK's builder made,
through the real converters (`rule_holds`):

* Anthropic's, with ADK's own Anthropic converter. The ``anthropic`` package
  is an optional extra, and that converter needs it; without it the rule
  reads the contents as `adk_pairing.wire.anthropic_block` says the converter
  would send them (`request_form.request_of_contents`), and
  tests/unit/test_builder_check.py holds that equal to the real converter's
  verdict on seeded histories.
* Gemini's, on the contents as they are.
* OpenAI's, on ADK's LiteLlm conversion, once the app has imported
  ``litellm`` (only apps that send through LiteLlm do).

This module never awaits and touches no store. ADK's builder
logs what it drops; while it runs here those records are filtered out, since
ADK logs them again when it builds the real request (`adk.builder.builder_logs_quieted`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence

from google.adk.events.event import Event
from google.genai import types

from ..adk import anthropic_converter_installed, litellm_imported
from ..adk.builder import builder_logs_quieted, quieted_contents_builder
from ..wire import MODEL_ROLES, branches_shown_to
from .checks import violations_of
from .provider_rules import PROVIDER_RULES, ProviderRule, Reading
from .request_form import request_of_contents

#: ADK's request builder for one agent in one branch: events -> request contents.
Builder = Callable[[list[Event], str, str | None], list[types.Content]]


def _request_builder() -> Builder:
    """ADK's builder, quieted while a view is proven (`quieted_contents_builder`)."""
    return quieted_contents_builder()


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


def calls_carried(contents: Sequence[types.Content]) -> Counter[tuple[str | None, str]]:
    """The function calls of `contents`' model turns by id and name, with their copies.

    A call ADK's merge left in a user-side content is not carried: no provider
    takes it there, and the request pass drops it.
    """
    return Counter(
        (part.function_call.id or None, part.function_call.name or "")
        for content in contents
        if content.role in MODEL_ROLES
        for part in content.parts or ()
        if part.function_call is not None
    )


def carries_every_call(stored: Sequence[types.Content], view: Sequence[types.Content]) -> bool:
    """Whether contents ADK built from a view carry every call those from the store carry.

    ADK's pairing of reused and id-less ids moves and drops whole events
    (module docstring), so a placeholder can displace an event holding calls:
    the model would no longer be told it made them, as the stored request
    told it. A call missing from what ADK built cannot come back; the request
    pass answers or removes what remains. By id and name: where one id is
    reused for one function, ADK keeps one copy or another as its pairing
    goes, and a view that brings back a call the store cut may keep another
    copy of a call it still shows.
    """
    return calls_carried(stored).keys() <= calls_carried(view).keys()


def results_carried(contents: Sequence[types.Content]) -> Counter[tuple[str | None, str]]:
    """The function results of `contents` by id and name, with their copies, wherever ADK put them.

    A view must not lose one the stored request carries: ADK pairs results by
    id alone, so a placeholder for a reused id can push a tool's real result
    out of the request, the call still there and answered by another
    function's result (the model would never see what its tool returned).
    Copies count: where one id answers several calls, ADK can keep one result
    and drop the others.
    """
    return Counter(
        (part.function_response.id or None, part.function_response.name or "")
        for content in contents
        for part in content.parts or ()
        if part.function_response is not None
    )


#: Which rules ADK's request keeps (`_verdicts`), the calls and the results it carries.
Verdicts = tuple[
    tuple[bool, ...], frozenset[tuple[str | None, str]], Counter[tuple[str | None, str]]
]


def _verdicts(
    build: Builder, events: Sequence[Event], agent: str, branch: str | None
) -> Verdicts | None:
    """Which rules ADK's request for `agent` in `branch` keeps; None when the builder raises.

    One verdict per rule of `VIEW_RULES`, in its order (`rule_holds`), then
    whether the request holds any contents: ADK's older rearrangers can merge
    a history down to nothing, which keeps every rule and loses every turn.
    With them, the calls the request carries (`carries_every_call`) and the
    results (`results_carried`).
    """
    try:
        contents = build(list(events), agent, branch)
    except Exception:
        return None
    rules = (*(rule_holds(rule, contents) for rule in VIEW_RULES), bool(contents))
    return rules, frozenset(calls_carried(contents)), results_carried(contents)


def _worse(view: Verdicts | None, stored: Verdicts | None) -> bool:
    if stored is None:
        return False
    if view is None:
        return True
    (stored_rules, stored_calls, stored_results), (view_rules, view_calls, view_results) = (
        stored,
        view,
    )
    if any(kept and not still for kept, still in zip(stored_rules, view_rules, strict=True)):
        return True
    return not (stored_calls <= view_calls and stored_results <= view_results)


#: The provider rules a view is held to (`ProviderRule.view_checked`).
VIEW_RULES = tuple(rule for rule in PROVIDER_RULES.values() if rule.view_checked)

#: (agent, branch) -> the rules ADK's request from the stored events keeps (`_verdicts`).
StoredVerdicts = dict[tuple[str, str | None], Verdicts | None]


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
    with builder_logs_quieted():
        for agent, branch in _agents(view):
            key = (agent, branch)
            if key not in stored_verdicts:
                stored_verdicts[key] = _verdicts(build, stored, agent, branch)
            if _worse(_verdicts(build, view, agent, branch), stored_verdicts[key]):
                return False
    return True


def rule_holds(rule: ProviderRule, contents: Sequence[types.Content]) -> bool:
    """Whether `contents` keep `rule`, read as its provider would receive them.

    Anthropic's converter needs the optional ``anthropic`` package; without it
    the rule reads the contents as `adk_pairing.wire` says that converter
    would send them, where no id sanitizer can merge two ids into one.
    OpenAI's rule applies once the app has imported ``litellm`` (only an app
    that sends through LiteLlm has, and importing it here would cost seconds
    on the request path); it holds when it does not apply, or when the
    conversion itself fails (nothing to compare).
    """
    if rule.reads is Reading.ANTHROPIC_MESSAGES and not anthropic_converter_installed():
        return not rule.violations(request_of_contents(contents))
    if rule.reads is Reading.OPENAI_CHAT_MESSAGES:
        if not litellm_imported():
            return True
        try:
            return not violations_of(rule, contents)
        except Exception:
            return True
    return not violations_of(rule, contents)
