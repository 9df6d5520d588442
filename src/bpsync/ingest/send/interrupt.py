"""Stop requests handed to the engine by its entry point. Signals belong to the entry point
(`bpsync import` turns Ctrl-C into `request()`); the engine only listens: the first request stops
sending after the requests in flight, a second cancels them (the journal reconciles them on the
next run)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager


class Interrupts:
    def __init__(self) -> None:
        self.count = 0
        self._listeners: list[Callable[[int], None]] = []

    def request(self) -> None:
        """One more stop request (safe to call from a signal handler of the running loop)."""
        self.count += 1
        for listener in list(self._listeners):
            listener(self.count)

    @contextmanager
    def listen(self, listener: Callable[[int], None]) -> Iterator[None]:
        self._listeners.append(listener)
        try:
            if self.count:  # a request that came before the listener still counts
                listener(self.count)
            yield
        finally:
            self._listeners.remove(listener)
