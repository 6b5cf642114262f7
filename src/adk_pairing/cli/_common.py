"""What every command shares: one-line errors, quiet logs, JSON and time formatting.

An operator reads this tool's output in a terminal or a cron mail, so a
failure is one line saying what went wrong and how to fix it (exit code 2),
never a traceback unless ``--debug`` asks for one. Every message that might
contain a store URI goes through `adk_pairing.shells.masking` first: other libraries' text
through `mask_secrets`, our own through `mask_uri`, so our words are never masked.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sys
import traceback
import warnings
from collections.abc import Coroutine, Iterator
from typing import Any, NoReturn, TypeVar

import typer
from rich.console import Console
from rich.segment import Segment, Segments
from rich.table import Table

# URI_EXAMPLES and no_adk_tables_message are the library's words, named here
# for the commands that import them from this module.
from ..shells.errors import URI_EXAMPLES as URI_EXAMPLES
from ..shells.errors import causes, escape_hint
from ..shells.errors import no_adk_tables_message as no_adk_tables_message
from ..shells.masking import mask_secrets, mask_uri
from ..shells.store_failures import store_failure
from ._printable import json_text, printable

T = TypeVar("T")

#: Exit codes: 0 fine, 1 a finding or a failed check, 2 the tool could not do its job
#: for a reason it names; 70 (sysexits' EX_SOFTWARE) a failure it does not recognise,
#: which must never read as a finding; 141 (128 + SIGPIPE, as a shell reports a
#: writer killed by a closed pipe) the reader of the output went away.
EXIT_FOUND = 1
EXIT_ERROR = 2
EXIT_UNEXPECTED = 70
EXIT_PIPE_CLOSED = 141


class CliError(Exception):
    """A failure the operator can fix; its message is the whole explanation."""

    def __init__(self, message: str, exit_code: int = EXIT_ERROR) -> None:
        super().__init__(message)
        self.exit_code = exit_code


#: Line width when stdout is not a terminal: wide enough that piped output
#: (cron mail, grep) keeps one record per line.
PIPE_WIDTH = 200


class ToolConsole(Console):
    """A console whose closed pipe is the command's to report (`adk_pairing.cli.guarded`).

    rich's own handling exits 1, which is ``--fail-on``'s "found".
    """

    def on_broken_pipe(self) -> None:
        self.quiet = True
        raise BrokenPipeError


def stdout_console() -> Console:
    """Terminal width on a terminal; `PIPE_WIDTH` and no wrapping when piped."""
    console = ToolConsole(highlight=False, emoji=False)
    if not console.is_terminal:
        console = ToolConsole(highlight=False, emoji=False, width=PIPE_WIDTH, soft_wrap=True)
    return console


def stderr_console() -> Console:
    return ToolConsole(stderr=True, highlight=False, emoji=False)


@contextlib.contextmanager
def output_policy(debug: bool, uri: str | None = None) -> Iterator[None]:
    """Library logs and warnings off (or, with `debug`, all on) for one command.

    Without a handler anywhere, Python prints WARNING records through its
    last-resort handler, and ADK logs connection failures at ERROR before
    raising; a `NullHandler` on the root logger keeps them off the terminal
    without stopping propagation (so embedding code and tests still see the
    records). With `debug`, every record is printed with the password of
    `uri` masked: drivers and ADK may log the URI or a piece of it.
    Everything is restored on exit.
    """
    root = logging.getLogger()
    handler: logging.Handler
    previous_level = root.level
    if debug:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(_MaskingFormatter("%(levelname)s %(name)s: %(message)s", uri))
        root.setLevel(logging.INFO)
    else:
        handler = logging.NullHandler()
    root.addHandler(handler)
    try:
        with warnings.catch_warnings():
            if not debug:
                warnings.simplefilter("ignore")
            yield
    finally:
        root.removeHandler(handler)
        root.setLevel(previous_level)


def run(coroutine: Coroutine[Any, Any, T], *, uri: str | None, debug: bool) -> T:
    """Runs `coroutine`, turning any failure into one line: exit code 2 when the
    failure is one `explain` recognises, `EXIT_UNEXPECTED` otherwise.

    A closed output pipe is not the store's failure: it goes up to the
    command's guard (`adk_pairing.cli.guarded`).
    """
    try:
        with output_policy(debug, uri):
            return asyncio.run(coroutine)
    except CliError as error:
        fail(str(error), debug=debug, exit_code=error.exit_code, uri=uri)
    except KeyboardInterrupt:
        fail("interrupted", debug=False, exit_code=130)
    except BrokenPipeError:
        raise
    except Exception as error:
        where = mask_uri(uri) if uri else "the store"
        message = recognised(error, uri, where)
        if message is None:
            fail(unexpected(error, uri, where), debug=debug, exit_code=EXIT_UNEXPECTED, uri=uri)
        fail(message, debug=debug, uri=uri)


class _MaskingFormatter(logging.Formatter):
    """A formatter whose output (message and traceback) has `uri`'s secrets masked
    and nothing a terminal would act on (`printable`)."""

    def __init__(self, fmt: str, uri: str | None) -> None:
        super().__init__(fmt)
        self._uri = uri

    def format(self, record: logging.LogRecord) -> str:
        # Records quote store strings (a call's name, a session id): escaped line by line.
        text = mask_secrets(super().format(record), self._uri)
        return "\n".join(printable(line) for line in text.split("\n"))


def fail(
    message: str, *, debug: bool, exit_code: int = EXIT_ERROR, uri: str | None = None
) -> NoReturn:
    """Prints `message` (and the traceback when debugging) and exits.

    Both are masked again for `uri`: a message built elsewhere may quote it.
    """
    console = stderr_console()
    if debug and sys.exc_info()[0] is not None:
        for line in mask_secrets(traceback.format_exc(), uri).splitlines():
            console.print(printable(line), markup=False, soft_wrap=True)
    message = mask_secrets(message, uri, embedded=False)
    console.print(f"error: {printable(message, ERROR_LINE_LIMIT)}", markup=False, soft_wrap=True)
    raise typer.Exit(exit_code)


#: An error line's length at most: what it quotes from the store or a driver is cut.
ERROR_LINE_LIMIT = 2_000


def explain(error: BaseException, uri: str | None, *, store_name: str | None = None) -> str:
    """One line saying what failed and how to fix it, with secrets masked.

    The library's line when it has one (`adk_pairing.shells.store_failures.store_failure`:
    the same words the library raises); else the failure's type and first line.
    The store is called `store_name`, by default its masked URI.
    """
    where = store_name or (mask_uri(uri) if uri else "the store")
    return recognised(error, uri, where) or _unrecognised(error, uri, where)


def recognised(error: BaseException, uri: str | None, where: str) -> str | None:
    """`explain`'s line for a failure whose cause it knows, else None."""
    known = store_failure(error, uri, store_name=where)
    if known is not None:
        return mask_secrets(str(known), uri, embedded=False)
    for cause in causes(error):
        if isinstance(cause, ValueError) and uri and escape_hint(uri):
            # A driver misread the URI: its password holds a raw delimiter.
            return bad_uri_message(cause, uri)
        if (
            isinstance(cause, OSError)
            and cause.errno is not None
            and not isinstance(cause, BrokenPipeError)
        ):
            return f"cannot connect to {where}: {mask_secrets(str(cause), uri)}."
    return None


