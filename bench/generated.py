"""The generated C kernels (extract/, cffi) behind the benchmark's flat-buffer interface.

The generated API (docs/generated-api.md) takes the same buffers as the hand-written baseline:
``cnn_params`` is the flat parameter vector, a batch is ``n`` consecutive ``cnn_inputs`` rows
(target then image), the workspace is caller-owned bytes.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import numpy as np

from bench.model import BenchModel, bench_model


def build_info(dump: str | None = None, model: BenchModel | None = None) -> dict:
    """Compiler flags the extractor builds with, and the dump (path, SHA-256) it reads."""
    try:
        from extract.emit import build
    except Exception as e:  # noqa: BLE001
        return {"error": f"{type(e).__name__}: {e}"}
    info = {}
    try:
        path = (Path(dump) if dump else Path(model.dump_path) if model
                else build.dump_path("cnn", make=False))
        info["dump"] = str(path)
        info["dump_sha256"] = hashlib.sha256(path.read_bytes()).hexdigest()
    except Exception as e:  # noqa: BLE001  (informational only)
        info["dump_error"] = f"{type(e).__name__}: {e}"
    info["CFLAGS"], info["LDFLAGS"] = list(build.CFLAGS), list(build.LDFLAGS)
    from extract.emit import sources
    info["lanes"] = sources.default_lanes("f32")
    info["lanes_from"] = (f"${sources.ENV_LANES}" if os.environ.get(sources.ENV_LANES)
                          else "the default for this processor, extract.emit.sources.default_lanes")
    return info


class GeneratedC:
    name = "generated-c"

    def __init__(self, precision: str = "f32", dump: str | None = None,
                 model: BenchModel | None = None):
        if precision != "f32":
            raise ValueError("the benchmark compares float32 implementations")
        self.model = model = model or bench_model("cnn", dump)
        self.dump = dump or model.kernels_dump
        from runtime._kernels import Kernels   # the runtime's loader (extract builds, caches)
        k = Kernels.open(model.name, precision, self.dump)
        self.ffi, self.lib = k.ffi, k.lib
        self.fn = {n: k.fn(n) for n in
                   ("workspace_size", "batch_grad", "sgd_update", "batch_predict")}
        self.tp, self.ti = k.type("params") + " *", k.type("inputs") + " *"
        sizeof = self.ffi.sizeof
        if (sizeof(k.type("params")) != 4 * model.n_params
                or sizeof(k.type("inputs")) != 4 * model.n_inputs):
            raise RuntimeError("generated structs do not have the expected layout: "
                               f"params {sizeof(k.type('params'))} bytes, "
                               f"inputs {sizeof(k.type('inputs'))} bytes")
        self.set_threads(1)

    def set_threads(self, n: int) -> None:
        self.threads = n
        self.ws = np.zeros(max(1, int(self.fn["workspace_size"](n))), dtype=np.uint8)
        self._pws = self.ffi.from_buffer("void *", self.ws)

    def _p(self, ctype: str, a: np.ndarray):
        return self.ffi.from_buffer(ctype, a, require_writable=False)

    def batch_grad(self, w: np.ndarray, xs: np.ndarray) -> tuple[float, np.ndarray]:
        xs = np.ascontiguousarray(xs, dtype=np.float32)
        grad = np.empty(self.model.n_params, dtype=np.float32)
        loss = np.empty(1, dtype=np.float32)
        self.fn["batch_grad"](self._p(self.tp, w), self._p(self.ti, xs),
                              xs.shape[0], self.threads, self._pws,
                              self._p(self.tp, grad), self._p("float *", loss))
        return float(loss[0]), grad

    def prepare(self, xs: np.ndarray) -> np.ndarray:
        xs = np.ascontiguousarray(xs, dtype=np.float32)
        assert xs.shape[1] == self.model.n_inputs
        return xs

    def train_prepared(self, w: np.ndarray, xs: np.ndarray, batch: int, lr: float) -> np.ndarray:
        nb = xs.shape[0] // batch
        losses = np.empty(nb, dtype=np.float32)
        grad = np.empty(self.model.n_params, dtype=np.float32)
        bg, sgd = self.fn["batch_grad"], self.fn["sgd_update"]
        pw, pg = self._p(self.tp, w), self._p(self.tp, grad)
        px = self._p(self.ti, xs)
        pl = self._p("float *", losses)
        for k in range(nb):
            bg(pw, px + k * batch, batch, self.threads, self._pws, pg, pl + k)
            sgd(pw, pg, lr)
        return losses

    def predict_prepared(self, w: np.ndarray, xs: np.ndarray, batch: int) -> np.ndarray:
        n = xs.shape[0]
        N_OUT = self.model.n_out
        out = np.empty((n, N_OUT), dtype=np.float32)
        pw, px, po = (self._p(self.tp, w), self._p(self.ti, xs),
                      self._p("float *", out))
        for lo in range(0, n, batch):
            self.fn["batch_predict"](pw, px + lo, min(batch, n - lo), self.threads, self._pws,
                                     po + lo * N_OUT)
        return out

    def train(self, w: np.ndarray, xs: np.ndarray, batch: int, lr: float) -> np.ndarray:
        return self.train_prepared(w, self.prepare(xs), batch, lr)

    def predict(self, w: np.ndarray, xs: np.ndarray, batch: int) -> np.ndarray:
        return self.predict_prepared(w, self.prepare(xs), batch)
