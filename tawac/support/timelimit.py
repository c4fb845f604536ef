"""A bound on the wall-clock time of one compilation (no xDSL import: the driver opens it
before it knows whether the compile cache holds the kernel)."""

from __future__ import annotations

import signal
import time

from tawac.support.diagnostics import CompileError

__all__ = ["TimeLimit", "set_stage"]


class _Expired(BaseException):
    """Raised by the alarm; a BaseException so that no `except Exception` swallows it on
    its way out to `TimeLimit`."""


class TimeLimit:
    """A bound on the wall-clock time of a compilation: past `seconds`, the stage running
    (`stage`, kept up to date by the driver) stops with one `CompileError`.

    SIGALRM interrupts Python code and the regular-expression engine alike; it exists in
    the main thread only, elsewhere (and with `seconds` 0) there is no limit. Nested
    limits keep the outer one. ptxas gets the time that is left as its time-out."""

    active: TimeLimit | None = None

    def __init__(self, seconds: float | None) -> None:
        self.seconds = seconds if seconds else None
        self.stage = "parsing"
        self._deadline: float | None = None
        self._armed = False
        self._closing = False

    def remaining(self) -> float | None:
        """Seconds left (at least 0.01), or None without a limit."""
        if self._deadline is None:
            return None
        return max(0.01, self._deadline - time.monotonic())

    def __enter__(self) -> TimeLimit:
        if TimeLimit.active is not None:
            return TimeLimit.active
        TimeLimit.active = self
        if self.seconds is None:
            return self
        self._deadline = time.monotonic() + self.seconds
        try:
            self._previous = signal.signal(signal.SIGALRM, self._alarm)
        except ValueError:  # not the main thread: no alarm
            return self
        signal.setitimer(signal.ITIMER_REAL, self.seconds)
        self._armed = True
        return self

    def _alarm(self, signum, frame) -> None:
        if not self._closing:  # not once __exit__ has begun: it would escape the `with`
            raise _Expired()

    def __exit__(self, kind, value, tb) -> bool:
        self._closing = True
        if TimeLimit.active is not self:
            return False
        TimeLimit.active = None
        if self._armed:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, self._previous)
        if kind is not None and issubclass(kind, _Expired):
            raise CompileError(
                f"compilation did not finish within {self.seconds:g} s (stopped while "
                f"{self.stage}); --time-limit sets the limit"
            ) from None
        return False


def set_stage(name: str) -> None:
    """Name what the compilation under the active limit does now (for its message)."""
    if TimeLimit.active is not None:
        TimeLimit.active.stage = name
