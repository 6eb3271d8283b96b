"""The kernel cache trusts only itself (extract/cache.py; README, "Security and limits").

A module planted in a cache others may write is refused with one line naming the path; a
truncated, empty or garbage cached module is built again (a note on stderr) and the command
succeeds; everything the cache creates is private whatever the umask. Each load runs in a child
process: a truncated shared object mapped unverified would kill it with SIGBUS, which the test
must see as a failure rather than die of.
"""
from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

TINY = textwrap.dedent("""\
    model tiny
    input  x : 4
    target y : 2
    param  w : 2x4
    param  b : 2
    output out = dense(w, x, b)
    loss loss = sqerr(out, y)
    """)

LOAD = textwrap.dedent("""\
    import sys, numpy as np, runtime
    m = runtime.load(sys.argv[1])
    print("ok", m.predict(np.ones((2, 4), np.float32)).shape)
    """)


def _run(cache: Path, model: Path, umask: int | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "PROVED_KERNELS_CACHE": str(cache), "PYTHONPATH": str(ROOT)}
    pre = (lambda: os.umask(umask)) if umask is not None else None
    return subprocess.run([sys.executable, "-c", LOAD, str(model)], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=300, preexec_fn=pre)


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """A cache holding the tiny model's module, built under umask 000; (cache, model file)."""
    d = tmp_path_factory.mktemp("trust")
    model = d / "tiny.model"
    model.write_text(TINY)
    cache = d / "cache"
    res = _run(cache, model, umask=0)
    assert res.returncode == 0 and "ok (2, 2)" in res.stdout, res.stderr
    return cache, model


def _module(cache: Path) -> tuple[Path, Path]:
    (final,) = [p for p in cache.iterdir() if p.name.startswith("_pk_") and p.is_dir()]
    (so,) = final.glob("*.so")
    return final, so


def _copy(built, tmp_path) -> tuple[Path, Path]:
    cache = tmp_path / "cache"
    shutil.copytree(built[0], cache, symlinks=True)
    return cache, built[1]


def test_cache_private_under_umask_000(built):
    cache, _ = built
    for root, dirs, files in os.walk(cache):
        for p in [root, *(os.path.join(root, f) for f in files)]:
            mode = stat.S_IMODE(os.lstat(p).st_mode)
            assert not mode & 0o077, (p, oct(mode))
    final, so = _module(cache)
    assert (final / "ok").read_text().split()[1:3] == ["sha256", __import__("hashlib").sha256(
        so.read_bytes()).hexdigest()]


def _evil_so(tmp_path: Path, marker: Path) -> bytes:
    """A shared object whose constructor creates ``marker`` (what an attacker would run)."""
    src = tmp_path / "evil.c"
    src.write_text(f'#include <stdio.h>\n__attribute__((constructor)) static void pwn(void) '
                   f'{{ FILE *f = fopen("{marker}", "w"); if (f) fclose(f); }}\n')
    out = tmp_path / "evil.so"
    subprocess.run(["gcc", "-shared", "-fPIC", str(src), "-o", str(out)], check=True)
    return out.read_bytes()


@pytest.mark.parametrize("how", ["world-writable", "other owner"])
def test_planted_module_refused(built, tmp_path, how):
    """The attack of issue #38: a cache others may write, a module planted under the
    predictable name (with a record that matches it, even). Refused, one line, never run."""
    cache, model = _copy(built, tmp_path)
    final, so = _module(cache)
    marker = tmp_path / "pwned"
    so.write_bytes(_evil_so(tmp_path, marker))
    # the attacker writes a matching record too: the hash alone would not stop them
    import hashlib
    key = (final / "ok").read_text().splitlines()[0]
    (final / "ok").write_text(f"{key}\nsha256 {hashlib.sha256(so.read_bytes()).hexdigest()} "
                              f"{so.name}\n")
    if how == "world-writable":
        os.chmod(cache, 0o777)
        culprit = cache
    else:
        if os.getuid() != 0:
            pytest.skip("changing a directory's owner needs root")
        os.chown(final, 65534, -1)
        culprit = final
    res = _run(cache, model)
    assert not marker.exists(), "the planted module ran"
    assert res.returncode != 0
    lines = res.stderr.strip().splitlines()
    last = lines[-1]
    assert "refusing the" in last and str(culprit) in last, res.stderr
    assert ("writable by group or others" if how == "world-writable" else "owned by uid 65534") \
        in last
    # through the command line: one line, no traceback
    data = tmp_path / "d.npz"
    import numpy as np
    np.savez(data, x_train=np.ones((4, 4), np.float32), y_train=np.array([0, 1, 0, 1]))
    env = {**os.environ, "PROVED_KERNELS_CACHE": str(cache), "PYTHONPATH": str(ROOT)}
    cli = subprocess.run([sys.executable, "-m", "runtime", "train", str(model), "--data",
                          str(data), "--epochs", "1", "--out", str(tmp_path / "out"),
                          "--no-progress"], env=env, cwd=ROOT, capture_output=True, text=True,
                         timeout=300)
    assert cli.returncode == 2 and "Traceback" not in cli.stderr, cli.stderr
    assert cli.stderr.strip().count("\n") == 0 and str(culprit) in cli.stderr, cli.stderr
    assert not marker.exists()


@pytest.mark.parametrize("damage", ["truncated", "empty", "garbage", "garbage, recorded"])
def test_damaged_module_rebuilt(built, tmp_path, damage):
    """Truncated (its ELF header intact: mapped, it would SIGBUS), empty or garbage: built
    again with a note, and the command succeeds. "garbage, recorded": the record matches the
    garbage, so the check passes and loading fails: built again too."""
    cache, model = _copy(built, tmp_path)
    final, so = _module(cache)
    good = so.read_bytes()
    if damage == "truncated":
        so.write_bytes(good[:len(good) // 3])
    elif damage == "empty":
        so.write_bytes(b"")
    else:
        so.write_bytes(b"\x7fELF" + os.urandom(4000))
    if damage == "garbage, recorded":
        import hashlib
        key = (final / "ok").read_text().splitlines()[0]
        (final / "ok").write_text(f"{key}\nsha256 {hashlib.sha256(so.read_bytes()).hexdigest()}"
                                  f" {so.name}\n")
    res = _run(cache, model)
    assert res.returncode == 0 and "ok (2, 2)" in res.stdout, (res.returncode, res.stderr)
    assert "kernel cache:" in res.stderr and "building it again" in res.stderr, res.stderr
    assert "Traceback" not in res.stderr
    final, so = _module(cache)      # built again (not bit for bit: the paths differ) and sealed
    import hashlib
    assert hashlib.sha256(so.read_bytes()).hexdigest() in (final / "ok").read_text()
    again = _run(cache, model)      # and now it is sound: no note
    assert again.returncode == 0 and "kernel cache:" not in again.stderr, again.stderr
