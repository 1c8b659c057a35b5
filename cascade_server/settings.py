"""Server configuration: every `CASCADE_*` environment variable, in one pydantic-settings model."""

from __future__ import annotations

import ipaddress
import os
import secrets
import shlex
import sys
from pathlib import Path
from urllib.parse import urlsplit
from typing import Literal

from pydantic import Field, ValidationError, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from .shared.packaged import samples_dir
from .shared.setting_errors import data_dir_problem, range_problem, token_problem, url_problem


def default_data_dir() -> Path:
    xdg = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(xdg) / "cascade"


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="CASCADE_", extra="ignore")

    data_dir: Path = Field(default_factory=default_data_dir)
    host: str = "127.0.0.1"
    port: int = Field(default=8000, ge=1, le=65535)
    # The token every client sends; generated and stored in data_dir/token when unset.
    token: str | None = None
    no_auth: bool = False
    workspace: str | None = None
    # Serve the terminal UI in a browser at every path outside /api/, behind the token (spec 001:
    # "Paths outside /api/ serve the web UI"); `cascade serve --no-web` or CASCADE_WEB=0 turns it
    # off. Each open tab runs a `cascade tui` process: at most web_max_sessions at once.
    web: bool = True
    web_max_sessions: int = Field(default=8, ge=1, le=1000)
    # The URL workers use to reach this server; derived from host and port when unset.
    public_url: str | None = None

    heartbeat_timeout_s: float = 60.0
    keepalive_s: float = 15.0
    launcher: Literal["local", "manual", "slurm"] = "local"
    local_slots: int = Field(default_factory=lambda: os.cpu_count() or 1)
    # What a Slurm job runs: `cascade worker` of this install by default; a cluster whose nodes
    # have their own install names theirs, e.g. `/opt/cascade/bin/cascade worker`.
    worker_command: str | None = None

    # The slurm launcher (README, "Run on a Slurm cluster").
    slurm_partition: str | None = None
    slurm_account: str | None = None
    slurm_time: str | None = None  # per sim, sbatch's --time (e.g. 4:00:00)
    slurm_args: str = ""  # more sbatch arguments, shell-quoted: "--mem=8G --qos=long"
    slurm_output_dir: Path | None = None  # the jobs' stdout/stderr; data_dir/slurm when unset
    slurm_local: bool = False  # the cluster is this host: a loopback public URL is fine
    slurm_poll_s: float = Field(default=5.0, ge=1.0)  # one squeue for all jobs this often
    accelsim_dir: Path | None = None
    samples: bool = True
    samples_dir: Path = Field(default_factory=samples_dir)
    replay_speed: float | None = None

    s3_endpoint: str | None = None
    s3_bucket: str = "cascade"
    scan_interval_s: float = 2.0
    # The embedded `rclone serve s3` (used when s3_endpoint is unset) listens on 127.0.0.1:s3_port.
    s3_port: int = Field(default=9020, ge=1, le=65535)
    # A trace whose metadata.json lists files that stay missing or short this long fails.
    trace_upload_timeout_s: float = 600.0
    # Post-processing limits: a compressed trace file may expand to this many times its size, a
    # trace's compressed files to this many bytes in all, and a trace may take this long.
    postprocess_max_ratio: float = 500.0
    postprocess_max_bytes: int = 64 * 1024**3
    postprocess_timeout_s: float = 3600.0

    # A client must send a request's headers within header_timeout_s of connecting or of its
    # previous response (an idle keep-alive connection closes then too), and never go silent for
    # body_timeout_s while sending a body: half-sent requests must not hold connections for good.
    header_timeout_s: float = 30.0
    body_timeout_s: float = 60.0
    # An event-stream subscriber that stops reading is disconnected once this much is waiting for
    # it (on top of the 2,000-events rule), or once one write to it has waited this long.
    sse_max_buffer_bytes: int = 16 * 1024 * 1024
    sse_send_timeout_s: float = 30.0

    # JSON bodies (log chunks, step timelines); uploaded files have their own limits below.
    max_json_bytes: int = 32 * 1024 * 1024
    max_file_bytes: int = 64 * 1024 * 1024
    max_sim_files_bytes: int = 256 * 1024 * 1024

    @field_validator("data_dir")
    @classmethod
    def _data_dir_can_be_a_directory(cls, path: Path) -> Path:
        # Found here, before anything starts: later the database would claim it "cannot be read"
        # and suggest restoring a backup of a file that never was a database.
        if problem := data_dir_problem(path):
            raise ValueError(problem)
        return path

    @field_validator("public_url")
    @classmethod
    def _public_url_is_plain(cls, url: str | None) -> str | None:
        # Workers call it, and the agent prompt puts it in shell commands: nothing but a URL.
        if url and (problem := url_problem(url)):
            raise ValueError(problem)
        return url or None

    @field_validator("token")
    @classmethod
    def _token_fits_a_header(cls, token: str | None) -> str | None:
        # Refused at start: the server would run, then answer 401 to every client.
        if token is not None and (problem := token_problem(token)):
            raise ValueError(problem)
        return token

    @property
    def monitor_interval_s(self) -> float:
        """How often the heartbeat monitor looks: often enough to honour short test timeouts."""
        return max(0.05, min(self.heartbeat_timeout_s / 4, 5.0))

    @property
    def db_path(self) -> Path:
        return self.data_dir / "cascade.db"

    @property
    def files_dir(self) -> Path:
        return self.data_dir / "files"

    @property
    def traces_dir(self) -> Path:
        return self.data_dir / "traces"

    @property
    def trace_books_dir(self) -> Path:
        """The trace scanner's per-trace bookkeeping (what it mirrored)."""
        return self.data_dir / "trace-scan"

    @property
    def workers_dir(self) -> Path:
        """Local workers' own output (`<sim_id>.log`), apart from the sim's log the API serves."""
        return self.data_dir / "workers"

    @property
    def configs_root(self) -> Path:
        """The Accel-Sim install whose tested configs runs may use (the samples' when none)."""
        return self.accelsim_dir or (self.samples_dir / "accelsim")

    @property
    def slurm_output_path(self) -> Path:
        return (self.slurm_output_dir or self.data_dir / "slurm").absolute()

    def worker_argv(self) -> list[str]:
        """The command that runs one sim (its settings come in the environment)."""
        if self.worker_command:
            return shlex.split(self.worker_command)
        return [sys.executable, "-m", "cascade_worker"]

    def launcher_problem(self) -> str | None:
        """Why the configured launcher cannot work, or None."""
        if self.launcher != "slurm":
            return None
        host = urlsplit(self.base_url).hostname or ""
        if not self.slurm_local and (host == "localhost" or _is_loopback(host)):
            return (f"the slurm launcher needs CASCADE_PUBLIC_URL, the URL compute nodes reach this "
                    f"server at (workers would call {self.base_url}, which is this host only); "
                    f"set CASCADE_SLURM_LOCAL=1 if the cluster is this host")
        try:
            extra = shlex.split(self.slurm_args)
            self.worker_argv()
        except ValueError as exc:
            return f"CASCADE_SLURM_ARGS or CASCADE_WORKER_COMMAND cannot be split like a shell would: {exc}"
        from .launchers.slurm_jobs import reserved_option_problem

        return reserved_option_problem(extra)

    @property
    def base_url(self) -> str:
        if self.public_url:
            return self.public_url.rstrip("/")
        host = "127.0.0.1" if self.host in ("0.0.0.0", "::", "") else self.host
        return f"http://{host}:{self.port}"