def _unrecognised(error: BaseException, uri: str | None, where: str) -> str:
    """The line for a failure `recognised` does not know: its type and first line."""
    detail = mask_secrets(str(error), uri).strip().splitlines()
    summary = detail[0] if detail else ""
    return (
        f"{type(error).__name__} while reading {where}: {summary} "
        "(run again with --debug for the traceback)"
    )


def unexpected(error: BaseException, uri: str | None, where: str) -> str:
    """The line for a command stopped by a failure nobody recognised."""
    return f"unexpected {_unrecognised(error, uri, where)}"


def bad_uri_message(error: ValueError, uri: str) -> str:
    """Why the service could not be built from `uri` (its constructor's ValueError)."""
    # A missing or synchronous driver is the library's line (UnsupportedSchemeError).
    message = mask_secrets(str(error), uri).strip().rstrip(".")
    hint = f"Use a URI ADK accepts, e.g. {URI_EXAMPLES}."
    return f"bad store URI: {message}. {hint}{escape_hint(uri)}"


def print_table(console: Console, table: Table) -> None:
    """`table` without the padding rich adds after each line's last cell."""
    for line in console.render_lines(table, pad=False):
        while line and not line[-1].text.strip() and not line[-1].control:
            line.pop()
        if line:
            last = line[-1]
            line[-1] = Segment(last.text.rstrip(), last.style, last.control)
        line.append(Segment.line())
        console.print(Segments(line), soft_wrap=True, end="")


def dumps(data: object) -> str:
    """JSON for machine readers: stable key order, no NaN, any stored string (`json_text`)."""
    return json_text(data)


def human_age(seconds: float) -> str:
    """`seconds` as the two largest units, e.g. ``3d 4h`` or ``12m 5s``."""
    seconds = max(0, int(seconds))
    units = (("d", 86_400), ("h", 3_600), ("m", 60), ("s", 1))
    parts: list[str] = []
    for suffix, size in units:
        if seconds >= size or (suffix == "s" and not parts):
            amount, seconds = divmod(seconds, size)
            parts.append(f"{amount}{suffix}")
        if len(parts) == 2:
            break
    return " ".join(parts)


def short(text: str, limit: int) -> str:
    """`text` on one line, cut to `limit` characters with an ellipsis."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


_AGO_UNITS = {"s": 1, "m": 60, "h": 3_600, "d": 86_400, "w": 604_800}


def parse_time(text: str, *, now: float | None = None) -> float:
    """An operator's time bound as epoch seconds.

    Accepts an ISO 8601 date or date-time (UTC when it names no zone), epoch
    seconds, or an age such as ``30m``, ``12h``, ``7d`` (that long before now).
    """
    import datetime

    value = text.strip()
    unit = value[-1:].lower()
    if unit in _AGO_UNITS and value[:-1].replace(".", "", 1).isdigit():
        reference = time_now() if now is None else now
        return reference - float(value[:-1]) * _AGO_UNITS[unit]
    try:
        return float(value)
    except ValueError:
        pass
    try:
        moment = datetime.datetime.fromisoformat(value)
    except ValueError:
        raise CliError(
            f"{text!r} is not a time: use ISO 8601 (2026-05-01 or 2026-05-01T12:00:00+02:00, "
            "UTC when no zone is given), epoch seconds, or an age such as 30m, 12h, 7d"
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=datetime.UTC)
    return moment.timestamp()


def time_now() -> float:
    import time

    return time.time()
