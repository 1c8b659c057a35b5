# The compiled part of cascade_server/accelsim_log.py (see _accelsim_merge.c): the same functions.
from collections.abc import Callable

def read_block_lines(
    block: dict[str, float | str],
    lines: list[str],
    start: int,
    max_keys: int,
    repeats: dict[str, int],
    line_cache: dict[str, tuple[float | str, str] | None],
    names_cache: dict[str, list[str]],
    key_eq_value: Callable[[str], tuple[str, str] | None],
    /,
) -> tuple[int, bool]: ...
def parse_value(raw: str, /) -> float | str: ...

LINE_CACHE_LIMIT: int
KEYS_CACHED_LIMIT: int
CACHED_LINE_MAX: int
NAMES_CACHED_PER_KEY: int
CACHED_KEY_MAX: int
STATS_LINE_MAX: int
