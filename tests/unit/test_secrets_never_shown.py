"""No password is ever shown: not by `mask_uri`, our exceptions, logs or the config loader.

Hypothesis generates passwords made of every character that ends a password
early for one driver or another (``#``, ``?``, ``/``, ``@``, space, ``%``
escapes, ``:``, ``&``), puts them in a URI of every scheme we support (raw, %-
encoded, or as a ``password=`` query value), and looks for them in everything
we print. The CLI's output is checked the same way in
tests/integration/test_cli_secrets.py.

Before masking was derived from the drivers' grammar, the first example below,
``postgresql+asyncpg://postgres:S3cret#Pw@127.0.0.1:1/x``, came back from
`mask_uri` unchanged.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import logging
import re
import socket
import tempfile
import traceback
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import pytest
import typer
import yaml
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

from adk_pairing import UriPasswordError, create_session_service
from adk_pairing.cli._common import _MaskingFormatter, explain, run
from adk_pairing.shells.config import ConfigError, build_session_service, load_config
from adk_pairing.shells.factory import create_inner_session_service
from adk_pairing.shells.masking import mask_secrets, mask_uri
from tests.adk_features import ADK_VERSION

#: Every form of store URI we support, ``{pw}`` where the password goes.
#: Port 1 on 127.0.0.1: nothing listens, so nothing here connects anywhere.
URI_TEMPLATES = (
    "postgresql+asyncpg://postgres:{pw}@127.0.0.1:1/x",
    "postgresql://postgres:{pw}@127.0.0.1:1/x",
    "mysql+aiomysql://root:{pw}@127.0.0.1:1/x",
    "sqlite+aiosqlite://user:{pw}@/sessions.db",
    "redis://:{pw}@127.0.0.1:1/0",
    "rediss://default:{pw}@127.0.0.1:1/0",
    "postgresql+asyncpg://postgres@127.0.0.1:1/x?password={pw}",
    "redis://127.0.0.1:1/0?password={pw}",
    "pairing+postgresql+asyncpg://postgres:{pw}@127.0.0.1:1/x",
    "pairing+redis://:{pw}@127.0.0.1:1/0",
    "pairing+sqlite+aiosqlite://user:{pw}@/sessions.db",
)

PLACEHOLDER = "PLACEHOLDERPW"

# The characters that end a password early for SQLAlchemy or redis-py, plus
# ordinary ones, so most examples mix both.
_DELIMITERS = "#?/@ %:&=;'\"\\"
passwords = st.text(
    alphabet=st.sampled_from(_DELIMITERS + "abcdefghijkXYZ0123456789-_.~!$*+,é€"),
    min_size=6,
    max_size=24,
).filter(lambda pw: sum(ch.isalnum() for ch in pw) >= 4)


def written(template: str, password: str, encoded: bool) -> str:
    # In a query, a raw "&" ends the value for every parser (parse_qsl): what
    # follows is another parameter, not a password any driver would send.
    assume(encoded or "?password=" not in template or "&" not in password)
    return template.format(pw=quote(password, safe="") if encoded else password)


def forms(password: str) -> set[str]:
    """What must not appear: the password, and its %-encoded form."""
    return {password, quote(password, safe="")}


def assert_hidden(password: str, text: str, what: str) -> None:
    for form in forms(password):
        assert form not in text, f"{what} shows {form!r}: {text!r}"


def meaningful(password: str, template: str, encoded: bool, text_for_placeholder: str) -> None:
    """Skips passwords that are part of the message anyway ("postgres", "127.0.0.1")."""
    for form in forms(password):
        assume(form not in written(template, PLACEHOLDER, encoded))
        assume(form not in text_for_placeholder)


@contextlib.contextmanager
def captured_logs() -> Iterator[list[str]]:
    """Every log record of every logger, formatted with its traceback."""
    records: list[str] = []
    formatter = logging.Formatter("%(name)s %(message)s")

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(formatter.format(record))

    root = logging.getLogger()
    handler, level = Keep(logging.DEBUG), root.level
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    try:
        yield records
    finally:
        root.removeHandler(handler)
        root.setLevel(level)


def described(error: BaseException) -> str:
    """An exception as a user sees it: message, repr and the whole traceback."""
    return f"{error}\n{error!r}\n" + "".join(traceback.format_exception(error))


def plain(uri: str) -> str:
    return uri.removeprefix("pairing+")


SETTINGS = settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.filter_too_much]
)
templates = st.sampled_from(URI_TEMPLATES)


@SETTINGS
@given(template=templates, password=passwords, encoded=st.booleans())
@example(template=URI_TEMPLATES[0], password="S3cret#Pw", encoded=False)
@example(template=URI_TEMPLATES[4], password="S3cret#Pw", encoded=False)
@example(template=URI_TEMPLATES[0], password="S3cret@Pw/x y", encoded=False)
def test_mask_uri_hides_the_password_whatever_it_holds(template, password, encoded):
    uri = written(template, password, encoded)
    meaningful(password, template, encoded, mask_uri(written(template, PLACEHOLDER, encoded)))

    assert_hidden(password, mask_uri(uri), "mask_uri")
    assert_hidden(password, mask_secrets(f"failed: '{uri}' ({uri})", uri), "mask_secrets")


@SETTINGS
@given(template=templates, password=passwords, encoded=st.booleans())
@example(template=URI_TEMPLATES[0], password="S3cret#Pw", encoded=False)
@example(template=URI_TEMPLATES[4], password="S3cret#Pw", encoded=False)
# SQLAlchemy's chained error masks only up to the first "@": the rest leaked.
@example(template="sqlite+aiosqlite://user:{pw}@/sessions.db", password="@00000", encoded=False)
def test_our_exceptions_and_logs_never_show_the_password(template, password, encoded):
    uri = plain(written(template, password, encoded))
    shown: list[str] = []
    with captured_logs() as logs:
        for attempt in (
            lambda: create_session_service(uri),  # the missing-pairing+ message
            lambda: create_inner_session_service("pairing+pairing+" + uri),  # wraps twice
            lambda: create_inner_session_service("no-scheme " + uri.split("://", 1)[1]),
            lambda: create_session_service("pairing+" + uri),  # the drivers' own errors
        ):
            try:
                service = attempt()
            except Exception as error:
                shown.append(described(error))
            else:
                asyncio.run(service.close())
    shown.extend(logs)
    assert len(shown) >= 3
    meaningful(password, template, encoded, "")
    for text in shown:
        assert_hidden(password, text, "an exception or log record")


@SETTINGS
@given(template=templates, password=passwords, encoded=st.booleans())
@example(template=URI_TEMPLATES[0], password="S3cret#Pw", encoded=False)
@example(template=URI_TEMPLATES[4], password="S3cret#Pw", encoded=False)
def test_config_loader_reports_never_show_the_password(template, password, encoded):
    uri = plain(written(template, password, encoded))
    meaningful(password, template, encoded, "")
    shown: list[str] = []
    with tempfile.TemporaryDirectory() as directory, captured_logs() as logs:
        files = {
            # A plain URI without a pairing block: refused, quoting the URI.
            "plain.yaml": yaml.safe_dump({"session_service": {"uri": uri}}),
            # An inner service that cannot be built: the factory's errors.
            "engine.yaml": yaml.safe_dump(
                {"session_service": {"uri": "pairing+" + uri, "engine": {"no_such": 1}}}
            ),
            "good.yaml": yaml.safe_dump({"session_service": {"uri": "pairing+" + uri}}),
            # Malformed YAML on the line that holds the URI.
            "broken.yaml": f"session_service:\n  uri: [{uri}\n  pairing: {{}}\n",
            "broken.toml": f'[session_service]\nuri = "{uri}\n',
        }
        for name, text in files.items():
            path = Path(directory, name)
            path.write_text(text, encoding="utf-8")
            try:
                loaded = load_config(path)
                shown.extend([repr(loaded), loaded.masked_uri])
                service = build_session_service(loaded)
            except ConfigError as error:
                shown.append(described(error))
            except Exception as error:  # a driver's error at build time
                shown.append(described(error))
            else:
                asyncio.run(service.close())
        shown.extend(logs)
    assert len(shown) >= len(files)
    for text in shown:
        assert_hidden(password, text, "the config loader")


def test_the_driver_echo_of_a_misread_redis_password_is_rewritten_before_printing():
    """redis-py reads ":S3cret" as host and port, then says "...as 'S3cret'".

    The library now refuses such a URI when the service is built; ADK's own
    service, built directly, still fails on first use, and the CLI's one-line
    explanation is where that echo must be caught.
    """
    pytest.importorskip(
        "google.adk.integrations.redis",
        reason=f"google-adk {ADK_VERSION} has no google.adk.integrations.redis (added in 2.9)",
    )
    from google.adk.integrations.redis import RedisSessionService, RedisSessionServiceConfig

    uri = "pairing+redis://:S3cret#Pw@127.0.0.1:1/0"
    with pytest.raises(UriPasswordError) as refused:
        create_session_service(uri)
    assert "S3cret" not in str(refused.value)
    service = RedisSessionService(
        config=RedisSessionServiceConfig(uri=uri.removeprefix("pairing+"))
    )

    async def read() -> None:
        await service.get_session(app_name="a", user_id="u", session_id="s")

    with pytest.raises(ValueError, match="S3cret") as raised:
        asyncio.run(read())
    line = explain(raised.value, uri)

    assert "S3cret" not in line
    assert "'***'" in line
    assert "percent-encode it: # as %23" in line


def test_a_password_that_is_also_the_user_name_leaves_the_uri_readable():
    uri = "postgresql+asyncpg://postgres:postgres@127.0.0.1:1/x"
    masked = "postgresql+asyncpg://postgres:***@127.0.0.1:1/x"

    assert mask_uri(uri) == masked
    # Read right by every driver, the password is echoed by none: the user
    # name a driver quotes stays, since masking it would say what the password is.
    assert mask_secrets(f'cannot connect to {uri}: role "postgres"', uri) == (
        f'cannot connect to {masked}: role "postgres"'
    )


# -- masking by position: our words stay, no piece of the password shows ------

#: Letters of the messages the password sits in ("cannot resolve the host",
#: "holds a character that ends it early", "rejected the login"), so that a
#: mask replacing letters anywhere but in the URI is caught.
MESSAGE_LETTERS = "eostnrahlcdwip"
#: Characters that cut a password short or change it for some driver.
CUTTING = "@#/?%: "
message_passwords = st.text(
    alphabet=st.sampled_from(CUTTING + MESSAGE_LETTERS + "XY1"), min_size=3, max_size=16
).filter(lambda pw: any(ch.isalpha() for ch in pw))


def same_shape(password: str) -> str:
    """`password` with every ASCII letter changed and every other character kept.

    Drivers read both alike: delimiters, digits (ports), hex digits of %-escapes
    and letter case stay. So what is shown for the two may differ only where
    the password is shown.
    """
    rotations = ("abcdef", "ghijklmnopqrstuvwxyz")
    shaped = []
    for char in password:
        for group in rotations:
            for letters in (group, group.upper()):
                if char in letters:
                    char = letters[(letters.index(char) + 1) % len(letters)]
                    break
            else:
                continue
            break
        shaped.append(char)
    return "".join(shaped)


def shown_pieces(password: str, shown: str, shown_for_same_shape: str) -> list[str]:
    """Pieces of `password` (3+ characters, raw or %-encoded) that `shown` holds.

    A piece counts when `shown` holds it more often, in any letter case, than
    the text shown for `same_shape(password)`: what is left are our own words
    and the parts of the URI that are not the password. A piece must hold 3
    characters other than URI delimiters: "@1X" says two, as "1X" does.
    """
    shown, baseline = shown.lower(), shown_for_same_shape.lower()
    pieces = set()
    for form in (password, quote(password, safe="")):
        # Which characters of `form` say something: not delimiters, not %XX escapes.
        telling = [not _DELIMITERS_AND_SPACE.fullmatch(char) for char in form]
        for escape in re.finditer(r"%[0-9A-Fa-f]{2}", form if form != password else ""):
            telling[escape.start() : escape.end()] = [False] * 3
        for start in range(len(form)):
            for end in range(start + MIN_SHOWN_PIECE, len(form) + 1):
                if sum(telling[start:end]) >= MIN_SHOWN_PIECE:
                    pieces.add(form[start:end].lower())
    return sorted(p for p in pieces if shown.count(p) > baseline.count(p))


_DELIMITERS_AND_SPACE = re.compile(r"[#?/@:&;=%\s]")


#: The spec: no piece of the password of 3 or more characters appears.
MIN_SHOWN_PIECE = 3

# A mask glued to a letter or digit replaced part of a word (after a %XX
# escape it did not: "%23***" is "#" and a masked piece).
_MASK_INSIDE_A_WORD = re.compile(r"(?<!%[0-9A-Fa-f])[^\W_]\*\*\*|\*\*\*[^\W_]")


def assert_masked_by_position(password: str, shown: str, shown_for_same_shape: str) -> None:
    assert not shown_pieces(password, shown, shown_for_same_shape), shown
    assert not _MASK_INSIDE_A_WORD.search(shown), f"a mask inside a word: {shown!r}"


@SETTINGS
@given(template=templates, password=message_passwords, encoded=st.booleans())
@example(template=URI_TEMPLATES[0], password="e@x", encoded=False)
@example(template=URI_TEMPLATES[0], password="p@ss#word", encoded=False)
@example(template=URI_TEMPLATES[4], password="S3cret#Pw", encoded=False)
@example(template=URI_TEMPLATES[0], password="p%41ss", encoded=False)
def test_mask_uri_and_explain_depend_on_the_password_only_where_it_is(template, password, encoded):
    """What is printed for a password and for `same_shape(password)` is the same text.

    Masking by position hides the password where it stands and nothing else,
    so no letter of ours turns into stars. Before, ``ann:e@x@...`` gave
    "cannot r***solv*** th*** host".
    """
    uri, twin = (written(template, pw, encoded) for pw in (password, same_shape(password)))
    errors = [  # made afresh for each raise: a traceback grows with every raise
        lambda: socket.gaierror(-2, "Name or service not known"),
        lambda: ConnectionRefusedError(111, "Connect call failed ('127.0.0.1', 1)"),
        lambda: _driver_error("InvalidPasswordError", 'password authentication failed for "a"'),
        lambda: _driver_error("AuthenticationError", "invalid username-password pair"),
        lambda: ValueError("Port could not be cast to integer value as 'x'"),
    ]
    assert mask_uri(uri) == mask_uri(twin)
    lines = []
    for error in errors:
        for debug in (False, True):
            shown, shown_for_twin = (printed(error(), text, debug) for text in (uri, twin))
            assert shown == shown_for_twin
            assert_masked_by_position(password, shown, shown_for_twin)
            lines.append(shown)
    for words in (
        "cannot resolve the host of",
        "rejected the login",
        "Fix the user name or password",
    ):
        assert any(words in line for line in lines)


def _driver_error(name: str, message: str) -> Exception:
    """An exception named like a driver's (explain recognises drivers by class name)."""
    return type(name, (Exception,), {})(message)


