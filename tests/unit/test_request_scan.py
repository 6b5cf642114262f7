"""The request pass's detection (`adk_pairing.passes.request_scan`): which segments hold.

Pure: contents in, the faulty segments out. Whether the segments that hold
keep every provider's rule is tests/unit/test_request_guarantee.py's part.
"""

from __future__ import annotations

import pytest
from google.genai import types

from adk_pairing.passes.request_scan import faulty_segments, refused_when_paired_by_id
from adk_pairing.wire import may_collide_with_a_fallback

from .test_checks import call, model, response, text, user


@pytest.mark.parametrize(
    ("call_id", "refused"),
    [(None, True), ("", True), ("toolu_fallback_0", True), ("c1", False), ("ïd 1", False)],
)
def test_an_id_a_provider_pairing_by_id_cannot_take(call_id: str | None, refused: bool) -> None:
    """No id (LiteLlm sends "", old Anthropic converters one shared fallback), or a fallback's."""
    assert refused_when_paired_by_id(call_id) is refused
    if call_id:  # the wire's own statement of the fallbacks' form
        assert refused_when_paired_by_id(call_id) is may_collide_with_a_fallback(call_id)


def test_faulty_segments_want_each_answer_in_its_calls_position() -> None:
    def faults(*answer: types.Part) -> list[range]:
        contents = [
            user(text("go")),
            model(call("a", "c1"), call("b")),
            user(*answer),
            model(text("done")),
        ]
        return faulty_segments(contents, fill=False)

    assert faults(response("a", "c1"), response("b"), text("ok")) == []
    for wrong in (
        [response("b"), response("a", "c1")],  # out of call order
        [response("a", "c1"), response("b", "c2")],  # an id the call does not have
        [response("a", "c1"), response("b"), response("b")],  # one result too many
        [response("a", "c1")],  # one too few
        [
            response("a", "c1"),
            types.Part(text="x", function_response=response("b").function_response),
        ],
        [response("a", "c1"), response("b"), call("c")],  # a call on the user's side
    ):
        assert faults(*wrong) == [range(1, 3)], wrong


def test_faulty_segments_find_each_faulty_segment_and_only_those() -> None:
    healthy_turn = [user(text("q")), model(call("a", "c1")), user(response("a", "c1"))]
    contents = [
        *healthy_turn,
        model(call("a", "c2")),  # 3..5: unanswered (user text follows)
        user(text("next")),
        model(call("a", "c1")),  # 5..7: reuses c1
        user(response("a", "c1")),
        model(text("fine")),  # 7..9: holds
        user(text("more")),
        model(text("ok")),
        model(text("again")),  # 9..11: two model contents in a row
    ]
    assert faulty_segments(contents, fill=False) == [range(3, 5), range(5, 7), range(9, 11)]
    # With `fill`, an id-less call is a fault for the providers that pair by id.
    idless = [user(text("q")), model(call("a")), user(response("a"))]
    assert faulty_segments(idless, fill=False) == []
    assert faulty_segments(idless, fill=True) == [range(1, 3)]
