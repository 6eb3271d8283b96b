"""Benchmark CNN training and inference: generated C, hand-written C and PyTorch (CPU).

One run measures everything, interleaved: after an agreement check (``bench.check``; nothing
is reported if any implementation disagrees), every (workload, threads, implementation)
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

from bench import flops
from bench.check import Agreement, compare
from bench.model import BATCH, LEARNING_RATE, REPO
from runtime.experiment import cpu_model

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
            "git_dirty": bool(_cmd("git", "status", "--porcelain", "--", "bench", "extract",
                                   "templates")),
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
    ap.add_argument("--batch", type=int, default=BATCH)
    ap.add_argument("--infer-batch", type=int, default=1000, help="images per inference call")
    ap.add_argument("--threads", default="1,2", help="comma-separated thread counts")
    ap.add_argument("--impls", default=",".join(IMPLS),
                    help=f"comma-separated subset of {', '.join(IMPLS)}")
    ap.add_argument("--workloads", default="train,infer")
    ap.add_argument("--data", default=None, help="MNIST directory (default: bundled subset, "
                    "then the shared copy, else synthetic data)")
    ap.add_argument("--dump", default=None, help="expression dump for the generated C "
                    "(default: build/dump/cnn.json, made by `make dump`)")
    ap.add_argument("--out-dir", type=Path, default=RESULTS)
    ap.add_argument("--no-write", action="store_true", help="print only")
    ap.add_argument("--perturb", action="append", default=[], metavar="IMPL=REL",
                    help=argparse.SUPPRESS)  # for tests: scale one implementation's results
    args = ap.parse_args(argv)
    args.threads = [int(t) for t in args.threads.split(",")]
    args.impls = [i for i in args.impls.split(",") if i]
    args.workloads = [w for w in args.workloads.split(",") if w]
    for i in args.impls:
        if i not in IMPLS:
            ap.error(f"unknown implementation {i!r}")
    for w in args.workloads:
        if w not in ("train", "infer"):
            ap.error(f"unknown workload {w!r}")
    if args.batches is None:
        args.batches = args.images // args.batch
    if args.batches < 1 or args.reps < 1:
        ap.error("--batches and --reps must be at least 1")
    args.perturb = dict(p.split("=", 1) for p in args.perturb)
    return args


def measure(args, workers: dict, labels: list[str], log=print) -> list[dict]:
    n_train = args.batches * args.batch
    configs = [(wl, t, lab) for wl in args.workloads for t in args.threads for lab in labels]

    def run_one(wl, t, lab, batches, images):
        return workers[IMPLS[lab][0]].ask(cmd="time", impl=lab, threads=t, workload=wl,
                                          batches=batches, images=images)

    for wl, t, lab in configs:  # warm-up: caches, thread pools, allocator, page faults
        run_one(wl, t, lab, min(args.batches, 2), min(n_train, args.infer_batch))
    samples = []
    for rep in range(args.reps):
        k = rep % len(configs)
        for pos, (wl, t, lab) in enumerate(configs[k:] + configs[:k]):
            r = run_one(wl, t, lab, args.batches, n_train)
            samples.append({"rep": rep, "position": pos, "workload": wl, "threads": t,
                            "impl": lab, **r})
            log(f"  rep {rep + 1}/{args.reps} {wl:5s} {t}T {lab:22s} {r['seconds']:.3f} s",
                file=sys.stderr)
    return samples


def summarise(args, samples: list[dict], labels: list[str]) -> list[dict]:
    n_train = args.batches * args.batch
    work = {"train": flops.train_flops(n_train, args.batch), "infer": flops.infer_flops(n_train)}
    rows = []
    for wl in args.workloads:
        for t in args.threads:
            by = {lab: stats([s["seconds"] for s in samples
                              if (s["workload"], s["threads"], s["impl"]) == (wl, t, lab)])
                  for lab in labels}
            for lab in labels:
                st = by[lab]
                mine = [s for s in samples
                        if (s["workload"], s["threads"], s["impl"]) == (wl, t, lab)]
                row = {"workload": wl, "threads": t, "impl": lab, "images": n_train,
                       "flops": work[wl], "seconds": st,
                       "images_per_s": n_train / st["median"],
                       "gflops": work[wl] / st["median"] / 1e9,
                       "last_loss": mine[0].get("last_loss"),
                       # CPU time over wall time: about the thread count when the run had the
                       # cores to itself, less when it waited for them
                       "cpu_per_wall": float(np.median([s["cpu_seconds"] / s["seconds"]
                                                        for s in mine]))}
                for ref in ("handwritten-c", "generated-c"):
                    if ref in by and ref != lab:
                        row[f"vs_{ref}"] = st["median"] / by[ref]["median"]
                rows.append(row)
    return rows


def markdown(meta: dict, rows: list[dict], agreement: Agreement) -> str:
    s = meta["system"]
    hw = meta["build"].get("handwritten-c", {})
    gen = meta["build"].get("generated-c", {}) if "generated-c" not in meta["unavailable"] else {}
    out = [f"# CNN benchmark, {meta['date']}", "",
           f"- host `{s['host']}`, CPU {s['cpu_model']} ({s['cpu_count']} logical CPUs, "
           f"load average at start {', '.join(f'{x:.2f}' for x in s['loadavg_start'])})",
           f"- workload: {meta['images']} images ({meta['batches']} batches of {meta['batch']}, "
           f"SGD lr {meta['lr']}), inference in calls of {meta['infer_batch']} images; "
           f"data {meta['data_source']}",
           f"- {meta['reps']} interleaved repetitions per row; time = median, spread = min-max; "
           f"`x hw` / `x gen` = median time relative to the hand-written / generated C "
           f"(below 1 is faster)",
           f"- FLOPs (bench/flops.py, exp = 1 FLOP): training "
           f"{meta['flops']['train_per_image']:.0f} and inference "
           f"{meta['flops']['infer_per_image']} per image",
           f"- hand-written C: `{' '.join(hw.get('cflags', []))}`, linked "
           f"`{' '.join(hw.get('ldflags', []))}`; "
           + (f"generated C: `{' '.join(gen.get('CFLAGS', []))}`, linked "
              f"`{' '.join(gen.get('LDFLAGS', []))}`, from dump "
              f"`{gen.get('dump', 'n/a')}` (sha256 {gen.get('dump_sha256', 'n/a')[:12]}); "
              if gen else "")
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
    out += ["", "| workload | threads | implementation | time (s) | min-max (s) | images/s | GFLOP/s "
            "| x hw | x gen |", "| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for r in rows:
        st = r["seconds"]
        out.append(f"| {r['workload']} | {r['threads']} | {r['impl']} | {st['median']:.3f} | "
                   f"{st['min']:.3f}-{st['max']:.3f} | {r['images_per_s']:.0f} | "
                   f"{r['gflops']:.2f} | {_ratio(r, 'handwritten-c')} | "
                   f"{_ratio(r, 'generated-c')} |")
    out += ["", f"Agreement check passed: {_agreement_line(agreement)}."]
    return "\n".join(out) + "\n"


def _agreement_line(agreement: Agreement) -> str:
    worst = agreement.worst()
    if not worst:
        return f"nothing to compare {agreement.reference} with"
    return (f"worst normwise relative error against {agreement.reference}: "
            + ", ".join(f"{k} {v:.1e}" for k, v in worst.items()))


def _ratio(row: dict, ref: str) -> str:
    if row["impl"] == ref:
        return "1"
    v = row.get(f"vs_{ref}")
    return f"{v:.2f}" if v is not None else "-"


def main(argv=None) -> int:
    args = parse_args(argv)
    date = dt.datetime.now(dt.timezone.utc)
    system = system_info()
    labels = list(args.impls)
    processes = sorted({IMPLS[lab][0] for lab in labels}, key=["c", "torch", "torch-tuned"].index)
    workers = {p: WorkerProcess(p, worker_env(p, max(args.threads))) for p in processes}
    try:
        n_data = max(args.batches * args.batch, 3 * args.batch)  # the check needs 3 batches
        inits = {}
        for p, w in workers.items():
            mine = {lab: IMPLS[lab][1] for lab in labels if IMPLS[lab][0] == p}
            inits[p] = w.ask(cmd="init", impls=mine, n=n_data, data_dir=args.data,
                             batch=args.batch, lr=LEARNING_RATE, infer_batch=args.infer_batch,
                             dump=args.dump,
                             perturb={k: v for k, v in args.perturb.items() if k in mine})
        if len({i["data_sha256"] for i in inits.values()}) != 1:
            raise RuntimeError("workers loaded different data")
        unavailable = {k: v for i in inits.values() for k, v in i["unavailable"].items()}
        labels = [lab for lab in labels if lab not in unavailable]
        if not labels:
            raise RuntimeError(f"no implementation available: {unavailable}")
        for lab, why in unavailable.items():
            print(f"note: {lab} not measured: {why}", file=sys.stderr)

        probes = {}
        for p, w in workers.items():
            probes.update(w.ask(cmd="probe", threads=args.threads))
        order = [f"{lab}@{t}" for lab in labels for t in args.threads]
        agreement = compare({k: probes[k] for k in order})
        if not agreement.ok:
            print(agreement.table(), file=sys.stderr)
            print("\nREFUSING TO REPORT: the implementations do not compute the same losses "
                  "and gradients (rows marked NO above).", file=sys.stderr)
            return 2

        print(f"agreement check passed: {_agreement_line(agreement)}", file=sys.stderr)
        samples = measure(args, workers, labels)
    finally:
        for w in workers.values():
            w.close()

    rows = summarise(args, samples, labels)
    system["loadavg_end"] = os.getloadavg()
    torch_v = next((i["versions"].get("torch") for i in inits.values()
                    if i["versions"].get("torch")), None)
    meta = {"date": date.isoformat(timespec="seconds"), "system": system, "args": {
                k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
            "reps": args.reps, "images": args.batches * args.batch, "batches": args.batches,
            "batch": args.batch, "lr": LEARNING_RATE, "infer_batch": args.infer_batch,
            "threads": args.threads, "data_source": inits[processes[0]]["data_source"],
            "data_sha256": inits[processes[0]]["data_sha256"], "torch_version": torch_v,
            "tuned_malloc": TUNED_MALLOC, "unavailable": unavailable,
            "build": {k: v for i in inits.values() for k, v in i["build"].items()},
            "workers": {p: i["versions"] for p, i in inits.items()},
            "flops": flops.summary(batch=args.batch)}
    md = markdown(meta, rows, agreement)
    print(md)
    if not args.no_write:
        args.out_dir.mkdir(parents=True, exist_ok=True)
        stem = f"{date.strftime('%Y-%m-%dT%H%M%SZ')}-{system['host']}"
        result = {"meta": meta, "agreement": agreement.to_json(), "results": rows,
                  "samples": samples}
        (args.out_dir / f"{stem}.json").write_text(json.dumps(result, indent=1) + "\n")
        (args.out_dir / "latest.md").write_text(md)
        print(f"wrote {args.out_dir / (stem + '.json')} and {args.out_dir / 'latest.md'}",
              file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
