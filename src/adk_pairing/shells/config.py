"""Session service configuration files (YAML or TOML).

The file names one store and, optionally, the decorator's options and the
inner service's options::

    session_service:
      uri: pairing+postgresql+asyncpg://${DB_USER}@db:5432/agents
      password: ${DB_PASSWORD:-}   # optional: sent as written, whatever it holds;
                                    # unset or empty: no password
      pairing:                      # optional
        missing_text: "..."
        pending_text: "..."
        analysis_cache_size: 4096   # sessions whose analysis is remembered; 0: off
      engine: {pool_size: 10}       # optional, keyword arguments of the inner service

Rules, chosen so a mistake is caught at start-up rather than in production:

* ``${VAR}`` and ``${VAR:-default}`` in string values expand from the
  environment; ``$${`` stands for a literal ``${``. An unset variable without
  a default is an error naming the variable, the key and the file.
* ``password`` goes into the URI percent-encoded, so a password holding
  ``@``, ``#``, ``/``, ``?``, ``%`` or a space is sent as written. A value
  expanded inside ``uri`` is inserted as is, and must be percent-encoded
  already (``p%40ss%23word``), as in any URI.
* Unknown keys and wrong types are errors naming the file, the key path and
  what is allowed.
* The URI must say ``pairing+`` -- or, for a plain inner URI, the file must
  contain a ``pairing:`` block (``pairing: {}`` will do). A plain URI alone
  would silently configure an *unwrapped* service, so it is rejected.
* No message and no log line shows a password: URIs are masked, and values
  from the file are never echoed (only key names are).
"""

from __future__ import annotations

import difflib
import os
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml
from pydantic import BaseModel, ConfigDict, NonNegativeInt, ValidationError

from .errors import PairingError, require_type
from .factory import create_inner_session_service
from .masking import mask_secrets, mask_uri
from .uris import PAIRING_PREFIX, inner_uri, is_pairing_uri, with_password

if TYPE_CHECKING:
    from .service import PairingSessionService

YAML_SUFFIXES = (".yaml", ".yml")
TOML_SUFFIXES = (".toml",)


class ConfigError(PairingError, ValueError):
    """A configuration file that cannot be used; the message says where and why."""

    def __init__(self, path: str | os.PathLike[str], message: str) -> None:
        self.path = str(path)
        self.detail = message
        super().__init__(f"{self.path}: {message}")


# -- schema ------------------------------------------------------------------


class PairingBlock(BaseModel):
    """``session_service.pairing``: the decorator's own options."""

    model_config = ConfigDict(extra="forbid", strict=True)

    missing_text: str | None = None
    pending_text: str | None = None
    # Strict: a bool or a float such as 10.0 is refused, not coerced.
    analysis_cache_size: NonNegativeInt | None = None


class SessionServiceBlock(BaseModel):
    """``session_service``: which store, and how to reach it."""

    model_config = ConfigDict(extra="forbid", strict=True)

    uri: str
    password: str | None = None
    pairing: PairingBlock | None = None
    engine: dict[str, Any] | None = None


class ConfigFile(BaseModel):
    """The whole file."""

    model_config = ConfigDict(extra="forbid", strict=True)

    session_service: SessionServiceBlock


@dataclass(frozen=True)
class SessionServiceSettings:
    """A validated, environment-expanded configuration.

    ``uri`` may hold a password: print `masked_uri`, never ``uri``.
    """

    path: str
    uri: str
    missing_text: str | None = None
    pending_text: str | None = None
    analysis_cache_size: int | None = None
    inner_kwargs: dict[str, Any] = field(default_factory=dict)

    @property
    def inner_uri(self) -> str:
        return inner_uri(self.uri)

    @property
    def masked_uri(self) -> str:
        return mask_uri(self.uri)

    def __repr__(self) -> str:
        # A dataclass repr would print the password and every engine value.
        return (
            f"SessionServiceSettings(path={self.path!r}, uri={self.masked_uri!r}, "
            f"inner_kwargs={sorted(self.inner_kwargs)})"
        )


# -- environment expansion ---------------------------------------------------

#: The key whose empty value means "no password" (``${DB_PASSWORD:-}``).
_PASSWORD_KEY = "session_service.password"

_REFERENCE = re.compile(
    r"\$\$\{|\$\{(?P<name>[A-Za-z_][A-Za-z0-9_]*)(?::-(?P<default>[^}]*))?\}|\$\{(?P<bad>[^}]*)\}?"
)


