"""Benchmark training and inference of the zoo: generated C, hand-written C and PyTorch (CPU).

Models: ``models/*.model`` (mlp, cnn, lenet5) by default, each read from its dump; the
hand-written C exists for the paper's CNN only. One run measures everything, interleaved: after
an agreement check per model and batch size (``bench.check``; nothing is reported if any
implementation disagrees), every (model, workload, batch, threads, implementation)
configuration is timed once per repetition, the order rotating from one repetition to the
next, so slow drifts of a shared machine hit all configurations alike. PyTorch runs twice, in
two processes: with glibc's default malloc and with ``GLIBC_TUNABLES`` raising the mmap and
trim thresholds (glibc reads it only at process start).

    python -m bench.run                         # full run: 1 epoch of 10,000 images, 5 reps
    python -m bench.run --reps 1 --batches 3 --out-dir /tmp/bench-smoke   # smoke run

Writes ``<out-dir>/<date>-<host>.json`` and ``<out-dir>/latest.md`` and prints the table.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np

if __package__ in (None, ""):  # run as `python bench/run.py` (the Makefile's bench target)
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import machine
from bench.check import Agreement, arbitrate, compare
from bench.model import LEARNING_RATE, REPO, bench_model
from runtime.experiment import cpu_model

ZOO = ("mlp", "cnn", "lenet5")

TUNED_MALLOC = "glibc.malloc.mmap_threshold=33554432:glibc.malloc.trim_threshold=268435456"
RESULTS = REPO / "bench" / "results"

# label -> (worker process, implementation kind); the first is the agreement reference
IMPLS = {
    "handwritten-c": ("c", "handwritten-c"),
    "generated-c": ("c", "generated-c"),
    "pytorch": ("torch", "pytorch"),
    "pytorch-tuned-malloc": ("torch-tuned", "pytorch"),
}


def worker_env(process: str, max_threads: int) -> dict:
    env = dict(os.environ)
    env.pop("GLIBC_TUNABLES", None)
    if process == "torch-tuned":
        env["GLIBC_TUNABLES"] = TUNED_MALLOC
    env["OMP_NUM_THREADS"] = str(max_threads)  # the most any measurement asks for
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    return env


class WorkerProcess:
    def __init__(self, name: str, env: dict):
        self.name = name
        self.proc = subprocess.Popen([sys.executable, "-m", "bench.worker"], cwd=REPO, env=env,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                     bufsize=1)

    def ask(self, **msg):
        self.proc.stdin.write(json.dumps(msg) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"worker {self.name} died (exit code {self.proc.wait()})")
        reply = json.loads(line)
        if not reply["ok"]:
            raise RuntimeError(f"worker {self.name} failed on {msg['cmd']}:\n{reply['error']}")
        return reply["result"]

    def close(self):
        if self.proc.poll() is None:
            try:
                self.proc.stdin.write('{"cmd": "quit"}\n')
                self.proc.stdin.close()
                self.proc.wait(timeout=30)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait()


def _cmd(*args: str) -> str | None:
    try:
        return subprocess.run(args, capture_output=True, text=True, check=True,
                              cwd=REPO).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None


def system_info() -> dict:
    return {"host": socket.gethostname(), "cpu_model": cpu_model(), "cpu_count": os.cpu_count(),
            "affinity": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
            "platform": platform.platform(), "python": sys.version.split()[0],
            "numpy": np.__version__,
            "cc": (_cmd(os.environ.get("CC", "gcc"), "--version") or "").split("\n")[0] or None,
            "git_commit": _cmd("git", "rev-parse", "HEAD"),
            "git_dirty": bool(_cmd("git", "status", "--porcelain", "--", "bench", "extract")),
            "loadavg_start": os.getloadavg()}


def stats(xs: list[float]) -> dict:
    a = np.asarray(xs, dtype=np.float64)
    q1, med, q3 = np.percentile(a, [25, 50, 75])
    return {"median": float(med), "min": float(a.min()), "max": float(a.max()),
            "q1": float(q1), "q3": float(q3), "n": int(a.size)}


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reps", type=int, default=5, help="timed repetitions per configuration")
    ap.add_argument("--batches", type=int, default=None,
                    help="training batches per timed run (default: one epoch of --images)")
    ap.add_argument("--images", type=int, default=10_000, help="images in the epoch")
    ap.add_argument("--models", default=None,
                    help="comma-separated models: zoo names (models/NAME.model), built-in "
                         "names, dumps or model files (default: mlp,cnn,lenet5; with --dump: cnn)")
    ap.add_argument("--batch", default="100,1000",
                    help="comma-separated batch sizes (training batch and inference call)")
    ap.add_argument("--infer-batch", type=int, default=None,
                    help="images per inference call (default: the batch size)")
    ap.add_argument("--infer-min-time", type=float, default=0.1, metavar="S",
                    help="an inference timing repeats its pass over the images until S seconds "
                         "have gone by and reports the time per pass (a pass can take 10 ms, "
                         "which one descheduled thread doubles); 0: one pass")
    ap.add_argument("--threads", default="1,2", help="comma-separated thread counts")
    ap.add_argument("--impls", default=",".join(IMPLS),
                    help=f"comma-separated subset of {', '.join(IMPLS)}")
    ap.add_argument("--workloads", default="train,infer")
    ap.add_argument("--data", default=None, help="MNIST directory (default: bundled subset, "
                    "then the shared copy, else synthetic data)")
    ap.add_argument("--dump", default=None, help="expression dump of the CNN for the "
                    "generated C (default: models/cnn.model's)")
    ap.add_argument("--out-dir", type=Path, default=RESULTS)
    ap.add_argument("--no-write", action="store_true", help="print only")
    ap.add_argument("--perturb", action="append", default=[], metavar="IMPL=REL",
                    help=argparse.SUPPRESS)  # for tests: scale one implementation's results
    args = ap.parse_args(argv)
    args.threads = [int(t) for t in args.threads.split(",")]
    args.batch = [int(b) for b in str(args.batch).split(",")]
    if args.models is None:
        args.models = "cnn" if args.dump else ",".join(ZOO)
    args.models = [m for m in args.models.split(",") if m]
    args.impls = [i for i in args.impls.split(",") if i]
    args.workloads = [w for w in args.workloads.split(",") if w]
    for i in args.impls:
        if i not in IMPLS:
            ap.error(f"unknown implementation {i!r}")
    for w in args.workloads:
        if w not in ("train", "infer"):
            ap.error(f"unknown workload {w!r}")
    args.fixed_batches = args.batches
    if not args.infer_min_time >= 0:
        ap.error("--infer-min-time must be 0 or more seconds")
    if args.reps < 1 or (args.batches is not None and args.batches < 1) \
            or any(args.images // b < 1 for b in args.batch):
        ap.error("--batches and --reps must be at least 1, --images at least the batch")
    args.perturb = dict(p.split("=", 1) for p in args.perturb)
    return args


def n_batches(args, batch: int) -> int:
    """Training batches per timed run: --batches, else one epoch of --images."""
    return args.fixed_batches or args.images // batch


def infer_batch(args, batch: int) -> int:
    return args.infer_batch or batch


def measure(args, workers: dict, configs: list[tuple], log=print) -> list[dict]:
    """``configs``: (model key, workload, batch, threads, label), timed in rotating order."""

    def run_one(mk, wl, b, t, lab, batches, images, min_time):
        return workers[IMPLS[lab][0]].ask(cmd="time", model=mk, impl=lab, threads=t,
                                          workload=wl, batch=b, batches=batches, images=images,
                                          infer_batch=infer_batch(args, b), min_time=min_time)

    for mk, wl, b, t, lab in configs:  # warm-up: caches, thread pools, allocator, page faults
        run_one(mk, wl, b, t, lab, min(n_batches(args, b), 2),
                min(n_batches(args, b) * b, 2 * infer_batch(args, b)), 0)
    samples = []
    for rep in range(args.reps):
        k = rep % len(configs)
        for pos, (mk, wl, b, t, lab) in enumerate(configs[k:] + configs[:k]):
            n = n_batches(args, b) * b
            r = run_one(mk, wl, b, t, lab, n_batches(args, b), n, args.infer_min_time)
            samples.append({"rep": rep, "position": pos, "model": mk, "workload": wl,
                            "batch": b, "threads": t, "impl": lab, "images": n, **r})
            log(f"  rep {rep + 1}/{args.reps} {mk:7s} {wl:5s} b{b:<5d} {t}T {lab:22s} "
                f"{r['seconds']:.3f} s", file=sys.stderr)
    return samples


def summarise(args, samples: list[dict], configs: list[tuple], models: dict,
              peak: dict) -> list[dict]:
    rows = []
    groups = []
    for mk, wl, b, t, _ in configs:
        if (mk, wl, b, t) not in groups:
            groups.append((mk, wl, b, t))
    for mk, wl, b, t in groups:
        labels = [c[4] for c in configs if c[:4] == (mk, wl, b, t)]
        mine = {lab: [s for s in samples
                      if (s["model"], s["workload"], s["batch"], s["threads"], s["impl"])
                      == (mk, wl, b, t, lab)] for lab in labels}
        by = {lab: stats([s["seconds"] for s in mine[lab]]) for lab in labels}
        fl = models[mk]["flops"]
        for lab in labels:
            st = by[lab]
            n = mine[lab][0]["images"]
            work = fl.train(n, b) if wl == "train" else fl.infer(n)
            pk = machine.peak_gflops(t, peak)
            row = {"model": models[mk]["name"], "key": mk, "workload": wl, "batch": b,
                   "threads": t, "impl": lab, "images": n, "flops": work, "seconds": st,
                   "images_per_s": n / st["median"],
                   "gflops": work / st["median"] / 1e9,
                   "peak_gflops": pk,
                   "pct_peak": 100 * work / st["median"] / 1e9 / pk if pk else None,
                   "last_loss": mine[lab][0].get("last_loss"),
                   # CPU time over wall time: about the thread count when the run had the
                   # cores to itself, less when it waited for them
                   "cpu_per_wall": float(np.median([s["cpu_seconds"] / s["seconds"]
                                                    for s in mine[lab]]))}
            for ref in ("handwritten-c", "generated-c", "pytorch-tuned-malloc"):
                if ref in by and ref != lab:
                    row[f"vs_{ref}"] = st["median"] / by[ref]["median"]
            rows.append(row)
    return rows


def paired_speedups(samples: list[dict], rows: list[dict]) -> list[dict]:
    """Per (model, workload, batch, threads): the median over repetitions of PyTorch's time
    (tuned malloc, else default) over the generated C's in the same repetition."""
    out = []
    seen = set()
    for r in rows:
        g = (r["key"], r["workload"], r["batch"], r["threads"])
        if g in seen:
            continue
        seen.add(g)
        mine = [s for s in samples if (s["model"], s["workload"], s["batch"], s["threads"]) == g]
        labs = {s["impl"] for s in mine}
        torch_lab = next((x for x in ("pytorch-tuned-malloc", "pytorch") if x in labs), None)
        if "generated-c" not in labs or torch_lab is None:
            continue
        ratios = []
        for rep in sorted({s["rep"] for s in mine}):
            t = {s["impl"]: s["seconds"] for s in mine if s["rep"] == rep}
            if "generated-c" in t and torch_lab in t:
                ratios.append(t[torch_lab] / t["generated-c"])
        out.append({"model": r["model"], "workload": g[1], "batch": g[2], "threads": g[3],
                    "vs": torch_lab, "speedup": float(np.median(ratios)),
                    "min": float(min(ratios)), "max": float(max(ratios))})
    return out


