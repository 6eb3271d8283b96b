"""A time limit for the whole path from a model file to loaded kernels, and the stage it stops.

``with time_limit(seconds):`` around the path (``runtime.load(..., timeout=)``, ``python -m
extract ... --timeout``) bounds it as a whole; the steps mark themselves with
``with stage(KEY):`` (``frontend.compile_model``: "elaborate"; ``dump.parse``: "parse";
``sources.generate``: "lower"; ``build.build``: "compile"). At the limit the error names the
stage that was running and how long it had run::

    with time_limit(30):                 TimeLimitError: time limit of 30 s reached while
        runtime.load("big.model")   ->   compiling the C (it had run 24.2 s; 30.0 s in all)

How it stops. In the main thread a ``SIGALRM`` timer raises ``TimeLimitError`` wherever the
path is: in Python (parsing, lowering), or waiting for a child (``subprocess.run`` then kills
the Agda executable; in the "compile" stage the handler first kills this process's
descendants, the C compiler, by their ids, since cffi's build would wait for it). In another
thread there is no timer: each stage checks the limit when it starts, and the Agda step runs
with what is left of it as its timeout. Without ``time_limit`` nothing is checked (the Agda
step keeps its own default of ``frontend.TIMEOUT``).

This module imports nothing of the project.
"""
from __future__ import annotations

import contextlib
import os
import signal
import threading
import time

STAGES = {
    "elaborate": "elaborating the model in Agda",
    "parse": "parsing the dump",
    "lower": "lowering and the passes",
    "compile": "compiling the C",
}


class TimeLimitError(RuntimeError):
    """The time limit passed; ``stage`` (a key of ``STAGES``) is what was running."""

    def __init__(self, limit: float, stage: str | None, stage_seconds: float, seconds: float):
        self.limit, self.stage = limit, stage
        self.stage_seconds, self.seconds = stage_seconds, seconds
        what = STAGES.get(stage, "starting") if stage else "starting"
        super().__init__(f"time limit of {limit:g} s reached while {what} (it had run "
                         f"{stage_seconds:.1f} s; {seconds:.1f} s in all)")


class _Deadline:
    def __init__(self, seconds: float):
        self.limit = seconds
        self.start = time.monotonic()
        self.end = self.start + seconds
        self.stage: str | None = None
        self.stage_start = self.start

    def error(self) -> TimeLimitError:
        now = time.monotonic()
        return TimeLimitError(self.limit, self.stage, now - self.stage_start, now - self.start)

    def remaining(self) -> float:
        return self.end - time.monotonic()

    def check(self) -> None:
        if self.remaining() <= 0:
            raise self.error()


_local = threading.local()


def current() -> _Deadline | None:
    return getattr(_local, "deadline", None)


def remaining() -> float | None:
    """Seconds left of the current time limit (None without one)."""
    d = current()
    return None if d is None else d.remaining()


def _descendants(pid: int) -> list[int]:
    """The ids of ``pid``'s descendants, children last (from /proc; [] elsewhere)."""
    parent = {}
    try:
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                try:
                    with open(f"/proc/{entry}/stat") as f:
                        stat = f.read()
                    parent[int(entry)] = int(stat[stat.rindex(")") + 2:].split()[1])
                except (OSError, ValueError, IndexError):
                    continue
    except OSError:
        return []
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        kids = [c for c, pp in parent.items() if pp == p]
        out.extend(kids)
        todo.extend(kids)
    return out[::-1]


def _on_alarm(signum, frame):
    d = current()
    if d is None:
        return
    if d.stage == "compile":     # cffi's build would wait for the compiler to finish
        for pid in _descendants(os.getpid()):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
    raise d.error()


@contextlib.contextmanager
def time_limit(seconds: float | None):
    """Bound what runs inside to ``seconds`` (None: no limit); a limit already running that
    ends sooner stays in force."""
    if seconds is None:
        yield None
        return
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not seconds > 0:
        raise ValueError(f"a time limit is a positive number of seconds, not {seconds!r}")
    outer = current()
    if outer is not None and outer.remaining() <= seconds:
        yield outer
        return
    d = _Deadline(float(seconds))
    alarm = (threading.current_thread() is threading.main_thread()
             and hasattr(signal, "setitimer"))
    if alarm:
        old_handler = signal.signal(signal.SIGALRM, _on_alarm)
        old_timer = signal.setitimer(signal.ITIMER_REAL, seconds)
    _local.deadline = d
    try:
        yield d
    finally:
        _local.deadline = outer
        if alarm:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, old_handler)
            if old_timer[0]:     # someone else's timer: give back what is left of it
                left = old_timer[0] - (time.monotonic() - d.start)
                signal.setitimer(signal.ITIMER_REAL, max(left, 1e-3), old_timer[1])


@contextlib.contextmanager
def stage(key: str):
    """Mark the stage ``key`` (of ``STAGES``) as running; at its start the limit is checked."""
    d = current()
    if d is None:
        yield
        return
    before = (d.stage, d.stage_start)
    d.stage, d.stage_start = key, time.monotonic()
    try:
        d.check()
        yield
    finally:
        d.stage, d.stage_start = before


def deep_enough() -> None:
    """Expressions are trees walked recursively; AD output can nest deeply (the depth itself is
    bounded by ``dump.MAX_DEPTH``, checked before any walk)."""
    import sys
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 50000))