# The settings `cascade serve` also takes as flags.
_FLAGS = {"host": "--host", "port": "--port", "data_dir": "--data-dir", "web": "--web/--no-web"}


def settings_problem(exc: ValidationError) -> str:
    """`CASCADE_PORT / --port must be a number from 1 to 65535 (got 99999)`: every wrong setting
    on one line, named as the operator sets it (pydantic's own text is one line per field, and a
    header line that names the class)."""
    problems = []
    for err in exc.errors(include_url=False):
        field = str(err["loc"][0]) if err["loc"] else ""
        name = f"CASCADE_{field.upper()}" + (f" / {_FLAGS[field]}" if field in _FLAGS else "")
        reason = range_problem(Settings, err) or str(err["msg"]).removeprefix("Value error, ")
        problems.append(f"{name}: {reason}")
    return "; ".join(problems)


def _is_loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class TokenError(ValueError):
    """The token file holds a token no client can send; the message is one line."""


def stored_token(data_dir: Path) -> str | None:
    """The token kept in `data_dir/token`, None when there is none; TokenError when no client
    could send it (checked at start: otherwise every request would be refused)."""
    path = data_dir / "token"
    try:
        token = path.read_text().strip()
    except FileNotFoundError:
        return None
    if token and (problem := token_problem(token)):
        raise TokenError(f"the token in {path}: {problem}")
    return token or None


def load_or_create_token(data_dir: Path) -> str:
    """The app's token, generated once and kept in `data_dir/token` (mode 0600)."""
    token = stored_token(data_dir)
    if token:
        return token
    path = data_dir / "token"
    data_dir.mkdir(parents=True, exist_ok=True)
    token = secrets.token_urlsafe(32)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as out:
        out.write(token + "\n")
    return token
