"""The ONNX model zoo's ResNet-50 through the whole pipeline, stage by stage (issue #35).

    python -m bench.resnet50                      # light_resnet50.onnx from the onnx package
    python -m bench.resnet50 --onnx FILE --threads 2 --cache DIR --no-grad

``light_resnet50.onnx`` (shipped with ``onnx``, ``backend/test/data/light``) is ResNet-50 with
every weight a ``ConstantOfShape`` (0.02 everywhere; the first stage's batch normalizations
have random statistics). Its stages, each timed on its own:

1. **import**: ``extract.onnx_import`` to a model file and its weights;
2. **elaborate**: ``build/agda/Main model`` (shapes, ∇, opt): seconds, peak memory (the
   child's ``ru_maxrss``) and the dump's size;
3. **extract**: the dump parsed (``extract.ir.dump.load``, schema included) and the C generated
   (``extract.emit.sources.generate``), with the C's size and its translation units;
4. **gcc**: ``extract.emit.build.build`` into a fresh cache (``--cache`` to reuse one): the parts
   compiled in parallel (``$PROVED_KERNELS_JOBS``);
5. **run**: ``runtime.load`` (the module cached) and the forward pass of one random
   1×3×224×224 image (normal, seeded), against ``onnx.reference.ReferenceEvaluator`` in
   float32; then one gradient (``batch_gradients``, one sample) unless ``--no-grad``.

With the shipped weights every row of the last layer is the same, so the output is 1/1000
everywhere whatever the features; the comparison is repeated with random weights (the
``ConstantOfShape`` weights replaced by initializers: He-scaled kernels, batch
normalizations near the identity), which imports to the same model file, so to the same
kernels. The errors printed are the largest elementwise ``|got − want| / |want|`` and the
largest difference over the largest ``|want|``. The oracle runs the graph at opset 15:
``onnx.reference``'s ``BatchNormalization`` of opset 9 takes the batch's statistics.

Prints one line per stage and a summary; ``uptime``'s load is printed with it (two cores
shared with other work make every time here an upper bound).
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

from extract.ir.names import c_model


def light_resnet50() -> Path:
    import onnx
    return Path(onnx.__file__).parent / "backend" / "test" / "data" / "light" / \
        "light_resnet50.onnx"


def load_avg() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "?"


def run_measured(cmd: list, stdout) -> tuple[float, int]:
    """Run ``cmd``; (seconds, peak resident KB of the command). Through GNU time where it is
    installed: the ``ru_maxrss`` of a child forked from this process counts this process's
    pages until the exec (hundreds of MB of weights here)."""
    import shutil
    gnu = shutil.which("time") or ("/usr/bin/time" if os.path.exists("/usr/bin/time") else None)
    with tempfile.NamedTemporaryFile("r", suffix=".time") as report:
        full = [gnu, "-f", "%e %M", "-o", report.name, *cmd] if gnu else cmd
        start = time.monotonic()
        proc = subprocess.Popen(full, stdout=stdout, stderr=subprocess.PIPE)
        _, status, usage = os.wait4(proc.pid, 0)
        took = time.monotonic() - start
        code = os.waitstatus_to_exitcode(status)
        err = proc.stderr.read().decode(errors="replace")
        if code:
            raise RuntimeError(f"{' '.join(map(str, cmd))} failed ({code}): {err[-2000:]}")
        if gnu:
            took, rss = report.read().split()[-2:]
            return float(took), int(rss)
    return took, usage.ru_maxrss


def with_random_weights(model, seed: int):
    """``model`` with each ``ConstantOfShape`` weight an initializer of random values: a
    kernel U×C×kh×kw normal with standard deviation √(2 / (C·kh·kw)) (He's), a batch
    normalization's scale near 1, its bias and mean near 0 and its variance near 1 (names
    ``*_s_0``, ``*_b_0``, ``*_rm_0``, ``*_riv_0``; the last of a residual branch's scale
    0.1-0.3, so that the sums grow slowly), the last layer's weight √(1/fan-in)."""
    import onnx
    from onnx import numpy_helper
    rng = np.random.default_rng(seed)
    m = onnx.ModelProto()
    m.CopyFrom(model)
    g = m.graph
    inits = {i.name: i for i in g.initializer}
    keep, added = [], []
    for node in g.node:
        if node.op_type != "ConstantOfShape":
            keep.append(node)
            continue
        shape = tuple(int(d) for d in numpy_helper.to_array(inits[node.input[0]]))
        out = node.output[0]
        if len(shape) == 4:
            v = rng.normal(0, np.sqrt(2 / np.prod(shape[1:])), shape)
        elif len(shape) == 2:
            v = rng.normal(0, np.sqrt(1 / shape[1]), shape)
        elif out.endswith("_s_0") and "branch2c" in out:   # a residual branch's last: small
            v = rng.uniform(0.1, 0.3, shape)
        elif out.endswith("_s_0"):
            v = rng.uniform(0.8, 1.2, shape)
        elif out.endswith("_riv_0"):
            v = rng.uniform(0.5, 1.5, shape)
        else:
            v = rng.normal(0, 0.1, shape)
        added.append(numpy_helper.from_array(v.astype(np.float32), out))
    del g.node[:]
    g.node.extend(keep)
    g.initializer.extend(added)
    return m


