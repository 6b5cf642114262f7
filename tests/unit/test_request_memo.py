"""A remembered rewrite (`adk_pairing.passes.request_memo`) sends what a fresh rewrite sends.

The request pass resumes a session's rewrite where the contents before its
last segment are the same as the last request's. Differential: over
sequences of requests that grow as a session's do (a turn appended), and that
other code edits (contents cut off at the front, a part changed, a content
dropped, the sent contents changed in place afterwards), the pass with a
memory gives the very contents and repairs the pass without one gives, on
every request. The deterministic tests pin that the memory is used at all:
without them, a memory that never resumed would pass.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Sequence

from google.genai import types
from hypothesis import HealthCheck, given, settings
from hypothesis import event as hypothesis_event
from hypothesis import strategies as st

from adk_pairing.passes import request_memo
from adk_pairing.passes.request_memo import RememberedRewrite
from adk_pairing.passes.request_pass import repair_contents
from adk_pairing.passes.request_rewrite import rewrite_segments

from .test_request_pass import any_contents, any_part, call, dump, model, result, say, user

EXAMPLES = int(os.environ.get("ADK_PAIRING_MEMO_EXAMPLES", "300"))
RELAXED = settings(
    max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)


def _as_adk_copies(contents: Sequence[types.Content]) -> list[types.Content]:
    """A new request's contents as ADK builds them: new contents and parts, shared payloads."""
    return [
        content.model_copy(update={"parts": [part.model_copy() for part in content.parts or ()]})
        for content in contents
    ]


def _same(contents: list[types.Content], held: set[str], fill: bool, memory: RememberedRewrite):
    fresh = repair_contents(copy.deepcopy(contents), held_open_ids=held, fill_missing_ids=fill)
    remembered = repair_contents(
        contents, held_open_ids=held, fill_missing_ids=fill, remembered=memory
    )
    assert dump(remembered.contents) == dump(fresh.contents)
    assert remembered.repairs == fresh.repairs
    return remembered


class _Resumptions:
    """Counts the rewrites that resumed, and those that refused to, by patching the module."""

    def __init__(self, monkeypatch) -> None:
        self.resumed = self.refused = 0

        def counted(*args, **kwargs):
            rewrite = rewrite_segments(*args, **kwargs)
            if len(args) > 5 or "resume" in kwargs:
                if rewrite is None:
                    self.refused += 1
                else:
                    self.resumed += 1
            return rewrite

        monkeypatch.setattr(request_memo, "rewrite_segments", counted)


def _turn(call_id: str | None, text: str) -> list[types.Content]:
    return [user(say(text)), model(call(call_id)), user(result(call_id)), model(say("done"))]


def _three_turns_reusing_call_0(memory: RememberedRewrite):
    """Three requests of a session whose every turn calls ``call_0``: the last contents, sent."""
    contents: list[types.Content] = []
    for turn in range(3):
        contents = _as_adk_copies(contents) + _turn("call_0", f"q{turn}")
        sent = _same(contents, set(), True, memory)
    return contents, sent


def test_a_session_reusing_one_id_is_rewritten_from_its_last_turn(monkeypatch) -> None:
    counts = _Resumptions(monkeypatch)
    memory = RememberedRewrite()
    contents: list[types.Content] = []
    for turn in range(12):
        contents = _as_adk_copies(contents) + _turn("call_0", f"question {turn}")
        sent = _same(contents, set(), True, memory)
        assert sent.contents[-2].parts[0].function_response.id == (
            "call_0" if turn == 0 else f"call_0-{turn + 1}"
        )
    assert counts.resumed >= 9 and counts.refused == 0


def test_an_old_open_turn_is_not_rewritten_again(monkeypatch) -> None:
    counts = _Resumptions(monkeypatch)
    memory = RememberedRewrite()
    wide = [model(*(call(f"p{i}") for i in range(30))), user(*(result(f"p{i}") for i in range(29)))]
    contents = [user(say("go")), *wide]
    for turn in range(8):
        contents = _as_adk_copies(contents) + _turn(f"t{turn}", f"question {turn}")
        _same(contents, set(), True, memory)
    assert counts.resumed >= 6 and counts.refused == 0


