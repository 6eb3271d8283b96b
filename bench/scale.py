"""Models of real size: what the front end, the dump and the kernels cost as a model grows.

Prints the figures issue #35 asks for, each measured in this run on this machine:

- a 1000-class softmax cross-entropy (both ways of writing it: ``logsumexp`` with a detached
  maximum, and the three bindings LeNet-5 wrote before ``softmax_ce``, ``maxall`` inside the
  gradient: docs/model-format.md §4):
  model file to loaded kernels (elaboration, extraction, gcc, cffi), and the dump's size;
- a log-sum-exp over 1,280,000 elements, both ways: model file to kernels, and the value and
  gradient in float64 against NumPy's (max elementwise relative error);
- a 10,000-deep nesting and 5 MB of garbage: the time to the one-line error;
- elaboration time and memory against model size: a chain of bindings (100 -> 20,000) and a
  reduced space (maxall and logsumexp over 10 -> 10^6 elements), with the growth exponent fitted
  on a log-log scale, plotted to ``<out-dir>/scale.png``.

    python -m bench.scale                      # everything (a few minutes)
    python -m bench.scale --quick              # smaller sizes, for a smoke run

Elaboration runs the Agda executable (``build/agda/Main model FILE``) in a child process with its
address space capped (``--mem-cap``, GB), so a size that would exhaust the machine is reported as
"over the cap" instead; each size gets at most ``--time-cap`` seconds, and the sizes after one
that hit a cap are skipped. Memory is the child's peak resident set (GNU time's ``%M``), and its user CPU time
(``%U``) is printed beside the wall time (on a busy machine the wall time is an upper bound).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

REPO = Path(__file__).resolve().parent.parent


def main_exe() -> Path:
    from extract.front import frontend
    return frontend.agda_main()


# ---------------------------------------------------------------------------------------------
# model texts

def softmax_ce(n: int, detached: bool) -> str:
    head = (f"model sce{n}\ninput  x : 64\ntarget y : {n}\nparam  w : {n}x64\nparam  b : {n}\n"
            f"z = dense(w, x, b)\n")
    if detached:
        return head + f"loss loss = logsumexp(z) - (sum j : {n} . y[j] * z[j])\n"
    return head + (f"m = maxall(z)\nse = sum j : {n} . exp(z[j] - m)\n"
                   f"loss loss = log(se) + m - (sum j : {n} . y[j] * z[j])\n")


def lse(n: int, detached: bool) -> str:
    if detached:
        return f"model lse\nparam x : {n}\nloss l = logsumexp(x)\n"
    return (f"model lse\nparam x : {n}\nm = maxall(x)\n"
            f"loss l = m + log(sum j : {n} . exp(x[j] - m))\n")


def chain(n: int) -> str:
    """n bindings, each reading the one before it and an input (a deep network's shape)."""
    lines = ["model chain", "input x : 16", "target y : 16", "param w : 16", "h0 = x * w"]
    lines += [f"h{i} = relu(h{i - 1}) + x" for i in range(1, n)]
    lines.append(f"loss l = sqerr(h{n - 1}, y)")
    return "\n".join(lines) + "\n"


def reduced(n: int) -> str:
    return f"model red\nparam x : {n}\nm = maxall(x)\nloss l = logsumexp(x) + m\n"


def deep(n: int) -> str:
    return "model deep\nparam x : 4\nloss l = sum i : 4 . (" + "relu(" * n + "x" + ")" * n + ")[i]\n"


def garbage(nbytes: int) -> str:
    rng = np.random.default_rng(1)
    chars = np.frombuffer(b"abcdefxyz0123456789 +-*/()[]{}.:=,\n\t#@!", dtype=np.uint8)
    return rng.choice(chars, nbytes).tobytes().decode()


# ---------------------------------------------------------------------------------------------
# measuring

def elaborate(text: str, tmp: Path, time_cap: float, mem_cap_gb: float) -> dict:
    """Run ``Main model FILE`` on ``text``: seconds, peak RSS (MB), dump bytes, status.

    The child is started through GNU time (``/usr/bin/time -f %M``, its peak resident set in KB)
    and a shell that caps its address space (``ulimit -v``): a child forked from this process
    directly would count this process's own pages in its peak (Linux keeps the high-water mark
    across exec)."""
    path = tmp / "m.model"
    path.write_text(text)
    kb = int(mem_cap_gb * 2 ** 20)
    cmd = ["sh", "-c", f'ulimit -v {kb}; exec "$0" "$@"', str(main_exe()), "model", str(path)]
    gnu_time = Path("/usr/bin/time")
    if gnu_time.exists():
        cmd = [str(gnu_time), "-f", "%M %U"] + cmd
    t0 = time.perf_counter()
    (tmp / "err.txt").write_bytes(b"")
    # append mode: Main reopens /dev/stderr to append, GNU time writes after it
    with open(tmp / "out.json", "wb") as out, open(tmp / "err.txt", "ab") as err:
        p = subprocess.Popen(cmd, stdout=out, stderr=err)
        try:
            code = p.wait(timeout=time_cap)
            status = "ok" if code == 0 else "error"
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
            code, status = None, f"over {time_cap:.0f} s"
    secs = time.perf_counter() - t0
    lines = (tmp / "err.txt").read_text(errors="replace").strip().splitlines()
    rss_mb = cpu_s = float("nan")
    if gnu_time.exists() and lines:
        last = lines[-1].split()
        if len(last) >= 2 and last[-2].isdigit():
            rss_mb = int(last[-2]) / 1024
            cpu_s = float(last[-1])
            lines = lines[:-1]
        lines = [ln for ln in lines if not ln.startswith("Command ")]
    if status == "error":
        text_err = " ".join(lines).lower()
        if "heap" in text_err or "memory" in text_err or code in (-9, 137, 251):
            status = f"over the {mem_cap_gb:.0f} GB cap"
        else:
            status = "error: " + (lines[-1][:100] if lines else "")
    return {"seconds": secs, "cpu_s": cpu_s, "rss_mb": rss_mb, "status": status,
            "dump_bytes": (tmp / "out.json").stat().st_size,
            "stderr": " ".join(lines)[:200]}


def to_kernels(text: str, tmp: Path, precision: str = "f32"):
    """Model file to loaded kernels through ``runtime.load`` with a fresh kernel cache (so gcc
    runs): (model, seconds)."""
    import runtime
    path = tmp / f"k{abs(hash(text)) % 10**8}.model"
    path.write_text(text)
    os.environ["PROVED_KERNELS_CACHE"] = str(tmp / "cache")
    t0 = time.perf_counter()
    m = runtime.load(str(path), precision=precision, init="random")
    return m, time.perf_counter() - t0


def fit(xs, ys) -> float:
    """The exponent k of y ~ c·x^k, least squares on logs (of the positive values; nan if
    fewer than two: e.g. CPU times below the clock's 0.01 s)."""
    pairs = [(x, y) for x, y in zip(xs, ys) if x > 0 and y > 0]
    if len(pairs) < 2:
        return float("nan")
    lx, ly = np.log(np.asarray(pairs, float)).T
    return float(np.polyfit(lx, ly, 1)[0])


# ---------------------------------------------------------------------------------------------

def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="smaller sizes (a smoke run)")
    ap.add_argument("--out-dir", default=str(REPO / "bench" / "results"))
    ap.add_argument("--time-cap", type=float, default=120.0, help="seconds per elaboration")
    ap.add_argument("--mem-cap", type=float, default=12.0, help="GB of address space per "
                                                                "elaboration")
    args = ap.parse_args(argv)
    out_dir = Path(args.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    results: dict = {}
    tmp = Path(tempfile.mkdtemp(prefix="bench-scale-"))

    print("== softmax cross-entropy over 1000 classes (model file -> loaded kernels)")
    for detached in (True, False):
        text = softmax_ce(1000, detached)
        e = elaborate(text, tmp, args.time_cap, args.mem_cap)
        _, secs = to_kernels(text, tmp)
        way = "logsumexp (detached max)" if detached else "maxall inside the gradient"
        print(f"  {way:28s} dump {e['dump_bytes'] / 1024:7.1f} KB, elaboration "
              f"{e['seconds']:.2f} s, file to kernels {secs:.1f} s")
        results[f"sce1000_{'detached' if detached else 'max'}"] = {
            "dump_bytes": e["dump_bytes"], "elab_s": e["seconds"], "to_kernels_s": secs}

    n = 10_000 if args.quick else 1_280_000
    print(f"== log-sum-exp over {n:,} elements, float64 against NumPy")
    rng = np.random.default_rng(0)
    x = rng.standard_normal(n) * 3
    top = x.max()
    want_l = top + np.log(np.exp(x - top).sum())
    want_g = np.exp(x - want_l)
    for detached in (True, False):
        m, secs = to_kernels(lse(n, detached), tmp, precision="f64")
        m.set_params({"x": x})
        loss, g = m.batch_gradients(n=1)
        rel = np.abs(g["x"] - want_g) / np.abs(want_g)
        k = int(np.argmax(x))
        way = "detached max" if detached else "max inside the gradient"
        print(f"  {way:24s} file to kernels {secs:.1f} s; value rel. error "
              f"{abs(loss - want_l) / abs(want_l):.1e}; gradient max rel. error {rel.max():.1e} "
              f"(elsewhere than the argmax {np.delete(rel, k).max():.1e})")
        results[f"lse_{'detached' if detached else 'max'}"] = {
            "n": n, "to_kernels_s": secs, "value_rel": abs(loss - want_l) / abs(want_l),
            "grad_rel": float(rel.max()), "grad_rel_off_argmax": float(np.delete(rel, k).max())}

    print("== errors")
    for what, text in (("10,000-deep nesting", deep(10_000)),
                       ("5 MB of garbage", garbage(5_000_000))):
        e = elaborate(text, tmp, args.time_cap, args.mem_cap)
        print(f"  {what:20s} {e['seconds']:.2f} s, {e['rss_mb']:.0f} MB: {e['stderr'][:110]}")
        results[f"error_{what.split()[0]}"] = {"seconds": e["seconds"], "rss_mb": e["rss_mb"],
                                               "message": e["stderr"]}

    growth = {}
    series = {
        "bindings": (chain, [100, 300, 1000, 3000] if args.quick
                     else [100, 300, 1000, 2000, 4000, 8000, 20_000]),
        "reduced elements": (reduced, [10, 1000, 100_000] if args.quick
                             else [10, 100, 1000, 10_000, 100_000, 1_000_000]),
    }
    for label, (make, sizes) in series.items():
        print(f"== elaboration against {label}")
        rows = []
        for size in sizes:
            e = elaborate(make(size), tmp, args.time_cap, args.mem_cap)
            print(f"  {size:>9,}  {e['seconds']:8.2f} s ({e['cpu_s']:.2f} s CPU)  {e['rss_mb']:8.0f} MB  dump "
                  f"{e['dump_bytes'] / 1024:9.1f} KB  {e['status']}")
            rows.append({"size": size, **{k: e[k] for k in ("seconds", "cpu_s", "rss_mb",
                                                             "dump_bytes", "status")}})
            if e["status"] != "ok":
                break
        ok = [r for r in rows if r["status"] == "ok"]
        # the growth of CPU time where it was measured (the wall time on a busy machine is
        # inflated by the load), below 0.05 s start-up dominates
        key = "cpu_s" if all(r["cpu_s"] == r["cpu_s"] for r in ok) else "seconds"
        big = [r for r in ok if r[key] > 0.05]
        note = ""
        if len(big) < 2:      # every run is start-up (CPU clock at 0.00): the wall time's slope
            key, big, note = "seconds", ok, " (every run under 0.05 s: start-up, wall time)"
        kt = fit([r["size"] for r in big], [r[key] for r in big])
        km = fit([r["size"] for r in ok], [r["rss_mb"] for r in ok])
        print(f"  fitted growth: time ~ n^{kt:.2f}, memory ~ n^{km:.2f}{note}")
        growth[label] = {"rows": rows, "time_exponent": kt, "memory_exponent": km}
    results["growth"] = growth

    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, axes = plt.subplots(1, 2, figsize=(11, 4))
        for ax, (label, g) in zip(axes, growth.items()):
            ok = [r for r in g["rows"] if r["status"] == "ok"]
            xs = [r["size"] for r in ok]
            ax.loglog(xs, [r["seconds"] for r in ok], "o:", alpha=0.5, label="wall time (s)")
            ax.loglog(xs, [r["cpu_s"] for r in ok], "o-",
                      label=f"CPU time (s), ~n^{g['time_exponent']:.2f}")
            ax.loglog(xs, [r["rss_mb"] / 1000 for r in ok], "s--",
                      label=f"peak memory (GB), ~n^{g['memory_exponent']:.2f}")
            for r in g["rows"]:
                if r["status"] != "ok":
                    ax.axvline(r["size"], color="red", lw=0.8)
                    ax.annotate(r["status"][:30], (r["size"], ax.get_ylim()[1]), fontsize=7,
                                rotation=90, va="top", color="red")
            ax.set_xlabel(label)
            ax.set_title(f"elaboration against {label}")
            ax.legend(fontsize=8)
            ax.grid(True, which="both", alpha=0.3)
        fig.tight_layout()
        fig.savefig(out_dir / "scale.png", dpi=110)
        print(f"plot: {out_dir / 'scale.png'}")
    except ImportError:
        print("matplotlib is not installed: no plot")
    (out_dir / "scale.json").write_text(json.dumps(results, indent=1))
    print(f"figures: {out_dir / 'scale.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
