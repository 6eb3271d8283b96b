"""A benchmark worker: one process holding some implementations, driven over stdin/stdout.

``bench.run`` starts one worker per process setting (the C implementations; PyTorch with the
default malloc; PyTorch with glibc malloc tunables, which glibc reads only at process start)
and sends one JSON object per line; the worker answers one JSON object per line:

* ``{"cmd": "init", "model": ..., "dump": ..., "impls": {...}, "n": N, "data_dir": ...,
  "perturb": {...}}`` -> versions, the data's source and hash, and which implementations of
  that model could not be loaded (and why); one per model (a built-in name, a dump or a model
  file), whose implementations the later messages name by ``"model"``;
* ``{"cmd": "probe", "model": ..., "threads": [1, 2], "batch": B}`` -> ``bench.check.probe``
  of every implementation of the model at every thread count;
* ``{"cmd": "time", "model": ..., "impl": ..., "threads": T, "workload": "train"|"infer",
  "batch": B, "batches": K, "images": N}`` -> wall and CPU seconds of one timed run (training
  starts from the initial weights; inference in calls of B samples);
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

from bench.model import BATCH, LEARNING_RATE, bench_model, load_images, model_images


def make_impl(kind: str, dump: str | None = None, model=None):
    """``handwritten-c`` (the CNN only), ``generated-c`` (from ``dump``, default the model's)
    or ``pytorch`` (this process's malloc setting) of ``model`` (a ``BenchModel``; default
    the CNN)."""
    model = model or bench_model("cnn", dump)
    if kind == "handwritten-c":
        from bench.handwritten import HandwrittenC
        return HandwrittenC(model=model)
    if kind == "generated-c":
        from bench.generated import GeneratedC
        return GeneratedC(dump=dump, model=model)
    if kind == "pytorch":
        from bench.torch_model import TorchImpl
        return TorchImpl(model=model)
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
        self.models: dict = {}   # key -> {"bm", "impls", "xs"}
        self.data: dict = {}
        self.images = None

    def init(self, msg: dict) -> dict:
        from bench.check import Perturbed

        self.lr = msg.get("lr", LEARNING_RATE)
        if self.images is None or self.images[0].shape[0] < msg["n"]:
            self.images = load_images(msg["n"], msg.get("data_dir"))
        unavailable = {}
        try:
            bm = bench_model(msg.get("model", "cnn"), msg.get("dump"))
        except Exception:  # noqa: BLE001  (a missing dump: only the generated C needs it)
            bm = bench_model(msg.get("model", "cnn"))
        images, labels, source = model_images(bm, *self.images)
        xs = bm.pack_inputs(images[:msg["n"]], labels[:msg["n"]])
        impls = {}
        for label, kind in msg["impls"].items():
            try:
                impl = make_impl(kind, msg.get("dump"), bm)
            except Exception as e:  # noqa: BLE001  (an optional implementation may be missing)
                unavailable[label] = f"{type(e).__name__}: {e}"
                continue
            if label in msg.get("perturb", {}):
                impl = Perturbed(impl, float(msg["perturb"][label]))
            impls[label] = impl
        self.models[msg.get("key", bm.name)] = {"bm": bm, "impls": impls, "xs": xs}
        build = {}
        for label, impl in impls.items():
            if hasattr(impl, "cflags"):
                build[label] = {"cflags": list(impl.cflags), "library": str(impl.path),
                                "ldflags": list(getattr(impl, "ldflags", ()))}
        if any(kind == "generated-c" for kind in msg["impls"].values()):
            from bench.generated import build_info
            build["generated-c"] = build_info(msg.get("dump"), bm)
        return {"available": list(impls), "unavailable": unavailable,
                "data_source": source, "name": bm.name,
                "data_sha256": hashlib.sha256(np.ascontiguousarray(
                    images[:msg["n"]]).tobytes()).hexdigest(),
                "versions": versions(), "build": build}

    def _model(self, msg: dict) -> dict:
        return self.models[msg.get("model", next(iter(self.models)))]

    def probe(self, msg: dict) -> dict:
        from bench.check import probe

        m = self._model(msg)
        out = {}
        for label, impl in m["impls"].items():
            for t in msg["threads"]:
                impl.set_threads(t)
                out[f"{label}@{t}"] = probe(impl, m["xs"], msg.get("batch", BATCH), lr=self.lr,
                                            model=m["bm"], grad_batch=min(msg.get("batch", BATCH),
                                                                          BATCH))
        return out

    def probe64(self, msg: dict) -> list[dict]:
        """The ``grad`` probes in float64 through the model's PyTorch twin: the arbiter of a
        disagreement in float32 (``bench.check.arbitrate``)."""
        from bench.check import grad_probes
        from bench.torch_model import TorchImpl
        m = self._model(msg)
        impl = TorchImpl(model=m["bm"], dtype="float64")
        return grad_probes(impl.batch_grad, m["xs"], min(msg.get("batch", BATCH), BATCH),
                           m["bm"], dtype=np.float64)

    def time(self, msg: dict) -> dict:
        m = self._model(msg)
        impl = m["impls"][msg["impl"]]
        impl.set_threads(msg["threads"])
        batch = msg.get("batch", BATCH)
        n = msg["batches"] * batch if msg["workload"] == "train" else msg["images"]
        key = (msg.get("model"), msg["impl"], n)
        if key not in self.data:  # native layout, prepared once and outside the timing
            self.data[key] = impl.prepare(np.ascontiguousarray(m["xs"][:n]))
        data = self.data[key]
        w = m["bm"].init_params()
        passes = 1
        c0, t0 = time.process_time(), time.perf_counter()
        if msg["workload"] == "train":
            out = impl.train_prepared(w, data, batch, self.lr)
            t1 = time.perf_counter()
        else:  # passes over the images until min_time has gone by: a pass can be 10 ms
            while True:
                out = impl.predict_prepared(w, data, msg.get("infer_batch", batch))
                t1 = time.perf_counter()
                if t1 - t0 >= msg.get("min_time", 0):
                    break
                passes += 1
        c1 = time.process_time()
        out = np.asarray(out, dtype=np.float64)
        res = {"seconds": (t1 - t0) / passes, "cpu_seconds": (c1 - c0) / passes,
               "passes": passes}
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