def _expand_string(value: str, environ: Mapping[str, str], path: str, key_path: str) -> str:
    def replace(match: re.Match[str]) -> str:
        if match.group(0) == "$${":
            return "${"
        if match.group("name") is None:
            raise ConfigError(
                path,
                f"{key_path}: malformed variable reference; write ${{NAME}} or "
                "${NAME:-default} (NAME: letters, digits, underscores), or $${ for a literal ${.",
            )
        name = match.group("name")
        if name in environ:
            return environ[name]
        default = match.group("default")
        if default is not None:
            return default
        if key_path == _PASSWORD_KEY:
            fix = f"Set it, or write ${{{name}:-}} to connect without a password when it is unset."
        else:
            fix = f"Set it, or give a default with ${{{name}:-default}}."
        raise ConfigError(path, f"{key_path}: environment variable {name} is not set. {fix}")

    return _REFERENCE.sub(replace, value)


def _expand(value: Any, environ: Mapping[str, str], path: str, key_path: str) -> Any:
    """`value` with ``${VAR}`` references expanded in every string it holds."""
    if isinstance(value, str):
        return _expand_string(value, environ, path, key_path)
    if isinstance(value, dict):
        return {
            key: _expand(item, environ, path, _join(key_path, key)) for key, item in value.items()
        }
    if isinstance(value, list):
        return [
            _expand(item, environ, path, f"{key_path}[{index}]") for index, item in enumerate(value)
        ]
    return value


def _join(prefix: str, key: object) -> str:
    return f"{prefix}.{key}" if prefix else str(key)


# -- reading -----------------------------------------------------------------


