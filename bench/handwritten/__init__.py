"""Build and load the hand-written C baseline (cnn_ref.c) with ctypes.

The shared library is compiled once per (source, flags, compiler) into a cache directory,
``$BENCH_BUILD_DIR`` or ``build/bench`` under the repository root; the file name carries a
hash of all three, so a changed source or flag never reuses a stale build.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import subprocess
import tempfile
from pathlib import Path

import numpy as np

from bench.model import N_INPUTS, N_OUT, N_PARAMS, REPO

HERE = Path(__file__).resolve().parent
SOURCES = (HERE / "cnn_ref.c", HERE / "cnn_ref.h")
CC = os.environ.get("CC", "gcc")


def _extract_cflags() -> tuple[str, ...]:
    """The generated C's optimisation flags (extract/emit/build.py), so that both C versions are
    compiled alike; a copy of them if the extractor cannot be imported."""
    try:
        from extract.emit.build import CFLAGS as flags
        return tuple(flags)
    except ImportError:
        return ("-std=c11", "-O3", "-march=native", "-fopenmp", "-fno-math-errno",
                "-fno-trapping-math", "-fno-signed-zeros", "-ffp-contract=fast")


def _extract_ldflags() -> tuple[str, ...]:
    """The generated C's link flags (extract/emit/build.py: -fopenmp, and -lmvec on x86-64 glibc for
    the vector expf that both C versions declare), so that both use the same libm."""
    try:
        from extract.emit.build import LDFLAGS as flags
        return tuple(flags)
    except ImportError:
        import platform
        mvec = (platform.system() == "Linux" and platform.machine() == "x86_64"
                and platform.libc_ver()[0] == "glibc")
        return ("-fopenmp",) + (("-lmvec",) if mvec else ())


# the generated C's flags, plus what a shared library and a warning-clean build need
CFLAGS = _extract_cflags() + ("-fPIC", "-Wall", "-Wextra", "-Werror")
LDFLAGS = ("-shared",) + _extract_ldflags() + ("-lm",)


def compiler_version(cc: str = CC) -> str:
    out = subprocess.run([cc, "--version"], capture_output=True, text=True, check=True).stdout
    return out.splitlines()[0]


def build_dir() -> Path:
    return Path(os.environ.get("BENCH_BUILD_DIR", REPO / "build" / "bench"))


def build(cflags: tuple[str, ...] = CFLAGS, cc: str = CC) -> Path:
    """Compile cnn_ref.c into a shared library (if not already built) and return its path."""
    h = hashlib.sha256()
    for src in SOURCES:
        h.update(src.read_bytes())
    h.update(" ".join((cc, *cflags, *LDFLAGS)).encode())
    h.update(compiler_version(cc).encode())
    out = build_dir() / f"libcnnref-{h.hexdigest()[:16]}.so"
    if out.exists():
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    # compile to a temporary name, then rename: concurrent builds never see a partial file
    fd, tmp = tempfile.mkstemp(suffix=".so", dir=out.parent)
    os.close(fd)
    try:
        cmd = [cc, *cflags, "-o", tmp, str(HERE / "cnn_ref.c"), *LDFLAGS]
        res = subprocess.run(cmd, capture_output=True, text=True)
        if res.returncode != 0:
            raise RuntimeError(f"building the hand-written C failed:\n{' '.join(cmd)}\n"
                               f"{res.stderr}")
        os.replace(tmp, out)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return out


def _ptr(a: np.ndarray) -> ctypes.c_void_p:
    return ctypes.c_void_p(a.ctypes.data)


class HandwrittenC:
    """The hand-written C step behind the benchmark's flat-buffer interface."""

    name = "handwritten-c"

    def __init__(self, cflags: tuple[str, ...] = CFLAGS, model=None):
        if model is not None and (model.name != "cnn" or model.n_params != N_PARAMS
                                  or model.n_inputs != N_INPUTS):
            raise ValueError(f"the hand-written C is the paper's CNN, not {model.name!r}")
        self.cflags = cflags
        self.ldflags = LDFLAGS
        self.path = build(cflags)
        lib = ctypes.CDLL(str(self.path))
        vp, i, f = ctypes.c_void_p, ctypes.c_int, ctypes.c_float
        lib.cnnref_workspace_size.argtypes, lib.cnnref_workspace_size.restype = [i], ctypes.c_size_t
        lib.cnnref_batch_grad.argtypes = [vp, vp, i, i, vp, vp, vp]
        lib.cnnref_sgd_update.argtypes = [vp, vp, f]
        lib.cnnref_batch_predict.argtypes = [vp, vp, i, i, vp, vp]
        for fn in ("cnnref_batch_grad", "cnnref_sgd_update", "cnnref_batch_predict"):
            getattr(lib, fn).restype = None
        self.lib = lib
        self.set_threads(1)

    def set_threads(self, n: int) -> None:
        self.threads = n
        self.ws = np.zeros(self.lib.cnnref_workspace_size(n), dtype=np.uint8)

    @staticmethod
    def _check(w: np.ndarray, xs: np.ndarray) -> None:
        assert w.dtype == np.float32 and w.shape == (N_PARAMS,) and w.flags.c_contiguous
        assert xs.dtype == np.float32 and xs.shape[1] == N_INPUTS and xs.flags.c_contiguous

    def batch_grad(self, w: np.ndarray, xs: np.ndarray) -> tuple[float, np.ndarray]:
        """Mean loss and batch-averaged gradient (flat) of the samples ``xs`` at weights ``w``."""
        self._check(w, xs)
        grad = np.empty(N_PARAMS, dtype=np.float32)
        loss = np.empty(1, dtype=np.float32)
        self.lib.cnnref_batch_grad(_ptr(w), _ptr(xs), xs.shape[0], self.threads, _ptr(self.ws),
                                   _ptr(grad), _ptr(loss))
        return float(loss[0]), grad

    def prepare(self, xs: np.ndarray) -> np.ndarray:
        """The data in this implementation's native form: the rows themselves."""
        xs = np.ascontiguousarray(xs, dtype=np.float32)
        self._check(np.zeros(N_PARAMS, np.float32), xs)
        return xs

    def train_prepared(self, w: np.ndarray, xs: np.ndarray, batch: int, lr: float) -> np.ndarray:
        """SGD over ``xs`` in batches, updating ``w`` in place; returns the loss of each batch."""
        self._check(w, xs)
        nb = xs.shape[0] // batch
        losses = np.empty(nb, dtype=np.float32)
        grad = np.empty(N_PARAMS, dtype=np.float32)
        lib, ws, t = self.lib, _ptr(self.ws), self.threads
        pw, pg, base = _ptr(w), _ptr(grad), xs.ctypes.data
        stride = batch * N_INPUTS * 4
        for k in range(nb):
            lib.cnnref_batch_grad(pw, ctypes.c_void_p(base + k * stride), batch, t, ws, pg,
                                  ctypes.c_void_p(losses.ctypes.data + 4 * k))
            lib.cnnref_sgd_update(pw, pg, lr)
        return losses

    def predict_prepared(self, w: np.ndarray, xs: np.ndarray, batch: int) -> np.ndarray:
        """Outputs r (n x 10) of every sample, computed ``batch`` samples per call."""
        self._check(w, xs)
        n = xs.shape[0]
        out = np.empty((n, N_OUT), dtype=np.float32)
        for lo in range(0, n, batch):
            m = min(batch, n - lo)
            self.lib.cnnref_batch_predict(_ptr(w),
                                          ctypes.c_void_p(xs.ctypes.data + lo * N_INPUTS * 4),
                                          m, self.threads, _ptr(self.ws),
                                          ctypes.c_void_p(out.ctypes.data + lo * N_OUT * 4))
        return out

    train = train_prepared
    predict = predict_prepared
