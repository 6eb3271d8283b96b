"""Data-parallel training: scaling on this machine, and a cost model for many machines.

1. **Scaling here** (measured in this run): the zoo's CNN and LeNet-5 trained on MNIST with
   ``python -m runtime train --distributed`` as K processes x T threads ((1, 1), (1, 2), (2, 1),
   the processes started by ``torchrun``), and ordinary training (no ``--distributed``) at 2
   threads for reference; images per second of the last epoch (rank 0's report). The figure
   the README quotes is the efficiency of 2 processes x 1 thread against 1 process x 2 threads.
2. **Cost model** for K machines joined by a network of 10, 25 and 100 Gb/s: per step, each
   rank sends and receives its share of the exchange of ``runtime.distributed`` (an all-to-all
   of its groups' gradient slices, then an all-gather of the summed slices):
   ``(G/K + 1) (K - 1)/K (P + 1)`` reals each way, P the parameters, G the groups (with G = K
   this equals a ring all-reduce's ``2 (K - 1)/K P``). Compute per step per rank is
   ``(B/K) t``, t the seconds per training sample on one machine (measured here for the
   models trained in part 1 and the zoo's MLP and 1000-class head; for ResNet-50, an estimate:
   its published size (25.6 M parameters, 4.1 GMAC forward, so about 3 x 8.2 GFLOP per
   training sample) at the FLOP rate the CNN reaches here, counted by ``bench.dumpflops``). The batch size at which communication hides behind compute is
   ``B* = K t_comm / t``; below it the network, not the cores, sets the pace.

    python -m bench.distributed                  # about two minutes on 2 cores
    python -m bench.distributed --quick          # fewer images

Writes ``<out-dir>/distributed.json``. Latency, overlap of communication with compute and
stragglers are outside the model: it is a lower bound on the batch size, not a promise.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

REPO = Path(__file__).resolve().parent.parent
RESNET50_TRAIN_FLOPS = 3 * 8.2e9  # per sample: forward 4.1 GMAC = 8.2 GFLOP, backward ~2x
RESNET50_PARAMS = 25_557_032  # torchvision's resnet50 (the light ONNX file ships no weights)


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def train_rate(model: str, data: Path, images: int, processes: int, threads: int,
               distributed: bool = True, epochs: int = 2) -> float:
    """Images per second of the last epoch of ``runtime train`` (rank 0's line)."""
    out = Path(tempfile.mkdtemp(prefix="dist-bench-"))
    args = ["-m", "runtime", "train", model, "--data", str(data), "--epochs", str(epochs),
            "--batch-size", "100", "--lr", "0.05", "--threads", str(threads),
            "--train-limit", str(images), "--test-limit", "0", "--no-progress", "--out",
            str(out)]
    if distributed:
        args += ["--distributed", "--groups", "6"]
    if processes > 1:
        cmd = [sys.executable, "-m", "torch.distributed.run", f"--nproc_per_node={processes}",
               "--master_port", str(_port()), *args]
    else:
        cmd = [sys.executable, *args]
    env = {k: v for k, v in os.environ.items() if k not in ("WORLD_SIZE", "RANK")}
    r = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=1800)
    if r.returncode:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{r.stderr[-3000:]}")
    rates = re.findall(r"epoch \d+/\d+ .* (\d+) images/s", r.stdout)
    if not rates:
        raise RuntimeError(f"no epoch line in:\n{r.stdout}")
    return float(rates[-1])


def exchange_reals(p: int, k: int, groups: int) -> float:
    """Reals each rank sends (and receives) per step in ``runtime.distributed``'s exchange."""
    return (groups / k + 1) * (k - 1) / k * (p + 1)


def params_of(model: str) -> int:
    from runtime.spec import model_spec
    import math
    return sum(math.prod(s) for n, s in model_spec(model).param_shapes.items())