# the targets: generated C over PyTorch (model, workload) -> at least
TARGETS = {("cnn", "train"): 6.0, ("lenet5", "train"): 2.0, ("mlp", "train"): 1.0,
           ("cnn", "infer"): 2.0, ("lenet5", "infer"): 2.0, ("mlp", "infer"): 2.0}


def peak_line(pk: dict) -> str:
    """The README's line on the peak that ``% peak`` divides by."""
    nominal = (f"cores x {pk['fma_units']} FMA units x {pk['vector_floats']} lanes "
               f"({pk['isa']}) x 2 x {pk['clock_ghz']} GHz = "
               f"{pk['nominal_gflops_per_core'] or 0:.1f} GFLOP/s per core, clock from "
               f"{pk['clock_source']}, FMA units assumed (`$BENCH_FMA_UNITS`)")
    measured = pk.get("measured_gflops_per_core") or {}
    if not measured:
        return f"- peak (float32), nominal (not measured here): {nominal}"
    rates = ", ".join(f"{r:.1f} at {t} thread{'s' if t != '1' else ''}"
                      for t, r in measured.items())
    most = pk.get("measured_peak_threads") or max(measured, key=int)
    clock = (f"{pk['measured_clock_ghz']:.2f} GHz if {pk['fma_units']} FMA units x "
             f"{pk['vector_floats']} floats x 2" if pk.get("measured_clock_ghz") else "")
    return (f"- peak (float32), measured: {rates} GFLOP/s per core (an FMA loop on every "
            f"thread at once, best of {pk.get('measured_runs', 5)}, `bench/machine.py`"
            + (f"; at {most} thread{'s' if str(most) != '1' else ''}: {clock}" if clock else "")
            + f"); `% peak` divides by it. Nominal: {nominal}")


