#!/usr/bin/env bash
# Prints the path of a headless-capable Chromium for `make web-check` and `make docs-check`.
#
# Looks at $CHROMIUM, then `chromium` and `chromium-browser` on PATH. When none
# is found and apt-get is usable (root on Debian/Ubuntu), installs Debian's
# `chromium` package; otherwise exits 1 saying how to get one. Playwright is
# pointed at this binary, so it never downloads a browser of its own.
set -u

found() {
  local candidate
  for candidate in "${CHROMIUM:-}" "$(command -v chromium 2>/dev/null)" \
    "$(command -v chromium-browser 2>/dev/null)"; do
    if [ -n "$candidate" ] && [ -x "$candidate" ]; then
      echo "$candidate"
      return 0
    fi
  done
  return 1
}

if path=$(found); then
  echo "$path"
  exit 0
fi

if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = "0" ]; then
  echo "installing Debian's chromium (apt-get install chromium)" >&2
  if apt-get update -qq >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >&2; then
    if path=$(found); then
      echo "$path"
      exit 0
    fi
  fi
fi

{
  echo "This check needs Chromium and found none."
  echo "  Debian/Ubuntu: sudo apt-get update && sudo apt-get install -y chromium"
  echo "  elsewhere:     install Chromium or Chrome and set CHROMIUM=/path/to/the/binary"
} >&2
exit 1
