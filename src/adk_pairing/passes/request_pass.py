"""The request pass: a model request made to satisfy every provider's pairing rules.

This module is pure: it reads a list of ``google.genai.types.Content`` (what
ADK's request builder put in ``LlmRequest.contents``) and returns a list that
every provider accepts, with a report of what it changed. It never awaits,
logs or touches a session; `adk_pairing.shells.plugin` is the shell that calls it.

Why a pass on the request as well as the repaired view: ADK's request builder
and its converters break pairing in cases the session layer cannot see (an
older open call's result cut off by the rearranger, a call sharing its part
with text, a reused or missing id, two turns of one role). docs/request-pass.md
lists them.

The request guarantee: five rules that hold on every list this module
returns, and that imply every provider rule of
`adk_pairing.rules.provider_rules.PROVIDER_RULES` (tests/unit/test_request_guarantee.py):

1. every function call in a model content is answered by the leading
   ``function_response`` parts of the content right after it, one each, in call
   order, under the call's function name (Gemini pairs by name; a result that
   answers a call by id under another name is renamed); a call nothing
   answers gets the view's placeholder (`adk_pairing.core.placeholders.placeholder_part`),
   *pending* when ADK holds the call open and *missing* otherwise, exactly as
   in the view;
2. no ``function_response`` appears anywhere else: one that answers nothing is
   dropped (as ADK's own ``drop_orphaned_function_responses`` does), one that
   answers an earlier call is moved to that call's answer;
3. no two adjacent contents have the same role (``model``/``assistant`` on one
   side, everything else on the user side, as both converters map roles);
   adjacent ones are merged, the answers to the preceding model content first;
4. call ids are unique within the request: a later call reusing an id is
   renamed ``<id>-<n>`` together with its answer; with ``fill_missing_ids``,
   a call whose id some provider that pairs by id cannot take
   (`adk_pairing.passes.request_scan.refused_when_paired_by_id`) gets
   ``call_pairing_<n>``. Both are numbered in request order, so the same
   contents always give the same ids and provider prompt caches stay warm;
5. the request does not open with a model turn holding a call: a request
   whose history begins with the agent's own calls is opened by a user-side
   note (`adk_pairing.core.placeholders.OPENING_NOTE_TEXT`), so that strict
   providers take it and the calls still reach the model. A request that
   opens with the model's text is the agent's own design and stays as it is,
   unless other code cut the request to open there (``cut``): then a note says
   the earlier messages are left out (`adk_pairing.core.placeholders.CUT_NOTE_TEXT`).

Who answers whom is decided by `adk_pairing.ledger.PairingLedger`, the view's
rules, but always with the newest builder's traits (``NEWEST_BUILDER``),
whatever ADK is installed: these contents have already been through the
builder, nothing rearranges them again, and the provider pairs each result
with the call before it. So a result with a reused id answers only the newest
call before it, and no placeholder is withheld (a withheld call would stay
unanswered in the request). A part that holds a call or a result together
with text is split first, so the call is not lost.

Properties: a request that already keeps the guarantee comes back as the very
same list object; input ``Content`` and ``Part`` objects are never mutated
(ADK's per-request copies are shallow and share parts' payloads with session
events), changed contents are new objects; the pass is idempotent,
deterministic and O(parts).

In parts: the detection (`adk_pairing.passes.request_scan`: which segments already
hold), the rewrite of the faulty ones (`adk_pairing.passes.request_rewrite`) and
what it reports (`adk_pairing.passes.request_records`); here, the entry point and
rule 5.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence

from google.genai import types

from ..core.placeholders import CUT_NOTE_TEXT, OPENING_NOTE_TEXT, PlaceholderTexts
from ..wire import MODEL_ROLES, never_sent_as_a_call
from .request_memo import RememberedRewrite
from .request_records import ContentRepair, ContentRule, RepairedContents
from .request_rewrite import repair_segments
from .request_scan import faulty_segments, segments_around

__all__ = ["repair_contents"]

_DEFAULT_TEXTS = PlaceholderTexts()


def repair_contents(
    contents: list[types.Content],
    *,
    held_open_ids: Collection[str] | Callable[[], Collection[str]] = frozenset(),
    texts: PlaceholderTexts = _DEFAULT_TEXTS,
    fill_missing_ids: bool = False,
    cut: bool = False,
    remembered: RememberedRewrite | None = None,
) -> RepairedContents:
    """`contents` made to keep the request guarantee (module docstring), and what it took.

    Args:
      contents: The request's contents, as ADK built them. Never mutated.
      held_open_ids: The ids of the calls ADK holds open (the session's
        ``long_running_tool_ids``), or a function returning them: it is called
        only when something needs repair, so a healthy request never pays for
        reading the session. Confirmation, credential and input requests are
        held open by name, as in the view.
      texts: The placeholder texts, the view's.
      fill_missing_ids: Give id-less calls an id (for providers that pair by
        id: Anthropic, OpenAI via LiteLlm). Off for Gemini, which pairs by
        position and from which ADK strips its own ``adk-`` ids on purpose.
      cut: Other code cut `contents` out of a longer request, so that they
        open where they do: whatever model turn opens them, a note saying so
        goes first (rule 5).
      remembered: This session's last rewrite: the rewrite resumes from it
        where the contents before are the same, and it then holds this one
        (`adk_pairing.passes.request_memo`). The result is the same either way.

    Returns:
      The same list object when it already keeps the guarantee; otherwise new
      contents (unchanged contents are reused as they are) and the repairs.
    """
    faults = faulty_segments(contents, fill_missing_ids)
    if not faults:
        repaired = RepairedContents(contents)
    else:
        segments = segments_around(contents, faults)
        rewrite = repair_segments if remembered is None else remembered.rewrite
        repaired = rewrite(contents, segments, held_open_ids, texts, fill_missing_ids)
    return _opened_by_the_user(repaired, cut)


def _opens_with_a_call(contents: Sequence[types.Content], cut: bool = False) -> bool:
    """Whether the first content with parts is a model turn sending a function call.

    With `cut`, whether it is a model turn at all.
    """
    for content in contents:
        if not content.parts:
            continue
        return content.role in MODEL_ROLES and (
            cut
            or any(
                part.function_call is not None and not never_sent_as_a_call(part)
                for part in content.parts
            )
        )
    return False


def _opened_by_the_user(repaired: RepairedContents, cut: bool = False) -> RepairedContents:
    """Rule 5: `repaired`, opened by a user-side note if it opens with the model's calls.

    With `cut`, if it opens with the model's turn at all, said with the cut's note.
    """
    if not _opens_with_a_call(repaired.contents, cut):
        return repaired
    text = CUT_NOTE_TEXT if cut else OPENING_NOTE_TEXT
    note = types.Content(role="user", parts=[types.Part(text=text)])
    return RepairedContents(
        [note, *repaired.contents], (*repaired.repairs, ContentRepair(ContentRule.OPENING_NOTE))
    )
