"""Readable C++ kernel names (`_Z11gelu_kernelP6float4i` -> `gelu_kernel(float4*, int)`)."""

from __future__ import annotations

from functools import lru_cache

try:
    import cxxfilt
except Exception:  # cxxfilt loads libstdc++ through ctypes; without it names stay mangled
    cxxfilt = None


@lru_cache(maxsize=4096)
def demangle(name: str) -> str:
    if cxxfilt is None or not name.startswith("_Z"):
        return name
    try:
        return cxxfilt.demangle(name)
    except Exception:
        return name