def test_a_late_result_for_an_old_call_rewrites_the_whole_request(monkeypatch) -> None:
    counts = _Resumptions(monkeypatch)
    memory = RememberedRewrite()
    contents = [user(say("go")), model(call("old")), *_turn("a", "q1")]
    _same(contents, set(), True, memory)
    contents = _as_adk_copies(contents) + _turn("b", "q2")
    _same(contents, set(), True, memory)
    # The old call's result arrives at last: it moves back to its call.
    contents = [*_as_adk_copies(contents), user(result("old"))]
    sent = _same(contents, set(), True, memory)
    assert sent.contents[2].parts[0].function_response.response == {"ok": True}
    assert counts.refused >= 1


def test_a_result_that_reaches_back_is_not_remembered_with_its_call() -> None:
    # The last segment holds the old call's result: the place it takes (after
    # the call) must not be remembered as what comes before that segment.
    memory = RememberedRewrite()
    head = [user(say("go")), model(call("old")), user(say("q1")), model(call("a"))]
    _same([*head, user(result("a"), result("old"))], set(), True, memory)
    # Other code left that result out of the next request.
    later = [*_as_adk_copies(head), user(result("a")), model(say("done")), *_turn("b", "q2")]
    sent = _same(later, set(), True, memory)
    assert sent.contents[2].parts[0].function_response.response["status"] == "missing"


def test_an_id_given_around_a_later_one_is_given_again_when_that_one_is_gone() -> None:
    # The second call_0 is renamed call_0-3: the last turn carries call_0-2.
    memory = RememberedRewrite()
    head = [user(say("go")), model(call("call_0")), user(result("call_0"))]
    head += [user(say("q")), model(call("call_0")), user(result("call_0"))]
    last = [model(call("call_0-2")), user(result("call_0-2"))]
    sent = _same([*head, user(say("q2")), *last], set(), True, memory)
    assert sent.contents[3].parts[0].function_call.id == "call_0-3"
    # Without that turn, call_0-2 is free again.
    other = [model(call("z")), user(result("z"))]
    later = [*_as_adk_copies(head), user(say("q2")), *other, *_turn("y", "q3")]
    sent = _same(later, set(), True, memory)
    assert sent.contents[3].parts[0].function_call.id == "call_0-2"


def test_the_calls_of_a_turn_that_holds_are_read_again() -> None:
    # The faulty turn reuses the id of the turn before it, which holds.
    memory = RememberedRewrite()
    faulty = [model(call("a")), user(say("q2"))]
    tail = [model(call("t")), user(result("t"))]
    before = [user(say("go")), model(call("a")), user(result("a"))]
    sent = _same([*before, *faulty, *tail], set(), True, memory)
    assert sent.contents[3].parts[0].function_call.id == "a-2"
    # The turn that holds now calls another id: "a" is used once.
    renamed = [user(say("go")), model(call("b")), user(result("b"))]
    sent = _same([*renamed, *_as_adk_copies(faulty), *tail, *_turn("c", "q3")], set(), True, memory)
    assert sent.contents[3].parts[0].function_call.id == "a"


def test_a_turn_that_holds_merged_into_a_faulty_one_is_read_again() -> None:
    # An empty content leaves two model turns adjacent: the one that holds
    # merges into the faulty one before it, and is sent from there.
    memory = RememberedRewrite()
    faulty = [model(say("one")), user()]
    tail = [model(call("t")), user(say("q"))]
    _same(
        [user(say("go")), *faulty, model(say("two")), user(say("hi")), *tail], set(), True, memory
    )
    edited = [user(say("go")), *faulty, model(say("TWO")), user(say("hi")), *tail]
    sent = _same(_as_adk_copies(edited) + _turn("c", "q3"), set(), True, memory)
    assert [part.text for part in sent.contents[1].parts] == ["one", "TWO"]


