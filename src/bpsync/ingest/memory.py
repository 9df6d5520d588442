"""Memory an import freed, handed back to the system between its steps."""

from __future__ import annotations

import ctypes
import functools
import sys
from typing import Any


def give_back_memory() -> None:
    """Memory an import's phase freed handed back to the system before the next step: Arrow's
    pool keeps freed blocks for reuse, and glibc keeps each thread's arena (the file is read in
    one worker thread, checked in another, so neither reuses the other's). A million-row dry
    run peaked 100-150 MB higher without it (bench/bench_dryrun_anchors.py)."""
    arrow = sys.modules.get("pyarrow")
    if arrow is not None:
        arrow.default_memory_pool().release_unused()
    trim = _malloc_trim()
    if trim is not None:
        trim(0)


@functools.cache
def _malloc_trim() -> Any:
    """glibc's malloc_trim (it trims every arena), or None on other C libraries."""
    try:
        return ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):
        return None
