"""What every command shares: one-line errors, quiet logs, JSON and time formatting.

An operator reads this tool's output in a terminal or a cron mail, so a
failure is one line saying what went wrong and how to fix it (exit code 2),
never a traceback unless ``--debug`` asks for one. Every message that might
contain a store URI goes through `adk_pairing.factory.mask_secrets` first.
"""

from __future__ import annotations

import asyncio
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

from ..factory import mask_secrets, mask_uri

T = TypeVar("T")

#: Exit codes: 0 fine, 1 a finding or a failed check, 2 the tool could not do its job.
EXIT_OK = 0
EXIT_FOUND = 1
EXIT_ERROR = 2

#: Loggers whose records would otherwise reach the terminal through Python's
#: last-resort handler (ADK logs connection failures at ERROR before raising).
_QUIET_LOGGERS = ("google_adk", "adk_pairing", "sqlalchemy", "aiosqlite", "asyncio")


class CliError(Exception):
    """A failure the operator can fix; its message is the whole explanation."""

    def __init__(self, message: str, exit_code: int = EXIT_ERROR) -> None:
        super().__init__(message)
        self.exit_code = exit_code


def stdout_console() -> Console:
    return Console(highlight=False, soft_wrap=False)


def stderr_console() -> Console:
    return Console(stderr=True, highlight=False)


def configure_logging(debug: bool) -> None:
    """Silences library logs unless `debug`, when everything goes to stderr."""
    if debug:
        logging.basicConfig(
            level=logging.INFO,
            stream=sys.stderr,
            format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        )
        return
    warnings.simplefilter("ignore")
    for name in _QUIET_LOGGERS:
        logger = logging.getLogger(name)
        if not any(isinstance(h, logging.NullHandler) for h in logger.handlers):
            logger.addHandler(logging.NullHandler())
        logger.propagate = False


def run(coroutine: Coroutine[Any, Any, T], *, uri: str | None, debug: bool) -> T:
    """Runs `coroutine`, turning any failure into one line and exit code 2."""
    try:
        return asyncio.run(coroutine)
    except CliError as error:
        fail(mask_secrets(str(error)), debug=debug, exit_code=error.exit_code)
    except KeyboardInterrupt:
        fail("interrupted", debug=False, exit_code=130)
    except Exception as error:
        fail(explain(error, uri), debug=debug)


def fail(message: str, *, debug: bool, exit_code: int = EXIT_ERROR) -> NoReturn:
    """Prints `message` (and the traceback when debugging) and exits."""
    console = stderr_console()
    if debug and sys.exc_info()[0] is not None:
        console.print(mask_secrets(traceback.format_exc()), markup=False)
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


def explain(error: BaseException, uri: str | None) -> str:
    """One line saying what failed and how to fix it, with secrets masked.

    Recognises failures by their type (and, for drivers wrapped by SQLAlchemy,
    by the driver's exception in the cause chain), so the message names the
    real problem rather than the wrapper.
    """
    where = mask_uri(uri) if uri else "the store"
    chain = list(_causes(error))
    for cause in chain:
        names = _type_names(cause)
        text = mask_secrets(str(cause)).strip().splitlines()[0] if str(cause).strip() else ""
        if names & {"InvalidAuthorizationSpecificationError", "InvalidPasswordError"}:
            return f"{where} rejected the login: {text}. Fix the user name or password in the URI."
        if "InvalidCatalogNameError" in names:
            return f"{where}: {text}. Fix the database name in the URI."
        if "AuthenticationError" in names or (
            "ResponseError" in names and ("WRONGPASS" in text or "NOAUTH" in text)
        ):
            return f"{where} rejected the login: {text}. Fix the password in the URI."
        if isinstance(cause, socket.gaierror):
            return f"cannot resolve the host of {where}: {text}. Check the host name in the URI."
        if isinstance(cause, ConnectionRefusedError | TimeoutError) or (
            "ConnectionError" in names and "redis" in type(cause).__module__
        ):
            return (
                f"cannot connect to {where}: {text or type(cause).__name__}. "
                "Is the server running, and are the host and port in the URI right?"
            )
        if "read-only transaction" in text or "readonly database" in text:
            return (
                f"{where} has no ADK session tables (or an older schema ADK would "
                "upgrade), and adk-pairing opens stores read-only. Check that the URI "
                "names the database your ADK app uses."
            )
        if isinstance(cause, sqlite3.OperationalError) and "unable to open" in text:
            return f"cannot open the SQLite database of {where}: {text}."
    first = chain[0]
    if isinstance(first, ValueError):
        return f"bad store URI: {mask_secrets(str(first))}"
    for cause in chain:
        if isinstance(cause, OSError) and cause.errno is not None:
            return f"cannot connect to {where}: {mask_secrets(str(cause))}."
    detail = mask_secrets(str(first)).strip().splitlines()
    summary = detail[0] if detail else ""
    return (
        f"{type(first).__name__} while reading {where}: {summary} "
        "(run again with --debug for the traceback)"
    )


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