def markdown(meta: dict, rows: list[dict], agreements: dict, speedups: list[dict]) -> str:
    s = meta["system"]
    hw = meta["build"].get("handwritten-c", {})
    gen = meta["build"].get("generated-c", {})
    pk = meta["peak"]
    out = [f"# Benchmark of the zoo, {meta['date']}", "",
           f"- host `{s['host']}`, CPU {s['cpu_model']} ({s['cpu_count']} logical CPUs, "
           f"load average at start {', '.join(f'{x:.2f}' for x in s['loadavg_start'])}, "
           f"at end {', '.join(f'{x:.2f}' for x in s.get('loadavg_end', ()))})",
           peak_line(pk),
           f"- models: {', '.join(f'{m} ({v})' for m, v in meta['models'].items())}",
           f"- workload: {meta['images']} images per row at batch {meta['batch'][0]} (SGD lr "
           f"{meta['lr']}; at another batch as many whole batches as fit in --images "
           f"{meta['args']['images']}), inference over the same images in calls of the batch"
           + (f" (each timing repeats the pass until {meta['args']['infer_min_time']:g} s "
              f"have gone by: the time of one pass, averaged)"
              if meta["args"].get("infer_min_time") else "") + "; "
           f"data {meta['data_source']}",
           f"- {meta['reps']} interleaved repetitions per row; time = median, spread = min-max; "
           f"`x gen` = median time over the generated C's (above 1: the generated C is faster)",
           "- FLOPs from each model's dump (`bench/dumpflops.py`; exp/log = 1 FLOP): "
           + "; ".join(f"{m} training {f['train_per_image']:.0f} (batch {f['batch']}), "
                       f"inference {f['infer_per_image']} per image"
                       for m, f in meta["flops"].items())
           + "; the direct sums' count: the generated C's convolutions by Winograd's rows "
             "(`extract/passes/winograd.py`) do fewer, so its GFLOP/s and % peak are effective "
             "figures and can pass 100",
           (f"- hand-written C: `{' '.join(hw.get('cflags', []))}`, linked "
            f"`{' '.join(hw.get('ldflags', []))}`; " if hw else "- ")
           + (f"generated C: `{' '.join(gen.get('CFLAGS', []))}`, linked "
              f"`{' '.join(gen.get('LDFLAGS', []))}`, {gen.get('lanes')} float lanes (from "
              f"{gen.get('lanes_from')}); " if gen.get("CFLAGS") else "")
           + f"{s['cc'] or 'cc unknown'}",
           f"- PyTorch {meta.get('torch_version') or 'n/a'}; tuned malloc: "
           f"`GLIBC_TUNABLES={TUNED_MALLOC}`; threads via `torch.set_num_threads` / the C "
           f"`nthreads` argument"]
    busy = s["loadavg_start"][0]
    if busy > 0.25 * (s["cpu_count"] or 1):
        out.append(f"- **warning**: the machine was busy (load average {busy:.2f} at the start): "
                   f"the times are not representative")
    if meta["unavailable"]:
        missing = ", ".join(f"{k} ({v})" for k, v in meta["unavailable"].items())
        out.append(f"- not measured: {missing}")
    if speedups:
        out += ["", "Generated C against PyTorch (median over the repetitions of PyTorch's time "
                "over the generated C's in the same repetition; min-max):", "",
                "| model | workload | batch | threads | speed-up | min-max | target |",
                "| --- | --- | ---: | ---: | ---: | ---: | --- |"]
        for r in speedups:
            t = TARGETS.get((r["model"], r["workload"]))
            mark = "" if t is None else (f">= {t:g}: {'met' if r['speedup'] >= t else 'not met'}"
                                         if r["threads"] == 2 or r["workload"] == "infer"
                                         else f"(>= {t:g} at 2 threads)")
            out.append(f"| {r['model']} | {r['workload']} | {r['batch']} | {r['threads']} | "
                       f"{r['speedup']:.2f} | {r['min']:.2f}-{r['max']:.2f} | {mark} |")
    out += ["", "| model | workload | batch | threads | implementation | time (s) | min-max (s) "
            "| images/s | GFLOP/s | % peak | x gen |",
            "| --- | --- | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for r in rows:
        st = r["seconds"]
        pct = f"{r['pct_peak']:.1f}" if r.get("pct_peak") is not None else "-"
        out.append(f"| {r['model']} | {r['workload']} | {r['batch']} | {r['threads']} | "
                   f"{r['impl']} | {st['median']:.3f} | {st['min']:.3f}-{st['max']:.3f} | "
                   f"{r['images_per_s']:.0f} | {r['gflops']:.2f} | {pct} | "
                   f"{_ratio(r, 'generated-c')} |")
    out += [""] + [f"Agreement check passed ({k}): {_agreement_line(a)}."
                   for k, a in agreements.items()]
    return "\n".join(out) + "\n"


def _agreement_line(agreement: Agreement) -> str:
    worst = agreement.worst()
    if not worst:
        return f"nothing to compare {agreement.reference} with"
    explained = [r for r in agreement.rows if r.explained]
    return (f"worst normwise relative error against {agreement.reference}: "
            + ", ".join(f"{k} {v:.1e}" for k, v in worst.items())
            + (f"; {len(explained)} differences past the tolerance are float32 rounding by "
               f"the float64 arbiter (bench/check.py arbitrate; worst: {_worst(explained)})"
               if explained else ""))


def _worst(rows) -> str:
    r = max(rows, key=lambda r: r.rel_err)
    return f"{r.impl} {r.quantity}, {r.explained}"


def _ratio(row: dict, ref: str) -> str:
    if row["impl"] == ref:
        return "1"
    v = row.get(f"vs_{ref}")
    return f"{v:.2f}" if v is not None else "-"


def resolve_model(name: str) -> str:
    """A zoo name (``models/NAME.model`` exists) or one of the benchmark's own models
    (``bench/models/NAME.model``: vgg_cifar) -> that file; anything else as given."""
    if os.sep in name or name.endswith((".json", ".model")):
        return name
    for f in (REPO / "models" / f"{name}.model", REPO / "bench" / "models" / f"{name}.model"):
        if f.is_file():
            return str(f)
    return name


def main(argv=None) -> int:
    args = parse_args(argv)
    date = dt.datetime.now(dt.timezone.utc)
    system = system_info()
    peak = machine.describe(measure_threads=tuple(args.threads))  # before the workers start
    labels = list(args.impls)
    processes = sorted({IMPLS[lab][0] for lab in labels}, key=["c", "torch", "torch-tuned"].index)
    workers = {p: WorkerProcess(p, worker_env(p, max(args.threads))) for p in processes}
    n_data = max(max(n_batches(args, b) * b, 3 * b) for b in args.batch)  # the check: 3 batches
    unavailable, agreements, configs, models, inits = {}, {}, [], {}, {}
    try:
        for mk in args.models:
            dump = args.dump if args.dump and mk == "cnn" else None
            src = mk if dump else resolve_model(mk)
            try:                 # the model's dump (a model file: the Agda executable)
                bench_model(src)
            except Exception as e:  # noqa: BLE001  (reported, the other models still run)
                unavailable[mk] = f"{type(e).__name__}: {e}"
                print(f"note: model {mk} not measured: {unavailable[mk]}", file=sys.stderr)
                continue
            mine_inits = {}
            for p, w in workers.items():
                mine = {lab: IMPLS[lab][1] for lab in labels if IMPLS[lab][0] == p}
                mine_inits[p] = w.ask(cmd="init", key=mk, model=src, dump=dump, impls=mine,
                                      n=n_data, data_dir=args.data, lr=LEARNING_RATE,
                                      perturb={k: v for k, v in args.perturb.items()
                                               if k in mine})
            inits[mk] = mine_inits
            if len({i["data_sha256"] for i in mine_inits.values()}) != 1:
                raise RuntimeError("workers loaded different data")
            gone = {k: v for i in mine_inits.values() for k, v in i["unavailable"].items()}
            for lab, why in gone.items():
                unavailable[f"{mk}/{lab}"] = why
                print(f"note: {mk}/{lab} not measured: {why}", file=sys.stderr)
            here = [lab for lab in labels if lab not in gone]
            if not here:
                continue
            try:
                bm = bench_model(src, dump)
            except Exception:  # noqa: BLE001  (a missing dump: only the generated C needs it)
                bm = bench_model(src)
            models[mk] = {"name": bm.name, "source": src, "flops": bm.flops()}
            for b in args.batch:
                probes = {}
                for p, w in workers.items():
                    probes.update(w.ask(cmd="probe", model=mk, threads=args.threads, batch=b))
                order = [f"{lab}@{t}" for lab in here for t in args.threads]
                agreement = compare({k: probes[k] for k in order}, slices=bm.param_slices())
                if not agreement.ok and any(IMPLS[lab][1] == "pytorch" for lab in here):
                    # float32 against float32: the PyTorch twin in float64 says whose rounding
                    # a difference is (bench/check.py: arbitrate)
                    exact = workers[next(IMPLS[lab][0] for lab in here
                                         if IMPLS[lab][1] == "pytorch")].ask(
                        cmd="probe64", model=mk, batch=b)
                    agreement = arbitrate(agreement, probes, exact, slices=bm.param_slices())
                if not agreement.ok:
                    print(f"model {mk}, batch {b}:", file=sys.stderr)
                    print(agreement.table(), file=sys.stderr)
                    print("\nREFUSING TO REPORT: the implementations do not compute the same "
                          "losses and gradients (rows marked NO above).", file=sys.stderr)
                    return 2
                agreements[f"{mk}, batch {b}"] = agreement
                print(f"agreement check passed ({mk}, batch {b}): "
                      f"{_agreement_line(agreement)}", file=sys.stderr)
            configs += [(mk, wl, b, t, lab) for wl in args.workloads for b in args.batch
                        for t in args.threads for lab in here]
        if not configs:
            raise RuntimeError(f"no implementation available: {unavailable}")
        samples = measure(args, workers, configs)
    finally:
        for w in workers.values():
            w.close()

    rows = summarise(args, samples, configs, models, peak)
    speedups = paired_speedups(samples, rows)
    system["loadavg_end"] = os.getloadavg()
    all_inits = [i for m in inits.values() for i in m.values()]
    torch_v = next((i["versions"].get("torch") for i in all_inits
                    if i["versions"].get("torch")), None)
    first = all_inits[0]
    meta = {"date": date.isoformat(timespec="seconds"), "system": system, "peak": peak,
            "args": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
            "reps": args.reps, "images": n_batches(args, args.batch[0]) * args.batch[0],
            "batch": args.batch,
            "lr": LEARNING_RATE, "threads": args.threads,
            "models": {mk: m["source"] for mk, m in models.items()},
            "data_source": first["data_source"], "data_sha256": first["data_sha256"],
            "torch_version": torch_v, "tuned_malloc": TUNED_MALLOC, "unavailable": unavailable,
            "build": {k: v for i in all_inits for k, v in i["build"].items()},
            "builds": {mk: {k: v for i in m.values() for k, v in i["build"].items()}
                       for mk, m in inits.items()},
            "workers": {p: i["versions"] for p, i in next(iter(inits.values())).items()},
            "flops": {m["name"]: {**m["flops"].summary(args.batch[0]), "batch": args.batch[0]}
                      for m in models.values()}}
    md = markdown(meta, rows, agreements, speedups)
    print(md)
    if not args.no_write:
        args.out_dir.mkdir(parents=True, exist_ok=True)
        stem = f"{date.strftime('%Y-%m-%dT%H%M%SZ')}-{system['host']}"
        result = {"meta": meta, "agreement": {k: a.to_json() for k, a in agreements.items()},
                  "results": rows, "speedups": speedups, "samples": samples}
        (args.out_dir / f"{stem}.json").write_text(json.dumps(result, indent=1) + "\n")
        (args.out_dir / "latest.md").write_text(md)
        print(f"wrote {args.out_dir / (stem + '.json')} and {args.out_dir / 'latest.md'}",
              file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
