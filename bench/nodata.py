"""Models without per-sample data: ``loss_and_gradients()`` against the one-sample C entry
points it calls, and against the lane kernels (``M_batch_grad`` on a batch of one) that
``batch_gradients`` used before, at 1 and 2 threads.

A log-sum-exp over n parameters (n = 2,500 to 1,280,000, float64), medians of interleaved
repetitions, all in this run:

    python -m bench.nodata [--sizes 2500 40000 1280000] [--reps 21]

``ratio`` is loss_and_gradients' time over ``M_forward`` + ``M_backward`` called directly from
cffi (the Python around the call: the copies of the gradients); ``lanes`` is M_batch_grad's
time on one sample over the same direct calls. The one-sample functions are single-threaded, so
the thread count changes only the lanes column.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.nodata", description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[2500, 40000, 1280000])
    ap.add_argument("--reps", type=int, default=21)
    args = ap.parse_args(argv)
    import runtime

    print(f"{'n':>9} {'threads':>7} {'C fwd+bwd ms':>13} {'l_and_g ms':>11} {'ratio':>6} "
          f"{'lanes ms':>9} {'lanes/C':>8}")
    for n in args.sizes:
        path = Path(tempfile.mkdtemp()) / "lse.model"
        path.write_text(f"model lse{n}\nparam x : {n}\nloss l = logsumexp(x)\n")
        m = runtime.load(str(path), precision="f64")
        m.params["x"] = np.random.default_rng(0).standard_normal(n)
        m.loss_and_gradients()  # set up the one-sample buffers
        forward, backward, x, v, g, _, _ = m._single
        k = m._k
        batch = k.new("inputs", 1)
        for threads in (1, 2):
            ws = m._workspace(threads)
            grad_fn = k.fn("batch_grad")

            def direct():
                forward(m._w, x, v)
                backward(m._w, x, v, g)

            def api():
                m.loss_and_gradients()

            def lanes():
                grad_fn(m._w, batch, 1, threads, ws, m._g, m._loss)

            times = {f: [] for f in (direct, api, lanes)}
            for _ in range(args.reps):
                for f in (direct, api, lanes):
                    t0 = time.perf_counter()
                    f()
                    times[f].append(time.perf_counter() - t0)
            d, a, la = (statistics.median(times[f]) * 1e3 for f in (direct, api, lanes))
            print(f"{n:9,d} {threads:7d} {d:13.3f} {a:11.3f} {a / d:6.2f} {la:9.3f} "
                  f"{la / d:8.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
