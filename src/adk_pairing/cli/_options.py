"""The commands' arguments and options, as typer declares them (help text included).

Declared once here, so a command's signature reads as its list of options
and an option shared by several commands says the same in each.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer

UriArg = Annotated[
    str,
    typer.Argument(
        metavar="URI",
        help="The session store, e.g. postgresql+asyncpg://user:pw@host:5432/db, "
        "sqlite+aiosqlite:///sessions.db (DatabaseSessionService), sqlite:///.adk/session.db "
        "(SqliteSessionService, as adk web keeps it), redis://localhost:6379/0 "
        "(a pairing+ prefix is accepted and ignored: the stored data is read).",
        show_default=False,
    ),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON instead of text.")]
#: What ``--since`` and ``--until`` take (`_common.parse_time` reads it).
TIME_FORMS = "ISO 8601 (UTC unless a zone is given), epoch seconds, or an age such as 30m, 12h, 7d."


def UpdatedOpt(flag: str, bound: str) -> Any:
    """A bound on the sessions' update time, parsed later by `_common.parse_time`."""
    return Annotated[
        str | None, typer.Option(flag, metavar="TIME", help=f"Only sessions updated {bound}")
    ]


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


# -- scan ------------------------------------------------------------------------

TargetsArg = Annotated[
    list[str] | None,
    typer.Argument(
        metavar="URI | --merge FILE...",
        help="The session store, e.g. postgresql+asyncpg://user:pw@host:5432/db, "
        "sqlite+aiosqlite:///sessions.db (DatabaseSessionService), "
        "sqlite:///.adk/session.db (SqliteSessionService, as adk web keeps it), "
        "redis://localhost:6379/0 (a pairing+ prefix is accepted and ignored: the "
        "stored data is read); with --merge, the JSON outputs of the shards.",
        show_default=False,
    ),
]
AppsOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--app",
        metavar="APP",
        help="App to scan; repeat for several. Default: every app the store holds "
        "(stores whose layout adk-pairing reads: ADK's SQL services and both Redis services).",
    ),
]
OnlyUserOpt = Annotated[
    str | None,
    typer.Option("--user", metavar="USER", help="Only this user's sessions."),
]
SinceOpt = UpdatedOpt("--since", "at or after TIME: " + TIME_FORMS)
UntilOpt = UpdatedOpt("--until", "at or before TIME.")
FailOnOpt = Annotated[
    str,
    typer.Option(
        "--fail-on",
        metavar="never|missing|pending|any",
        help="Exit 1 when such calls are found (for cron and CI).",
    ),
]
ReaderOpt = Annotated[
    str,
    typer.Option(
        "--reader",
        metavar="auto|direct|get-session",
        help="auto: read the store's tables/keys in batches when their layout is known, "
        "else get_session per session; direct: only the former; get-session: only the latter.",
    ),
]
ConcurrencyOpt = Annotated[
    int,
    typer.Option(
        "--concurrency",
        metavar="N",
        min=1,
        help="Queries in flight at most: get_session reads at once; direct reads fetch "
        "one batch ahead when N >= 2.",
    ),
]
BatchSizeOpt = Annotated[
    int,
    typer.Option("--batch-size", metavar="N", min=1, help="Sessions per batch (direct reads)."),
]
TimeoutOpt = Annotated[
    float | None,
    typer.Option(
        "--timeout",
        metavar="SECONDS",
        min=0.001,
        help="Per-session limit: a get_session read, or rebuilding a session's events "
        "on the direct path; a session over it is reported as unreadable and the scan "
        "goes on.",
    ),
]
LimitOpt = Annotated[
    int, typer.Option("--limit", metavar="N", min=0, help="Rows shown in the text table.")
]
StrictOpt = Annotated[
    bool,
    typer.Option(
        "--strict",
        help="Validate every event with ADK's models, as get_session does (slower). "
        "By default only the rows naming calls, results or rewinds are read, and "
        "only sessions found broken are validated in full before they are reported.",
    ),
]
ShardOpt = Annotated[
    str | None,
    typer.Option(
        "--shard",
        metavar="K/N",
        help="Scan only shard K (0 <= K < N) of N, by a stable hash of each session's "
        "key; N scans with K = 0..N-1 cover every session once. Merge their --json "
        "outputs with --merge.",
    ),
]
JobsOpt = Annotated[
    int,
    typer.Option(
        "--jobs",
        metavar="N",
        min=1,
        help="Worker processes: each scans 1/N of the sessions (of the --shard when "
        "given), forked after start-up; one report, as one process gives. Up to the "
        "cores this machine can spare; 1 (the default) scans in this process.",
    ),
]
MergeOpt = Annotated[
    bool,
    typer.Option(
        "--merge",
        help="Instead of scanning, merge the --json (or --json-lines) outputs of N "
        "shards, given as FILE arguments, into the report one scan gives.",
    ),
]
JsonLinesOpt = Annotated[
    bool,
    typer.Option(
        "--json-lines",
        help="Stream one JSON object per broken or unreadable session as it is found, "
        "then one summary object.",
    ),
]
