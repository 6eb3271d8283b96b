"""The C entry points that keep a forward's values (``Options(tape=True)``, runtime.torch's
derived models): ``M_batch_forward`` then ``M_batch_backward`` give ``M_batch_predict``'s
outputs and ``M_batch_grad``'s gradients and loss bitwise (the CNN in float and double, the
MLP, LeNet-5 and the 1000-class MLP), at 1 to 3 threads and batches whose last group is whole,
short or shared by the threads."""
from __future__ import annotations

import numpy as np
import pytest

import runtime
from runtime._kernels import Kernels


@pytest.mark.parametrize("name,precision", [("cnn", "f32"), ("cnn", "f64"), ("mlp", "f32"),
                                            ("lenet5", "f32"), ("wide1000", "f32")])
def test_forward_then_backward_is_batch_grad_bitwise(name, precision):
    m = runtime.load(name, precision=precision, seed=0)
    k = Kernels.open(m.spec.name, precision, m.spec.kernels_dump, tape=True)
    ffi = k.ffi
    w = ffi.cast(f"{k.type('params')} *", int(m._k.ffi.cast("uintptr_t", m._w)))
    width = k.values[m.spec.prediction].length
    rng = np.random.default_rng(0)
    for n in (1, 5, 13, 100):
        for nt in (1, 2, 3):
            xs = k.new("inputs", n)
            flat = k.view(xs, k.inputs_size)
            flat[:] = rng.standard_normal(flat.shape)
            size = int(k.fn("workspace_size")(nt))
            ws, ws2 = ffi.new("char[]", size), ffi.new("char[]", size)
            g1, g2 = k.new("params"), k.new("params")
            l1, l2 = ffi.new(f"{k.real}[1]"), ffi.new(f"{k.real}[1]")
            o1, o2 = ffi.new(f"{k.real}[]", n * width), ffi.new(f"{k.real}[]", n * width)
            k.fn("batch_grad")(w, xs, n, nt, ws, g1, l1)
            k.fn("batch_predict")(w, xs, n, nt, ws, o1)
            tape = ffi.new("char[]", int(k.fn("tape_size")(n, nt)))
            k.fn("batch_forward")(w, xs, n, nt, ws2, tape, o2)
            k.fn("batch_backward")(w, xs, n, nt, ws2, tape, g2, l2)
            where = (name, precision, n, nt)
            assert bytes(ffi.buffer(o1)) == bytes(ffi.buffer(o2)), where
            assert np.array_equal(k.view(g1, k.params_size), k.view(g2, k.params_size)), where
            assert l1[0] == l2[0], where


def test_without_the_option_there_is_no_tape():
    """The zoo's own kernels are generated without it (their C is what it was)."""
    m = runtime.load("cnn", precision="f32", seed=0)
    assert not hasattr(m._k.lib, "model_cnn_batch_forward")
    assert hasattr(Kernels.open("cnn", "f32", tape=True).lib, "model_cnn_batch_forward")
