"""What the request pass (`adk_pairing.passes.request_pass`) reports: each repair, the result."""

from __future__ import annotations

import enum
from collections import Counter
from dataclasses import dataclass

from google.genai import types

from ..ledger import CallStatus

__all__ = ["QUIET_RULES", "ContentRepair", "ContentRule", "RepairedContents"]


class ContentRule(enum.StrEnum):
    """What one repair of the request did."""

    #: A call nothing answered got a placeholder result.
    PLACEHOLDER = "placeholder"
    #: A real result was moved to the content right after its call.
    MOVED_RESPONSE = "moved_response"
    #: A result answered its call by id under another function name; it now
    #: carries the call's name (Gemini pairs by name too).
    RESPONSE_NAME = "response_name"
    #: A result that answers no call was dropped.
    ORPHAN_RESPONSE = "orphan_response"
    #: A call reused an id already used in the request; it and its result were renamed.
    DUPLICATE_ID = "duplicate_id"
    #: A call without an id (and its result) got one.
    MISSING_ID = "missing_id"
    #: A part held a call or result together with text; it was split in two.
    SPLIT_PART = "split_part"
    #: A function call in a user-side content was dropped (no provider accepts one there).
    CALL_OUTSIDE_MODEL = "call_outside_model"
    #: Adjacent contents of one role were merged (answers first).
    MERGED = "merged"
    #: A content without parts was dropped (converters drop it, leaving two turns adjacent).
    EMPTY_CONTENT = "empty_content"
    #: The request opened with the model's calls; a user-side note now opens it (rule 5).
    OPENING_NOTE = "opening_note"


#: How many different repairs a log line lists before it says how many more there are.
SUMMARY_MOST = 8

#: Repairs of form only: they change no call, result or id, and are not logged.
QUIET_RULES = frozenset({ContentRule.MERGED, ContentRule.EMPTY_CONTENT})


@dataclass(frozen=True, slots=True)
class ContentRepair:
    """One repair: its rule and the call it concerns (id, or name when id-less)."""

    rule: ContentRule
    call: str | None = None
    #: For `ContentRule.PLACEHOLDER`: pending or missing.
    status: CallStatus | None = None

    def describe(self) -> str:
        detail = self.rule.value
        if self.status is not None:
            detail += f"({self.status.value})"
        return detail if self.call is None else f"{detail} {self.call}"


@dataclass(frozen=True, slots=True)
class RepairedContents:
    """The contents to send, and what was changed to get them."""

    contents: list[types.Content]
    repairs: tuple[ContentRepair, ...] = ()

    @property
    def notable(self) -> list[ContentRepair]:
        """The repairs beyond merging: the ones worth a warning."""
        return [repair for repair in self.repairs if repair.rule not in QUIET_RULES]

    def summary(self, most: int = SUMMARY_MOST) -> str:
        """The notable repairs for a log line: alike ones counted, at most `most` listed.

        A history that reuses one id in every turn is repaired the same way on
        every request, once per turn it holds, so a line listing each repair
        would grow with the session for the session's whole life.
        """
        counted = Counter(repair.describe() for repair in self.notable)
        listed = [
            text if count == 1 else f"{text} (x{count})"
            for text, count in counted.most_common(most)
        ]
        if len(counted) > most:
            listed.append(f"and {len(counted) - most} more")
        return "; ".join(listed)
