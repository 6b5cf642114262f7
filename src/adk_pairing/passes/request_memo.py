"""The request pass's memory of a session's last rewrite: later requests rewrite only what is new.

A session whose history needs the rewrite needs it on every later request: the
store is never written, so its next request carries the same faulty contents
and a turn more. Rewriting them all again made a turn cost in proportion to
the session's length (ids reused in every turn, a wide turn of parallel calls
left open). `RememberedRewrite` keeps where the last rewrite stood at its last
segment's start (`adk_pairing.passes.request_rewrite.RewriteState`) and
resumes there when the request's contents before that point are the same, so a
request pays for checking those contents, not for rewriting them.

"The same" is checked, never assumed, at every request:

* the scan (`adk_pairing.passes.request_scan`) cut the contents before that
  point into the same segments, each holding or faulty as before;
* every faulty segment there holds the same contents as before, part by part
  (ADK's per-request copies share their payloads with the session's events,
  so equal parts are mostly the same objects, and the comparison is cheap),
  and the calls and results the rewrite read there hold the field values
  they held then: shared, they may have been edited in place since, in the
  request and in what was read alike;
* every segment that holds there makes the same calls (ids and names: all the
  rewrite reads of it);
* the contents the rewrite made for them, which the later requests are sent
  as they are, are as it made them, down to their calls' and results' fields:
  nothing sent with the last request changed them in place.

Anything else, and a resumption `rewrite_segments` refuses, rewrites the whole
request, as without a memory. Both give the same contents and repairs
(tests/unit/test_request_memo.py holds them to it).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from operator import itemgetter

from google.genai import types

from ..core.placeholders import PlaceholderTexts
from ..wire import MODEL_ROLES
from .request_records import RepairedContents
from .request_rewrite import RewriteState, rewrite_segments
from .request_scan import Segment

__all__ = ["RememberedRewrite"]


@dataclass(frozen=True, slots=True)
class _Seen:
    """One segment before the remembered state's start, as the rewrite read it."""

    start: int
    stop: int
    holds: bool
    #: Holding: its calls' (id, name). Faulty: its contents.
    read: tuple[object, ...]
    #: Faulty: each of its parts' `_payload_values`, as read.
    payloads: tuple[object, ...] = ()


class RememberedRewrite:
    """One session's last rewrite of its model request, for the next request to resume from.

    Not thread-safe: one per session, used by one request at a time, as
    ADK runs a session's turns.
    """

    __slots__ = ("_made", "_seen", "_settings", "_state")

    def __init__(self) -> None:
        self._state: RewriteState | None = None
        self._seen: list[_Seen] = []
        self._settings: tuple[PlaceholderTexts, bool] | None = None
        # Each content the rewrite made before the state's start, with what it
        # held then: (content, its fields, its parts, each new part's
        # `_made_values`; None for a part of the request's, which
        # `_same_contents` compares).
        self._made: list[
            tuple[types.Content, tuple[object, ...], tuple[object, ...], tuple[object, ...]]
        ] = []

    @property
    def holds_a_rewrite(self) -> bool:
        """Whether the next request can resume from this one's rewrite."""
        return self._state is not None

    def rewrite(
        self,
        contents: Sequence[types.Content],
        segments: Sequence[Segment],
        held_open_ids: Collection[str] | Callable[[], Collection[str]],
        texts: PlaceholderTexts,
        fill: bool,
    ) -> RepairedContents:
        """`request_rewrite.repair_segments`, resumed from the last rewrite where it can be."""
        settings = (texts, fill)
        state = self._state if settings == self._settings else None
        rewrite = None
        if state is not None:
            tail = self._tail(contents, segments, state)
            if tail is not None:
                rewrite = rewrite_segments(contents, tail, held_open_ids, texts, fill, state)
        if rewrite is None:
            state = None
            rewrite = rewrite_segments(contents, segments, held_open_ids, texts, fill)
        if rewrite.state is not state:
            self._remember(contents, segments, state, rewrite.state, settings)
        return RepairedContents(rewrite.contents, rewrite.repairs)

    def _tail(
        self, contents: Sequence[types.Content], segments: Sequence[Segment], state: RewriteState
    ) -> list[Segment] | None:
        """The segments from `state.cut` on, when the contents before it are the same."""
        cut = state.cut
        seen = self._seen
        if len(contents) <= cut or len(segments) < len(seen) or not seen:
            return None
        for before, segment in zip(seen, segments, strict=False):  # segments go on
            if before.start != segment.start or before.holds is not segment.holds:
                return None
            stop = before.stop
            if segment.stop != stop and not (segment.holds and stop == cut < segment.stop):
                return None
            if segment.holds:
                if _calls_read(contents, before.start, stop) != before.read:
                    return None
            elif not _same_contents(contents, before.start, before.read, before.payloads):
                return None
        if not self._made_unchanged():
            return None
        last = segments[len(seen) - 1]
        tail = list(segments[len(seen) :])
        if last.stop > cut:  # a run that holds goes on past the cut: its rest
            rest = [
                part.function_call
                for content in contents[cut : last.stop]
                if content.role in MODEL_ROLES
                for part in content.parts or ()
                if part.function_call is not None
            ]
            tail.insert(0, Segment(cut, last.stop, True, rest))
        return tail

    def _made_unchanged(self) -> bool:
        """Whether the contents made before the state's start hold what they held when made."""
        for content, fields, parts, values in self._made:
            if tuple(content.__dict__.values()) != fields or tuple(content.parts or ()) != parts:
                return False
            for part, made in zip(parts, values, strict=True):
                if made is not None and _made_values(part) != made:
                    return False
        return True

    def _remember(
        self,
        contents: Sequence[types.Content],
        segments: Sequence[Segment],
        resumed: RewriteState | None,
        state: RewriteState | None,
        settings: tuple[PlaceholderTexts, bool],
    ) -> None:
        """Keeps `state`, and what the segments before its start read, for the next request.

        Resumed from `resumed`, what was kept before its start still holds
        and only the segments from there on are added.
        """
        if state is None:
            self._forget()
            return
        if resumed is None:
            self._seen, self._made = [], []
            start = 0
        else:
            start = resumed.cut
        inputs: set[int] = set()  # the parts of faulty segments, compared as they are read
        held: set[int] = set()  # the parts of segments that hold, of which only calls are read
        for segment in segments:
            if segment.start >= state.cut or segment.stop <= start:
                continue
            if segment.holds:
                read = _calls_read(contents, max(segment.start, start), segment.stop)
                held.update(
                    id(part)
                    for content in contents[max(segment.start, start) : segment.stop]
                    for part in content.parts or ()
                )
                last = self._seen[-1] if self._seen else None
                if segment.start < start and last is not None and last.stop == start:
                    # A run that holds, on past the last cut: one segment, as the scan says.
                    self._seen[-1] = _Seen(last.start, segment.stop, True, (*last.read, *read))
                else:
                    self._seen.append(_Seen(segment.start, segment.stop, True, read))
            else:
                contents_read = tuple(contents[segment.start : segment.stop])
                payloads = tuple(
                    _payload_values(part)
                    for content in contents_read
                    for part in content.parts or ()
                )
                self._seen.append(
                    _Seen(segment.start, segment.stop, False, contents_read, payloads)
                )
                inputs.update(id(part) for content in contents_read for part in content.parts or ())
        made_from = len(resumed.contents) if resumed is not None else 0
        for entry in state.contents[made_from:]:
            if type(entry) is int:
                continue
            content: types.Content = entry  # type: ignore[assignment]
            parts = content.parts or ()
            if any(id(part) in held for part in parts):
                # A part of a segment that holds, merged into a content made:
                # sent from here, it would be checked for its calls only.
                self._forget()
                return
            self._made.append(
                (
                    content,
                    tuple(content.__dict__.values()),
                    tuple(parts),
                    tuple(None if id(part) in inputs else _made_values(part) for part in parts),
                )
            )
        self._state = state
        self._settings = settings

    def _forget(self) -> None:
        self._state, self._seen, self._made, self._settings = None, [], [], None


