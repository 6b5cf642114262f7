"""Property: the view never makes the request ADK builds worse than the store does.

For any generated history, well-formed or malformed (see
`history_strategies`), ADK's own contents request processor builds the request
twice, from the stored events and from the repaired view:

* if building from the store does not raise, building from the view does not;
* every rule of `adk_pairing.rules.checks` the store's request keeps (Anthropic's,
  OpenAI's ids, Gemini's call order and counts), the view's keeps. Strict
  alternation is the documented exception for the decorator alone (a
  placeholder can stand between two user turns; `PairingPlugin` merges them).

This holds on every supported ADK release; the builders differ (see the
docstring of `adk_pairing.ledger`), and so does what the view adds for them.
Each test runs ``ADK_PAIRING_PROPERTY_EXAMPLES`` examples (default 200, about
half a minute per test on one core); a fuzz run can raise it.
The examples are derandomized, so CI runs the same histories every time.
Open (found at 1,000 random examples on 2.10, not fixed): a call whose Part
also holds text, reusing the id of a call in the model event right before it;
Anthropic merges the two model turns, and a placeholder between them splits
that merge.
"""

from __future__ import annotations

import os

from google.adk.events.event import Event
from hypothesis import HealthCheck, given, settings

from adk_pairing import repaired_events
from adk_pairing.ledger import build_ledger
from adk_pairing.rules.checks import RULES, request_violations
from adk_pairing.wire import IrregularShape
from tests.adk_request import build_request_contents

from .events import call, model_event, response, response_event
from .history_strategies import describe, histories

EXAMPLES = int(os.environ.get("ADK_PAIRING_PROPERTY_EXAMPLES", "200"))

#: The rules the view alone must never break where the store keeps them.
CHECKED_RULES = tuple(rule for rule in RULES if rule != "strict_alternation")


def _outcome(events: list[Event]) -> tuple[str | None, dict[str, list[str]]]:
    """(the error ADK's builder raised, or None; the request's violations, by rule)."""
    try:
        contents = build_request_contents(events)
    except Exception as error:  # whatever ADK raises is what the user gets
        return f"{type(error).__name__}: {error}", {}
    return None, request_violations(contents, CHECKED_RULES)


def assert_view_not_worse(events: list[Event]) -> None:
    stored_error, stored_violations = _outcome(events)
    view = repaired_events(events)
    view_error, view_violations = _outcome(view)
    history = f"\nstored:\n{describe(events)}\nview:\n{describe(view)}"
    if stored_error is None:
        assert view_error is None, f"the view makes ADK's builder raise: {view_error}{history}"
        for rule in CHECKED_RULES:
            if not stored_violations[rule]:
                assert not view_violations[rule], (
                    f"the stored request keeps the {rule} rule, the view's does not: "
                    f"{view_violations[rule]}{history}"
                )


@settings(
    max_examples=EXAMPLES, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck)
)
@given(histories(malformed=True))
def test_request_from_the_view_is_never_worse_than_from_the_store(events: list[Event]) -> None:
    assert_view_not_worse(events)


@settings(
    max_examples=EXAMPLES, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck)
)
@given(histories(malformed=False))
def test_request_from_the_view_is_never_worse_for_well_formed_histories(
    events: list[Event],
) -> None:
    assert_view_not_worse(events)


def test_a_call_beside_adks_confirmation_request_gets_no_placeholder() -> None:
    """Fuzz seed 7, shrunk: a call ADK's builder never sends must not be answered.

    ADK's builder leaves out, whole, an event holding a confirmation request
    (`adk_pairing.wire.builder_leaves_out`), so the ``fetch`` call beside it
    is never sent. A placeholder for it would be an event of its own, sent,
    and ADK would pair it with the earlier call of its id (``ïd 1``),
    displacing that call's real result: Gemini's rule, kept by the store,
    broken by the view. The ledger does not count that call.
    """
    events = [
        model_event([call("ïd 1"), call(None)], invocation_id="inv-0"),
        response_event([response("ïd 1"), response(None)], invocation_id="inv-0"),
        model_event([call("ïd 1", "fetch"), call("c1", "adk_request_confirmation")]),
        response_event([response("c1", "adk_request_confirmation")], invocation_id="inv-3"),
    ]
    ledger = build_ledger(events)
    assert IrregularShape.CALL_BESIDE_AN_ADK_REQUEST in ledger.shapes
    assert not ledger.open_calls
    assert repaired_events(events) == events
    assert_view_not_worse(events)
