"""A private CUDA 11.8 folder from PyPI wheels: headers, `ptxas`, and a stand-in `nvcc`.

GPGPU-Sim's trace-driven build only reads CUDA's version (`nvcc --version`) and includes its
headers; nothing is compiled by nvcc. So `CUDA_INSTALL_PATH` needs `include/` (the three wheels'
headers merged), `bin/ptxas` and a `bin/nvcc` that answers `--version`. A system CUDA (even a
newer one on PATH or in ld.so.conf) is never read: GPGPU-Sim at this commit refuses CUDA > 11.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path, PurePosixPath

WHEELS = (
    "nvidia-cuda-runtime-cu11==11.8.89",
    "nvidia-cuda-nvcc-cu11==11.8.89",  # also has ptxas
    "nvidia-cuda-profiler-api-cu11==11.8.86",  # cuda_profiler_api.h
)
VERSION_LINE = "Cuda compilation tools, release 11.8, V11.8.89"
NVCC = f"""#!/bin/sh
# Cascade's stand-in nvcc: GPGPU-Sim's makefiles only ask for the version.
case "$*" in
  *--version*|*-V*) echo "nvcc: NVIDIA (R) Cuda compiler driver"; echo "{VERSION_LINE}"; exit 0 ;;
esac
echo "cascade: this nvcc only answers --version (no CUDA toolkit is installed)" >&2
exit 1
"""


class WheelError(Exception):
    pass


def member_target(member: str) -> PurePosixPath | None:
    """Where a wheel member goes in the CUDA folder: `nvidia/<pkg>/include/X` -> `include/X`,
    `nvidia/cuda_nvcc/bin/ptxas` -> `bin/ptxas`; None for everything else. Pure."""
    parts = PurePosixPath(member).parts
    if len(parts) >= 4 and parts[0] == "nvidia" and parts[2] == "include" and not member.endswith("/"):
        if parts[-1] == "__init__.py":
            return None
        return PurePosixPath("include", *parts[3:])
    if parts[:4] == ("nvidia", "cuda_nvcc", "bin", "ptxas") and len(parts) == 4:
        return PurePosixPath("bin/ptxas")
    return None


def download(dest: Path) -> list[Path]:
    """The three wheels into `dest` with pip (its cache makes a second time quick)."""
    dest.mkdir(parents=True, exist_ok=True)
    argv = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--quiet",
        "--no-deps",
        "--only-binary=:all:",
        "--disable-pip-version-check",
        "-d",
        str(dest),
        *WHEELS,
    ]
    result = subprocess.run(argv, capture_output=True, text=True)
    if result.returncode != 0:
        lines = [line for line in (result.stderr or result.stdout).splitlines() if line.strip()]
        raise WheelError(
            "pip could not download the CUDA 11.8 header wheels from PyPI: "
            + (lines[-1] if lines else f"pip exited {result.returncode}")
        )
    return wheels_in(dest)


def wheels_in(folder: Path) -> list[Path]:
    found = sorted(folder.glob("nvidia_cuda_*.whl"))
    names = {path.name.split("-")[0] for path in found}
    wanted = {spec.split("==")[0].replace("-", "_") for spec in WHEELS}
    if not wanted <= names:
        raise WheelError(f"{folder} lacks the wheels {', '.join(sorted(wanted - names))}")
    return found


def make_cuda_dir(wheels: list[Path], cuda: Path) -> None:
    """Unpack the headers and ptxas into `cuda` and write the stand-in nvcc."""
    (cuda / "bin").mkdir(parents=True, exist_ok=True)
    (cuda / "include").mkdir(exist_ok=True)
    for wheel in wheels:
        try:
            with zipfile.ZipFile(wheel) as archive:
                for info in archive.infolist():
                    target = member_target(info.filename)
                    if target is None:
                        continue
                    out = cuda / target
                    out.parent.mkdir(parents=True, exist_ok=True)
                    with archive.open(info) as src, open(out, "wb") as dst:
                        shutil.copyfileobj(src, dst, 1 << 20)
        except (zipfile.BadZipFile, KeyError) as exc:
            raise WheelError(f"{wheel} is not a readable wheel ({exc}); delete it and try again") from None
    (cuda / "bin" / "ptxas").chmod(0o755)
    nvcc = cuda / "bin" / "nvcc"
    nvcc.write_text(NVCC)
    nvcc.chmod(0o755)
    if not (cuda / "include" / "cuda_runtime.h").is_file():
        raise WheelError("the CUDA wheels held no cuda_runtime.h")


def reuse_or_download(cache: Path, given: Path | None) -> list[Path]:
    """Wheels from `given` (a folder of .whl files, for offline machines) or downloaded to `cache`."""
    if given is not None:
        return wheels_in(given)
    try:
        return wheels_in(cache)
    except WheelError:
        return download(cache)


def cuda_env(cuda: Path, base: dict[str, str] | None = None) -> dict[str, str]:
    """The build's environment: our CUDA first on PATH, and nothing of another CUDA's libraries."""
    env = dict(os.environ if base is None else base)
    env["CUDA_INSTALL_PATH"] = str(cuda)
    env["PATH"] = f"{cuda / 'bin'}{os.pathsep}{env.get('PATH', '/usr/bin:/bin')}"
    env.pop("LD_LIBRARY_PATH", None)
    return env