def _calls_read(contents: Sequence[types.Content], start: int, stop: int) -> tuple[object, ...]:
    """What the rewrite reads of a segment that holds: its calls' ids and names."""
    return tuple(
        (part.function_call.id, part.function_call.name)
        for content in contents[start:stop]
        if content.role in MODEL_ROLES
        for part in content.parts or ()
        if part.function_call is not None
    )


def _same_contents(
    contents: Sequence[types.Content],
    start: int,
    read: tuple[object, ...],
    payloads: tuple[object, ...],
) -> bool:
    """Whether `contents` from `start` hold what `read` held, part by part, when it was read.

    `payloads` are the `_payload_values` of `read`'s parts then: their calls
    and results are shared with the session's events and with later copies,
    so an edit in place since shows in both, and only these values tell.
    """
    index = 0
    for offset, before in enumerate(read):
        now = contents[start + offset]
        assert isinstance(before, types.Content)
        if now is not before and now.role != before.role:
            return False
        parts, parts_before = now.parts or [], before.parts or []
        if len(parts) != len(parts_before):
            return False
        for part, part_before in zip(parts, parts_before, strict=True):
            if not _same_part(part, part_before, payloads[index]):
                return False
            index += 1
    return True


def _same_part(part: types.Part, before: types.Part, payloads_read: object) -> bool:
    """Whether `part` holds what `before` held when its call and result held `payloads_read`.

    Where the two share their call and result (two copies ADK built in one
    turn), their field dicts compare by identity, and the shared payloads'
    values are checked against the read. Where they do not (a store read
    afresh, ids ADK strips), each payload, and `before`'s, is compared with
    the read by its field values, the rest of the part by its other fields:
    the same answer as pydantic's ``==`` for validated parts, without its
    cost per model.
    """
    if part is before:
        return _payload_values(before) == payloads_read
    fields, fields_before = part.__dict__, before.__dict__
    call, response = fields.get("function_call"), fields.get("function_response")
    if call is fields_before.get("function_call") and response is fields_before.get(
        "function_response"
    ):
        return fields == fields_before and _payload_values(before) == payloads_read
    if type(part) is not type(before) or len(fields) != len(fields_before):
        return False
    try:
        if _OTHER_PART_FIELDS(fields) != _OTHER_PART_FIELDS(fields_before):
            return False
    except KeyError:  # a part built without validation: taken as changed
        return False
    # `before` may be sent again, in a content the rewrite made: unchanged too.
    return _payload_values(part) == payloads_read == _payload_values(before)


#: The fields of a part besides its call and result.
_OTHER_PART_FIELDS = itemgetter(
    *(
        name
        for name in types.Part.model_fields
        if name not in ("function_call", "function_response")
    )
)


def _made_values(part: types.Part) -> tuple[object, ...]:
    """A part the rewrite made, as the values an edit in place to it or its payload changes."""
    return (tuple(part.__dict__.values()), _payload_values(part))


def _payload_values(part: types.Part) -> tuple[object, ...] | None:
    """A part's call and result, each as its type and field values: what an edit in place to
    them changes, and what tells two of them apart."""
    call, response = part.function_call, part.function_response
    if call is None and response is None:
        return None
    return (
        None if call is None else (type(call), tuple(call.__dict__.values())),
        None if response is None else (type(response), tuple(response.__dict__.values())),
    )