def _parse(path: Path) -> Any:
    suffix = path.suffix.lower()
    if suffix not in YAML_SUFFIXES + TOML_SUFFIXES:
        raise ConfigError(
            path,
            f"unsupported file type {suffix or '(none)'!r}; use .yaml, .yml or .toml.",
        )
    try:
        raw = path.read_bytes()
    except OSError as error:
        raise ConfigError(path, f"cannot read the file: {error.strerror or error}") from None
    if suffix in TOML_SUFFIXES:
        try:
            return tomllib.loads(raw.decode("utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as error:
            # TOML's messages name the line and column, never the content.
            raise ConfigError(path, f"invalid TOML: {error}") from None
    try:
        return yaml.safe_load(raw)
    except yaml.YAMLError as error:
        # PyYAML's str() quotes the offending line, which may hold a password.
        raise ConfigError(path, f"invalid YAML: {_yaml_problem(error)}") from None


def _yaml_problem(error: yaml.YAMLError) -> str:
    if isinstance(error, yaml.MarkedYAMLError):
        mark = error.problem_mark
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        return f"{error.problem or error.context or 'syntax error'}{where}"
    return type(error).__name__


def _allowed_keys(model: type[BaseModel]) -> str:
    return ", ".join(model.model_fields)


_MODELS_BY_PATH: dict[str, type[BaseModel]] = {
    "": ConfigFile,
    "session_service": SessionServiceBlock,
    "session_service.pairing": PairingBlock,
}

_EXPECTED = {
    "session_service": "a table/mapping with keys: " + _allowed_keys(SessionServiceBlock),
    "session_service.uri": "a string (e.g. pairing+postgresql+asyncpg://user@host:5432/db)",
    "session_service.password": (
        "a string, the password as is (percent-encoded into the URI by the loader)"
    ),
    "session_service.pairing": (
        "a table/mapping with keys: " + _allowed_keys(PairingBlock) + " (may be empty)"
    ),
    "session_service.pairing.missing_text": "a string",
    "session_service.pairing.pending_text": "a string",
    "session_service.pairing.analysis_cache_size": "a whole number >= 0 (0 turns the cache off)",
    "session_service.engine": (
        "a table/mapping of keyword arguments for the inner service, e.g. {pool_size: 10}"
    ),
}


def _describe(error: dict[str, Any]) -> str:
    """One validation problem as 'key.path: what is wrong; what is allowed'.

    Built from the location and error type only: pydantic's own message would
    quote the input, and the input may be a secret.
    """
    location = [str(part) for part in error["loc"]]
    key_path = ".".join(location)
    kind = error["type"]
    if kind == "extra_forbidden":
        parent = ".".join(location[:-1])
        model = _MODELS_BY_PATH.get(parent)
        allowed = _allowed_keys(model) if model else "none"
        where = f"under {parent}" if parent else "at the top level"
        close = difflib.get_close_matches(
            location[-1], list(model.model_fields) if model else [], 1
        )
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        return f"{key_path}: unknown key {location[-1]!r}{hint}; allowed keys {where}: {allowed}."
    if kind == "missing":
        return (
            f"{key_path}: required key is missing; expected {_EXPECTED.get(key_path, 'a value')}."
        )
    expected = _EXPECTED.get(key_path, "a valid value")
    if kind.endswith("_type"):
        return f"{key_path}: wrong type; expected {expected}."
    # The right type, a value out of range (e.g. a negative analysis_cache_size).
    return f"{key_path}: invalid value; expected {expected}."


def load_config(
    path: str | os.PathLike[str], *, environ: Mapping[str, str] | None = None
) -> SessionServiceSettings:
    """Reads, expands and validates a configuration file without connecting anywhere.

    Args:
      path: A ``.yaml``/``.yml`` or ``.toml`` file.
      environ: Where ``${VAR}`` values come from; `os.environ` by default.

    Raises:
      ArgumentTypeError: `path` or `environ` has the wrong type.
      ConfigError: The file is unreadable, malformed, refers to an unset
        variable, has an unknown key or a wrong type, or names a plain URI
        without a ``pairing:`` block.
    """
    require_type(
        "path", path, (str, os.PathLike), "a file path (str or os.PathLike)", optional=False
    )
    require_type(
        "environ", environ, Mapping, "a mapping of variable names to values", optional=True
    )
    file_path = Path(path)
    data = _parse(file_path)
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(
            file_path,
            "the file must hold a table/mapping with the key session_service.",
        )
    expanded = _expand(data, os.environ if environ is None else environ, str(file_path), "")
    try:
        config = ConfigFile.model_validate(expanded)
    except ValidationError as error:
        items = error.errors(include_input=False)
        # A misspelt key also makes the key it stands for missing: the
        # misspelling, the cause, comes first. Each problem ends with a period.
        items.sort(key=lambda item: item["type"] != "extra_forbidden")
        raise ConfigError(file_path, " ".join(_describe(item) for item in items)) from None

    block = config.session_service
    uri = block.uri
    # An empty password is none: ``password: ${DB_PASSWORD:-}`` with the
    # variable unset leaves the URI as written.
    if block.password:
        try:
            uri = with_password(block.uri, block.password)
        except ValueError as error:
            raise ConfigError(
                file_path,
                f"session_service.password: {error} ({mask_uri(block.uri)!r}); "
                "write the URI without a password, e.g. postgresql+asyncpg://user@host:5432/db.",
            ) from None
    has_pairing_block = "pairing" in block.model_fields_set
    if not is_pairing_uri(uri) and not has_pairing_block:
        masked = mask_uri(uri)
        raise ConfigError(
            file_path,
            f"session_service.uri: {masked!r} is a plain URI, which would configure a "
            f"session service without pairing. Write uri: {mask_uri(PAIRING_PREFIX + uri)!r}"
            ", or keep the plain URI and add a pairing block (pairing: {} in YAML, "
            "[session_service.pairing] in TOML).",
        )
    pairing = block.pairing or PairingBlock()
    return SessionServiceSettings(
        path=str(file_path),
        uri=uri,
        missing_text=pairing.missing_text,
        pending_text=pairing.pending_text,
        analysis_cache_size=pairing.analysis_cache_size,
        inner_kwargs=dict(block.engine or {}),
    )


def build_session_service(settings: SessionServiceSettings) -> PairingSessionService:
    """The `PairingSessionService` that `settings` describe.

    Raises:
      ConfigError: The inner service cannot be built from the URI and engine
        options (the message names the file and is free of passwords).
    """
    from .service import PairingSessionService

    try:
        inner = create_inner_session_service(settings.inner_uri, **settings.inner_kwargs)
    except (ValueError, TypeError, ImportError) as error:
        # The factory's ValueErrors are its own words, other libraries' text
        # in them masked already: only a URI quoted whole is masked again.
        reasons = [mask_secrets(str(error), settings.uri, embedded=type(error) is not ValueError)]
        if error.__cause__ is not None and str(error.__cause__):
            reasons.append(mask_secrets(str(error.__cause__), settings.uri))
        raise ConfigError(
            settings.path,
            f"session_service: cannot build the session service for {settings.masked_uri!r} "
            f"with engine options {sorted(settings.inner_kwargs)}: " + " <- ".join(reasons),
        ) from None
    return PairingSessionService(
        inner,
        missing_text=settings.missing_text,
        pending_text=settings.pending_text,
        analysis_cache_size=settings.analysis_cache_size,
    )


def load_session_service(
    path: str | os.PathLike[str], *, environ: Mapping[str, str] | None = None
) -> PairingSessionService:
    """The `PairingSessionService` a YAML or TOML configuration file describes.

    Args:
      path: A ``.yaml``/``.yml`` or ``.toml`` file (see this module's docstring).
      environ: Where ``${VAR}`` values come from; `os.environ` by default.

    Raises:
      ConfigError: Anything wrong with the file or the store it names; one
        exception whose message names the file and the key.
    """
    return build_session_service(load_config(path, environ=environ))
