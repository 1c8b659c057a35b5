"""Server configuration: every `CASCADE_*` environment variable, in one pydantic-settings model."""

from __future__ import annotations

import ipaddress
import os
import secrets
import shlex
import sys
from pathlib import Path
from typing import Literal
from urllib.parse import urlsplit

from pydantic import Field, ValidationError, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from cascade_core.packaged import samples_dir
from cascade_core.setting_errors import (
    data_dir_problem,
    reserved_option_problem,
    settings_problem_line,
    token_problem,
    url_problem,
)


def default_data_dir() -> Path:
    xdg = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(xdg) / "cascade"


class Settings(BaseSettings):
    # Every field has a `description` (and, when its default depends on the machine, a `doc_default`):
    # docs/gen_reference.py writes the configuration reference from them.
    model_config = SettingsConfigDict(env_prefix="CASCADE_", extra="ignore")

    data_dir: Path = Field(
        default_factory=default_data_dir,
        json_schema_extra={"doc_default": "`$XDG_DATA_HOME/cascade`"},
        description="database (`cascade.db`), uploaded files, trace mirror, token",
    )
    host: str = Field(
        default="127.0.0.1",
        description="where `cascade serve` listens (and `cascade up` starts it, without CASCADE_URL)",
    )
    port: int = Field(
        default=8000,
        ge=1,
        le=65535,
        description="where `cascade serve` listens (and `cascade up` starts it, without CASCADE_URL)",
    )
    # The token every client sends; generated and stored in data_dir/token when unset.
    token: str | None = Field(
        default=None,
        description="the one bearer token of the app",
        json_schema_extra={"doc_default": "generated, kept in `DATA_DIR/token` (0600)"},
    )
    no_auth: bool = Field(default=False, description="`1` turns auth off (local development)")
    workspace: str | None = Field(default=None, description="a name reported by `/api/health`")
    # Serve the terminal UI in a browser at every path outside /api/, behind the token (spec 001:
    # "Paths outside /api/ serve the web UI"). Each open tab runs a `cascade tui` process.
    web: bool = Field(
        default=True,
        description="serves the UI in a browser at every path outside `/api/`, behind the token; `0` "
        "turns it off (`cascade serve --no-web`)",
    )
    web_max_sessions: int = Field(
        default=8,
        ge=1,
        le=1000,
        description="browser tabs (each a `cascade tui` process) open at once; past it, 503",
    )
    # The URL workers use to reach this server; derived from host and port when unset.
    public_url: str | None = Field(
        default=None,
        json_schema_extra={"doc_default": "`http://HOST:PORT`"},
        description="the URL workers and the agent prompt use to reach the server, "
        "`http(s)://host[:port][/path]` and nothing else. The slurm launcher requires it, as the compute "
        "nodes reach it: the server refuses to start the slurm launcher on a loopback URL "
        "(`127.0.0.1`, `localhost`)",
    )

    heartbeat_timeout_s: float = Field(
        default=60.0,
        description="silence before a sim is `lost`; `failed` after 10 times that. Only silence the server "
        "was running to hear (and could store) counts: after a start, a freeze (SIGSTOP, a suspended "
        "host) or a full disk, every sim gets a full timeout again",
    )
    keepalive_s: float = Field(
        default=15.0, description="seconds of silence on an event stream before a `: keepalive` comment"
    )
    launcher: Literal["local", "manual", "slurm"] = Field(
        default="local",
        description="`local` (worker subprocesses), `manual` (bring your own simulator) or `slurm` "
        "(one Slurm job per sim; its `CASCADE_SLURM_*` settings are below)",
    )
    local_slots: int = Field(
        default_factory=lambda: os.cpu_count() or 1,
        json_schema_extra={"doc_default": "CPU count"},
        description="sims the local launcher runs at once; the rest wait `pending`",
    )
    accelsim_dir: Path | None = Field(
        default=None,
        description="an Accel-Sim checkout: its tested configs, and real simulation; wins over a "
        "build `cascade simulator install` made",
    )
    samples: bool = Field(
        default=True, description="seed the sample trace and run, and upload the demo traces"
    )
    samples_dir: Path = Field(
        default_factory=samples_dir,
        json_schema_extra={"doc_default": "the package's own"},
        description="the sample trace and run, demo traces, stand-in recordings and the "
        "GPU configs used without Accel-Sim",
    )
    replay_speed: float | None = Field(
        default=None,
        json_schema_extra={"doc_default": "`1`"},
        description="stand-in pacing (`10` replays ten times faster)",
    )

    # The slurm launcher (docs/guides/slurm.md).
    # What a Slurm job runs: `cascade worker` of this install by default; a cluster whose nodes
    # have their own install names theirs, e.g. `/opt/cascade/bin/cascade worker`.
    worker_command: str | None = Field(
        default=None,
        json_schema_extra={"doc_default": "this install's `cascade worker`"},
        description='what a job runs, for nodes with their own install: `"/opt/cascade/bin/cascade worker"`',
    )
    slurm_partition: str | None = Field(
        default=None,
        description="`sbatch --partition`",
        json_schema_extra={"doc_default": "the cluster's default"},
    )
    slurm_account: str | None = Field(default=None, description="`sbatch --account`")
    slurm_time: str | None = Field(
        default=None,
        json_schema_extra={"doc_default": "the partition's"},
        description="`sbatch --time`, per sim (e.g. `8:00:00`; Slurm rounds up to minutes)",
    )
    slurm_args: str = Field(
        default="",
        json_schema_extra={"doc_default": "none"},
        description="more `sbatch` arguments, shell-quoted; they come last, so they win",
    )
    slurm_output_dir: Path | None = Field(
        default=None,
        json_schema_extra={"doc_default": "`DATA_DIR/slurm`"},
        description="the jobs' stdout and stderr (`JOBID_N.out`, `.err`) and exit-status files "
        "(`JOBID_N.exit`); "
        "an absolute path that must exist on the nodes too",
    )
    slurm_local: bool = Field(
        default=False,
        description="`1`: the cluster is this host, so a loopback URL is fine "
        "(a one-machine cluster, the tests)",
    )
    slurm_poll_s: float = Field(
        default=5.0, ge=1.0, description="seconds between `squeue` calls (at least 1)"
    )
    # The slurm launcher runs a real simulator only from under one of these (simulator_watch.py).
    slurm_shared_roots: str = Field(
        default="",
        description="folders every compute node mounts at the same path, `:`-separated: the slurm "
        "launcher runs an installed simulator only from under one of them (install it there with "
        "`cascade simulator install --prefix`)",
    )

    s3_endpoint: str | None = Field(
        default=None,
        description="any S3 (AWS, MinIO, ...) holding traces",
        json_schema_extra={"doc_default": "embedded `rclone serve s3` on `127.0.0.1:9020`"},
    )
    s3_bucket: str = Field(
        default="cascade", description="the bucket scanned for `accelsim-traces/<trace_id>/`"
    )
    scan_interval_s: float = Field(default=2.0, description="seconds between two listings of the bucket")
    s3_port: int = Field(
        default=9020,
        ge=1,
        le=65535,
        description="the port of the embedded `rclone serve s3` (used when `CASCADE_S3_ENDPOINT` "
        "is unset), on 127.0.0.1",
    )
    trace_upload_timeout_s: float = Field(
        default=600.0,
        description="a trace whose `metadata.json` lists files that stay missing or short this long "
        "(with no new upload activity) fails",
    )
    postprocess_max_ratio: float = Field(
        default=500.0,
        description="a compressed trace file may expand to this many times its size (or 16 MiB)",
    )
    postprocess_max_bytes: int = Field(
        default=64 * 1024**3,
        json_schema_extra={"doc_default": "`68719476736` (64 GiB)"},
        description="what all compressed files of one trace may expand to",
    )
    postprocess_timeout_s: float = Field(
        default=3600.0, description="how long post-processing one trace may take"
    )

    # Half-sent requests must not hold connections for good.
    header_timeout_s: float = Field(
        default=30.0,
        description="a connection that has not sent a whole request's headers this long after opening "
        "(or after its last response, when idle) is closed",
    )
    body_timeout_s: float = Field(
        default=60.0,
        description="a request body that stops arriving for this long gets `408` "
        "and the connection is closed",
    )
    sse_max_buffer_bytes: int = Field(
        default=16 * 1024 * 1024,
        description="an event stream client this far behind "
        "(16 MiB waiting) is disconnected, like one 2,000 events behind",
    )
    sse_send_timeout_s: float = Field(
        default=30.0,
        description="an event stream client that reads nothing for this long "
        "while events wait is disconnected",
    )

    max_json_bytes: int = Field(
        default=32 * 1024 * 1024,
        description="the largest JSON body (log chunks, step timelines) the server takes, in bytes",
    )
    max_file_bytes: int = Field(
        default=64 * 1024 * 1024, description="the largest file a sim may upload, in bytes"
    )
    sim_log_limit_mb: int = Field(
        default=256,
        ge=0,
        le=2**30,
        description="the log the server stores of one sim, in MiB: past it only kernel launches, stats "
        "blocks, failures and Cascade's notes are kept, and the log and the sim's error say so; its "
        "workers keep their logs within it too (`CASCADE_SIM_LOG_LIMIT_MB` of the worker); 0: no limit",
    )
    max_sim_files_bytes: int = Field(
        default=256 * 1024 * 1024, description="what all files of one sim may hold, in bytes"
    )

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
            return (
                f"the slurm launcher needs CASCADE_PUBLIC_URL, the URL compute nodes reach this "
                f"server at (workers would call {self.base_url}, which is this host only); "
                f"set CASCADE_SLURM_LOCAL=1 if the cluster is this host"
            )
        try:
            extra = shlex.split(self.slurm_args)
            self.worker_argv()
        except ValueError as exc:
            return f"CASCADE_SLURM_ARGS or CASCADE_WORKER_COMMAND cannot be split like a shell would: {exc}"
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
    """Every wrong setting on one line (`shared.setting_errors.settings_problem_line`)."""
    return settings_problem_line(Settings, exc, _FLAGS)


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


def token_hint(settings: Settings) -> str:
    """Where this server's token is, in words: its data directory's token file (`~` for the home
    directory), or CASCADE_TOKEN when the server was started with another token."""
    path = settings.data_dir / "token"
    try:
        stored = path.read_text().strip()
    except (OSError, UnicodeDecodeError):
        stored = None
    if not settings.token or stored != settings.token:
        return "the CASCADE_TOKEN the server was started with"
    try:
        return "cat ~/" + shlex.quote(str(path.resolve().relative_to(Path.home().resolve())))
    except (ValueError, RuntimeError, OSError):
        return f"cat {shlex.quote(str(path))}"


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
