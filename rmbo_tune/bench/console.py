"""What long runs show on the terminal: one progress bar per phase, Ray's own logs in a file.

Ray and Tune log through Python's ``ray`` loggers, Python warnings, and (from the raylet and
core workers) straight to the process's stderr. :func:`ray_logs_to_file` sends all three to
one file for the duration of a run, so the terminal shows only the run's own progress and
results; the file is named in the last line printed.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TextIO

BAR_WIDTH = 28


def _ray_loggers() -> list[logging.Logger]:
    names = {"ray"} | {n for n in logging.root.manager.loggerDict if n.startswith("ray.")}
    return [logging.getLogger(n) for n in sorted(names)]


@contextlib.contextmanager
def ray_logs_to_file(path: str | Path, announce: bool = False) -> Iterator[Path]:
    """Send Ray's log records, Python warnings and the process's stderr to ``path``.

    Everything is restored on exit, also when the body raises (the exception then reaches
    the terminal as usual). With ``announce``, the line ``Ray's log: <path>`` is printed
    to standard output once restored, also when the body raised: the log tells why.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("")  # this run's log only
    handler = logging.FileHandler(path, encoding="utf-8")
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    saved = []
    for lg in _ray_loggers():
        saved.append((lg, lg.handlers[:], lg.propagate))
        lg.handlers = [handler] if lg.name == "ray" else []
        lg.propagate = lg.name != "ray"
    warnings_logger = logging.getLogger("py.warnings")
    saved.append((warnings_logger, warnings_logger.handlers[:], warnings_logger.propagate))
    warnings_logger.handlers, warnings_logger.propagate = [handler], False
    logging.captureWarnings(True)
    sys.stderr.flush()
    stderr_fd = os.dup(2)
    log_file = open(path, "a", encoding="utf-8")
    os.dup2(log_file.fileno(), 2)
    try:
        yield path
    finally:
        sys.stderr.flush()
        os.dup2(stderr_fd, 2)
        os.close(stderr_fd)
        log_file.close()
        logging.captureWarnings(False)
        for lg, handlers, propagate in reversed(saved):
            lg.handlers, lg.propagate = handlers, propagate
        handler.close()
        if announce:
            print(f"Ray's log: {path}", flush=True)


def _clock(seconds: float) -> str:
    m, s = divmod(round(seconds), 60)
    return f"{m}:{s:02d}"


class Progress:
    """A progress bar for one phase: ``label [#####.....] 5/10  0:42 elapsed, ~0:40 left``.

    On a terminal the bar is redrawn in place; otherwise (a log file, CI) each step prints
    one line, so that the output stays readable.

    Parameters
    ----------
    label : str
    total : int
        Steps in the phase.
    stream : file-like, optional
        Where to draw (default: standard output).
    """

    def __init__(self, label: str, total: int, stream: TextIO | None = None) -> None:
        self.label, self.total, self.done = label, max(int(total), 1), 0
        self.stream = stream or sys.stdout
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.t0 = time.perf_counter()
        self._draw("")

    def line(self, note: str = "") -> str:
        """The bar's current text."""
        filled = round(BAR_WIDTH * self.done / self.total)
        elapsed = time.perf_counter() - self.t0
        text = (
            f"{self.label} [{'#' * filled}{'.' * (BAR_WIDTH - filled)}] "
            f"{self.done}/{self.total}  {_clock(elapsed)} elapsed"
        )
        if 0 < self.done < self.total:
            text += f", ~{_clock(elapsed / self.done * (self.total - self.done))} left"
        return f"{text}  {note}".rstrip()

    def _draw(self, note: str) -> None:
        if self.tty:
            self.stream.write("\r\x1b[2K" + self.line(note))
            if self.done >= self.total:
                self.stream.write("\n")
        elif self.done or not note:
            self.stream.write(self.line(note) + "\n")
        self.stream.flush()

    def step(self, note: str = "") -> None:
        """One step done; ``note`` says which (shown after the bar)."""
        self.done = min(self.done + 1, self.total)
        self._draw(note)
