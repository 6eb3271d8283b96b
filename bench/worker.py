"""A benchmark worker: one process holding some implementations, driven over stdin/stdout.

``bench.run`` starts one worker per process setting (the C implementations; PyTorch with the
default malloc; PyTorch with glibc malloc tunables, which glibc reads only at process start)
and sends one JSON object per line; the worker answers one JSON object per line:

* ``{"cmd": "init", "impls": [...], "n": N, "data_dir": ..., "perturb": {...}}`` -> versions,
  the data's source and hash, and which implementations could not be loaded (and why);
* ``{"cmd": "probe", "threads": [1, 2]}`` -> ``bench.check.probe`` of every implementation at
  every thread count;
* ``{"cmd": "time", "impl": ..., "threads": T, "workload": "train"|"infer", "batches": B}``
  -> wall and CPU seconds of one timed run (training starts from the initial weights);
* ``{"cmd": "quit"}``.

Anything the implementations print goes to stderr, so stdout carries only the protocol.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import time
import traceback

import numpy as np

from bench.model import BATCH, LEARNING_RATE, init_params, load_dataset


def make_impl(kind: str, dump: str | None = None):
    """``handwritten-c``, ``generated-c`` (from ``dump``, default the extractor's) or
    ``pytorch`` (this process's malloc setting)."""
    if kind == "handwritten-c":
        from bench.handwritten import HandwrittenC
        return HandwrittenC()
    if kind == "generated-c":
        from bench.generated import GeneratedC
        return GeneratedC(dump=dump)
    if kind == "pytorch":
        from bench.torch_model import TorchImpl
        return TorchImpl()
    raise ValueError(f"unknown implementation {kind!r}")


def versions() -> dict:
    info = {"python": sys.version.split()[0], "numpy": np.__version__, "pid": os.getpid(),
            "GLIBC_TUNABLES": os.environ.get("GLIBC_TUNABLES"),
            "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS")}
    if "torch" in sys.modules:
        import torch
        info["torch"] = torch.__version__
        info["torch_parallel_info"] = torch.__config__.parallel_info()
    return info


class Worker:
    def __init__(self):
        self.impls: dict = {}
        self.data: dict = {}

    def init(self, msg: dict) -> dict:
        from bench.check import Perturbed

        self.batch = msg.get("batch", BATCH)
        self.lr = msg.get("lr", LEARNING_RATE)
        self.infer_batch = msg.get("infer_batch", 1000)
        ds = load_dataset(msg["n"], msg.get("data_dir"))
        self.xs = ds.xs
        unavailable = {}
        for label, kind in msg["impls"].items():
            try:
                impl = make_impl(kind, msg.get("dump"))
            except Exception as e:  # noqa: BLE001  (an optional implementation may be missing)
                unavailable[label] = f"{type(e).__name__}: {e}"
                continue
            if label in msg.get("perturb", {}):
                impl = Perturbed(impl, float(msg["perturb"][label]))
            self.impls[label] = impl
        build = {}
        for label, impl in self.impls.items():
            if hasattr(impl, "cflags"):
                build[label] = {"cflags": list(impl.cflags), "library": str(impl.path),
                                "ldflags": list(getattr(impl, "ldflags", ()))}
        if any(kind == "generated-c" for kind in msg["impls"].values()):
            from bench.generated import build_info
            build["generated-c"] = build_info(msg.get("dump"))
        return {"available": list(self.impls), "unavailable": unavailable,
                "data_source": ds.source,
                "data_sha256": hashlib.sha256(self.xs.tobytes()).hexdigest(),
                "versions": versions(), "build": build}

    def probe(self, msg: dict) -> dict:
        from bench.check import probe

        out = {}
        for label, impl in self.impls.items():
            for t in msg["threads"]:
                impl.set_threads(t)
                out[f"{label}@{t}"] = probe(impl, self.xs, self.batch, lr=self.lr)
        return out

    def time(self, msg: dict) -> dict:
        impl = self.impls[msg["impl"]]
        impl.set_threads(msg["threads"])
        n = msg["batches"] * self.batch if msg["workload"] == "train" else msg["images"]
        key = (msg["impl"], n)
        if key not in self.data:  # native layout, prepared once and outside the timing
            self.data[key] = impl.prepare(np.ascontiguousarray(self.xs[:n]))
        data = self.data[key]
        w = init_params()
        c0, t0 = time.process_time(), time.perf_counter()
        if msg["workload"] == "train":
            out = impl.train_prepared(w, data, self.batch, self.lr)
        else:
            out = impl.predict_prepared(w, data, self.infer_batch)
        t1, c1 = time.perf_counter(), time.process_time()
        out = np.asarray(out, dtype=np.float64)
        res = {"seconds": t1 - t0, "cpu_seconds": c1 - c0}
        if msg["workload"] == "train":
            res["first_loss"], res["last_loss"] = float(out[0]), float(out[-1])
            res["mean_loss"] = float(out.mean())
        else:
            res["mean_output"] = float(out.mean())
        return res


def main() -> None:
    proto = os.fdopen(os.dup(sys.stdout.fileno()), "w", buffering=1)
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())  # stray prints (also from C) -> stderr
    sys.stdout = sys.stderr
    worker = Worker()
    for line in sys.stdin:
        msg = json.loads(line)
        if msg["cmd"] == "quit":
            break
        try:
            reply = {"ok": True, "result": getattr(worker, msg["cmd"])(msg)}
        except Exception:  # noqa: BLE001  (reported to the driver, which decides)
            reply = {"ok": False, "error": traceback.format_exc()}
        proto.write(json.dumps(reply) + "\n")


if __name__ == "__main__":
    main()
