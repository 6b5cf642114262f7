"""The built documentation site, checked in a real headless Chromium (``make docs-check``).

Serves ``site/`` (what ``make docs`` builds) on a local port and drives Debian's
``chromium`` (``scripts/ensure-chromium.sh`` installs or finds it; ``CHROMIUM``
names another) through the DevTools protocol over a pipe, with the standard
library alone: nothing is downloaded and no port is opened for the browser.
In a 1,280 px wide window it:

* opens every page of the site and fails if a code block scrolls sideways
  (its text would be cut off at that width) or the page itself does;
* asserts the home page opens with the quick start, and the API pages list
  their members (``CallStatus``'s three, ``METADATA_KEY``'s value);
* fetches ``llms.txt`` and every page it links to;
* saves screenshots of the home page, an API page and the widest code block
  (``DOCS_CHECK_SCREENSHOTS``, default ``site-check/``) for a person to look at.

Exit status 0 when every check passes, 1 with one line per failure otherwise.
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import functools
import http.server
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
SITE = Path(os.environ.get("DOCS_SITE", REPO / "site"))
SCREENSHOTS = Path(os.environ.get("DOCS_CHECK_SCREENSHOTS", REPO / "site-check"))
WIDTH, HEIGHT = 1280, 900
TIMEOUT_S = 60
CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
    "--remote-debugging-pipe",
    f"--window-size={WIDTH},{HEIGHT}",
)

#: What a page reports of itself: its headings, and what scrolls sideways.
MEASURE = """(() => {
  const text = (element) => element.textContent.replace(/\\s+/g, " ").trim();
  const cut = [...document.querySelectorAll("pre > code")]
    .filter((code) => code.scrollWidth > code.clientWidth + 1)
    .map((code) => ({
      overflow: code.scrollWidth - code.clientWidth,
      line: code.textContent.split("\\n").reduce((a, b) => (b.length > a.length ? b : a)),
    }));
  return {
    title: document.title,
    headings: [...document.querySelectorAll(".md-content h1, .md-content h2, .md-content h3")]
      .map((h) => ({id: h.id, text: text(h).replace(/¶$/, "")})),
    code_blocks: document.querySelectorAll("pre > code").length,
    cut,
    page_overflow: document.documentElement.scrollWidth - window.innerWidth,
    content: text(document.querySelector(".md-content") || document.body),
    first_section: (() => {
      const first = document.querySelector(".md-content h2");
      let found = "";
      let el = first && first.nextElementSibling;
      for (; el && el.tagName !== "H2"; el = el.nextElementSibling) found += " " + text(el);
      return found;
    })(),
  };
})()"""


#: What the home page's first section, the quick start, must show: the install, the demo,
#: the two lines and the placeholders.
QUICK_START = (
    "pip install adk-pairing",
    "adk-pairing demo",
    "PairingSessionService(store)",
    "plugins=[PairingPlugin()]",
    '"status": "missing"',
    '"status": "pending"',
)


def scrolled_to(element: str) -> str:
    """A script that scrolls the window to `element` (a JS expression), below the header."""
    return (
        f"({element}).scrollIntoView({{block: 'start', behavior: 'instant'}});"
        "window.scrollBy({top: -72, behavior: 'instant'})"
    )


class DevTools:
    """A Chromium driven through ``--remote-debugging-pipe`` (fd 3 in, fd 4 out)."""

    def __init__(self, chromium: str, profile: str) -> None:
        to_browser_r, self._to_browser = os.pipe()
        self._from_browser, from_browser_w = os.pipe()
        # The child must find its ends at fds 3 and 4; copies above both first,
        # so neither dup2 overwrites the other's source.
        high = [fcntl.fcntl(fd, fcntl.F_DUPFD, 10) for fd in (to_browser_r, from_browser_w)]

        def ends_at_3_and_4() -> None:
            os.dup2(high[0], 3)
            os.dup2(high[1], 4)
            for fd in high:
                os.close(fd)

        self.process = subprocess.Popen(
            [chromium, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", "about:blank"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=None if os.environ.get("DOCS_CHECK_VERBOSE") else subprocess.DEVNULL,
            preexec_fn=ends_at_3_and_4,
            close_fds=False,  # Python's own fds are close-on-exec; 3 and 4 must stay open
        )
        for fd in (to_browser_r, from_browser_w, *high):
            os.close(fd)
        self._buffer = b""
        self._next_id = 0
        self._events: list[dict[str, Any]] = []
        self.session = self._attach()

    def _read_message(self) -> dict[str, Any]:
        while b"\0" not in self._buffer:
            chunk = os.read(self._from_browser, 1 << 16)
            if not chunk:
                raise RuntimeError("Chromium closed the DevTools pipe")
            self._buffer += chunk
        message, _, self._buffer = self._buffer.partition(b"\0")
        return json.loads(message)

    def send(self, method: str, session: str | None = None, **params: Any) -> dict[str, Any]:
        self._next_id += 1
        message = {"id": self._next_id, "method": method, "params": params}
        if session:
            message["sessionId"] = session
        os.write(self._to_browser, json.dumps(message).encode() + b"\0")
        while True:
            reply = self._read_message()
            if reply.get("id") == self._next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply["result"]
            self._events.append(reply)

    def wait_for(self, method: str) -> dict[str, Any]:
        for index, event in enumerate(self._events):
            if event.get("method") == method:
                return self._events.pop(index)
        while True:
            event = self._read_message()
            if event.get("method") == method:
                return event
            self._events.append(event)

    def _attach(self) -> str:
        targets = self.send("Target.getTargets")["targetInfos"]
        page = next(target for target in targets if target["type"] == "page")
        session = self.send("Target.attachToTarget", targetId=page["targetId"], flatten=True)
        session_id = session["sessionId"]
        self.send("Page.enable", session_id)
        self.send(
            "Emulation.setDeviceMetricsOverride",
            session_id,
            width=WIDTH,
            height=HEIGHT,
            deviceScaleFactor=1,
            mobile=False,
        )
        return session_id

    def open(self, url: str) -> dict[str, Any]:
        self._events.clear()
        self.send("Page.navigate", self.session, url=url)
        self.wait_for("Page.loadEventFired")
        return self.evaluate(MEASURE)

    def evaluate(self, expression: str) -> Any:
        result = self.send(
            "Runtime.evaluate", self.session, expression=expression, returnByValue=True
        )
        if "exceptionDetails" in result:
            raise RuntimeError(f"script failed: {result['exceptionDetails']}")
        return result["result"].get("value")

    def screenshot(self, path: Path) -> None:
        data = self.send("Page.captureScreenshot", self.session, format="png")["data"]
        path.write_bytes(base64.b64decode(data))

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.send("Browser.close")
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        os.close(self._to_browser)
        os.close(self._from_browser)


@contextlib.contextmanager
def served(directory: Path) -> Iterator[str]:
    """The built site over HTTP on a free local port, as a browser reads it deployed."""

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

    class Server(http.server.ThreadingHTTPServer):
        def handle_error(self, request: Any, client_address: Any) -> None:
            if not isinstance(sys.exc_info()[1], ConnectionError):  # a page left mid-load
                super().handle_error(request, client_address)

    handler = functools.partial(Quiet, directory=str(directory))
    server = Server(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


def site_pages(site: Path) -> list[str]:
    """Every page of the built site, as a path relative to its root (``api/CallStatus/``)."""
    pages = []
    for index in sorted(site.rglob("index.html")):
        relative = index.parent.relative_to(site).as_posix()
        if relative == "404" or relative.startswith(("assets", "search")):
            continue
        pages.append("" if relative == "." else f"{relative}/")
    return pages


def llms_links(text: str) -> list[str]:
    """The link targets of an ``llms.txt`` list."""
    return re.findall(r"^- \[[^\]]+\]\(([^)\s]+)\)", text, re.MULTILINE)


def check(chromium: str, site: Path, screenshots: Path) -> list[str]:
    failures: list[str] = []
    screenshots.mkdir(parents=True, exist_ok=True)
    pages = site_pages(site)
    if len(pages) < 10:
        return [f"{site} holds {len(pages)} pages: run `make docs` first"]
    with served(site) as root, tempfile.TemporaryDirectory(prefix="docs-check-") as profile:
        try:
            with urllib.request.urlopen(root + "llms.txt", timeout=TIMEOUT_S) as response:
                llms = response.read().decode()
        except OSError as error:
            llms = ""
            failures.append(f"llms.txt does not load: {error}")
        links = llms_links(llms)
        listed = {urllib.parse.urljoin(root, link).removeprefix(root) for link in links}
        if not llms.startswith("# ") or listed != set(pages):
            failures.append(
                f"llms.txt lists {len(links)} links; pages left out: "
                f"{sorted(set(pages) - listed)}, links to no page: {sorted(listed - set(pages))}"
            )
        for link in links:
            try:
                with urllib.request.urlopen(urllib.parse.urljoin(root, link), timeout=TIMEOUT_S):
                    pass
            except OSError as error:
                failures.append(f"llms.txt links to {link}, which does not load: {error}")

        browser = DevTools(chromium, profile)
        try:
            widest: tuple[int, str] = (0, "")
            for page in pages:
                seen = browser.open(root + page)
                if seen["code_blocks"]:
                    widest = max(widest, (seen["code_blocks"], page))
                for block in seen["cut"]:
                    failures.append(
                        f"/{page}: a code block scrolls {block['overflow']} px sideways at "
                        f"{WIDTH} px: {block['line'].strip()[:80]!r}"
                    )
                if seen["page_overflow"] > 0:
                    failures.append(f"/{page}: the page is {seen['page_overflow']} px too wide")

            home = browser.open(root)
            browser.screenshot(screenshots / "home.png")
            headings = [heading["text"] for heading in home["headings"]]
            if len(headings) < 2 or "quick start" not in headings[1].lower():
                failures.append(
                    f"the home page's first section is {headings[1:2]}, not a quick start"
                )
            for expected in QUICK_START:
                if expected not in home["first_section"]:
                    failures.append(f"the home page's quick start does not show {expected!r}")
            # The quick start's code and placeholders, then the home page's longest
            # command, where a cut-off would show first.
            browser.evaluate(scrolled_to('document.getElementById("3-wire-it-in-two-lines")'))
            browser.screenshot(screenshots / "home-quick-start-code.png")
            browser.evaluate(
                scrolled_to(
                    '[...document.querySelectorAll("pre > code")]'
                    '.find((code) => code.textContent.includes("adk api_server"))'
                )
            )
            browser.screenshot(screenshots / "home-long-command.png")

            api = browser.open(root + "api/CallStatus/")
            browser.screenshot(screenshots / "api-CallStatus.png")
            member_headings = {heading["id"] for heading in api["headings"]}
            for member in ("ANSWERED", "PENDING", "MISSING"):
                if f"adk_pairing.CallStatus.{member}" not in member_headings:
                    failures.append(f"the CallStatus page does not list {member}")
            key = browser.open(root + "api/METADATA_KEY/")
            if "METADATA_KEY = 'adk_pairing'" not in key["content"]:
                failures.append("the METADATA_KEY page does not show its value")
        finally:
            browser.close()
    print(
        f"checked {len(pages)} pages at {WIDTH} px, llms.txt with {len(links)} links; "
        f"screenshots in {screenshots}"
    )
    return failures


def main() -> int:
    chromium = os.environ.get("CHROMIUM") or shutil.which("chromium")
    if not chromium:
        print("no Chromium: run scripts/ensure-chromium.sh or set CHROMIUM", file=sys.stderr)
        return 1
    failures = check(chromium, SITE, SCREENSHOTS)
    for failure in failures:
        print(f"FAIL {failure}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