def train_flops(model: str) -> float:
    """FLOPs of one training sample (forward + backward), from the dump (bench.dumpflops)."""
    from bench.dumpflops import count_dump
    from extract.emit import build
    from runtime.spec import model_spec
    spec = model_spec(model)
    f = count_dump(str(spec.kernels_dump or spec.dump or build.dump_path(spec.name)))
    return float(f.forward.total + f.backward.total)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.distributed",
                                 description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="600 images instead of 3000")
    ap.add_argument("--data", type=Path, default=REPO / "data" / "mnist")
    ap.add_argument("--out-dir", type=Path, default=REPO / "bench" / "results")
    args = ap.parse_args(argv)
    images = 600 if args.quick else 3000
    result: dict = {"images": images, "scaling": {}, "cost_model": {}}

    print(f"1. scaling on this machine ({os.cpu_count()} cores), {images} MNIST images, "
          f"batch 100, images/s of the 2nd epoch")
    print(f"   {'model':10} {'1x1':>8} {'1x2':>8} {'2x1':>8} {'plain 2':>8} {'2x1 / 1x2':>10}")
    per_sample: dict[str, float] = {}
    for model in ("cnn", "models/lenet5.model"):
        rates = {
            "1x1": train_rate(model, args.data, images, 1, 1),
            "1x2": train_rate(model, args.data, images, 1, 2),
            "2x1": train_rate(model, args.data, images, 2, 1),
            "plain 2 threads": train_rate(model, args.data, images, 1, 2, distributed=False),
        }
        rates["efficiency 2x1 / 1x2"] = rates["2x1"] / rates["1x2"]
        name = Path(model).stem
        result["scaling"][name] = rates
        per_sample[model] = 1 / rates["1x1"]
        print(f"   {name:10} {rates['1x1']:8.0f} {rates['1x2']:8.0f} {rates['2x1']:8.0f} "
              f"{rates['plain 2 threads']:8.0f} {rates['efficiency 2x1 / 1x2']:10.2f}")
    for model in ("models/mlp.model", "models/wide1000.model"):
        per_sample[model] = 1 / train_rate(model, args.data, images, 1, 1)

    flop_rate = train_flops("cnn") / per_sample["cnn"]  # FLOP/s of one core training the CNN
    result["cnn_flop_rate_one_core"] = flop_rate
    models = {Path(m).stem: (params_of(m), t) for m, t in per_sample.items()}
    models["resnet50"] = (RESNET50_PARAMS, RESNET50_TRAIN_FLOPS / flop_rate)

    print("\n2. cost model: K machines, G = K groups, float32; B* = the global batch from which "
          "the exchange hides behind compute")
    print(f"   {'model':10} {'params':>10} {'ms/sample':>10} {'MB/step':>8}   "
          f"{'B* at 10 / 25 / 100 Gb/s, K = 2':>32}   {'K = 8':>18}")
    for name, (p, t) in models.items():
        row = {"params": p, "seconds_per_sample": t, "estimated": name == "resnet50"}
        cells = {}
        for k in (2, 8):
            reals = exchange_reals(p, k, groups=k)
            row[f"bytes_per_step_K{k}"] = reals * 4
            for gbps in (10, 25, 100):
                t_comm = reals * 4 * 8 / (gbps * 1e9)
                b = k * t_comm / t
                row[f"hide_batch_K{k}_{gbps}Gbps"] = b
                cells[(k, gbps)] = b
        result["cost_model"][name] = row
        fmt = lambda k: " / ".join(f"{cells[(k, g)]:.0f}" for g in (10, 25, 100))
        print(f"   {name:10} {p:10,d} {t * 1e3:10.3f} {row['bytes_per_step_K2'] / 1e6:8.2f}   "
              f"{fmt(2):>32}   {fmt(8):>18}" + ("  (estimated)" if row["estimated"] else ""))
    args.out_dir.mkdir(parents=True, exist_ok=True)
    (args.out_dir / "distributed.json").write_text(json.dumps(result, indent=1) + "\n")
    print(f"\nwritten: {args.out_dir / 'distributed.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
