"""extract/passes/inline.py: which bindings the lane kernels compute where they are read, and what
the generated C then holds. The values are checked elsewhere: the field validation of every hand
dump (tests/data/inline_hand.json inlines into chain bindings and parameter gradients) and of
random dumps that inline (tests/test_validate.py), the oracle and the CNN's bits with and
without the pass (tests/test_extract_numerics.py), the build without warnings
(tests/test_extract_build.py)."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from extract.ir.names import c_array

from dumpgen import Builder, imap, imaps, logistic, one, sum_
from extract.ir import dump
from extract.passes.inline import inline_bindings
from extract.passes.lower import Options
from extract.emit.sources import generate

DATA = Path(__file__).resolve().parent / "data"


def _pairs(chain, outputs=()) -> tuple:
    """The (binding, reader) pairs of a model with input x and param w (4 elements each), the
    chain bindings ``chain(m, x, w)`` returns, and gradients that read no binding."""
    m = Builder("rules")
    x, w = m.input("x", 4), m.param("w", 4)
    lets = chain(m, x, w)
    m.seed(lets[-1], one(lets[-1].shape))
    for h in reversed(lets):
        m.grad(h, one(h.shape))
    m.grad(w, x)
    for key, h in outputs:
        m.output(key, h)
    return inline_bindings(dump.parse(m.build()))[1]


def test_an_elementwise_binding_read_once_is_computed_by_its_reader():
    def chain(m, x, w):
        e = m.let("e", x * w)
        return [e, m.let("f", logistic(e))]
    assert _pairs(chain) == (("e", "f"),)


def test_chains_of_them_collapse_into_the_last_reader():
    def chain(m, x, w):
        e = m.let("e", x * w)
        f = m.let("f", logistic(e))
        return [e, f, m.let("g", f * x)]
    assert _pairs(chain) == (("e", "f"), ("f", "g"))


@pytest.mark.parametrize("why, chain", [
    ("read twice", lambda m, x, w: [e := m.let("e", x * w), m.let("f", e * e)]),
    ("read under a sum", lambda m, x, w: [e := m.let("e", x * w),
                                          m.let("f", sum_(4, lambda i: e[i]))]),
    ("a reader with more elements", lambda m, x, w: [
        e := m.let("e", x * w), m.let("f", imap(4, lambda i: imaps(4, lambda j: e[j])))]),
    ("a sum of its own", lambda m, x, w: [e := m.let("e", sum_(4, lambda i: x[i] * w[i])),
                                          m.let("f", logistic(e))]),
    # a guard the binding brought would pin the reader's loop-invariant sum under it
    ("a reader with a sum", lambda m, x, w: [
        e := m.let("e", x * w),
        m.let("f", imaps(4, lambda i: e[i] * sum_(4, lambda j: w[j] * w[j])))]),
])
def test_what_is_not_inlined(why, chain):
    assert _pairs(chain) == (), why


def test_outputs_and_the_last_binding_stay():
    def chain(m, x, w):
        e = m.let("e", x * w)
        return [e, m.let("f", logistic(e))]
    assert _pairs(chain, outputs=[("prediction", "e")]) == ()
    # where the dump names no prediction, the batch entry points read the last binding: here
    # a gradient reads it once
    m = Builder("last")
    x, w = m.input("x", 4), m.param("w", 4)
    e = m.let("e", x * w)
    m.seed(e, one(4))
    d_e = m.grad(e, e * x)
    m.grad(w, d_e * x)
    assert inline_bindings(dump.parse(m.build()))[1] == (("d_e", "d_w"),)


def test_reads_are_counted_after_sharing():
    """AD copies logistic(z) into d_z; share_bindings makes those copies reads of h, so h is
    read three times and stays (counted before sharing it was read once, by a, and the lane
    kernels computed the logistic three times)."""
    m = Builder("shared")
    x, w = m.input("x", 4), m.param("w", 4)
    z = m.let("z", x * w)
    h = m.let("h", logistic(z))
    a = m.let("a", h + w)
    m.seed(a, one(4))
    d_a = m.grad(a, one(4))
    d_h = m.grad(h, d_a)
    d_z = m.grad(z, d_h * logistic(z) * (one(4) + -logistic(z)))
    m.grad(w, d_z * x + d_a)
    pairs = inline_bindings(dump.parse(m.build()))[1]
    assert ("h", "a") not in pairs
    assert pairs == (("z", "h"), ("d_h", "d_z"), ("d_z", "d_w"))


def test_the_hand_dump_inlines_into_chain_bindings_and_parameter_gradients():
    pairs = inline_bindings(dump.parse(json.loads((DATA / "inline_hand.json").read_text())))[1]
    assert pairs == (("p", "q"), ("u", "d_b"), ("d_p", "d_w"))


@pytest.fixture(scope="module")
def cnn_c():
    g = generate(dump.parse(json.loads((DATA / "cnn_hand.json").read_text())), "f32",
                 Options(lanes=16))
    return g.files["model_cnn.h"], g.files["model_cnn.c"]


def _struct(text: str, name: str) -> list:
    body = re.search(rf"typedef struct {{\n([^}}]*)\n}} {name};", text).group(1)
    return re.findall(r"real (\w+)\[", body)


def test_cnn_lane_kernels_drop_the_pool_and_logistic_gradients(cnn_c):
    h, c = cnn_c
    pairs = inline_bindings(dump.parse(json.loads((DATA / "cnn_hand.json").read_text())))[1]
    assert pairs == (("d_r", "d_r1"), ("d_c2", "d_c21"), ("d_c1", "d_c11"))
    for b, reader in pairs:
        # the C API keeps every binding: its struct and its one-sample kernel
        assert c_array(b) in _struct(h, "model_cnn_grads") and \
            f"static void model_cnn_backward_{c_array(b)}(" in c
        for s in ("lanes", "hlanes"):
            assert c_array(b) not in _struct(c, f"model_cnn_grads_{s}")
            assert f"model_cnn_backward_{c_array(b)}_{s}(" not in c
            assert f"computes {c_array(b)} where it reads it" in c
    # d_c11 reads d_s1, where the one-sample kernel reads d_c1
    assert re.search(r"static void model_cnn_backward_a5_d_c11_lanes\(const real \*restrict "
                     r"a2_c1,\s*const real \*restrict a4_d_s1,", c)
    assert _struct(c, "model_cnn_values_lanes") == _struct(h, "model_cnn_values")


def test_without_the_pass_the_lanes_keep_every_binding():
    g = generate(dump.parse(json.loads((DATA / "cnn_hand.json").read_text())), "f32",
                 Options(lanes=16, inline=False))
    assert _struct(g.files["model_cnn.c"], "model_cnn_grads_lanes") == \
        _struct(g.files["model_cnn.h"], "model_cnn_grads")