def test_a_turn_merged_back_into_the_last_one_is_not_remembered() -> None:
    # The last turn's model content is empty: its user content merges into
    # the one before the checkpoint, which must not be remembered so.
    memory = RememberedRewrite()
    head = [user(say("go")), model(call("a")), user(say("q"))]
    _same([*head, model(), user(say("x"))], set(), True, memory)
    later = [*_as_adk_copies(head), model(say("y")), user(say("z")), *_turn("b", "q2")]
    sent = _same(later, set(), True, memory)
    assert "x" not in [part.text for part in sent.contents[2].parts]


def test_contents_changed_in_place_after_they_were_sent_are_not_sent_again(monkeypatch) -> None:
    counts = _Resumptions(monkeypatch)
    memory = RememberedRewrite()
    contents, sent = _three_turns_reusing_call_0(memory)
    # Another plugin, after this one, edited what was sent, in place.
    renamed = sent.contents[5].parts[0]
    renamed.function_call = types.FunctionCall(id="edited", name="lookup", args={})
    resumed_before = counts.resumed
    contents = _as_adk_copies(contents) + _turn("call_0", "q3")
    _same(contents, set(), True, memory)
    assert counts.resumed == resumed_before  # not resumed from the edited contents


def test_a_call_edited_in_place_before_the_cut_is_rewritten_again(monkeypatch) -> None:
    # ADK's copies of the contents share each call and result with the
    # session's events, so an edit in place to one (a callback's, say) is in
    # every later request, and in what the memory read of it, too.
    counts = _Resumptions(monkeypatch)
    memory = RememberedRewrite()
    contents, _ = _three_turns_reusing_call_0(memory)
    contents = _as_adk_copies(contents)
    contents[5].parts[0].function_call.name = "renamed"
    contents[6].parts[0].function_response.name = "renamed"
    resumed_before = counts.resumed
    sent = _same(contents + _turn("call_0", "q3"), set(), True, memory)
    assert sent.contents[5].parts[0].function_call.name == "renamed"
    assert counts.resumed == resumed_before


def test_a_call_the_rewrite_made_edited_in_place_after_it_was_sent_is_made_again(
    monkeypatch,
) -> None:
    counts = _Resumptions(monkeypatch)
    memory = RememberedRewrite()
    contents, sent = _three_turns_reusing_call_0(memory)
    made = sent.contents[5].parts[0].function_call
    assert made.id == "call_0-2"  # renamed: a copy the memory holds
    made.args = {"edited": True}
    resumed_before = counts.resumed
    sent = _same(_as_adk_copies(contents) + _turn("call_0", "q3"), set(), True, memory)
    assert sent.contents[5].parts[0].function_call.args == {}
    assert counts.resumed == resumed_before


def test_a_part_sent_again_then_edited_in_place_is_not_sent_again() -> None:
    # After a store's fresh read the request's parts are new objects, equal to
    # those the memory read, and a content the rewrite made may still send the
    # part it read: an edit in place to that part's call, after it was sent
    # again, must not reach the next request (found by the differential test).
    memory = RememberedRewrite()
    contents = [model(call("call_1"), call("call_1"))]
    _same(contents, set(), False, memory)
    contents = _as_adk_copies(contents) + _turn("call_0", "q")[:2]
    _same(contents, set(), False, memory)
    contents = copy.deepcopy(contents)  # equal, and all new objects
    sent = _same(contents, set(), False, memory)
    _edit_a_payload(sent.contents, 0)
    _same(_as_adk_copies(contents), set(), False, memory)


def test_a_placeholder_whose_call_is_now_held_open_is_placed_again() -> None:
    memory = RememberedRewrite()
    contents = [user(say("go")), model(call("lr")), *_turn("a", "q1")]
    _same(contents, set(), True, memory)
    contents = _as_adk_copies(contents) + _turn("b", "q2")
    _same(contents, set(), True, memory)
    contents = _as_adk_copies(contents) + _turn("c", "q3")
    sent = _same(contents, {"lr"}, True, memory)
    assert sent.contents[2].parts[0].function_response.response["status"] == "pending"