def scale_logits(model, name: str, x: np.ndarray, spread: float = 3.0) -> None:
    """Scale the weight of the last ``Gemm`` (in place) so that the logits of ``x`` have
    standard deviation ``spread``: a softmax neither uniform nor one-hot (the features' scale
    is what 53 layers of random weights make it; one run of the reference finds it)."""
    import onnx
    from onnx import helper, numpy_helper
    gemm = [n for n in model.graph.node if n.op_type == "Gemm"][-1]
    probe = onnx.ModelProto()
    probe.CopyFrom(model)
    probe.graph.output.append(helper.make_tensor_value_info(gemm.output[0],
                                                            onnx.TensorProto.FLOAT, None))
    z = reference(probe, name, x)[2][1]
    init = next(i for i in model.graph.initializer if i.name == gemm.input[1])
    w = numpy_helper.to_array(init) * np.float32(spread / max(float(z.std()), 1e-30))
    init.CopyFrom(numpy_helper.from_array(w.astype(np.float32), init.name))


def reference(model, name: str, x: np.ndarray) -> tuple[np.ndarray, float, list]:
    import onnx
    from onnx.reference import ReferenceEvaluator
    oracle = onnx.ModelProto()
    oracle.CopyFrom(model)
    for o in oracle.opset_import:
        if o.domain in ("", "ai.onnx"):
            o.version = max(o.version, 15)
    start = time.monotonic()
    outs = ReferenceEvaluator(oracle).run(None, {name: x})
    return outs[0], time.monotonic() - start, outs


