"""The bundled MNIST subset (data/mnist) against the original files and data/README.md."""

import hashlib
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from runtime.idx import find_mnist_files, load_mnist, read_idx

ROOT = Path(__file__).resolve().parent.parent
BUNDLED = ROOT / "data" / "mnist"
ORIGINAL = ROOT.parent / "shared" / "data" / "mnist"
needs_original = pytest.mark.skipif(not ORIGINAL.is_dir(), reason=f"{ORIGINAL} not present")


def test_bundled_subset_shapes_and_size():
    x, y = load_mnist(BUNDLED, "train")
    xt, yt = load_mnist(BUNDLED, "test")
    assert x.shape == (10000, 28, 28) and y.shape == (10000,)
    assert xt.shape == (10000, 28, 28) and yt.shape == (10000,)
    # every digit occurs, roughly balanced (MNIST classes are 9-11% each)
    for labels in (y, yt):
        counts = np.bincount(labels, minlength=10)
        assert counts.min() > 0.08 * len(labels) and counts.max() < 0.12 * len(labels)
    total = sum(p.stat().st_size for p in BUNDLED.iterdir())
    assert total < 5_000_000


def test_readme_lists_the_sha256_of_every_file():
    readme = (ROOT / "data" / "README.md").read_text()
    listed = dict((n, h) for h, n in re.findall(r"^([0-9a-f]{64})  (\S+)$", readme, re.M))
    files = {p.name for p in BUNDLED.iterdir()}
    assert set(listed) == files
    for name, digest in listed.items():
        assert hashlib.sha256((BUNDLED / name).read_bytes()).hexdigest() == digest


@needs_original
@pytest.mark.parametrize("split", ["train", "test"])
def test_bundled_records_are_the_first_original_records(split):
    for mine, theirs in zip(find_mnist_files(BUNDLED, split), find_mnist_files(ORIGINAL, split)):
        a, b = read_idx(mine), read_idx(theirs)
        assert a.dtype == b.dtype == np.uint8
        assert a.shape[1:] == b.shape[1:]
        np.testing.assert_array_equal(a, b[: len(a)])


@needs_original
def test_make_subset_reproduces_the_bundled_files(tmp_path):
    subprocess.run(
        [sys.executable, str(ROOT / "data" / "make_subset.py"), "--source", str(ORIGINAL),
         "--out", str(tmp_path), "--train", "10000", "--test", "10000"],
        check=True, capture_output=True,
    )
    for p in BUNDLED.iterdir():
        assert (tmp_path / p.name).read_bytes() == p.read_bytes(), p.name
