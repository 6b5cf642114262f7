"""``adk-pairing demo``'s text: the failure, the repair and the verdict, in about 25 lines."""

from __future__ import annotations

import textwrap

from rich.console import Console

from ..core.placeholders import METADATA_KEY, placeholder_text
from ._demo import DemoReport
from ._demo_agent import APP_NAME, CALL_ID, TOOL_NAME, USER_ID
from ._printable import printable


def render(report: DemoReport, console: Console) -> None:
    """About 25 lines of at most ~80 columns: the failure, the repair, the verdict."""
    checks = {check.id: check for check in report.checks}

    def say(text: str) -> None:
        console.print(printable(text), markup=False)

    def mark(name: str) -> str:
        return "✓" if checks[name].passed else "✗"

    def quote(text: str, lines: int = 2) -> None:
        wrapped = textwrap.wrap(text, width=76, max_lines=lines, placeholder=" …")
        for line in wrapped:
            say(f"    {line}")

    i, u, p = report.interrupted, report.unwrapped, report.paired
    say(f"adk-pairing demo · google-adk {report.adk_version} · SqliteSessionService on")
    say(f"  {report.store}")
    say("")
    say("1. A turn dies while its tool runs")
    say(f"  {mark('turn_interrupted')} child {i['child_pid']} ran a real Runner; the model called")
    say(f"    {TOOL_NAME} (id {CALL_ID}); call stored, tool running")
    say(
        f"    → SIGKILL → exit {i['child_returncode']}; "
        f"{len(i['missing_calls'])} stored call has no result"
    )
    say("2. Next turn through the plain SqliteSessionService (a copy of the store)")
    wrong = mark("unprotected_turn_fails") == "✓"
    if u["behaviour"] == "dropped":
        say(
            f"  {'!' if wrong else '✗'} ADK {report.adk_version} dropped the call from the request;"
        )
        say("    its only trace is a log warning:")
        quote(repr(u["adk_warning"]))
        say(f"    request: {u['request_outline']}")
        say("    → the model is never told the refund may already have been issued")
    elif u["behaviour"] == "sent_unpaired":
        say(
            f"  {'!' if wrong else '✗'} ADK {report.adk_version} sent the unanswered call; "
            f"{report.rule.rejects}"
        )
        say("    this request and every later one (HTTP 400):")
        quote(u["request_violations"][0])
        say(f"    request: {u['request_outline']}")
    else:
        say("  ✗ no failure observed: neither a dropped call nor a pairing violation")
    # When ADK sent the history as stored, its violation was just quoted: once is enough.
    if u["history_as_stored_violations"] and u["behaviour"] != "sent_unpaired":
        say(f"    sent as stored, {report.rule.rejects} it:")
        quote(u["history_as_stored_violations"][0])
    say("3. Same turn through PairingSessionService")
    rule = "repaired_request_valid"
    say(f"  {mark(rule)} request passes {report.rule.name}; the call is kept:")
    say(f"    {p['request_outline']}")
    synthetic = p["synthetic_result"] or {}
    say(
        f"  {mark('synthetic_result_seen')} the model saw a synthetic result, "
        f"status {synthetic.get('status')!r}:"
    )
    quote(repr(str(placeholder_text(synthetic) or "")), lines=3)
    digest_before = p["pre_existing_rows_sha256_before"][:12]
    digest_after = p["pre_existing_rows_sha256_after"][:12]
    say(
        f"  {mark('stored_rows_unchanged')} the {p['rows_before']} stored event "
        "rows are byte-for-byte unchanged:"
    )
    say(f"    sha256 {digest_before}… before, {digest_after}… after (+{p['new_rows']} new rows)")
    say(
        f"  {mark('nothing_synthetic_stored')} {p['rows_with_marker']} rows contain "
        f"{METADATA_KEY!r}; the store still has the call unanswered"
    )
    passed = sum(1 for check in report.checks if check.passed)
    verdict = "the repair works." if report.ok else "FAILED."
    say("")
    say(f"{passed}/{len(report.checks)} checks passed: {verdict}")
    if report.rule.note:
        say(report.rule.note)
    if p.get("kept_store"):
        say(
            f"Inspect: adk-pairing show {report.store} --app {APP_NAME} --user {USER_ID} "
            f"--session {report.session_id}"
        )
