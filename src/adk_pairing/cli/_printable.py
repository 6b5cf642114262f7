"""Strings from the store, made safe to print: the one place every output line goes through.

Function names, call ids and arguments come from a model's output, and app,
user and session ids from whoever calls the service; ADK stores and reads
back anything. Printed as they are, they can recolour, hide or reorder what
an operator reads (an escape sequence, a bidi override) or crash the write
(a lone surrogate cannot be encoded). So:

* text (`printable`) shows every character Python's `str.isprintable` refuses
  as the escape Python's ``repr`` uses (``\\x1b``, ``\\u202e``, ``\\ud800``),
  space kept, and cuts a long string with ``…``: control characters, bidi and
  other format characters, separators, surrogates, private-use and unassigned
  code points never reach the terminal raw;
* JSON (`json_text`) carries every string whole, with the same characters as
  JSON ``\\u`` escapes: valid JSON, the same value once parsed (a lone
  surrogate stays one, as JSON allows), and still nothing raw on a terminal;
  all of it ASCII when the output's encoding cannot hold the rest.

Backslashes are not doubled: a name spelled with a literal ``\\x1b`` reads like
one holding ESC, which misleads no one about what the terminal does.
"""

from __future__ import annotations

import codecs
import contextlib
import json
import re
import sys
from collections.abc import Callable
from typing import TextIO

#: Characters the fast check lets through: printable ASCII.
_NOT_PRINTABLE_ASCII = re.compile(r"[^ -~]")

#: What a cut string ends with.
CUT_MARK = "…"


def _text_escape(char: str) -> str:
    code = ord(char)
    if code < 0x100:
        return f"\\x{code:02x}"
    if code < 0x10000:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def _json_escape(char: str) -> str:
    code = ord(char)
    if code < 0x10000:
        return f"\\u{code:04x}"
    code -= 0x10000
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


def _escaped(text: str, escape: Callable[[str], str]) -> str:
    """`text` with each character `str.isprintable` refuses replaced by `escape(char)`."""
    if text.isprintable():
        return text

    def replace(match: re.Match[str]) -> str:
        char = match.group()
        return char if char.isprintable() else escape(char)

    return _NOT_PRINTABLE_ASCII.sub(replace, text)


def printable(text: object, limit: int | None = None) -> str:
    """`text` (``str()`` of it) safe for a terminal, at most `limit` characters wide.

    Every character `str.isprintable` refuses (bar space) becomes its escape;
    a longer result is cut at `limit` with `CUT_MARK`, never inside an escape.
    """
    text = text if isinstance(text, str) else str(text)
    if limit is None:
        return _escaped(text, _text_escape)
    head = text[: limit + 1]
    if head.isprintable():
        return head if len(head) <= limit else head[: limit - 1] + CUT_MARK
    pieces: list[str] = []
    width = 0
    for char in head:
        piece = char if char.isprintable() else _text_escape(char)
        if width + len(piece) > limit:
            break
        pieces.append(piece)
        width += len(piece)
    else:
        if len(text) <= limit:
            return "".join(pieces)
    while pieces and width + len(CUT_MARK) > limit:
        width -= len(pieces.pop())
    return "".join(pieces) + CUT_MARK


def _utf_output(stream: TextIO | None) -> bool:
    encoding = getattr(stream, "encoding", None) or "utf-8"
    try:
        return codecs.lookup(encoding).name.startswith("utf")
    except LookupError:
        return False


def json_text(data: object, *, indent: int | None = 2, stream: TextIO | None = None) -> str:
    """`data` as JSON for `stream` (default stdout): valid, whole, nothing raw on a terminal.

    Every non-printable character in a string is a ``\\u`` escape; when
    `stream`'s encoding is not a UTF, every non-ASCII one is.
    """
    if not _utf_output(stream if stream is not None else sys.stdout):
        return json.dumps(data, indent=indent, ensure_ascii=True, allow_nan=False)
    text = json.dumps(data, indent=indent, ensure_ascii=False, allow_nan=False)
    if indent is None:
        return _escaped(text, _json_escape)
    # One value per line: only the lines holding a non-printable character are rewritten.
    return "\n".join(_escaped(line, _json_escape) for line in text.split("\n"))


def tolerant_streams() -> None:
    """Standard output and error write what their encoding cannot hold as escapes.

    Only where the encoding is not a UTF: `printable` and `json_text` leave
    nothing a UTF stream refuses (a strict one included, which is how the
    tests hold them to it), but a console on a legacy code page refuses more.
    """
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None and not _utf_output(stream):
            with contextlib.suppress(ValueError, OSError):  # a stream that refuses
                reconfigure(errors="backslashreplace")
