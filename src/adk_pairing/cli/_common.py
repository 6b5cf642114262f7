"""What every command shares: one-line errors, quiet logs, JSON and time formatting.

An operator reads this tool's output in a terminal or a cron mail, so a
failure is one line saying what went wrong and how to fix it (exit code 2),
never a traceback unless ``--debug`` asks for one. Every message that might
contain a store URI goes through `adk_pairing.masking` first: other libraries' text
through `mask_secrets`, our own through `mask_uri`, so our words are never masked.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import socket
import sqlite3
import sys
import traceback
import warnings
from collections.abc import Coroutine, Iterator
from typing import Any, NoReturn, TypeVar

import typer
from rich.console import Console
from rich.segment import Segment, Segments
from rich.table import Table

from ..shells.masking import mask_secrets, mask_uri, uri_password

T = TypeVar("T")

#: What a store URI looks like, for messages.
URI_EXAMPLES = (
    "postgresql+asyncpg://user:password@host:5432/db, "
    "sqlite+aiosqlite:///sessions.db or redis://localhost:6379/0"
)

#: Exit codes: 0 fine, 1 a finding or a failed check, 2 the tool could not do its job.
EXIT_FOUND = 1
EXIT_ERROR = 2


class CliError(Exception):
    """A failure the operator can fix; its message is the whole explanation."""

    def __init__(self, message: str, exit_code: int = EXIT_ERROR) -> None:
        super().__init__(message)
        self.exit_code = exit_code


#: Line width when stdout is not a terminal: wide enough that piped output
#: (cron mail, grep) keeps one record per line.
PIPE_WIDTH = 200


def stdout_console() -> Console:
    """Terminal width on a terminal; `PIPE_WIDTH` and no wrapping when piped."""
    console = Console(highlight=False)
    if not console.is_terminal:
        console = Console(highlight=False, width=PIPE_WIDTH, soft_wrap=True)
    return console


def stderr_console() -> Console:
    return Console(stderr=True, highlight=False)


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
    """Runs `coroutine`, turning any failure into one line and exit code 2."""
    try:
        with output_policy(debug, uri):
            return asyncio.run(coroutine)
    except CliError as error:
        fail(str(error), debug=debug, exit_code=error.exit_code, uri=uri)
    except KeyboardInterrupt:
        fail("interrupted", debug=False, exit_code=130)
    except Exception as error:
        fail(explain(error, uri), debug=debug, uri=uri)


class _MaskingFormatter(logging.Formatter):
    """A formatter whose output (message and traceback) has `uri`'s secrets masked."""

    def __init__(self, fmt: str, uri: str | None) -> None:
        super().__init__(fmt)
        self._uri = uri

    def format(self, record: logging.LogRecord) -> str:
        return mask_secrets(super().format(record), self._uri)


def fail(
    message: str, *, debug: bool, exit_code: int = EXIT_ERROR, uri: str | None = None
) -> NoReturn:
    """Prints `message` (and the traceback when debugging) and exits.

    Both are masked again for `uri`: a message built elsewhere may quote it.
    """
    console = stderr_console()
    if debug and sys.exc_info()[0] is not None:
        console.print(mask_secrets(traceback.format_exc(), uri), markup=False)
    message = mask_secrets(message, uri, embedded=False)
    console.print(f"error: {message}", markup=False, soft_wrap=True)
    raise typer.Exit(exit_code)