def printed(error: Exception, uri: str, debug: bool) -> str:
    """What the CLI prints (stderr) when reading `uri` fails with `error`."""

    async def failing() -> None:
        raise error

    stderr = io.StringIO()
    with contextlib.redirect_stderr(stderr), pytest.raises(typer.Exit):
        run(failing(), uri=uri, debug=debug)
    return stderr.getvalue()


REDIS_TEMPLATES = [t for t in URI_TEMPLATES if "redis" in t and "?password" not in t]


@SETTINGS
@given(template=st.sampled_from(REDIS_TEMPLATES), password=message_passwords)
@example(template=URI_TEMPLATES[4], password="S3cret#Pw")
@example(template="redis://u:p@{pw}/x@127.0.0.1:1/0", password="Secret")
@example(template=URI_TEMPLATES[4], password="con/")
def test_a_driver_echo_of_a_misread_piece_is_masked_where_it_is_quoted(template, password):
    """redis-py reads ":S3cret#Pw@h" as host "" and port "S3cret", and says so.

    The piece is masked where the driver quotes it, and only there: the
    driver's own words, even those the password shares, stay.
    """
    uri = written(template, password, encoded=False)
    pieces = [p for p in re.split(r"[#?/@:\s&;=%]+", password) if len(p) >= MIN_SHOWN_PIECE]
    for piece in pieces:
        for echo in (f"as '{piece}'", f"connecting to {piece.lower()}:6379.", f'"{piece}@h:1"'):
            text = f"Name or service not known, {echo} ({password} is not {uri})"
            masked = mask_secrets(text, uri)
            if any(char in password for char in "#/?"):  # redis-py's netloc ends early
                # Only the driver's own words are left ("con" of "connecting" is not the host).
                shown = mask_secrets(echo, uri).removeprefix("connecting to ").removeprefix("as ")
                assert piece.lower() not in shown.lower()
            assert masked.startswith("Name or service not known, ")
            assert not _MASK_INSIDE_A_WORD.search(masked), masked


