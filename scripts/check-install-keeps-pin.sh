#!/usr/bin/env bash
# Proves README's install line keeps a google-adk pin the user already has:
#   pip install 'google-adk==2.6.2' 'adk-pairing[postgres]'
# and that adding adk-pairing later to an environment pinned at 2.6.2 does not
# upgrade ADK either. Runs in a throwaway virtualenv against the real package
# index, with this checkout's wheel standing in for 'adk-pairing'.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
PINNED="${PINNED_ADK:-2.6.2}"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

"$PYTHON" -m pip wheel --quiet --no-deps --wheel-dir "$work/dist" .
wheel="$(ls "$work"/dist/adk_pairing-*.whl)"
"$PYTHON" -m venv "$work/venv"
pip="$work/venv/bin/python -m pip"

installed_adk() { "$work/venv/bin/python" -c "from google.adk import __version__ as v; print(v)"; }
expect_pinned() {
  local got
  got="$(installed_adk)"
  if [ "$got" != "$PINNED" ]; then
    echo "install-pin: FAILED after $1: google-adk $got installed, the pin was $PINNED" >&2
    exit 1
  fi
  echo "install-pin: google-adk stays $PINNED after $1"
}

# 1. README's line, both requirements in one command.
$pip install --quiet "google-adk==$PINNED" "adk-pairing[postgres] @ file://$wheel"
expect_pinned "pip install 'google-adk==$PINNED' 'adk-pairing[postgres]'"
# 2. More extras later, ADK not named: pip must not upgrade the installed pin.
$pip install --quiet "adk-pairing[all] @ file://$wheel"
expect_pinned "pip install 'adk-pairing[all]' into that environment"
$pip check
"$work/venv/bin/python" -c "
from adk_pairing import PairingSessionService
from google.adk.sessions import InMemorySessionService
PairingSessionService(InMemorySessionService())
print('install-pin: adk_pairing imports and wraps a service on google-adk $PINNED')
"
