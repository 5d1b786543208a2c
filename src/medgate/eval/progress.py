"""A one-line progress display with an ETA, on stderr so that stdout stays parseable."""

from __future__ import annotations

import sys
import time
from typing import TextIO


def _clock(seconds: float) -> str:
    s = int(max(0, seconds))
    return f"{s // 3600:d}:{s % 3600 // 60:02d}:{s % 60:02d}"


class Progress:
    def __init__(self, total: int, label: str, stream: TextIO | None = None) -> None:
        self.total = total
        self.label = label
        self.done = 0
        self.stream = stream or sys.stderr
        self.t0 = time.perf_counter()
        self._timed = 0
        self._timed_seconds = 0.0

    def update(self, seconds: float | None = None, note: str = "") -> None:
        """One more item; ``seconds`` is its own cost (items served from cache are excluded
        from the ETA rate when ``seconds`` is given as 0)."""
        self.done += 1
        if seconds is not None and seconds > 0:
            self._timed += 1
            self._timed_seconds += seconds
        elapsed = time.perf_counter() - self.t0
        rate = (self._timed_seconds / self._timed) if self._timed else (elapsed / self.done)
        eta = rate * (self.total - self.done)
        self.stream.write(
            f"\r{self.label}: {self.done}/{self.total} elapsed {_clock(elapsed)} "
            f"eta {_clock(eta)} {note}"[:150].ljust(100)
        )
        if self.done >= self.total:
            self.stream.write("\n")
        self.stream.flush()
