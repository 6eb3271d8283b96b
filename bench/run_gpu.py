"""Benchmark CNN training and inference on a CUDA GPU: generated CUDA kernels vs PyTorch CUDA.

Same protocol as ``bench.run``: an agreement check first (every GPU implementation against the
hand-written C on the CPU, ``bench.check``; nothing is reported on disagreement), then
interleaved repetitions with medians and spread. Exits cleanly (status 0, a note on stderr)
when there is no CUDA GPU.

    python -m bench.run_gpu                     # 1 epoch of 10,000 images, 5 repetitions
    python -m bench.run_gpu --device cpu --reps 1 --batches 3 --no-write  # harness test, no GPU

``--device cpu`` runs the same code with PyTorch on the CPU standing in for the GPU
implementations, so the harness can be tested on a machine without one.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

from bench import flops
from bench.check import Perturbed, compare, probe
from bench.model import BATCH, LEARNING_RATE, N_OUT, N_PARAMS, init_params, load_dataset
from bench.run import RESULTS, stats, system_info


def cuda_available() -> tuple[bool, str]:
    try:
        import torch
    except ImportError as e:
        return False, f"PyTorch is not installed ({e})"
    if not torch.cuda.is_available():
        return False, "no CUDA GPU visible to PyTorch"
    return True, torch.cuda.get_device_name(0)


CUDA_DECLS = """
size_t model_cnn_cuda_workspace_size(int nthreads);
void model_cnn_cuda_batch_grad(const model_cnn_params *w, const model_cnn_inputs *xs, int n,
                               int nthreads, void *ws, model_cnn_params *grad, real *loss);
void model_cnn_cuda_sgd_update(model_cnn_params *w, const model_cnn_params *grad, real lr);
void model_cnn_cuda_batch_predict(const model_cnn_params *w, const model_cnn_inputs *xs, int n,
                                  int nthreads, void *ws, real *out);
