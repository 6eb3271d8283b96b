"""Regenerate the bundled MNIST subset in ``data/mnist`` from the full MNIST files.

    python data/make_subset.py [--source ../shared/data/mnist] [--out data/mnist]
                               [--train 10000] [--test 10000]

Keeps the first ``--train`` training records and the first ``--test`` test records, unchanged,
and writes them as standard gzipped IDX files (deterministic: gzip level 9, no name, mtime 0),
so running it again gives byte-identical files. Prints the SHA-256 of each file written
(``data/README.md`` lists them).
"""

from __future__ import annotations

import argparse
import hashlib
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from runtime.idx import find_mnist_files, read_idx, write_idx  # noqa: E402

NAMES = {
    ("train", "images"): "train-images-idx3-ubyte.gz",
    ("train", "labels"): "train-labels-idx1-ubyte.gz",
    ("test", "images"): "t10k-images-idx3-ubyte.gz",
    ("test", "labels"): "t10k-labels-idx1-ubyte.gz",
}


def make_subset(source: Path, out: Path, n_train: int, n_test: int) -> dict[str, str]:
    out.mkdir(parents=True, exist_ok=True)
    digests = {}
    for split, n in (("train", n_train), ("test", n_test)):
        for kind, path in zip(("images", "labels"), find_mnist_files(source, split)):
            array = read_idx(path)
            if array.shape[0] < n:
                raise SystemExit(f"{path} has only {array.shape[0]} records, asked for {n}")
            target = out / NAMES[split, kind]
            write_idx(target, array[:n])
            digests[target.name] = hashlib.sha256(target.read_bytes()).hexdigest()
    return digests


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--source", type=Path, default=ROOT.parent / "shared" / "data" / "mnist")
    ap.add_argument("--out", type=Path, default=ROOT / "data" / "mnist")
    ap.add_argument("--train", type=int, default=10000)
    ap.add_argument("--test", type=int, default=10000)
    args = ap.parse_args(argv)
    for name, digest in make_subset(args.source, args.out, args.train, args.test).items():
        print(f"{digest}  {name}")


if __name__ == "__main__":
    main()
