"""Benchmarks PairingSessionService against the session service it wraps.

Usage (``make bench BENCH_ARGS="..."`` runs the same):

    .venv/bin/python benchmarks/run.py                 # full run, writes benchmarks/RESULTS.md
    .venv/bin/python benchmarks/run.py --quick         # seconds; prints only
    .venv/bin/python benchmarks/run.py --backends postgres,sqlite --sizes 1000 \\
        --sections get_session --output /tmp/r.md
    .venv/bin/python benchmarks/run.py --sections turn_cost --output /tmp/t.md  # see turn_cost.py

Figures are ratios (wrapped ÷ unwrapped, median of interleaved pairs) so that
they mean the same on a faster machine. Nothing here passes or fails on speed:
the run reports each target as met or missed and exits 0 whenever every figure
was computed.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:  # run as a script from anywhere, or imported by a test
    sys.path.insert(0, str(HERE))

from backends import ALL_BACKENDS  # noqa: E402
from report import (  # noqa: E402
    all_ratios,
    generated_markdown,
    is_valid_ratio,
    machine_description,
    print_tables,
    verdicts,
    write_results,
)
from settings import Settings  # noqa: E402
from suites import run  # noqa: E402
from turn_cost import TURN_COST_SIZES, TURN_SHAPES, turn_cost_ratios  # noqa: E402

SECTIONS = ("get_session", "append_event", "core", "memory", "turn", "request", "turn_cost")
#: What runs without --sections: the turn-cost suite takes an hour at full size, so only on request.
DEFAULT_SECTIONS = tuple(s for s in SECTIONS if s != "turn_cost")
DEFAULT_OUTPUT = HERE / "RESULTS.md"
PREAMBLE = """# adk-pairing benchmarks