@SETTINGS
@given(template=templates, password=message_passwords, encoded=st.booleans())
@example(template=URI_TEMPLATES[0], password="p@ss#word", encoded=False)
def test_the_config_repr_and_log_lines_depend_on_the_password_only_where_it_is(
    template, password, encoded
):
    """The config's repr (URI or ``password:`` key) and the ``--debug`` log formatter."""
    uri, twin = (plain(written(template, pw, encoded)) for pw in (password, same_shape(password)))
    shown: dict[str, list[str]] = {uri: [], twin: []}
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory, "s.yaml")
        for text, secret in ((uri, password), (twin, same_shape(password))):
            for config in (
                {"uri": "pairing+" + text},
                {"uri": "pairing+postgresql+asyncpg://ann@127.0.0.1:1/x", "password": secret},
            ):
                path.write_text(yaml.safe_dump({"session_service": config}), encoding="utf-8")
                shown[text].append(repr(load_config(path)))
            record = logging.LogRecord(
                "sqlalchemy.engine", logging.ERROR, __file__, 1,
                "connect to %s failed (%r)", (text, text), None,
            )  # fmt: skip
            shown[text].append(_MaskingFormatter("%(message)s", text).format(record))
    for line, twin_line in zip(shown[uri], shown[twin], strict=True):
        assert line == twin_line
        assert_masked_by_position(password, line, twin_line)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # libpq's key=value connection strings, keyword and dict reprs.
        ("host=db password=S3cretPw dbname=x", "host=db password=*** dbname=x"),
        ("connect(host='db', password='S3 cret')", "connect(host='db', password=***)"),
        ("{'user': 'ann', 'password': 'S3cretPw'}", "{'user': 'ann', 'password': ***}"),
        # Our words and a driver's own are not settings.
        (
            'password authentication failed for user "ann"',
            'password authentication failed for user "ann"',
        ),
    ],
)
def test_password_settings_in_other_libraries_text_are_masked_by_their_key(text, expected):
    assert mask_secrets(text) == expected


