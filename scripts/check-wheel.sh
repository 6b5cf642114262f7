#!/usr/bin/env bash
# The first install, as a new user makes it (issue 19):
#   1. `python -m build` makes an sdist and a wheel (from the sdist) without a
#      single warning, and `twine check --strict` passes both;
#   2. the wheel, installed with no extras into a fresh virtualenv from PyPI,
#      runs `adk-pairing demo`, then `scan` and `show` on the store the demo
#      kept, and prints its version; README's first snippet, which follows
#      the plain install line, runs there as printed;
#   3. a store whose driver the base install leaves out (PostgreSQL, Redis,
#      DatabaseSessionService on SQLite) makes `scan` and `show` exit 2 with
#      one line naming the extra to install, never a traceback.
# BUILD_PYTHON needs build and twine (the test extra: .venv); PYTHON makes the
# fresh virtualenv. pip's cache is used as it is.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_PYTHON="${BUILD_PYTHON:-.venv/bin/python}"
PYTHON="${PYTHON:-python3}"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
fail() { echo "check-wheel: FAILED: $*" >&2; exit 1; }

# 1. Build. Byte-compiling is switched off by PYTHONDONTWRITEBYTECODE in some
#    shells, and setuptools warns about that; it is not the package's warning.
if ! env -u PYTHONDONTWRITEBYTECODE "$BUILD_PYTHON" -m build --outdir "$work/dist" . \
  >"$work/build.log" 2>&1; then
  cat "$work/build.log" >&2
  fail "python -m build"
fi
# A file's name is not a warning (the package has a view_warnings.py): paths
# are blanked before the match, so only the build's own words count.
if sed -E 's#[^[:space:]]*/[^[:space:]]*# #g' "$work/build.log" | grep -inE "warn|deprecat" >&2; then
  fail "python -m build printed the warnings above"
fi
"$BUILD_PYTHON" -m twine check --strict "$work"/dist/*
wheel="$(ls "$work"/dist/adk_pairing-*.whl)"
echo "check-wheel: built $(cd "$work/dist" && ls | tr '\n' ' ')without warnings (${SECONDS}s)"

# 2. A fresh virtualenv, the wheel without extras.
"$PYTHON" -m venv "$work/venv"
"$work/venv/bin/python" -m pip install --quiet "$wheel"
"$work/venv/bin/python" -m pip check
echo "check-wheel: the wheel alone installed in a fresh virtualenv (${SECONDS}s)"
cli="$work/venv/bin/adk-pairing"
version="$("$cli" --version)"
expected="adk-pairing $(sed -nE 's/^__version__ = "(.*)"$/\1/p' src/adk_pairing/__init__.py)"
[ "$version" = "$expected" ] || fail "adk-pairing --version printed '$version', expected '$expected'"

"$cli" demo --db "$work/demo.db" --json >"$work/demo.json" || {
  cat "$work/demo.json" >&2
  fail "adk-pairing demo exited $?"
}
read -r session rule < <("$work/venv/bin/python" -c '
import json, sys
report = json.load(open(sys.argv[1]))
assert report["ok"], report["checks"]
print(report["session_id"], report["request_rule"])
' "$work/demo.json")
echo "check-wheel: adk-pairing demo passed its checks ($rule rule), session $session"

store="sqlite:///$work/demo.db"
"$cli" scan "$store" --json >"$work/scan.json" || fail "adk-pairing scan $store exited $?"
"$work/venv/bin/python" -c '
import json, sys
scan = json.load(open(sys.argv[1]))
assert (scan["sessions_scanned"], scan["missing_calls"]) == (1, 1), scan
' "$work/scan.json" || fail "adk-pairing scan did not find the demo's missing call"
echo "check-wheel: adk-pairing scan found the demo's missing call"
"$cli" show "$store" --app refund_desk --user demo-user --session "$session" >"$work/show.txt" ||
  fail "adk-pairing show exited $?"
grep -q "synthetic: missing" "$work/show.txt" || fail "adk-pairing show did not show the placeholder"
echo "check-wheel: adk-pairing show shows the placeholder"

# README's first Python block (title "one-liners") follows `pip install adk-pairing`:
# it runs as printed with the wheel alone (tests/integration/test_wiring_docs.py runs
# a turn through what it builds).
mkdir "$work/readme"
readme="$PWD/README.md"
(cd "$work/readme" && "$work/venv/bin/python" -c '
import re, sys
readme = open(sys.argv[1]).read()
block = re.search(r"```python title=\"one-liners\"\n(.*?)^```", readme, re.DOTALL | re.MULTILINE)
exec(compile(block[1], "README[one-liners]", "exec"), {"__name__": "__main__"})
' "$readme") || fail "README's one-liners snippet does not run with the wheel alone"
echo "check-wheel: README's one-liners snippet runs with the wheel alone"

# 3. Stores that need an extra: exit 2 and one line naming it.
expect_extra() {
  local extra=$1 rc=0
  shift
  "$cli" "$@" >"$work/out.txt" 2>"$work/err.txt" || rc=$?
  [ "$rc" -eq 2 ] || fail "adk-pairing $* exited $rc, expected 2"
  [ "$(wc -l <"$work/err.txt")" -eq 1 ] || { cat "$work/err.txt" >&2; fail "adk-pairing $*: not one line"; }
  grep -qF "pip install 'adk-pairing[$extra]'" "$work/err.txt" ||
    { cat "$work/err.txt" >&2; fail "adk-pairing $*: the extra [$extra] is not named"; }
  echo "check-wheel: adk-pairing $1 ${2%%:*}:… names [$extra]"
}
expect_extra postgres scan "postgresql+asyncpg://postgres@127.0.0.1:5432/postgres"
expect_extra postgres show "sqlite+aiosqlite:///$work/demo.db" --app a --user u --session s
expect_extra redis scan "redis://127.0.0.1:6379/0"
expect_extra redis show "pairing+redis://127.0.0.1:6379/0" --app a --user u --session s
echo "check-wheel: ok in ${SECONDS}s"
