"""Where the generated training step spends its time, per binding function.

A small C driver includes the generated ``cnn.c`` (so its ``static`` binding functions are
visible), gathers one group of real samples into the lanes of the batch entry points
(``cnn_LANES`` samples, extract/passes/lanes.py), runs it forward and backward to fill every buffer,
then times each call of ``cnn_forward_lanes`` / ``cnn_backward_lanes`` on its own (the call
statements are copied from those two functions, so the driver follows whatever the extractor
generates), plus the whole lane-group step, the one-sample ``cnn_forward`` + ``cnn_backward``,
and ``cnn_batch_grad`` over a batch at one thread. Every figure is per image (a lane-group
call divided by ``cnn_LANES``). Same compiler and flags as the
extractor's cffi build: Python's ``CFLAGS`` (sysconfig), then those of ``extract/emit/build.py``.

    python -m bench.profile                  # table on stdout
    python -m bench.profile --reps 2000 --markdown

Times are the minimum over ``--rounds`` rounds of ``--reps`` back-to-back calls (the least
disturbed by other processes on a shared machine; warm caches:
a group's buffers are ~0.87 MB, so they stay in L2 as in the real batch loop).
"""
from __future__ import annotations

import argparse
import re
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

import numpy as np

from bench.model import BATCH, jittered_params, load_dataset, load_images, model_images

DRIVER = r"""
#include "cnn.c"
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* the minimum over ROUNDS of the mean time of REPS calls, per image (`images` per call) */
#define TIME(label, stmt, images) do { \
    double t_[ROUNDS]; \
    for (int r_ = 0; r_ < ROUNDS; r_++) { \
        double t0_ = now(); \
        for (int i_ = 0; i_ < REPS; i_++) { stmt; __asm__ volatile("" ::: "memory"); } \
        t_[r_] = (now() - t0_) / REPS; \
    } \
    qsort(t_, ROUNDS, sizeof t_[0], cmp); \
    printf("%s\t%.1f\n", label, 1e9 * t_[0] / (images)); \
} while (0)

int main(int argc, char **argv)
{
    static cnn_params wbuf, grad;
    static cnn_inputs xs[BATCH];
    static cnn_values vals;
    static cnn_grads grads;
    static cnn_inputs_lanes xl;
    static cnn_values_lanes vl;
    static cnn_grads_lanes gl;
    (void)argc;
    FILE *f = fopen(argv[1], "rb");
    if (!f || fread(&wbuf, sizeof wbuf, 1, f) != 1 || fread(xs, sizeof xs, 1, f) != 1)
        return 1;
    fclose(f);
    const cnn_params *restrict w = &wbuf;
    const cnn_inputs_lanes *restrict x = &xl;
    cnn_values_lanes *restrict v = &vl;
    cnn_grads_lanes *restrict g = &gl;
    cnn_gather_lanes(xs, cnn_LANES, &xl);
    cnn_forward_lanes(w, x, v);
    cnn_backward_lanes(w, x, v, g);
    /* FORWARD */
    /* BACKWARD */
    TIME("= forward (lane group)", cnn_forward_lanes(w, x, v), cnn_LANES);
    TIME("= backward (lane group)", cnn_backward_lanes(w, x, v, g), cnn_LANES);
    TIME("= one sample forward + backward", (cnn_forward(w, &xs[0], &vals),
                                            cnn_backward(w, &xs[0], &vals, &grads)), 1);
    static unsigned char ws[1 << 26];
    if (cnn_workspace_size(1) > sizeof ws) return 2;
    real loss;
    #undef REPS
    #define REPS (BATCH_REPS)
    TIME("= batch_grad (1 thread, batch 100)",
         cnn_batch_grad(w, xs, BATCH, 1, ws, &grad, &loss), BATCH);
    return 0;
}
"""


def _calls(c_source: str, entry: str) -> list[str]:
    """The call statements in the body of ``void cnn_<entry>(...)`` of the generated C."""
    m = re.search(r"^(?:static )?void cnn_" + entry + r"\([^)]*\)\s*\{(.*?)^\}", c_source,
                  re.S | re.M)
    if not m:
        raise RuntimeError(f"no cnn_{entry} in the generated C")
    return [ln.strip() for ln in m.group(1).splitlines() if ln.strip().endswith(");")]