@SETTINGS
@given(template=templates, password=message_passwords, encoded=st.booleans())
@example(template=URI_TEMPLATES[0], password="p@ss#word", encoded=False)
@example(template=URI_TEMPLATES[6], password="1@Xyz", encoded=False)
@example(template=URI_TEMPLATES[0], password="1@11 X", encoded=False)
@example(template=URI_TEMPLATES[6], password="1X%", encoded=False)  # rendered "1X%25"
@example(template=URI_TEMPLATES[0], password="@/#11X?", encoded=False)  # rendered "/%2311X"
def test_urls_as_drivers_and_adk_quote_them_are_masked_by_position(template, password, encoded):
    """SQLAlchemy's repr ("ann:***@ss#word@host": it masks up to the first "@"), and
    google-adk 1.20's and 2.6's "Invalid database URL format or argument '<the URI>'"."""
    from sqlalchemy.engine import make_url

    shown = []
    for candidate in (password, same_shape(password)):
        uri = written(template, candidate, encoded)
        quoted = [f"Invalid database URL format or argument '{plain(uri)}'."]
        with contextlib.suppress(Exception):
            quoted.append(f"engine for {make_url(plain(uri))!r} failed")
        shown.append("\n".join(mask_secrets(text, uri) for text in quoted))
    # Not equal: SQLAlchemy may show a piece shorter than 3 as the host ("***@X").
    assert_masked_by_position(password, *shown)