def _causes(error: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


def _type_names(error: BaseException) -> set[str]:
    return {cls.__name__ for cls in type(error).__mro__}


def explain(error: BaseException, uri: str | None, *, store_name: str | None = None) -> str:
    """One line saying what failed and how to fix it, with secrets masked.

    Recognises failures by their type (and, for drivers wrapped by SQLAlchemy,
    by the driver's exception in the cause chain), so the message names the
    real problem rather than the wrapper. The store is called `store_name`,
    by default its masked URI.
    """
    where = store_name or (mask_uri(uri) if uri else "the store")
    chain = list(_causes(error))
    for cause in chain:
        names = _type_names(cause)
        lines = mask_secrets(str(cause), uri).strip().splitlines()
        text = lines[0].rstrip(".") if lines else ""
        if names & {"InvalidAuthorizationSpecificationError", "InvalidPasswordError"}:
            return (
                f"{where} rejected the login: {text}. Fix the user name or password in the URI."
                + _escape_hint(uri, LOGIN_HINT_CHARACTERS)
            )
        if "InvalidCatalogNameError" in names:
            return f"{where}: {text}. Fix the database name in the URI."
        code, mysql_text = _mysql_error(cause, uri)
        if code in MYSQL_LOGIN_ERRORS:
            return (
                f"{where} rejected the login: {mysql_text}. "
                "Fix the user name or password in the URI."
                + _escape_hint(uri, LOGIN_HINT_CHARACTERS)
            )
        if code in MYSQL_DATABASE_ERRORS:
            return f"{where}: {mysql_text}. Fix the database name in the URI" + (
                ", or grant the user access to it." if code == 1044 else "."
            )
        if "AuthenticationError" in names or (
            "ResponseError" in names and ("WRONGPASS" in text or "NOAUTH" in text)
        ):
            return (
                f"{where} rejected the login: {text}. Fix the password in the URI."
                + _escape_hint(uri, LOGIN_HINT_CHARACTERS)
            )
        if isinstance(cause, socket.gaierror):
            return (
                f"cannot resolve the host of {where}: {text}. Check the host name in the URI."
                + _escape_hint(uri)
            )
        if isinstance(cause, ConnectionRefusedError | TimeoutError) or (
            "ConnectionError" in names and "redis" in type(cause).__module__
        ):
            return (
                f"cannot connect to {where}: {text or type(cause).__name__}. "
                "Is the server running, and are the host and port in the URI right?"
            )
        if "read-only transaction" in text or "readonly database" in text:
            return no_adk_tables_message(where)
        if isinstance(cause, sqlite3.OperationalError) and "unable to open" in text:
            return f"cannot open the SQLite database of {where}: {text}."
    first = chain[0]
    if isinstance(first, ValueError):
        message = mask_secrets(str(first), uri).strip().rstrip(".")
        if "module not found" in message or "synchronous driver" in message:
            hint = "Install the URI's database driver, or name an async one it has"
        else:
            hint = "Use a URI ADK accepts"
        return f"bad store URI: {message}. {hint}, e.g. {URI_EXAMPLES}.{_escape_hint(uri)}"
    for cause in chain:
        if isinstance(cause, OSError) and cause.errno is not None:
            return f"cannot connect to {where}: {mask_secrets(str(cause), uri)}."
    detail = mask_secrets(str(first), uri).strip().splitlines()
    summary = detail[0] if detail else ""
    return (
        f"{type(first).__name__} while reading {where}: {summary} "
        "(run again with --debug for the traceback)"
    )


#: MySQL/MariaDB server errors that refuse the login: access denied (with a
#: password, and without one where the account wants one).
MYSQL_LOGIN_ERRORS = frozenset({1045, 1698})
#: ... that refuse the database: access to it denied (also what a user without
#: rights gets for a database that does not exist), and unknown database.
MYSQL_DATABASE_ERRORS = frozenset({1044, 1049})


def _mysql_error(error: BaseException, uri: str | None) -> tuple[int | None, str]:
    """(server error code, its message masked) of a MySQL driver's error, else (None, "").

    PyMySQL (under aiomysql) and asyncmy raise their errors with the server's
    code and message as ``args``; their ``str`` is the tuple's.
    """
    module = type(error).__module__.partition(".")[0]
    args = error.args
    if module not in {"pymysql", "aiomysql", "asyncmy", "MySQLdb"} or len(args) < 2:
        return None, ""
    if not isinstance(args[0], int):
        return None, ""
    return args[0], mask_secrets(str(args[1]), uri).strip().rstrip(".")


def no_adk_tables_message(where: str) -> str:
    """What to say about a store holding none of ADK's tables (opened read-only, it stays so)."""
    return (
        f"{where} has no ADK session tables (or an older schema ADK would "
        "upgrade), and adk-pairing opens stores read-only. Check that the URI "
        "names the database your ADK app uses."
    )


#: A password holding one of these may be sent other than written: "%41" is
#: read as "A", and the others end it early for one driver or another.
LOGIN_HINT_CHARACTERS = "%/?#@"


def _escape_hint(uri: str | None, characters: str = "#?/@ ") -> str:
    """Why a URI whose password holds one of `characters` is misread, and the fix."""
    password = uri_password(uri) if uri else None
    if not password or not any(char in password for char in characters):
        return ""
    if "%" in characters:
        return (
            " The password holds %, /, ?, # or @, which a URI reads as escapes and delimiters;"
            " if they are meant literally, percent-encode them: % as %25, / as %2F, ? as %3F,"
            " # as %23, @ as %40."
        )
    return (
        " The password holds a character that ends it early (#, ?, /, @ or a space);"
        " percent-encode it: # as %23, ? as %3F, / as %2F, @ as %40, space as %20."
    )


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
    """JSON for machine readers: stable key order, ASCII-safe, no NaN."""
    return json.dumps(data, indent=2, sort_keys=False, ensure_ascii=False, allow_nan=False)


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
