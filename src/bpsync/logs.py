"""One logging setup for every entry point. The library logs to the `bpsync` logger tree (the
client's requests and retries on `bpsync.client`); where those lines go is the entry point's
choice, made here once:

- a command: nothing unless `--verbose`, then everything on stderr (with httpx's lines);
- the watcher: its own log (human or JSON lines), so a retry or a pause of the client shows in
  the same journal as the file it delays."""

from __future__ import annotations

import logging
from typing import Any

_OURS = "_bpsync_handler"  # marks the handler this module installed (replaced on a second call)
_LEVELS = {
    logging.DEBUG: "debug",
    logging.INFO: "info",
    logging.WARNING: "warning",
    logging.ERROR: "error",
    logging.CRITICAL: "error",
}


class ToWatchLog(logging.Handler):
    """Forwards `bpsync.*` records to a WatchLog: event = the logger's last name (`client`)."""

    def __init__(self, log: Any) -> None:  # a bpsync.watch.log.WatchLog
        super().__init__()
        self.log = log

    def emit(self, record: logging.LogRecord) -> None:
        try:
            level = _LEVELS.get(record.levelno, "info")
            event = record.name.rsplit(".", 1)[-1]
            self.log.log(level, event, record.getMessage(), logger=record.name)  # type: ignore[arg-type]
        except Exception:  # a log line must never stop the program
            self.handleError(record)


def setup(verbose: bool, sink: logging.Handler | None = None) -> None:
    """Route the `bpsync` loggers: to `sink` (INFO and up, DEBUG with `verbose`) when given,
    else to stderr with `verbose` only."""
    logger = logging.getLogger("bpsync")
    for handler in [h for h in logger.handlers if getattr(h, _OURS, False)]:
        logger.removeHandler(handler)
    if sink is not None:
        setattr(sink, _OURS, True)
        logger.addHandler(sink)
        logger.setLevel(logging.DEBUG if verbose else logging.INFO)
        logger.propagate = False  # once, in the sink; not again on stderr
        return
    logger.propagate = True
    logger.setLevel(logging.NOTSET)  # a sink set up earlier in this process set INFO
    if verbose:
        logging.basicConfig(level=logging.DEBUG, format="%(levelname)s %(name)s: %(message)s")
        logging.getLogger("httpcore").setLevel(logging.INFO)
