"""The ``adk-pairing`` operator command: ``demo``, ``scan`` and ``show``.

Exit codes: 0 success; 1 the scan found what ``--fail-on`` names, or a demo
check failed; 2 the command could not do its job (bad URI, unreachable
server, wrong credentials, unknown session), reported in one line.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from ._common import EXIT_ERROR, EXIT_FOUND, dumps, run, stdout_console

app = typer.Typer(
    name="adk-pairing",
    help="Find and show unanswered tool calls in ADK session stores, and demo the repair.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)

UriArg = Annotated[
    str,
    typer.Argument(
        metavar="URI",
        help="The session store, e.g. postgresql+asyncpg://user:pw@host:5432/db, "
        "sqlite+aiosqlite:///sessions.db, redis://localhost:6379/0 "
        "(a pairing+ prefix is accepted and ignored: the stored data is read).",
        show_default=False,
    ),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON instead of text.")]
DebugOpt = Annotated[
    bool, typer.Option("--debug", help="Show library logs and tracebacks on errors.")
]
OptionOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--option",
        "-o",
        metavar="KEY=VALUE",
        help="Passed to the store's factory, e.g. -o key_prefix=myapp: for Redis "
        "(VALUE is parsed as JSON when it can be).",
    ),
]


@app.command()
def demo(
    db: Annotated[
        Path | None,
        typer.Option(
            "--db", metavar="PATH", help="SQLite file to use and keep (default: a temp dir)."
        ),
    ] = None,
    json_output: JsonOpt = False,
    debug: DebugOpt = False,
) -> None:
    """Kill a real ADK turn mid-tool, show what ADK does next, and show the repair."""
    from ._demo import render, run_demo

    report = run(run_demo(db, debug=debug), uri=None, debug=debug)
    if json_output:
        print(dumps(report.to_json()))
    else:
        render(report, stdout_console())
    if not report.ok:
        raise typer.Exit(EXIT_FOUND)


@app.command()
def scan(
    uri: UriArg,
    app_name: Annotated[
        str,
        typer.Option("--app", metavar="APP", help="App name to scan (ADK lists sessions per app)."),
    ],
    user: Annotated[
        str | None,
        typer.Option("--user", metavar="USER", help="Only this user's sessions."),
    ] = None,
    fail_on: Annotated[
        str,
        typer.Option(
            "--fail-on",
            metavar="never|missing|pending|any",
            help="Exit 1 when such calls are found (for cron and CI).",
        ),
    ] = "never",
    concurrency: Annotated[
        int, typer.Option("--concurrency", min=1, help="Sessions read at once.")
    ] = 8,
    limit: Annotated[
        int, typer.Option("--limit", min=0, help="Rows shown in the text table.")
    ] = 50,
    option: OptionOpt = None,
    json_output: JsonOpt = False,
    debug: DebugOpt = False,
) -> None:
    """Report stored sessions with missing (lost) and pending (held-open) calls."""
    from ._common import stderr_console
    from ._scan import FAIL_ON_CHOICES, ScanResult, render, scan_store, scan_with_progress
    from ._store import open_read_only, parse_options

    if fail_on not in FAIL_ON_CHOICES:
        raise typer.BadParameter(
            f"{fail_on!r}; choose one of {', '.join(FAIL_ON_CHOICES)}", param_hint="--fail-on"
        )
    err = stderr_console()

    async def go() -> ScanResult:
        store = open_read_only(uri, parse_options(option))
        try:
            if err.is_terminal and not debug:
                return await scan_with_progress(
                    store, app=app_name, user=user, concurrency=concurrency, console=err
                )
            return await scan_store(store, app=app_name, user=user, concurrency=concurrency)
        finally:
            await store.close()

    result = run(go(), uri=uri, debug=debug)
    if json_output:
        print(dumps(result.to_json()))
    else:
        render(result, stdout_console(), limit=limit)
    if result.unreadable:
        err.print(
            f"error: {len(result.unreadable)} sessions could not be read; the scan is incomplete",
            markup=False,
        )
        raise typer.Exit(EXIT_ERROR)
    raise typer.Exit(result.exit_code(fail_on))


@app.command()
def show(
    uri: UriArg,
    app_name: Annotated[str, typer.Option("--app", metavar="APP", help="App name.")],
    user: Annotated[str, typer.Option("--user", metavar="USER", help="User id.")],
    session: Annotated[str, typer.Option("--session", metavar="SESSION", help="Session id.")],
    option: OptionOpt = None,
    json_output: JsonOpt = False,
    debug: DebugOpt = False,
) -> None:
    """Print a session's stored events and its repaired view side by side."""
    from ._show import ShownSession, load, render
    from ._store import open_read_only, parse_options

    async def go() -> ShownSession:
        store = open_read_only(uri, parse_options(option))
        try:
            return await load(store, app=app_name, user=user, session_id=session)
        finally:
            await store.close()

    shown = run(go(), uri=uri, debug=debug)
    if json_output:
        print(dumps(shown.to_json()))
    else:
        render(shown, stdout_console())


def main() -> None:
    """Console-script entry point (``adk-pairing``)."""
    app(prog_name="adk-pairing")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
