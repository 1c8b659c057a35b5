"""Readable C++ kernel names (`_Z11gelu_kernelP6float4i` -> `gelu_kernel(float4*, int)`)."""

from __future__ import annotations

from functools import lru_cache

try:
    import cxxfilt
except Exception:  # cxxfilt loads libstdc++ through ctypes; without it names stay mangled
    cxxfilt = None


@lru_cache(maxsize=4096)
def demangle(name: str | None) -> str:
    """A readable C++ kernel name; the identifier itself when it is not a mangled name."""
    if not name:
        return ""
    if cxxfilt is None or not name.startswith("_Z"):
        return name
    try:
        return cxxfilt.demangle(name)
    except Exception:  # InvalidName, a name that is not UTF-8, a failing libstdc++
        return name
