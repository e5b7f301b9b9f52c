"""A long job's progress (observe watching a server, review going through a plan): one line on stderr, rewritten in
place at most twice a second and erased when the job ends, so what stays on stderr is only what went wrong. Shown
only where stderr is a terminal: a pipe or a log gets the result alone."""

from __future__ import annotations

import sys
import time


class Progress:
    def __init__(self, stream=None, every_s: float = 0.5, clock=time.monotonic) -> None:
        self.stream = stream if stream is not None else sys.stderr
        isatty = getattr(self.stream, "isatty", None)
        self.shown = bool(isatty and isatty())
        self.every_s, self.clock = every_s, clock
        self.last, self.width = -float("inf"), 0

    def __call__(self, text: str, force: bool = False) -> None:
        now = self.clock()
        if not self.shown or (now - self.last < self.every_s and not force):
            return
        self.last = now
        text = "".join(c if c.isprintable() else "?" for c in text)[:200]
        self.stream.write("\r" + text.ljust(self.width))
        self.stream.flush()
        self.width = len(text)

    def __enter__(self) -> "Progress":
        return self

    def __exit__(self, *exc) -> None:
        if self.shown and self.width:
            self.stream.write("\r" + " " * self.width + "\r")
            self.stream.flush()