"""


def build_cuda_library(dump: str | None = None, out_dir: Path | None = None):
    """Generate ``cnn.cu`` with the extractor, compile it with nvcc into a shared library and
    open it with cffi (ABI mode); returns ``(ffi, lib, path)``. Needs nvcc, not a GPU (the
    CUDA runtime is linked statically, so opening the library needs no driver either)."""
    import hashlib
    import shutil
    import subprocess

    import cffi
    from extract.emit import build, sources
    from extract.ir import dump as dump_mod
    from extract.passes.lower import Options

    if shutil.which("nvcc") is None:
        raise RuntimeError("nvcc not found")
    path = Path(dump) if dump else build.dump_path("cnn")
    g = sources.generate(dump_mod.load(path), "f32", Options())
    flags = [*build.NVCCFLAGS, "-shared", "-Xcompiler", "-fPIC"]
    key = hashlib.sha256((g.files["model_cnn.cu"] + g.files["model_cnn.h"]
                          + " ".join(flags)).encode())
    from bench.handwritten import build_dir
    d = (out_dir or build_dir()) / f"cuda-{key.hexdigest()[:16]}"
    lib_path = d / "libcnn_cuda.so"
    if not lib_path.exists():
        d.mkdir(parents=True, exist_ok=True)
        for name in ("model_cnn.h", "model_cnn.cu"):
            (d / name).write_text(g.files[name])
        tmp = d / f"libcnn_cuda.so.tmp{os.getpid()}"
        cmd = ["nvcc", *flags, "-o", str(tmp), str(d / "model_cnn.cu")]
        res = subprocess.run(cmd, capture_output=True, text=True)
        if res.returncode != 0:
            raise RuntimeError(f"nvcc failed ({' '.join(cmd)}):\n{res.stderr[-4000:]}")
        os.replace(tmp, lib_path)
    ffi = cffi.FFI()
    ffi.cdef(g.cdef + CUDA_DECLS)
    return ffi, ffi.dlopen(str(lib_path)), lib_path


class GeneratedCuda:
    """The generated ``cnn_cuda_*`` entry points over device buffers owned by PyTorch.

    ``nthreads`` of the CUDA entry points is the number of samples in flight at once: a whole
    training batch, or a whole inference call."""

    name = "generated-cuda"

    def __init__(self, dump: str | None = None, max_samples: int = 1000):
        import torch

        self.torch = torch
        self.ffi, self.lib, self.path = build_cuda_library(dump)
        self.threads = 1
        self.max_samples = max_samples
        nbytes = int(self.lib.model_cnn_cuda_workspace_size(max_samples))
        self.ws = torch.empty(nbytes, dtype=torch.uint8, device="cuda")

    def set_threads(self, n: int) -> None:
        self.threads = n  # CPU threads mean nothing here

    def _ptr(self, ctype: str, t):
        return self.ffi.cast(ctype, t.data_ptr())

    def prepare(self, xs: np.ndarray):
        return self.torch.from_numpy(np.ascontiguousarray(xs, np.float32)).cuda()

    def batch_grad(self, w, xs):
        t = self.torch
        n = xs.shape[0]
        assert n <= self.max_samples
        dw, dx = t.from_numpy(np.ascontiguousarray(w)).cuda(), self.prepare(xs)
        g, loss = t.empty(N_PARAMS, device="cuda"), t.empty(1, device="cuda")
        self.lib.model_cnn_cuda_batch_grad(self._ptr("model_cnn_params *", dw),
                                           self._ptr("model_cnn_inputs *", dx),
                                     n, n, self._ptr("void *", self.ws),
                                     self._ptr("model_cnn_params *", g), self._ptr("float *", loss))
        t.cuda.synchronize()
        return float(loss.item()), g.cpu().numpy()

    def train_prepared(self, w, dx, batch, lr):
        t = self.torch
        assert batch <= self.max_samples
        dw = t.from_numpy(np.ascontiguousarray(w)).cuda()
        nb = dx.shape[0] // batch
        g, losses = t.empty(N_PARAMS, device="cuda"), t.empty(nb, device="cuda")
        ws, pw, pg = (self._ptr("void *", self.ws), self._ptr("model_cnn_params *", dw),
                      self._ptr("model_cnn_params *", g))
        px, pl = self._ptr("model_cnn_inputs *", dx), self._ptr("float *", losses)
        for k in range(nb):
            self.lib.model_cnn_cuda_batch_grad(pw, px + k * batch, batch, batch, ws, pg, pl + k)
            self.lib.model_cnn_cuda_sgd_update(pw, pg, lr)
        t.cuda.synchronize()
        w[:] = dw.cpu().numpy()
        return losses.cpu().numpy()

    def predict_prepared(self, w, dx, batch):
        t = self.torch
        batch = min(batch, self.max_samples)
        dw = t.from_numpy(np.ascontiguousarray(w)).cuda()
        n = dx.shape[0]
        out = t.empty((n, N_OUT), device="cuda")
        pw, px, po = (self._ptr("model_cnn_params *", dw), self._ptr("model_cnn_inputs *", dx),
                      self._ptr("float *", out))
        ws = self._ptr("void *", self.ws)
        for lo in range(0, n, batch):
            m = min(batch, n - lo)
            self.lib.model_cnn_cuda_batch_predict(pw, px + lo, m, m, ws, po + lo * N_OUT)
        t.cuda.synchronize()
        return out.cpu().numpy()


def make_impls(device: str, dump: str | None = None, max_samples: int = 1000) -> tuple[dict, dict]:
    """The implementations to time on ``device`` and those that could not be loaded."""
    from bench.torch_model import TorchImpl

    impls, unavailable = {}, {}
    if device == "cpu":  # harness test: PyTorch on the CPU stands in for the GPU
        impls["pytorch-cpu"] = TorchImpl("cpu")
        return impls, unavailable
    try:
        impls["generated-cuda"] = GeneratedCuda(dump, max_samples)
    except Exception as e:  # noqa: BLE001  (the extractor's CUDA build may be absent)
        unavailable["generated-cuda"] = f"{type(e).__name__}: {e}"
    impls["pytorch-cuda"] = TorchImpl("cuda")
    return impls, unavailable


def time_one(impl, data, workload: str, batch: int, infer_batch: int) -> float:
    w = init_params()
    t0 = time.perf_counter()
    if workload == "train":
        impl.train_prepared(w, data, batch, LEARNING_RATE)
    else:
        impl.predict_prepared(w, data, infer_batch)
    return time.perf_counter() - t0   # both end with a device synchronisation


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--images", type=int, default=10_000)
    ap.add_argument("--batches", type=int, default=None)
    ap.add_argument("--batch", type=int, default=BATCH)
    ap.add_argument("--infer-batch", type=int, default=1000)
    ap.add_argument("--data", default=None)
    ap.add_argument("--device", default="cuda", choices=["cuda", "cpu"],
                    help="cpu: test the harness without a GPU")
    ap.add_argument("--dump", default=None, help="expression dump for the generated CUDA "
                    "(default: build/dump/cnn.json)")
    ap.add_argument("--out-dir", type=Path, default=RESULTS)
    ap.add_argument("--no-write", action="store_true")
    ap.add_argument("--perturb", action="append", default=[], help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.batches is None:
        args.batches = args.images // args.batch
    args.perturb = dict(p.split("=", 1) for p in args.perturb)
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    if args.device == "cuda":
        ok, why = cuda_available()
        if not ok:
            print(f"bench.run_gpu: skipped: {why}", file=sys.stderr)
            return 0
    from bench.handwritten import HandwrittenC

    n = args.batches * args.batch
    ds = load_dataset(max(n, 3 * args.batch), args.data)
    impls, unavailable = make_impls(args.device, args.dump, max(args.batch, args.infer_batch))
    impls = {k: Perturbed(v, float(args.perturb[k])) if k in args.perturb else v
             for k, v in impls.items()}
    for k, why in unavailable.items():
        print(f"note: {k} not measured: {why}", file=sys.stderr)

    ref = HandwrittenC()
    probes = {"handwritten-c@1": probe(ref, ds.xs, args.batch)}
    probes.update({k: probe(v, ds.xs, args.batch) for k, v in impls.items()})
    agreement = compare(probes)
    if not agreement.ok:
        print(agreement.table(), file=sys.stderr)
        print("\nREFUSING TO REPORT: the implementations disagree.", file=sys.stderr)
        return 2

    data = {k: v.prepare(np.ascontiguousarray(ds.xs[:n])) for k, v in impls.items()}
    configs = [(wl, k) for wl in ("train", "infer") for k in impls]
    for wl, k in configs:  # warm-up (CUDA context, kernels, allocator)
        time_one(impls[k], data[k], wl, args.batch, args.infer_batch)
    samples = []
    for rep in range(args.reps):
        r = rep % len(configs)
        for wl, k in configs[r:] + configs[:r]:
            s = time_one(impls[k], data[k], wl, args.batch, args.infer_batch)
            samples.append({"rep": rep, "workload": wl, "impl": k, "seconds": s})
    rows = summarise(samples, n, args.batch)
    md = markdown(rows, args, ds.source, unavailable)
    print(md)
    if not args.no_write:
        system = system_info()
        system["gpu"] = cuda_available()[1] if args.device == "cuda" else None
        date = dt.datetime.now(dt.timezone.utc)
        stem = f"{date.strftime('%Y-%m-%dT%H%M%SZ')}-{system['host']}-gpu"
        args.out_dir.mkdir(parents=True, exist_ok=True)
        (args.out_dir / f"{stem}.json").write_text(json.dumps(
            {"meta": {"date": date.isoformat(timespec="seconds"), "system": system,
                      "device": args.device, "data_source": ds.source, "unavailable": unavailable,
                      "args": {k: str(v) for k, v in vars(args).items()}},
             "agreement": agreement.to_json(), "results": rows, "samples": samples},
            indent=1) + "\n")
        (args.out_dir / "latest-gpu.md").write_text(md)
    return 0


def summarise(samples: list[dict], n: int, batch: int) -> list[dict]:
    work = {"train": flops.train_flops(n, batch), "infer": flops.infer_flops(n)}
    rows = []
    for wl in ("train", "infer"):
        impls = list(dict.fromkeys(s["impl"] for s in samples if s["workload"] == wl))
        by = {k: stats([s["seconds"] for s in samples if (s["workload"], s["impl"]) == (wl, k)])
              for k in impls}
        for k in impls:
            row = {"workload": wl, "impl": k, "images": n, "seconds": by[k],
                   "images_per_s": n / by[k]["median"],
                   "gflops": work[wl] / by[k]["median"] / 1e9}
            if "generated-cuda" in by and k != "generated-cuda":
                row["vs_generated-cuda"] = by[k]["median"] / by["generated-cuda"]["median"]
            rows.append(row)
    return rows


def markdown(rows: list[dict], args, source: str, unavailable: dict) -> str:
    out = [f"# CNN GPU benchmark ({args.device})", "",
           f"{rows[0]['images'] if rows else 0} images, batch {args.batch}, inference in calls of "
           f"{args.infer_batch}; {args.reps} interleaved repetitions; data {source}", ""]
    if unavailable:
        out += [f"not measured: {', '.join(f'{k} ({v})' for k, v in unavailable.items())}", ""]
    out += ["| workload | implementation | time (s) | min-max (s) | images/s | GFLOP/s "
            "| x gen |", "| --- | --- | ---: | ---: | ---: | ---: | ---: |"]
    for r in rows:
        st = r["seconds"]
        ratio = r.get("vs_generated-cuda")
        out.append(f"| {r['workload']} | {r['impl']} | {st['median']:.4f} | "
                   f"{st['min']:.4f}-{st['max']:.4f} | {r['images_per_s']:.0f} | "
                   f"{r['gflops']:.2f} | {'-' if ratio is None else f'{ratio:.2f}'} |")
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    raise SystemExit(main())
