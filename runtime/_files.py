"""Atomic writes of the files the runtime produces, with the permissions the user expects.

``tempfile.mkstemp`` creates its file with mode 0600 whatever the umask, so a file published
by renaming it would be private to its owner. ``atomic_write`` gives it ``0o666 & ~umask``
(what ``open(path, "w")`` would have given) before the rename.
"""

from __future__ import annotations

import os
import tempfile
import threading
from pathlib import Path

_lock = threading.Lock()


def umask() -> int:
    """The process umask, read without changing it where the system allows."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    with _lock:  # elsewhere: set and restore (not atomic for other threads)
        old = os.umask(0o022)
        os.umask(old)
    return old


def default_mode() -> int:
    """The mode ``open(path, "w")`` gives a new file: ``0o666 & ~umask``."""
    return 0o666 & ~umask()


def atomic_write(path: Path, write, binary: bool = True, suffix: str = ".tmp") -> Path:
    """Write ``path`` atomically: ``write(f)`` fills a temporary file in the same directory,
    which is flushed, fsync'ed, given the default permissions and renamed over ``path``; a
    reader (or a crash) never sees half a file."""
    def write_to(tmp: str) -> None:
        with open(tmp, "wb" if binary else "w") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())

    path = atomic_write_via(path, write_to, suffix)
    _fsync_dir(path.parent if str(path.parent) else Path("."))
    return path


def atomic_write_via(path: Path, write_to, suffix: str = ".tmp") -> Path:
    """Like ``atomic_write`` for writers that want a file name (``write_to(tmp_name)``, e.g.
    matplotlib's ``savefig``, whose format follows ``suffix``)."""
    path = Path(path)
    directory = path.parent if str(path.parent) else Path(".")
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=suffix, dir=directory)
    os.close(fd)
    try:
        write_to(tmp)
        os.chmod(tmp, default_mode())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    return path


def _fsync_dir(directory: Path) -> None:
    try:  # make the rename itself durable
        dfd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)
    except OSError:
        pass
