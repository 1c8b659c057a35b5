"""Settings of `cascade tui`: flags, then CASCADE_* environment variables, then a TOML config file.

The config file (default `$XDG_CONFIG_HOME/cascade/tui.toml`, or `--config` / CASCADE_CONFIG)
may hold the token, so it must be private (mode 0600): a token in a file others can read is
refused with the `chmod` to run. The token is a `SecretStr` and never printed.
"""

from __future__ import annotations

import os
import stat
import tomllib
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from pydantic import Field, SecretStr, ValidationError, field_validator
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
)

from cascade_core.setting_errors import range_problem

DEFAULT_URL = "http://127.0.0.1:8000"


class ConfigError(Exception):
    """A problem with the settings, worded for the operator (never contains the token)."""


def default_config_path(environ: dict[str, str] | os._Environ[str] | None = None) -> Path:
    env = os.environ if environ is None else environ
    if env.get("CASCADE_CONFIG"):
        return Path(env["CASCADE_CONFIG"]).expanduser()
    base = env.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "cascade" / "tui.toml"


def default_download_dir() -> Path:
    return Path.cwd() / "cascade-downloads"


class _TomlFileSource(PydanticBaseSettingsSource):
    """Reads the private TOML config file; a missing file is simply empty."""

    def __init__(self, settings_cls: type[BaseSettings], path: Path) -> None:
        super().__init__(settings_cls)
        self.path = path
        self.data = read_config_file(path)

    def get_field_value(self, field: Any, field_name: str) -> tuple[Any, str, bool]:
        return self.data.get(field_name), field_name, False

    def __call__(self) -> dict[str, Any]:
        return {k: v for k, v in self.data.items() if k in self.settings_cls.model_fields}


def read_config_file(path: Path) -> dict[str, Any]:
    try:
        raw = path.read_bytes()
        mode = path.stat().st_mode
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise ConfigError(f"cannot read config file {path}: {exc.strerror}") from None
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"config file {path} is not valid TOML: {exc}") from None
    if data.get("token") and mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise ConfigError(
            f"config file {path} holds a token but others can read it "
            f"(mode {stat.S_IMODE(mode):04o}); run: chmod 600 {path}"
        )
    return data


class TuiSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="CASCADE_", extra="ignore")

    # Every field has a `description`: docs/gen_reference.py writes the configuration reference from them.
    url: str = Field(default=DEFAULT_URL, description="the app's base URL")
    token: SecretStr | None = Field(
        default=None,
        description="the app's bearer token (the `token:` line `cascade serve` printed); never shown",
    )
    download_dir: Path = Field(
        default_factory=default_download_dir,
        json_schema_extra={"doc_default": "`./cascade-downloads`"},
        description="where the UI saves results, logs and files",
    )
    refresh_hz: float = Field(
        default=2.0, ge=0.5, le=4.0, description="how often live tables redraw (0.5 to 4)"
    )
    log_max_lines: int = Field(
        default=200_000,
        ge=1_000,
        le=5_000_000,
        description="how many lines the log pane keeps; the full log is always one `L` away",
    )
    config: Path | None = Field(
        default=None,
        json_schema_extra={"doc_default": "`$XDG_CONFIG_HOME/cascade/tui.toml`"},
        description="the TOML config file to read (a file holding a token must be mode 0600)",
    )

    @field_validator("url")
    @classmethod
    def _url_has_scheme(cls, value: str) -> str:
        value = value.strip().rstrip("/")
        if not value.startswith(("http://", "https://")):
            raise ValueError(f"must start with http:// or https://: got {value!r}")
        try:
            parts = urlsplit(value)
            parts.port  # noqa: B018 - parsing the port is the check: `:http` or `:99999` raise
        except ValueError as exc:
            raise ValueError(f"{value!r} is not a valid URL ({exc})") from None
        if not parts.hostname:
            raise ValueError(f"{value!r} names no host")
        return value

    @field_validator("token")
    @classmethod
    def _token_fits_a_header(cls, value: SecretStr | None) -> SecretStr | None:
        # It goes into an HTTP header: anything else fails there, blamed on the server.
        # Never quote the token itself.
        secret = value.get_secret_value() if value else ""
        if secret and not (secret.isascii() and secret.isprintable() and " " not in secret):
            raise ValueError(
                "must be printable ASCII without spaces (the `token:` line `cascade serve` printed)"
            )
        return value

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        flags = init_settings()
        path = Path(flags["config"]).expanduser() if flags.get("config") else default_config_path()
        return (init_settings, env_settings, _TomlFileSource(settings_cls, path))

    def token_value(self) -> str | None:
        return self.token.get_secret_value() if self.token else None


# Where each setting comes from, as the operator sets it (the config file holds the field's name).
SETTING_NAMES = {
    "url": "CASCADE_URL / --url",
    "token": "CASCADE_TOKEN / --token",
    "download_dir": "CASCADE_DOWNLOAD_DIR / --download-dir",
    "refresh_hz": "CASCADE_REFRESH_HZ / --refresh-hz",
    "log_max_lines": "CASCADE_LOG_MAX_LINES",
    "config": "CASCADE_CONFIG / --config",
}


def load_settings(**flags: Any) -> TuiSettings:
    """Settings from flags (None means "not given"), env and the config file, or ConfigError."""
    given = {k: v for k, v in flags.items() if v is not None}
    try:
        return TuiSettings(**given)
    except ValidationError as exc:
        raise ConfigError("; ".join(_problem(err) for err in exc.errors(include_url=False))) from None


def _problem(err: Any) -> str:
    """`CASCADE_URL / --url must start with http:// or https://: got 'x'`: the setting as the
    operator names it, then what is wrong, without pydantic's `Value error, `."""
    field = ".".join(str(p) for p in err["loc"]) or "settings"
    name = SETTING_NAMES.get(field, field)
    if bounded := range_problem(TuiSettings, err):  # only numbers: never quotes the token
        return f"{name} {bounded}"
    if err["type"] == "value_error":
        reason = str(err["ctx"]["error"])
        # a sentence that starts with the value itself reads better after a colon
        return f"{name}: {reason}" if reason.startswith("'") else f"{name} {reason}"
    return f"{name}: {err['msg']}"


def save_config(path: Path, url: str, token: str | None) -> None:
    """Write url and token to `path`, created private (0600) before any secret is written."""
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [f"url = {_toml_str(url)}"]
    if token:
        lines.append(f"token = {_toml_str(token)}")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        os.fchmod(fh.fileno(), 0o600)
        fh.write("\n".join(lines) + "\n")


def _toml_str(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
