"""A failed C build as one line: the model (and the binding, when gcc's output names one of its
kernels), gcc's first error, and the path of a file holding the whole log.

    BuildError: gcc failed building model 'mlp' (f32), binding h1: mlp.c:12:5: error: ...;
                full log: /home/u/.cache/proved-kernels/logs/_pk_mlp_f32_3fa2….log

``captured()`` collects what a child writes to the process's standard error while cffi compiles
(cffi lets gcc write there), so that it can go into the log instead of the terminal.

This module imports nothing of the project but ``cache`` (where the logs are kept).
"""
from __future__ import annotations

import contextlib
import os
import re
import sys
import tempfile
from pathlib import Path


class BuildError(RuntimeError):
    """The C compiler rejected generated sources (one line; the log's path in it)."""

    def __init__(self, message: str, log: Path | None = None):
        super().__init__(message)
        self.log = log


def _first_error(log: str) -> str:
    for line in log.splitlines():
        if re.search(r"\berror\b", line):
            return line.strip()[:300]
    lines = [x.strip() for x in log.splitlines() if x.strip()]
    return lines[-1][:300] if lines else "no output"


def failure(model: str, precision: str, log: str, logs_dir: Path, stem: str,
            bindings: dict | None = None) -> BuildError:
    """The ``BuildError`` for gcc's output ``log``, written to ``logs_dir/stem.log``.
    ``bindings``: C function name prefix -> the user's binding name, to name the binding in
    whose kernel gcc found the first error."""
    path = None
    try:
        from ..cache import private_dir
        private_dir(logs_dir)
        path = logs_dir / f"{stem}.log"
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(log)
    except OSError:
        try:
            fd, name = tempfile.mkstemp(prefix=f"{stem}-", suffix=".log")
            with os.fdopen(fd, "w") as f:
                f.write(log)
            path = Path(name)
        except OSError:
            path = None
    where = ""
    m = re.search(r"In function [‘'`\"]?\w*?_(?:forward|backward)_a(\d+)_(\w+)", log)
    if m and len(m.group(2)) >= int(m.group(1)):    # a kernel: its binding (extract/ir/names.py)
        where = f", binding {m.group(2)[:int(m.group(1))]}"
    elif bindings:
        m = re.search(r"In function [‘'`\"]?(\w+)", log)
        if m:
            best = max((p for p in bindings if m.group(1).startswith(p)), key=len, default=None)
            if best is not None:
                where = f", binding {bindings[best]}"
    first = _first_error(log).replace("\n", " ")
    tail = f"; full log: {path}" if path else " (the log could not be written)"
    return BuildError(f"gcc failed building model {model!r} ({precision}){where}: {first}{tail}",
                      path)


@contextlib.contextmanager
def captured():
    """File descriptor 2 sent to a temporary file while the block runs; yields a list that
    holds the text written there once the block is over (also when it raised)."""
    out: list = []
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile(mode="w+b") as f:
        os.dup2(f.fileno(), 2)
        try:
            yield out
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            f.seek(0)
            out.append(f.read().decode(errors="replace"))
