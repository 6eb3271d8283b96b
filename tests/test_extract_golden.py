"""Golden generated C and CUDA for the small hand-built dumps (tests/golden/c, tests/golden/cuda).

A change in the generated text fails here; after reviewing it, refresh the files with
``python -m pytest tests/test_extract_golden.py --update-golden``."""
from __future__ import annotations

from pathlib import Path

import pytest

from extract.ir import dump
from extract.passes.lower import Options
from extract.emit.sources import generate

TESTS = Path(__file__).resolve().parent
SMALL = ["dot_hand", "chain_hand", "ops_map", "ops_block", "ops_slide"]


@pytest.mark.parametrize("name", SMALL)
def test_golden_sources(name, update_golden):
    # 8 lanes and blocks of up to 16 outputs whatever the processor and $PROVED_KERNELS_LANES
    # say: the same text everywhere
    g = generate(dump.load(TESTS / "data" / f"{name}.json"), "f32", Options(lanes=8, block=16))
    m = next(iter(g.files)).split(".")[0]
    targets = {TESTS / "golden" / "c" / f"{name}.h": g.files[f"{m}.h"],
               TESTS / "golden" / "c" / f"{name}.c": g.files[f"{m}.c"],
               TESTS / "golden" / "cuda" / f"{name}.cu": g.files[f"{m}.cu"]}
    for path, text in targets.items():
        if update_golden:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
            continue
        assert path.exists(), f"{path} missing: run with --update-golden"
        assert text == path.read_text(), f"{path.name} differs from the golden file"
