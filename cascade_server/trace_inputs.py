"""Which files of a trace the simulator reads: `traces/kernelslist.g` and the kernel traces it
names (never the raw `kernel-N.trace` uploads, which the post-processor already turned into
`.traceg`). Pure: text in, names out."""

from __future__ import annotations

KERNELSLIST = "traces/kernelslist.g"


def kernel_files(kernelslist: str) -> list[str]:
    """The kernel trace files a kernelslist.g names, as paths inside the trace (`traces/...`).
    Its other lines are memory copies (`MemcpyHtoD,0x...,256`)."""
    names: list[str] = []
    for line in kernelslist.splitlines():
        name = line.strip()
        if not name or name.startswith("Memcpy") or "," in name:
            continue
        if "/" in name or name in (".", ".."):
            continue  # only files beside kernelslist.g: never a path out of the trace
        names.append(f"traces/{name}")
    return names