How much `PairingSessionService` adds to the session service it wraps. Regenerate
with `make bench` (or the command in the generated block); the block between the
GENERATED markers is rewritten by every run, the notes outside it are kept.
"""


def _ints(text: str) -> tuple[int, ...]:
    return tuple(int(part.replace("_", "")) for part in text.split(",") if part.strip())


def _names(text: str, allowed: tuple[str, ...]) -> tuple[str, ...]:
    names = tuple(part.strip() for part in text.split(",") if part.strip())
    unknown = [n for n in names if n not in allowed]
    if unknown:
        raise argparse.ArgumentTypeError(f"unknown {unknown}; choose from {', '.join(allowed)}")
    return names


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--quick",
        action="store_true",
        help="tiny sizes and few rounds (CI smoke test); does not write RESULTS.md "
        "unless --output is given",
    )
    parser.add_argument("--sizes", type=_ints, help="get_session history sizes (10,100,1000,10000)")
    parser.add_argument("--append-sizes", type=_ints, help="append_event history sizes (100,1000)")
    parser.add_argument("--core-sizes", type=_ints, help="pure-core sizes (100,1000,10000,100000)")
    parser.add_argument("--memory-sizes", type=_ints, help="memory history sizes (1000,10000)")
    parser.add_argument("--turn-sizes", type=_ints, help="whole-turn history sizes (1000)")
    parser.add_argument(
        "--request-sizes", type=_ints, help="request-pass (PairingPlugin) history sizes (1000)"
    )
    parser.add_argument(
        "--backends",
        type=lambda t: _names(t, ALL_BACKENDS),
        default=ALL_BACKENDS,
        help=f"comma-separated subset of {','.join(ALL_BACKENDS)}",
    )
    parser.add_argument(
        "--memory-backends",
        type=lambda t: _names(t, ALL_BACKENDS),
        default=("inmemory", "sqlite"),
        help="backends the memory suite reads from (inmemory,sqlite)",
    )
    parser.add_argument(
        "--sections",
        type=lambda t: _names(t, SECTIONS),
        default=DEFAULT_SECTIONS,
        help=f"comma-separated subset of {','.join(SECTIONS)} (all but turn_cost)",
    )
    parser.add_argument(
        "--turn-cost-sizes", type=_ints, help="turn-cost history sizes (100,1000,3000,10000)"
    )
    parser.add_argument(
        "--turn-cost-turns", type=int, help="timed turns per setup and turn-cost cell (5)"
    )
    parser.add_argument(
        "--turn-cost-shapes",
        type=lambda t: _names(t, tuple(TURN_SHAPES)),
        default=tuple(TURN_SHAPES),
        help=f"comma-separated subset of {','.join(TURN_SHAPES)}",
    )
    parser.add_argument(
        "--turn-cost-backends",
        type=lambda t: _names(t, ALL_BACKENDS),
        help="stores the turn-cost suite runs on (sqlite; quick: inmemory)",
    )
    parser.add_argument(
        "--turn-cost-limit",
        type=float,
        help="skip a turn-cost size whose turns are projected past this many seconds (120)",
    )
    parser.add_argument("--rounds", type=int, help="most timed pairs per cell (200)")
    parser.add_argument(
        "--budget", type=float, help="seconds of timing per cell before stopping early (2)"
    )
    parser.add_argument(
        "--core-limit",
        type=float,
        help="skip a core path whose projected time exceeds this many seconds (60; quick 0.25)",
    )
    parser.add_argument(
        "--pg-database",
        default="adk_pairing_bench",
        help="PostgreSQL database to drop, recreate and drop again (adk_pairing_bench)",
    )
    parser.add_argument("--output", type=Path, help=f"results file ({DEFAULT_OUTPUT})")
    parser.add_argument("--json", type=Path, help="also write the raw rows as JSON here")
    return parser.parse_args(argv)


def settings_from(args: argparse.Namespace) -> Settings:
    quick = args.quick
    return Settings(
        sizes=args.sizes or ((10, 40) if quick else (10, 100, 1_000, 10_000)),
        append_sizes=args.append_sizes or ((10,) if quick else (100, 1_000)),
        core_sizes=args.core_sizes or ((100, 1_000) if quick else (100, 1_000, 10_000, 100_000)),
        memory_sizes=args.memory_sizes or ((40,) if quick else (1_000, 10_000)),
        turn_sizes=args.turn_sizes or ((10,) if quick else (1_000,)),
        request_sizes=args.request_sizes or ((40,) if quick else (1_000,)),
        backends=args.backends,
        memory_backends=args.memory_backends,
        max_rounds=args.rounds or (5 if quick else 200),
        budget_s=args.budget if args.budget is not None else (0.05 if quick else 2.0),
        min_rounds=3 if quick else 5,
        target_min_rounds=3 if quick else 30,
        warmup=1 if quick else 2,
        core_limit_s=args.core_limit if args.core_limit is not None else (0.25 if quick else 60.0),
        pg_database=args.pg_database,
        append_seed_limit=10 if quick else 100,
        turn_cost_sizes=args.turn_cost_sizes or ((32, 64) if quick else TURN_COST_SIZES),
        turn_cost_turns=args.turn_cost_turns or (2 if quick else 5),
        turn_cost_shapes=args.turn_cost_shapes,
        # Quick runs keep to InMemory: SQLite's commits would spend seconds on fsync.
        turn_cost_backends=args.turn_cost_backends or (("inmemory",) if quick else ("sqlite",)),
        turn_cost_limit_s=args.turn_cost_limit if args.turn_cost_limit is not None else 120.0,
    )


def _progress(section: str, row: dict[str, Any]) -> None:
    if section == "core":
        detail = "  ".join(
            f"{path} {row[f'{path}_s'] * 1e3:.1f} ms"
            if f"{path}_s" in row
            else f"{path} {row.get(f'{path}_skipped', '-')}"
            for path in ("view", "analyze", "incremental")
        )
        print(f"  core  {row['shape']:<28} {row['size']:>7,}  {detail}", file=sys.stderr)
    elif section == "turn_cost":
        if "skipped" in row:
            detail = row["skipped"]
        else:
            detail = f"unwrapped {row['unwrapped_ns'] / 1e6:.1f} ms  " + "  ".join(
                f"{setup} {figures['ratio']:.2f}× (+{figures['added_ns'] / 1e6:.1f} ms)"
                for setup, figures in row["setups"].items()
            )
            failed = {s: c for s, c in row["checks"].items() if s != "unwrapped" and c != "ok"}
            detail += f"  check {failed or 'ok'}"
        print(f"  turn_cost {row['shape']:<20} {row['size']:>6,}  {detail}", file=sys.stderr)
    elif section == "memory":
        print(
            f"  memory {row['backend']:<9} {row['size']:>7,} {row['health']:<8}"
            f" peak ratio {row['peak_ratio']:.3f}",
            file=sys.stderr,
        )
    else:
        kinds = row.get("ratio_by_kind")
        detail = (" by kind " + ", ".join(f"{v:.3f}" for v in kinds.values())) if kinds else ""
        print(
            f"  {section:<12} {row['backend']:<9} {row['size']:>7,} {row['health']:<8}"
            f" {row.get('read', ''):<4} ratio {row['ratio']:.3f} ({row['rounds']} rounds,"
            f" {row['wrapped_ns'] / 1e3:.1f} vs {row['unwrapped_ns'] / 1e3:.1f} µs){detail}",
            file=sys.stderr,
        )


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = parse_args(argv)
    settings = settings_from(args)
    command = shlex.join([".venv/bin/python", "benchmarks/run.py", *argv])
    started = time.strftime("%Y-%m-%d %H:%M:%S %Z")
    # Described before the run: the revision measured is the one checked out when it started.
    machine = machine_description()
    load_at_start = os.getloadavg()
    clock = time.perf_counter()
    results = run(settings, args.sections, _progress)
    elapsed = time.perf_counter() - clock

    target_size = 1_000 if 1_000 in settings.sizes else max(settings.sizes)
    append_size = 1_000 if 1_000 in settings.append_sizes else max(settings.append_sizes)
    request_size = 1_000 if 1_000 in settings.request_sizes else max(settings.request_sizes)
    found = verdicts(
        results, get_size=target_size, append_size=append_size, request_size=request_size
    )
    print_tables(results, found)

    output = args.output or (None if args.quick else DEFAULT_OUTPUT)
    if output is not None:
        generated = generated_markdown(
            results,
            found,
            machine={
                **machine,
                "Load average (1, 5, 15 min), start / end": " / ".join(
                    ", ".join(f"{v:.1f}" for v in load) for load in (load_at_start, os.getloadavg())
                ),
            },
            command=command,
            started=started,
            elapsed_s=elapsed,
        )
        write_results(output, generated, PREAMBLE)
        print(f"wrote {output}", file=sys.stderr)
    if args.json is not None:
        args.json.write_text(json.dumps(results, indent=1, default=str))

    ratios = all_ratios(results) + turn_cost_ratios(results.get("turn_cost", []))
    invalid = [(label, value) for label, value in ratios if not is_valid_ratio(value)]
    for label, value in invalid:
        print(f"invalid ratio: {label} = {value!r}", file=sys.stderr)
    print(f"benchmark finished in {elapsed:.0f} s", file=sys.stderr)
    return 1 if invalid else 0


if __name__ == "__main__":
    sys.exit(main())
