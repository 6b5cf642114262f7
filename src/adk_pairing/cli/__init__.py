"""The ``adk-pairing`` operator command: ``demo``, ``scan`` and ``show``.

Exit codes: 0 success; 1 the scan found what ``--fail-on`` names, or a demo
check failed; 2 the command could not do its job (bad URI, unreachable
server, wrong credentials, unknown session), reported in one line; 70 an
unexpected error, also one line; 130 / 143 stopped by SIGINT / SIGTERM; 141
the output's reader went away (``| head``).
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Annotated, Any, NoReturn

import click
import typer
from typer.core import TyperCommand, TyperGroup

from ._common import (
    EXIT_FOUND,
    EXIT_PIPE_CLOSED,
    EXIT_UNEXPECTED,
    dumps,
    fail,
    run,
    stdout_console,
)
from ._options import (
    AppsOpt,
    BatchSizeOpt,
    ConcurrencyOpt,
    DebugOpt,
    FailOnOpt,
    JobsOpt,
    JsonLinesOpt,
    JsonOpt,
    LimitOpt,
    MergeOpt,
    OnlyUserOpt,
    OptionOpt,
    ReaderOpt,
    ShardOpt,
    SinceOpt,
    StrictOpt,
    TargetsArg,
    TimeoutOpt,
    UntilOpt,
    UriArg,
)
from ._printable import printable, tolerant_streams

try:  # typer carries its own copy of click (0.2x on), whose exceptions it raises
    from typer._click import exceptions as click_errors
except ImportError:  # pragma: no cover - an older typer on click itself
    from click import exceptions as click_errors  # type: ignore[no-redef]


class PlainHelpCommand(TyperCommand):
    """Help whose arguments read as written: ``URI``, not typer's ``{URI}`` and ``<str>``."""

    def _arguments(self, ctx: click.Context) -> list[click.Parameter]:
        return [p for p in self.get_params(ctx) if p.param_type_name == "argument"]

    def collect_usage_pieces(self, ctx: click.Context) -> list[str]:
        return ["[OPTIONS]", *(p.metavar or (p.name or "").upper() for p in self._arguments(ctx))]

    def format_options(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        arguments = [
            (p.metavar or (p.name or "").upper(), getattr(p, "help", None) or "")
            for p in self._arguments(ctx)
        ]
        options = [
            record
            for p in self.get_params(ctx)
            if p.param_type_name == "option" and (record := p.get_help_record(ctx)) is not None
        ]
        if arguments:
            with formatter.section("Arguments"):
                formatter.write_dl(arguments)
        if options:
            with formatter.section("Options"):
                formatter.write_dl(options)


class ToolGroup(TyperGroup):
    """The command group, whose usage errors read like the tool's own: ``error: …``.

    Click prints ``Error: …``; the tool's failures print ``error: …``. One
    style, so a reader (or a grep in a cron mail) finds both the same way.
    """

    def main(  # type: ignore[override]
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, standalone_mode, **extra)
        try:
            code = super().main(args, prog_name, complete_var, False, **extra)
        except click_errors.UsageError as error:
            if isinstance(error, _NO_ARGS_IS_HELP):
                error.show()  # the help itself, not an error
            else:
                _show_usage_error(error)
            sys.exit(error.exit_code)
        except click_errors.ClickException as error:
            print(f"error: {printable(error.format_message())}", file=sys.stderr)
            sys.exit(error.exit_code)
        except typer.Abort:
            print("error: interrupted", file=sys.stderr)
            sys.exit(130)
        sys.exit(code if isinstance(code, int) else 0)


#: What click (8.2 on) raises to print a group's help when no command is given.
_NO_ARGS_IS_HELP: Any = getattr(click_errors, "NoArgsIsHelpError", ())


def _show_usage_error(error: click_errors.UsageError) -> None:
    """Click's usage error (usage line, where to find help) ending in ``error: …``."""
    ctx = error.ctx
    if ctx is not None:
        hint = ""
        if ctx.command.get_help_option(ctx) is not None:
            hint = f"Try '{ctx.command_path} {ctx.help_option_names[0]}' for help.\n"
        print(f"{ctx.get_usage()}\n{hint}", file=sys.stderr)
    print(f"error: {printable(error.format_message())}", file=sys.stderr)


def guarded(command: Callable[..., None]) -> Callable[..., None]:
    """`command` with the tool's last guards, the same for every command.

    * A closed output pipe (``scan … | head -1``) ends the command quietly with
      `EXIT_PIPE_CLOSED`, as a shell reports a writer that SIGPIPE ended.
    * Any other failure nothing recognised is one line, with the traceback
      only under ``--debug``, and `EXIT_UNEXPECTED`: never 1, ``--fail-on``'s
      "found", and never a message about the URI (`_common.run` gives those,
      for failures it recognises).
    * Output streams on a legacy code page escape what they cannot encode
      (`tolerant_streams`).
    """

    @functools.wraps(command)
    def guarded_command(*args: Any, **kwargs: Any) -> None:
        tolerant_streams()
        try:
            command(*args, **kwargs)
        except BrokenPipeError:
            _output_closed()
        except (typer.Exit, typer.Abort, click_errors.ClickException):
            raise
        except Exception as error:
            targets = kwargs.get("targets") or [None]
            uri = kwargs.get("uri") or targets[0]
            detail = str(error).strip().splitlines()
            fail(
                f"unexpected {type(error).__name__}: {detail[0] if detail else ''} "
                "(run again with --debug for the traceback)",
                debug=bool(kwargs.get("debug")),
                exit_code=EXIT_UNEXPECTED,
                uri=uri,
            )

    return guarded_command


def _output_closed() -> NoReturn:
    """The output's reader went away: nothing more to say, and no flush error at exit."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):  # a stream without a descriptor (tests)
        pass
    raise typer.Exit(EXIT_PIPE_CLOSED)


app = typer.Typer(
    name="adk-pairing",
    cls=ToolGroup,
    help="Find and show unanswered tool calls in ADK session stores, and demo the repair.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _print_version(value: bool) -> None:
    if value:
        from .. import __version__

        print(f"adk-pairing {__version__}")
        raise typer.Exit()


@app.callback()
def _options(
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            callback=_print_version,
            is_eager=True,
            help="Print adk-pairing's version and exit.",
        ),
    ] = False,
) -> None:
    """Find and show unanswered tool calls in ADK session stores, and demo the repair."""


@app.command(cls=PlainHelpCommand, short_help="Kill a real ADK turn mid-tool and show the repair.")
@guarded
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
    from ._demo import run_demo
    from ._demo_render import render

    report = run(run_demo(db, debug=debug), uri=None, debug=debug)
    if json_output:
        print(dumps(report.to_json()))
    else:
        render(report, stdout_console())
    if not report.ok:
        raise typer.Exit(EXIT_FOUND)


@app.command(
    cls=PlainHelpCommand, short_help="Report stored sessions with missing and pending calls."
)
@guarded
def scan(
    targets: TargetsArg = None,
    app_names: AppsOpt = None,
    user: OnlyUserOpt = None,
    since: SinceOpt = None,
    until: UntilOpt = None,
    fail_on: FailOnOpt = "never",
    reader: ReaderOpt = "auto",
    concurrency: ConcurrencyOpt = 8,
    batch_size: BatchSizeOpt = 100,
    timeout: TimeoutOpt = None,
    limit: LimitOpt = 50,
    strict: StrictOpt = False,
    shard: ShardOpt = None,
    jobs: JobsOpt = 1,
    merge: MergeOpt = False,
    option: OptionOpt = None,
    json_output: JsonOpt = False,
    json_lines: JsonLinesOpt = False,
    debug: DebugOpt = False,
) -> None:
    """Report stored sessions with missing (lost) and pending (held-open) calls."""
    from ._common import parse_time
    from ._direct import Shard
    from ._scan_modes import (
        Output,
        StoreScan,
        check_choices,
        merge_shards,
        one_store,
        scan_in_jobs,
        scan_in_process,
    )
    from ._store_scan import ReaderChoice, ScanOptions

    output = Output(json_output, json_lines, limit, fail_on)
    check_choices(reader, output)
    if merge:
        merge_shards(targets, output, debug=debug)
    uri = one_store(targets)
    try:
        parsed_shard = Shard.parse(shard) if shard is not None else None
    except ValueError as error:
        raise typer.BadParameter(str(error), param_hint="--shard") from None

    def make_options() -> ScanOptions:
        return ScanOptions(
            apps=app_names or None,
            user=user,
            since=parse_time(since) if since is not None else None,
            until=parse_time(until) if until is not None else None,
            concurrency=concurrency,
            batch_size=batch_size,
            reader=ReaderChoice(reader),
            timeout=timeout,
            strict=strict,
            shard=parsed_shard,
        )

    store_scan = StoreScan(uri, option, make_options, output, debug)
    if jobs > 1:
        scan_in_jobs(jobs, store_scan)
    scan_in_process(store_scan)


@app.command(cls=PlainHelpCommand, short_help="Print a session as stored and as repaired.")
@guarded
def show(
    uri: UriArg,
    app_name: Annotated[str, typer.Option("--app", metavar="APP", help="App name.")],
    user: Annotated[str, typer.Option("--user", metavar="USER", help="User id.")],
    session: Annotated[
        str | None,
        typer.Option(
            "--session",
            metavar="SESSION",
            help="Session id. Without it, the user's sessions in the app are listed.",
        ),
    ] = None,
    option: OptionOpt = None,
    json_output: JsonOpt = False,
    debug: DebugOpt = False,
) -> None:
    """Print a session's stored events and its repaired view side by side."""
    from ._show import ShownSession, list_sessions, load, render, render_listing
    from ._store import open_read_only, parse_options
    from ._store_scan import refuse_unknown_app_or_user

    async def go() -> ShownSession | tuple[str, list[dict[str, object]]]:
        store = open_read_only(uri, parse_options(option))
        try:
            if session is None:
                sessions = await list_sessions(store, app=app_name, user=user)
                if not sessions:
                    # A typo must not read as "0 sessions", as in scan.
                    await refuse_unknown_app_or_user(store, app_name, user)
                return store.masked_uri, sessions
            return await load(store, app=app_name, user=user, session_id=session)
        finally:
            await store.close()

    shown = run(go(), uri=uri, debug=debug)
    if isinstance(shown, tuple):
        store_name, sessions = shown
        if json_output:
            print(dumps({"store": store_name, "app": app_name, "user": user, "sessions": sessions}))
        else:
            render_listing(store_name, app_name, user, sessions, stdout_console())
    elif json_output:
        print(dumps(shown.to_json()))
    else:
        render(shown, stdout_console())


def main() -> None:
    """Console-script entry point (``adk-pairing``)."""
    try:
        app(prog_name="adk-pairing")
    except KeyboardInterrupt:
        # Ctrl-C before a command could take it over (while importing ADK).
        print("error: interrupted", file=sys.stderr)
        sys.exit(130)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