# -- generated sessions -----------------------------------------------------------


@st.composite
def _edit(draw: st.DrawFn) -> tuple[str, object]:
    kind = draw(
        st.sampled_from(
            [
                *("turn",) * 4,
                *("contents", "late", "cut", "drop", "text", "in_place", "held"),
                *("payload", "sent_payload", "field"),
            ]
        )
    )
    if kind == "turn":
        call_id = draw(st.sampled_from(["call_0", "call_0", "c1", None, "call_0-2", "call_1"]))
        return kind, (call_id, draw(st.booleans()))
    if kind == "late":
        return kind, draw(st.sampled_from(["call_0", "c1", "call_1", "call_2", None]))
    if kind == "contents":
        return kind, draw(any_contents())
    if kind in ("cut", "drop", "text", "in_place", "payload", "sent_payload", "field"):
        return kind, draw(st.integers(min_value=0, max_value=40))
    return kind, draw(st.sets(st.sampled_from(["call_0", "c1", "x", "call_0-2"]), max_size=2))


@RELAXED
@given(
    start=any_contents(),
    edits=st.lists(st.tuples(_edit(), st.booleans()), min_size=1, max_size=12),
    fill=st.booleans(),
    extra=any_part(),
)
def test_a_remembered_rewrite_sends_what_a_fresh_one_sends(
    start: list[types.Content],
    edits: list[tuple[tuple[str, object], bool]],
    fill: bool,
    extra: types.Part,
) -> None:
    memory = RememberedRewrite()
    held: set[str] = set()
    contents = list(start)
    sent = _same(contents, held, fill, memory)
    for (kind, value), afresh in edits:
        # The next request: copies sharing the calls and results, as ADK builds
        # them within a turn, or all new objects, as after a store's fresh read.
        contents = copy.deepcopy(contents) if afresh else _as_adk_copies(contents)
        if kind == "turn":
            call_id, answered = value  # type: ignore[misc]
            turn = _turn(call_id, "q")
            contents += turn if answered else turn[:2]
        elif kind == "late":
            contents.append(user(result(value)))  # type: ignore[arg-type]
        elif kind == "contents":
            contents += value  # type: ignore[operator]
        elif kind == "cut" and contents:
            contents = contents[value % len(contents) :]  # type: ignore[operator]
        elif kind == "drop" and contents:
            del contents[value % len(contents)]  # type: ignore[operator]
        elif kind == "text" and contents:
            target = contents[value % len(contents)]  # type: ignore[operator]
            target.parts = [*(target.parts or ()), extra]
        elif kind == "in_place" and sent.contents:
            target = sent.contents[value % len(sent.contents)]  # type: ignore[operator]
            if target.parts:
                target.parts[0] = extra
        elif kind == "payload" and contents:
            # In place, on a call or result every later copy shares.
            _edit_a_payload(contents, value)  # type: ignore[arg-type]
        elif kind == "field" and contents:
            # A field of a part itself, beside its call or result.
            target = contents[value % len(contents)]  # type: ignore[operator]
            if target.parts:
                part = target.parts[0]
                if part.text is None:
                    part.text = "edited"
                else:
                    part.thought = not part.thought
        elif kind == "sent_payload" and sent.contents:
            _edit_a_payload(sent.contents, value)  # type: ignore[arg-type]
        elif kind == "held":
            held = set(value)  # type: ignore[arg-type]
        hypothesis_event(f"edit: {kind}")
        sent = _same(contents, held, fill, memory)


def _edit_a_payload(contents: Sequence[types.Content], at: int) -> None:
    """Renames, in place, the first call or result from content `at` on (wrapping round)."""
    for step in range(len(contents)):
        for part in contents[(at + step) % len(contents)].parts or ():
            payload = part.function_call or part.function_response
            if payload is not None:
                payload.name = f"{payload.name}_edited"
                return