def driver_source(c_source: str, model: str = "model_cnn") -> str:
    from extract.ir.names import user_array
    src = DRIVER
    for entry, marker in (("forward", "/* FORWARD */"), ("backward", "/* BACKWARD */")):
        lines = []
        for call in _calls(c_source.replace(f"{model}_", "cnn_"), entry + "_lanes"):
            name = call.split("(", 1)[0].replace(f"cnn_{entry}_", "").replace("_lanes", "")
            name = user_array(name) or name     # a3_c11 -> c11 (extract/ir/names.py)
            lines.append(f'TIME("{entry} {name}", {call[:-1]}, cnn_LANES);')
        src = src.replace(marker, "\n    ".join(lines))
    # the driver is written for the CNN; any other model's names are its own
    return src.replace('"cnn.c"', f'"{model}.c"').replace("cnn_", f"{model}_")


def run(reps: int, rounds: int, dump: str | None = None, cc: str = "gcc",
        c_file: str | None = None, model_name: str | None = None) -> list[tuple]:
    from extract.emit import build as xbuild
    from extract.ir import dump as xdump
    from extract.passes.lower import Options
    from extract.emit.sources import generate
    if model_name:              # any model: a zoo name, a dump or a model file
        from bench.model import bench_model
        from bench.run import resolve_model
        bm = bench_model(resolve_model(model_name))
        dump = dump or bm.dump_path
    from extract.ir.names import c_model
    model = xdump.load(dump or xbuild.dump_path("cnn"))
    M = c_model(model.name)     # the C names (extract/ir/names.py)
    files = dict(generate(model, "f32", Options()).files)
    if c_file:                  # time an edited copy of the generated C instead
        files[f"{M}.c"] = Path(c_file).read_text()
    # a real batch and jittered weights, so that no activation is constant
    if model_name:
        images, labels, _ = model_images(bm, *load_images(BATCH))
        xs, w = bm.pack_inputs(images, labels), bm.jittered_params(seed=1)
    else:
        xs, w = load_dataset(BATCH).xs, jittered_params(seed=1)
    with tempfile.TemporaryDirectory() as tmp:
        t = Path(tmp)
        for name, text in files.items():
            (t / name).write_text(text)
        (t / "driver.c").write_text(driver_source(files[f"{M}.c"], M))
        (t / "data.bin").write_bytes(np.asarray(w, np.float32).tobytes()
                                     + np.asarray(xs, np.float32).tobytes())
        # as cffi compiles the module: Python's own CFLAGS first, then the extractor's
        cmd = [cc, *(sysconfig.get_config_var("CFLAGS") or "").split(), *xbuild.CFLAGS,
               f"-DREPS={reps}", f"-DROUNDS={rounds}", "-D_POSIX_C_SOURCE=199309L",
               f"-DBATCH={BATCH}", f"-DBATCH_REPS={max(1, reps // BATCH)}", "-I", tmp,
               str(t / "driver.c"), "-o", str(t / "driver"), *xbuild.LDFLAGS, "-lm"]
        subprocess.run(cmd, check=True)
        out = subprocess.run([str(t / "driver"), str(t / "data.bin")], check=True,
                             capture_output=True, text=True).stdout
    rows = []
    for line in out.splitlines():
        label, ns = line.rsplit("\t", 1)
        rows.append((label, float(ns)))
    return rows


def table(rows: list[tuple], markdown: bool) -> str:
    parts = {lab: ns for lab, ns in rows if not lab.startswith("=")}
    step = sum(parts.values())
    batch = dict(rows).get("= batch_grad (1 thread, batch 100)")
    out = []
    if markdown:
        out += ["| function | ns / image | share of fwd+bwd |", "| --- | ---: | ---: |"]
    for lab, ns in rows:
        share = f"{100 * ns / step:.1f} %" if not lab.startswith("=") else ""
        out.append(f"| {lab} | {ns:.0f} | {share} |" if markdown else
                   f"{lab:36s} {ns:10.0f} ns  {share}")
    out.append(f"sum of the parts: {step:.0f} ns per image"
               + (f"; batch_grad at 1 thread: {batch:.0f} ns per image" if batch else ""))
    return "\n".join(out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=500)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--dump", default=None)
    ap.add_argument("--model", default=None,
                    help="any model (zoo name, dump, model file); default the built-in CNN")
    ap.add_argument("--c-file", default=None,
                    help="time this (edited) cnn.c instead of the generated one")
    ap.add_argument("--markdown", action="store_true")
    a = ap.parse_args(argv)
    print(table(run(a.reps, a.rounds, a.dump, c_file=a.c_file, model_name=a.model),
                a.markdown))
    return 0


if __name__ == "__main__":
    sys.exit(main())
