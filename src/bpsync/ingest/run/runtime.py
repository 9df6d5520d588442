"""How an import runs its steps side by side: `background` work beside a block, and interpreter
settings for the length of an import's local work (bench/bench_dryrun.py measured
both). Both are process-wide, so each is counted: imports running at once (the watcher, the app)
leave the setting in place until the last of them ends, then the process's own is restored."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import sys
import threading
from collections.abc import AsyncIterator, Callable, Coroutine, Iterator
from typing import Any, TypeVar

T = TypeVar("T")

# The event loop reads the stored-readings prefetch's answers while a worker thread reads the
# file. At Python's default 5 ms switch interval every socket read waits for the reader's time
# slice to end: 30 pages of 1,000 readings finished 0.4-0.6 s after the read beside them.
HANDOFF_SECONDS = 0.0005


class _Shared:
    """A process-wide setting held while any user holds it."""

    def __init__(self, hold: Callable[[], Callable[[], None]]) -> None:
        self._hold = hold
        self._lock = threading.Lock()
        self._users = 0
        self._release: Callable[[], None] = lambda: None

    @contextlib.contextmanager
    def __call__(self) -> Iterator[None]:
        with self._lock:
            if self._users == 0:
                self._release = self._hold()
            self._users += 1
        try:
            yield
        finally:
            with self._lock:
                self._users -= 1
                if self._users == 0:
                    self._release()


def _shorter_switch_interval() -> Callable[[], None]:
    saved = sys.getswitchinterval()
    ours = min(saved, HANDOFF_SECONDS)
    sys.setswitchinterval(ours)

    def restore() -> None:
        if sys.getswitchinterval() == ours:  # the host's own change in the meantime stays
            sys.setswitchinterval(saved)

    return restore


def _freeze() -> Callable[[], None]:
    # Every object alive now (modules, the app, the service client) goes to the permanent
    # generation: a full collection during the import walks only what the import made. In a
    # process holding 200,000 objects each full collection took 0.16 s, two or three an import.
    if gc.get_freeze_count():  # the host freezes its own heap: leave it as it is
        return lambda: None
    # Garbage just left behind (a failed import's traceback, say) is freed first, not held until
    # the import ends: a collection of the young generations, which costs next to nothing.
    # Garbage already in the oldest generation would wait for the next full collection anyway,
    # and that full collection of the whole heap (0.17 s in the bench's process) is what the
    # freeze saves.
    gc.collect(1)
    gc.freeze()
    return gc.unfreeze


quick_handoffs = _Shared(_shorter_switch_interval)
"""A 0.5 ms GIL switch interval while an import's file read runs beside network I/O."""

frozen_heap = _Shared(_freeze)
"""The objects alive when an import starts left out of collections until it ends."""


@contextlib.asynccontextmanager
async def background(work: Coroutine[Any, Any, T]) -> AsyncIterator[asyncio.Task[T]]:
    """`work` running alongside the block; cancelled (and its failure dropped) if the block ends
    without awaiting it."""
    task = asyncio.create_task(work)
    try:
        yield task
    finally:
        if not task.done():
            task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await task