def errors(got: np.ndarray, want: np.ndarray) -> tuple[float, float]:
    got, want = np.asarray(got, np.float64).ravel(), np.asarray(want, np.float64).ravel()
    diff = np.abs(got - want)
    return float((diff / np.abs(want)).max()), float(diff.max() / np.abs(want).max())


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.resnet50", description=__doc__.split("\n")[0])
    ap.add_argument("--onnx", type=Path, default=None, help="default: light_resnet50.onnx")
    ap.add_argument("--cache", type=Path, default=None,
                    help="the kernel cache (default: a fresh one, so gcc's time is measured)")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--no-grad", action="store_true", help="skip the gradient")
    ap.add_argument("--keep", type=Path, default=None,
                    help="write the model file, weights and dump here (default: a temp dir)")
    args = ap.parse_args(argv)
    path = args.onnx or light_resnet50()
    work = args.keep or Path(tempfile.mkdtemp(prefix="resnet50-"))
    work.mkdir(parents=True, exist_ok=True)
    os.environ["PROVED_KERNELS_CACHE"] = str(args.cache or work / "cache")
    import onnx
    from extract.emit import build
    from extract.ir import dump
    from extract.front.onnx import import_onnx
    from extract.emit.sources import generate
    import runtime
    rows = {}

    def row(stage: str, text: str) -> None:
        rows[stage] = text
        print(f"{stage:10s} {text}   (load {load_avg()})", flush=True)

    # 1. import
    start = time.monotonic()
    model = onnx.load(str(path))
    imp = import_onnx(model)
    model_file, weights_file = imp.save(work)
    row("import", f"{time.monotonic() - start:.2f} s: {model_file.name} "
                  f"({model_file.stat().st_size / 1e3:.0f} KB, {imp.text.count(chr(10))} lines), "
                  f"{sum(v.size for v in imp.params.values()) / 1e6:.1f} M weights")
    # 2. elaborate
    dump_file = work / f"{imp.name}.json"
    with open(dump_file, "wb") as out:
        took, rss = run_measured([str(build.agda_main()), "model", str(model_file)], out)
    row("elaborate", f"{took:.2f} s, {rss / 1024:.0f} MB peak, dump {dump_file.stat().st_size / 1e3:.0f} KB")
    # 3. extract
    start = time.monotonic()
    m = dump.load(dump_file)
    parsed = time.monotonic() - start
    g = generate(m, "f32")
    generated = time.monotonic() - start - parsed
    c = g.files[f"{c_model(m.name)}.c"]
    row("extract", f"{parsed + generated:.1f} s (parse {parsed:.1f}, generate {generated:.1f}): "
                   f"{len(m.chain)} bindings, {len(m.gradients)} gradients, C {len(c) / 1e6:.2f} MB "
                   f"in {max(len(g.parts) - 1, 1)} part(s) + entry points")
    # 4. gcc
    start = time.monotonic()
    build.build(m.name, "f32", g.files, g.cdef, parts=g.parts)
    row("gcc", f"{time.monotonic() - start:.1f} s, {build.jobs()} job(s)")
    # 5. run
    start = time.monotonic()
    net = runtime.load(dump_file, weights=dict(imp.params))
    row("load", f"{time.monotonic() - start:.1f} s (runtime.load, the module cached)")
    x = np.random.default_rng(args.seed).normal(size=(1, 3, 224, 224)).astype(np.float32)
    (name,) = imp.inputs
    feed = {imp.input_names[name]: x.reshape(1, *imp.inputs[name])}
    start = time.monotonic()
    got = net.run(feed, threads=args.threads)
    fwd = time.monotonic() - start
    want, ref, _ = reference(model, name, x)
    rel, norm = errors(got, want)
    row("forward", f"{fwd:.2f} s at {args.threads} thread(s) (reference {ref:.1f} s); shipped "
                   f"weights: max relative error {rel:.2e}, over the largest {norm:.2e} "
                   f"(output {want.min():.4g}..{want.max():.4g})")
    rmodel = with_random_weights(model, args.seed)
    scale_logits(rmodel, name, x)
    rimp = import_onnx(rmodel)
    if rimp.text != imp.text:
        raise SystemExit("the model with random weights imports to another model file")
    net = runtime.load(dump_file, weights=dict(rimp.params))
    got = net.run(feed, threads=args.threads)
    want, _, _ = reference(rmodel, name, x)
    rrel, rnorm = errors(got, want)
    row("random", f"random weights: max relative error {rrel:.2e}, over the largest "
                  f"{rnorm:.2e} (output {want.min():.3g}..{want.max():.3g})")
    if not args.no_grad:
        y = np.zeros((1, 1000), np.float32)
        y[0, int(np.argmax(want))] = 1
        start = time.monotonic()
        loss, grads = net.batch_gradients({**feed, imp.target: y}, threads=args.threads)
        took = time.monotonic() - start
        finite = all(np.isfinite(v).all() for v in grads.values())
        # the cross-entropy's gradient with respect to the last bias is p − y
        bias = next(n for n in grads if "pred_b" in n) if any("pred_b" in n for n in grads) \
            else None
        check = "" if bias is None else \
            f"; d {bias} against p − y: {np.abs(grads[bias] - (got[0] - y[0])).max():.1e}"
        row("gradient", f"{took:.2f} s (one sample): loss {loss:.4g} (−log p {-np.log(got[0].max()):.4g}), "
                        f"{len(grads)} gradients, all finite: {finite}{check}")
    print(json.dumps({"onnx": str(path), "work": str(work), **rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
