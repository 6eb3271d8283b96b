"""bench/profile.py: the driver times every binding call the batch entry points of the generated
C make (the lane-group functions), and its per-call times add up to roughly the whole forward
and backward calls it also times."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

DATA = Path(__file__).parent / "data"

# the driver's times are compared with each other: measured while no other test runs
pytestmark = pytest.mark.serial


@pytest.fixture(scope="module")
def rows():
    from bench.profile import run
    return run(reps=20, rounds=3, dump=str(DATA / "cnn_ad.json"))


def test_every_binding_call_is_timed(rows):
    from extract.ir import dump
    from extract.passes.lower import Options
    from extract.emit.sources import generate
    from extract.ir.names import user_array
    model = dump.load(DATA / "cnn_ad.json")
    c_src = generate(model, "f32", Options()).files["model_cnn.c"]
    calls = re.findall(r"^\s+model_cnn_(forward|backward)_(\w+)_lanes\(", c_src, re.M)
    labels = [lab for lab, _ in rows if not lab.startswith("=")]
    assert labels == [f"{e} {user_array(n)}" for e, n in calls]
    assert len(labels) == len(model.chain) + len(model.gradients)


def test_parts_add_up_to_the_whole(rows):
    t = dict(rows)
    fwd = sum(ns for lab, ns in rows if lab.startswith("forward "))
    bwd = sum(ns for lab, ns in rows if lab.startswith("backward "))
    assert all(ns >= 0 for _, ns in rows)
    # the whole calls are timed separately: the parts explain them (generous bounds: the
    # machine is shared, and the whole call keeps values in cache between bindings)
    whole = t["= forward (lane group)"] + t["= backward (lane group)"]
    assert 0.3 * whole < fwd + bwd < 3 * whole
    assert t["= batch_grad (1 thread, batch 100)"] > 0.3 * whole
    assert t["= one sample forward + backward"] > 0
