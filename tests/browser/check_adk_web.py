"""``adk web`` over the decorator, in a real headless Chromium: what a person sees.

Run by ``make web-check`` (``pytest tests/browser/check_adk_web.py``); the
file name keeps it out of the default test run, which has no browser. The
browser is Debian's ``chromium`` (``scripts/ensure-chromium.sh`` installs or
finds it and exports ``CHROMIUM``), driven by Playwright from PyPI through
``executable_path``: nothing is downloaded at run time. The server and the
scenes are those of tests/integration/test_adk_web_http_api.py, which asserts
the same through the HTTP API on every google-adk release in CI.

Screenshots go to docs/images/ (``WEB_CHECK_SCREENSHOTS`` overrides the
folder).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect, sync_playwright

from adk_pairing.core.placeholders import DEFAULT_MISSING_TEXT
from tests.adk_web import ANSWER_BOX_PLACEHOLDER
from tests.integration.adk_web_support import (
    APPROVAL_APP,
    USER,
    AdkWebClient,
    WebServer,
    adk_web,
    assert_store_holds_no_synthetic_row,
    held_open_call,
    seed_broken_session,
    synthetic_events,
    user_text,
)
from tests.integration.wiring_support import DEMO_APP, INTERRUPTED_TOOL, REPO

SCREENSHOTS = Path(os.environ.get("WEB_CHECK_SCREENSHOTS", REPO / "docs" / "images"))
#: adk web draws an event's ``errorCode``/``errorMessage`` in a bubble of this class.
ERROR_BOX = ".type-error"
ANSWER_BOX = f'input[placeholder="{ANSWER_BOX_PLACEHOLDER}"]'
CHAT_INPUT = 'textarea[placeholder="Type a message..."]'
CONTINUATION = "Approval received, continuing:"
STILL_WAITING = "Still waiting for the approval."
TIMEOUT_MS = 30_000
VIEWPORT = {"width": 1100, "height": 720}
CHAT_PANE = {"x": 480, "y": 0, "width": 620, "height": 430}


def chromium_path() -> str:
    path = os.environ.get("CHROMIUM") or shutil.which("chromium")
    if not path:
        pytest.fail(
            "no Chromium: run scripts/ensure-chromium.sh (Debian: apt-get install chromium) "
            "or set CHROMIUM=/path/to/chromium"
        )
    return path


@pytest.fixture(scope="module")
def web_server(tmp_path_factory) -> Iterator[WebServer]:
    with adk_web(tmp_path_factory.mktemp("adk-web")) as running:
        yield running


@pytest.fixture
def web_client(web_server) -> Iterator[AdkWebClient]:
    client = AdkWebClient(web_server)
    yield client
    client.close()


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium_path(), headless=True)
        yield browser
        browser.close()


@pytest.fixture
def page(browser) -> Iterator[Page]:
    page = browser.new_page(viewport=VIEWPORT)
    page.set_default_timeout(TIMEOUT_MS)
    # Offline: fail the page's web-font requests at once instead of waiting on them.
    page.route("**/fonts.googleapis.com/**", lambda route: route.abort())
    page.route("**/fonts.gstatic.com/**", lambda route: route.abort())
    # The page asks once for consent to usage data in a modal over the chat;
    # answering "off" to its question keeps the modal closed and writes nothing.
    page.route(
        "**/config/telemetry",
        lambda route: (
            route.fulfill(json={"telemetry": False})
            if route.request.method == "GET"
            else route.abort()
        ),
    )
    yield page
    page.close()


def open_session(page: Page, server: WebServer, app: str, session_id: str, user_id: str) -> None:
    page.goto(f"{server.base_url}/dev-ui/?app={app}&session={session_id}&userId={user_id}")
    expect(page.get_by_text(session_id[:8]).first).to_be_visible()


def screenshot(page: Page, name: str) -> None:
    """The chat pane's upper part (the side panel and the empty rest left out)."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / name), clip=CHAT_PANE)


def test_broken_session_shows_an_error_box_for_the_missing_call_and_a_healthy_one_none(
    page, web_server, web_client
):
    broken = seed_broken_session(web_server)
    open_session(page, web_server, DEMO_APP, broken.session_id, broken.user_id)
    expect(page.get_by_text(INTERRUPTED_TOOL).first).to_be_visible()
    error_box = page.locator(ERROR_BOX)
    expect(error_box).to_have_count(1)
    expect(error_box).to_contain_text(DEFAULT_MISSING_TEXT[:40])
    screenshot(page, "adk-web-missing.png")

    healthy = web_client.create_session(DEMO_APP)
    web_client.run(DEMO_APP, healthy, user_text("hello"))
    open_session(page, web_server, DEMO_APP, healthy, USER)
    expect(page.get_by_text('"paired": true').first).to_be_visible()
    expect(page.locator(ERROR_BOX)).to_have_count(0)
    assert_store_holds_no_synthetic_row(web_server)


def test_held_open_call_keeps_its_answer_box_and_answering_it_runs_the_continuation(
    page, web_server, web_client
):
    session = web_client.create_session(APPROVAL_APP)
    call = held_open_call(web_client.run(APPROVAL_APP, session, user_text("Book my flight")))
    assert synthetic_events(web_client.events(APPROVAL_APP, session))

    open_session(page, web_server, APPROVAL_APP, session, USER)
    expect(page.locator(ANSWER_BOX)).to_have_count(1)
    expect(page.locator(ERROR_BOX)).to_have_count(0)

    page.locator(CHAT_INPUT).fill("Any news?")
    page.locator(CHAT_INPUT).press("Enter")
    expect(page.get_by_text(STILL_WAITING).first).to_be_visible()
    open_session(page, web_server, APPROVAL_APP, session, USER)
    expect(page.get_by_text(STILL_WAITING).first).to_be_visible()
    expect(page.locator(ANSWER_BOX)).to_have_count(1)
    screenshot(page, "adk-web-held-open.png")

    page.locator(ANSWER_BOX).fill("approved")
    page.locator(ANSWER_BOX).press("Enter")
    expect(page.get_by_text(CONTINUATION).first).to_be_visible()
    open_session(page, web_server, APPROVAL_APP, session, USER)
    expect(page.get_by_text(CONTINUATION).first).to_be_visible()
    expect(page.locator(ANSWER_BOX)).to_have_count(0)
    screenshot(page, "adk-web-answered.png")

    events = web_client.events(APPROVAL_APP, session)
    assert synthetic_events(events) == []
    assert any(r.id == call.id for event in events for r in event.get_function_responses())
    assert_store_holds_no_synthetic_row(web_server)
