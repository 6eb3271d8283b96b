"""The kernel cache trusts only itself: who may write it is checked, and every module it loads
is the one it built, byte for byte.

What is checked (the threat model is README.md, "Security and limits"):

- the cache directory (``$PROVED_KERNELS_CACHE``, else the per-user cache directory) is made
  0700 whatever the umask, and refused when it is not owned by this user or is writable by
  group or others (a symbolic link is followed to its target, which is checked);
- a module's directory, its shared object and its record are refused likewise;
- every module built records the sha256 of its shared object in ``ok`` (written in the private
  build directory, published with it by one atomic rename). Before a module is loaded
  (``dlopen``) its bytes are hashed and compared with the record: a truncated shared object,
  mapped, would kill the process with SIGBUS, so nothing unverified is ever mapped.

A module that fails the hash or fails to load is *damaged*: ``build`` removes it and builds it
again, once, with a note on stderr. A directory or module owned by someone else or writable
by others is *foreign*: ``CacheError``, one line naming the path and why, and nothing is
removed or loaded.

    trusted_dir(Path("/tmp/c"))      -> /tmp/c (created 0700, or checked)
    seal(tmp, key)                   writes tmp/ok: "<key>\\nsha256 <hex> <module file>\\n"
    damage(final)                    -> None, or why the module may not be loaded
    load(name, final)                -> (ffi, lib); Damaged if it fails to load

This module imports nothing of the project.
"""
from __future__ import annotations

import hashlib
import importlib.util
import os
import stat
import sys
from pathlib import Path

RECORD = "ok"       # a module directory's record: the build key, then the module's sha256


class CacheError(RuntimeError):
    """A cache directory or module this user may not trust (one line)."""


class Damaged(RuntimeError):
    """A cached module whose bytes are not those recorded, or that fails to load."""


def _foreign(path: Path, st: os.stat_result, what: str) -> str | None:
    """Why ``path`` may not be trusted, or None."""
    if hasattr(os, "getuid") and st.st_uid != os.getuid():
        return (f"refusing the {what} {path}: it is owned by uid {st.st_uid}, not by this user "
                f"(uid {os.getuid()})")
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return (f"refusing the {what} {path}: it is writable by group or others (mode "
                f"{stat.S_IMODE(st.st_mode):04o}); only its owner may write a kernel cache "
                f"(chmod go-w it, or point $PROVED_KERNELS_CACHE at a directory of your own)")
    return None


def check(path: Path, what: str = "kernel cache directory") -> None:
    """``CacheError`` unless ``path`` is owned by this user and writable by nobody else."""
    reason = _foreign(path, os.stat(path), what)
    if reason:
        raise CacheError(reason)


def private_dir(path: Path) -> Path:
    """``path`` and its missing parents created 0700 (whatever the umask); ``path`` checked."""
    path = Path(path)
    missing = []
    p = path
    while not p.exists() and p != p.parent:
        missing.append(p)
        p = p.parent
    for d in reversed(missing):
        try:
            d.mkdir(mode=0o700)
        except FileExistsError:
            continue
        os.chmod(d, 0o700)      # mkdir's mode is masked by the umask; this is not
    check(path)
    return path


trusted_dir = private_dir


def module_file(directory: Path, name: str) -> Path | None:
    """The shared object of module ``name`` in ``directory`` (None: there is none)."""
    try:
        entries = sorted(directory.iterdir())
    except OSError:
        return None
    return next((p for p in entries if p.name.startswith(name + ".")
                 and p.suffix in (".so", ".pyd")), None)


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def seal(directory: Path, key: str, name: str | None = None) -> None:
    """Before publishing a freshly built module directory: every file in it made private
    (0700 directories and shared objects, 0600 the rest) and its record written: the key and
    the sha256 of the module ``name`` (the shared object named ``name.*.so``; without
    ``name``, every ``*.so`` there)."""
    for root, dirs, files in os.walk(directory):
        os.chmod(root, 0o700)
        for f in files:
            p = os.path.join(root, f)
            if not os.path.islink(p):
                os.chmod(p, 0o700 if f.endswith((".so", ".pyd")) else 0o600)
    if name is not None:
        so = module_file(directory, name)
        modules = [so] if so else []
    else:
        modules = sorted(directory.glob("*.so"))
    lines = [key] + [f"sha256 {_sha256(p)} {p.name}" for p in modules]
    record = directory / RECORD
    tmp = directory / f"{RECORD}.tmp{os.getpid()}"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write("\n".join(lines) + "\n")
    os.replace(tmp, record)


def present(directory: Path) -> bool:
    return (directory / RECORD).exists()


def damage(directory: Path, name: str | None = None) -> str | None:
    """None if the module directory holds what its record says; else why not (damaged: build
    it again). ``CacheError`` if the directory, the record or a module is foreign."""
    st = os.lstat(directory)
    if stat.S_ISLNK(st.st_mode):
        raise CacheError(f"refusing the cached module {directory}: it is a symbolic link")
    reason = _foreign(directory, st, "cached module directory")
    if reason:
        raise CacheError(reason)
    record = directory / RECORD
    try:
        rst = os.lstat(record)
    except FileNotFoundError:
        return "it has no record of its contents"
    if not stat.S_ISREG(rst.st_mode):
        raise CacheError(f"refusing the cached module {directory}: its record is not a file")
    reason = _foreign(record, rst, "cache record")
    if reason:
        raise CacheError(reason)
    hashes = {}
    for line in record.read_text(errors="replace").splitlines()[1:]:
        parts = line.split(" ", 2)
        if len(parts) == 3 and parts[0] == "sha256":
            hashes[parts[2]] = parts[1]
    if name is not None:
        so = module_file(directory, name)
        if so is None:
            return "its shared object is missing"
        files = [so]
    else:
        files = [directory / f for f in hashes]
    if not hashes:
        return "its record holds no hash (a cache from before hashes were recorded)"
    for so in files:
        if so.name not in hashes:
            return f"{so.name} is not in its record"
        try:
            fst = os.lstat(so)
        except FileNotFoundError:
            return f"{so.name} is missing"
        if not stat.S_ISREG(fst.st_mode):
            raise CacheError(f"refusing the cached module {so}: not a regular file")
        reason = _foreign(so, fst, "cached module")
        if reason:
            raise CacheError(reason)
        if _sha256(so) != hashes[so.name]:
            return (f"{so.name} is not what was built ({fst.st_size} bytes; its sha256 differs "
                    f"from the one recorded)")
    return None


def note(directory: Path, reason: str) -> None:
    print(f"kernel cache: {directory}: {reason}; building it again", file=sys.stderr, flush=True)


def load(name: str, directory: Path):
    """(ffi, lib) of the cffi module ``name`` in ``directory``, verified first (``damage``);
    ``Damaged`` if it does not match its record or does not load."""
    if name in sys.modules:     # loaded (and verified) before in this process
        mod = sys.modules[name]
        return mod.ffi, mod.lib
    reason = damage(directory, name)
    if reason:
        raise Damaged(reason)
    so = module_file(directory, name)
    try:
        spec = importlib.util.spec_from_file_location(name, so)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
    except (ImportError, OSError) as e:
        raise Damaged(f"{so.name} does not load ({str(e).splitlines()[0] if str(e) else e!r})") \
            from None
    sys.modules[name] = mod
    return mod.ffi, mod.lib


def write_private(path: Path, text: str) -> None:
    """Write ``path`` (in the cache) atomically, 0600 whatever the umask."""
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}.{id(text):x}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o600)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
