"""The batch (lane) kernels: block_accumulators (extract/passes/registers.py) keeps every output's
terms in the same order (a small interpreter of the loop IR records, per element, the sequence
of terms it receives), widen_to_lanes (extract/passes/lanes.py) gives every non-parameter array a
lane index, and the printer turns lane loops into vreal statements."""
from __future__ import annotations

import itertools

import pytest

from extract.ir.names import c_array, c_model  # noqa: F401 (the C names)

from extract.ir import code as c
from extract.ir.code import Affine, Buffer, For, IVar, Load, Mul, Store
from extract.passes.lanes import widen_to_lanes
from extract.emit.printer import C, statements
from extract.passes.registers import BLOCK, _same_order, block_accumulators
from loopnest import aff, nest, order, run


def conv_forward():
    """c21-shaped gather nest: y[j1, j2] += x[j1 + t1, j2 + t2] * k[t1, t2]."""
    t1, t2, j1, j2 = IVar("t1", 3, 0), IVar("t2", 3, 1), IVar("j1", 4, 2), IVar("j2", 6, 3)
    st = Store("y", aff((j1, 6), (j2, 1)), "+=",
               Mul(Load("x", aff((j1, 8), (t1, 8), (j2, 1), (t2, 1))),
                   Load("k", aff((t1, 3), (t2, 1)))))
    return [t1, t2, j1, j2], st


def input_gradient():
    """d_s1-shaped scatter nest: y[a + i, b + j] += d[i, j] * k[a, b]."""
    a, b, i, j = IVar("a", 3, 0), IVar("b", 3, 1), IVar("i", 4, 2), IVar("j", 4, 3)
    st = Store("y", aff((a, 6), (i, 6), (b, 1), (j, 1)), "+=",
               Mul(Load("d", aff((i, 4), (j, 1))), Load("k", aff((a, 3), (b, 1)))))
    return [a, b, i, j], st


def test_gather_nest_holds_a_block_across_the_sums():
    loops, st = conv_forward()
    before = (nest(loops, st),)
    after = block_accumulators(before)
    # output loop j1 outside, the block along j2 (the unit stride) inside the sums
    assert order(after[0]) == ["j1"]
    inner = after[0].body
    assert isinstance(inner[0], Buffer) and inner[0].size == 6
    assert order(inner[2]) == ["t1", "t2", "j2"]
    assert run(after, "y") == run(before, "y")


def test_long_output_loop_is_strip_mined():
    t, j = IVar("t", 5, 0), IVar("j", 24, 1)
    st = Store("y", aff((j, 1)), "+=", Mul(Load("x", aff((t, 1), (j, 1))), Load("k", aff((t, 1)))))
    before = (nest([t, j], st),)
    after = block_accumulators(before)
    assert order(after[0]) == ["j_o"] and after[0].var.extent == 24 // BLOCK
    assert after[0].body[0].size == BLOCK
    assert run(after, "y") == run(before, "y")


def test_scatter_nest_gets_a_sliding_window_in_the_same_order():
    loops, st = input_gradient()
    before = (nest(loops, st),)
    after = block_accumulators(before)
    # b and j (stride 1) move innermost; the 6 columns b + j are the window
    assert order(after[0]) == ["a", "i"]
    buf = after[0].body[0].body[0]
    assert isinstance(buf, Buffer) and buf.size == 6
    assert run(after, "y") == run(before, "y")


def test_a_move_that_would_reorder_terms_is_refused():
    # y[a + i] += ..., loops (a, i): moving a inside i changes the order of an element's terms
    a, i = IVar("a", 3, 0), IVar("i", 3, 1)
    off = aff((a, 1), (i, 1))
    assert not _same_order([a, i], [i, a], off)
    # and in d_s1's shape the move is order-preserving
    loops, st = input_gradient()
    assa, b, ii, j = loops
    assert _same_order(loops, [assa, ii, b, j], st.offset)


def test_nests_that_are_not_eligible_are_kept():
    t, j = IVar("t", 5, 0), IVar("j", 13, 1)       # 13: no strip of 4..8 divides it
    st = Store("y", aff((j, 1)), "+=", Mul(Load("x", aff((t, 1), (j, 1))), Load("k", aff((t, 1)))))
    kept = (nest([t, j], st),)
    assert block_accumulators(kept) == kept
    assign = Store("y", aff((j, 1)), "=", Load("x", aff((j, 1))))   # not an accumulation
    assert block_accumulators((nest([j], assign),)) == (nest([j], assign),)


def test_every_order_of_a_small_nest_keeps_its_terms():
    """Blocking any loop order of the conv nest gives each element the same term sequence."""
    loops, st = conv_forward()
    for perm in itertools.permutations(loops):
        before = (nest(list(perm), st),)
        assert run(block_accumulators(before), "y") == run(before, "y"), [v.name for v in perm]


def test_a_block_of_two_rows_where_there_is_room():
    """limit 16 (AVX-512's 32 registers): c21's shape gets 2 rows of 6 (j1 split 2 x 2), and
    a weight gradient whose rows do not divide gets rows of the next output loop; every
    order of the nest keeps every element's terms."""
    loops, st = conv_forward()
    before = (nest(loops, st),)
    after = block_accumulators(before, limit=16)
    assert order(after[0]) == ["j1_o"] and after[0].var.extent == 2
    buf = after[0].body[0]
    assert isinstance(buf, Buffer) and buf.size == 12
    assert order(after[0].body[2]) == ["t1", "t2", "j1_i", "j2"]
    assert run(after, "y") == run(before, "y")
    assert block_accumulators(before) != after          # the default limit keeps one row
    for perm in itertools.permutations(loops):
        before = (nest(list(perm), st),)
        assert run(block_accumulators(before, limit=16), "y") == run(before, "y"), \
            [v.name for v in perm]
    # dk[c, a, b] += x[j + a, l + b] * d[c, j, l]: rows a (5) do not divide; 3 of 6 channels c
    c_, a, b = IVar("c", 6, 0), IVar("a", 5, 1), IVar("b", 5, 2)
    j, l_ = IVar("j", 4, 3), IVar("l", 4, 4)
    st = Store("dk", aff((c_, 25), (a, 5), (b, 1)), "+=",
               Mul(Load("x", aff((j, 8), (a, 8), (l_, 1), (b, 1))),
                   Load("d", aff((c_, 16), (j, 4), (l_, 1)))))
    before = (nest([c_, a, b, j, l_], st),)
    after = block_accumulators(before, limit=16)
    assert order(after[0]) == ["c_o", "a"]
    buf = after[0].body[0].body[0]
    assert isinstance(buf, Buffer) and buf.size == 15
    assert run(after, "dk") == run(before, "dk")


def test_a_wider_window_where_there_is_room():
    """A scatter nest whose window is 14 columns (LeNet-5's d_p1: 10 + 5 - 1) is blocked at
    limit 16 and not at 8, with every element's terms in order."""
    a, b = IVar("a", 2, 0), IVar("b", 5, 1)
    i, j = IVar("i", 3, 2), IVar("j", 10, 3)
    st = Store("y", aff((a, 14), (i, 14), (b, 1), (j, 1)), "+=",
               Mul(Load("d", aff((i, 10), (j, 1))), Load("k", aff((a, 5), (b, 1)))))
    before = (nest([a, b, i, j], st),)
    assert block_accumulators(before) == before
    after = block_accumulators(before, limit=16)
    bufs = [s for s in after[0].body[0].body if isinstance(s, Buffer)]
    assert order(after[0]) == ["a", "i"] and bufs[0].size == 14
    assert run(after, "y") == run(before, "y")


def weight_gradient(init_first: bool = True):
    """dk[c, a, b] = 0, then += x[j + a, l + b] * d[c, j, l], both inside the loop over c (as
    the lowering writes a convolution's weight gradient)."""
    c_, a, b = IVar("c", 6, 0), IVar("a", 5, 1), IVar("b", 5, 2)
    j, l_ = IVar("j", 4, 3), IVar("l", 4, 4)
    a2, b2 = IVar("a2", 5, 1), IVar("b2", 5, 2)
    init = nest([a2, b2], Store("dk", aff((c_, 25), (a2, 5), (b2, 1)), "=", c.Lit(0)))
    acc = nest([a, b, j, l_], Store("dk", aff((c_, 25), (a, 5), (b, 1)), "+=",
                                   Mul(Load("x", aff((j, 8), (a, 8), (l_, 1), (b, 1))),
                                       Load("d", aff((c_, 16), (j, 4), (l_, 1))))))
    return For(c_, (init, acc) if init_first else (acc, init))


def test_an_init_and_its_accumulation_are_distributed_for_rows():
    """With room for rows, the loop over c is distributed (init for every c, then the
    accumulation), and the accumulation gets rows along c; every element receives its 0 and
    then its terms, in order. Not when the accumulation comes first, or at limit 8 (no rows
    to gain)."""
    before = (weight_gradient(),)
    after = block_accumulators(before, limit=16)
    # the init, distributed, zeroes exactly what the accumulation adds into: the blocks
    # start from 0 and the init goes (test_a_block_starts_from_zero_...)
    assert len(after) == 1 and order(after[0]) == ["c_o", "a"]
    assert after[0].body[0].body[0].size == 15
    assert run(after, "dk") == run(before, "dk")
    assert len(block_accumulators(before)) == 1
    swapped = (weight_gradient(init_first=False),)
    kept = block_accumulators(swapped, limit=16)
    assert len(kept) == 1 and run(kept, "dk") == run(swapped, "dk")
    # an init that every iteration repeats over the same elements: distributing would lose
    # all but the last iteration's terms
    s_ = weight_gradient()
    init, acc = s_.body
    st = init.body[0].body[0]
    shared = For(s_.var, (nest([init.var, init.body[0].var],
                               Store("dk", aff((init.var, 5), (init.body[0].var, 1)), "=",
                                     st.value)), acc))
    kept = block_accumulators((shared,), limit=16)
    assert len(kept) == 1 and run(kept, "dk") == run((shared,), "dk")
    # regions of the same stride and base but shifted apart by a negative coefficient: the
    # init of iteration v + 1 (y[4v + 3 .. 4v + 6]) meets the accumulation of v (y[4v + 2 ..
    # 4v + 4]), so the loop must stay whole (a reviewer's counterexample)
    v, a2, a, r = IVar("v", 3, 0), IVar("a2", 3, 1), IVar("a", 3, 1), IVar("r", 2, 2)
    init = nest([a2], Store("y", aff((v, 4), (a2, -1), const=2), "=", c.Lit(0)))
    acc = nest([a, r], Store("y", aff((v, 4), (a, 1), const=2), "+=",
                             Mul(Load("x", aff((r, 1))), Load("k", aff((a, 1))))))
    overlapping = (For(v, (init, acc)),)
    kept = block_accumulators(overlapping, limit=16)
    assert len(kept) == 1 and run(kept, "y") == run(overlapping, "y")


def element_weight_gradient():
    """As the lowering writes a weight gradient element by element (``dest`` loops: the
    kernel positions outside, the image positions inside): dk[c, d, a] = 0, then += over j
    of d[c, j] * x[d, j + a]."""
    c_, d_, a, j = IVar("c", 4, 0), IVar("d", 8, 1), IVar("a", 3, 2), IVar("j", 6, 3)
    at = aff((c_, 24), (d_, 3), (a, 1))
    body = (Store("dk", at, "=", c.Lit(0)),
            For(j, (Store("dk", at, "+=", Mul(Load("d", aff((c_, 6), (j, 1))),
                                               Load("x", aff((d_, 8), (j, 1), (a, 1))))),)))
    return For(c_, (For(d_, (For(a, body),)),))


@pytest.mark.parametrize("limit", [8, 16])
def test_an_element_by_element_init_is_distributed_at_every_limit(limit):
    """Each element zeroed on its own before its sum: without distributing the init out, the
    block is one element (one chain of dependent additions); at either limit the accumulation
    becomes one perfect nest and holds a block, every element receiving its 0 and then its
    terms in order."""
    before = (element_weight_gradient(),)
    after = block_accumulators(before, limit=limit)
    bufs = []

    def walk(ss):
        for s in ss:
            if isinstance(s, Buffer):
                bufs.append(s.size)
            elif isinstance(s, For):
                walk(s.body)
    walk(after)
    assert bufs and min(bufs) > 1, bufs
    assert run(after, "dk") == run(before, "dk")


def starts(stmts) -> list:
    """The values the blocks of ``stmts`` start from: the first store into each ``_acc``
    buffer."""
    out = []

    def walk(ss):
        for s in ss:
            if isinstance(s, For):
                walk(s.body)
            elif isinstance(s, Store) and s.array.endswith("_acc") and s.op == "=" \
                    and not out[-1:] == [s.array]:
                out.append(s.value)
                out.append(s.array)
    walk(stmts)
    return out[::2]


def test_a_block_starts_from_zero_where_the_nest_before_zeroed_it():
    """A nest that sets to 0 exactly the elements an accumulation adds into, just before it
    (extract/passes/winograd.py's products, a weight gradient): the blocks start from 0 and the
    zeroing goes; every element still receives its 0, then its terms in order."""
    loops, st = conv_forward()
    j1, j2 = IVar("z1", 4, 0), IVar("z2", 6, 1)
    zero = nest([j1, j2], Store("y", aff((j1, 6), (j2, 1)), "=", c.Lit(0)))
    before = (zero, nest(loops, st))
    after = block_accumulators(before)
    assert len(after) == 1 and starts(after) == [c.Lit(0)]
    assert run(after, "y") == run(before, "y")
    # zeroes fewer elements (a row left out), or other values: kept, the blocks load
    for other in (nest([IVar("z1", 3, 0), j2], zero.body[0].body[0]),
                  nest([j1, j2], Store("y", aff((j1, 6), (j2, 1)), "=", c.Lit(1)))):
        kept = block_accumulators((other, nest(loops, st)))
        assert kept[0] == other and isinstance(starts(kept)[0], Load)
        assert run(kept, "y") == run((other, nest(loops, st)), "y")
    # inside a loop outside the nests (o): the zeroing covers y[8o .. 8o + 7] and the sums
    # add into y[4o .. 4o + 7], the same offsets were o left out (a reviewer's regression:
    # the check once compared the constant parts alone)
    o, z, t, j = IVar("o", 2, 0), IVar("z", 8, 1), IVar("t", 3, 1), IVar("j", 8, 2)
    shifted = (For(o, (nest([z], Store("y", aff((o, 8), (z, 1)), "=", c.Lit(0))),
                       nest([t, j], Store("y", aff((o, 4), (j, 1)), "+=",
                                          Mul(Load("x", aff((j, 1), (t, 1))),
                                              Load("k", aff((t, 1)))))))),)
    kept = block_accumulators(shifted)
    assert kept[0].body[0] == shifted[0].body[0] and isinstance(starts(kept)[0], Load)
    assert run(kept, "y") == run(shifted, "y")
    # the scatter form: windows that no two iterations outside share start from 0 (a full
    # convolution of each row i, y[i, b + j] += d[i, j] * k[b]) ...
    i, b, j = IVar("i", 4, 0), IVar("b", 3, 1), IVar("j", 4, 2)
    st = Store("y", aff((i, 6), (b, 1), (j, 1)), "+=",
               Mul(Load("d", aff((i, 4), (j, 1))), Load("k", aff((b, 1)))))
    y = [IVar("z1", 4, 0), IVar("z2", 6, 1)]
    zero = nest(y, Store("y", aff((y[0], 6), (y[1], 1)), "=", c.Lit(0)))
    before = (zero, nest([i, b, j], st))
    after = block_accumulators(before)
    assert len(after) == 1 and starts(after) == [c.Lit(0)]
    assert run(after, "y") == run(before, "y")
    # ... but not windows that two iterations of loops outside add into (rows a + i)
    loops, st = input_gradient()
    a, b, i, j = loops
    y = [IVar("z1", 6, 0), IVar("z2", 6, 1)]
    zero = nest(y, Store("y", aff((y[0], 6), (y[1], 1)), "=", c.Lit(0)))
    rows = (zero, nest([a, i, b, j], st))
    kept = block_accumulators(rows)
    assert kept[0] == zero and all(isinstance(v, Load) for v in starts(kept))
    assert run(kept, "y") == run(rows, "y")


def test_widen_gives_non_parameters_a_lane_index():
    loops, st = conv_forward()
    body, lane = widen_to_lanes((nest(loops, st),), {"k"}, 8, {"x", "y", "k"})
    assert lane.name == "l" and lane.extent == 8
    inner = body[0]
    while isinstance(inner, For) and inner.var != lane:
        inner = inner.body[0]
    s = inner.body[0]
    assert s.offset == st.offset.scale(8) + Affine.of(lane)
    assert s.value.a.offset == st.value.a.offset.scale(8) + Affine.of(lane)
    assert s.value.b == st.value.b                      # the parameter is shared
    text = statements(body, C, 1, (lane, 8))
    assert "vload(&x[" in text and "k[t1 * 3 + t2]" in text and "vstore(&y[" in text


def test_widen_turns_locals_into_buffers_and_keeps_log_a_lane_loop():
    j, t = IVar("j", 4, 0), IVar("t", 3, 1)
    for fn, want in (("log", "y[j * 8 + l] = logf(acc0[0][l]);"),     # one lane at a time
                     ("logistic", "vstore(&y[j * 8], vlogistic(acc0[0]));"),
                     ("sqrt", "vstore(&y[j * 8], vsqrt(acc0[0]));")):
        body = (For(j, (c.Decl("acc0", c.ZERO),
                        For(t, (c.Acc("acc0", Load("x", aff((j, 3), (t, 1)))),)),
                        Store("y", aff((j, 1)), "=", c.Un(fn, c.Local("acc0"))))),)
        wide, lane = widen_to_lanes(body, set(), 8, {"x", "y"})
        text = statements(wide, C, 1, (lane, 8))
        assert "vreal acc0[1];" in text
        assert "acc0[0] += vload(&x[j * 24 + t * 8]);" in text
        assert want in text, fn


def test_recip_is_a_vector_division_and_the_other_functions_stay_lane_loops():
    """recip is a vector division; relu, step and max the vector helpers (same comparisons);
    sqrt the helper vsqrt (floats and doubles); on floats exp and logistic the template's
    inline vexp and vlogistic; log, and exp and logistic on doubles, stay loops over lanes
    (libmvec)."""
    j = IVar("j", 4, 0)
    for fn, real, want in [
            ("recip", "float", "vstore(&y[j * 8], 1 / vload(&x[j * 8]));"),
            ("exp", "float", "vstore(&y[j * 8], vexp(vload(&x[j * 8])));"),
            ("logistic", "float", "vstore(&y[j * 8], vlogistic(vload(&x[j * 8])));"),
            ("exp", "double", "y[j * 8 + l] = exp(x[j * 8 + l]);"),
            ("logistic", "double", "y[j * 8 + l] = logistic(x[j * 8 + l]);"),
            ("log", "float", "y[j * 8 + l] = logf(x[j * 8 + l]);"),
            ("relu", "float", "vstore(&y[j * 8], vrelu(vload(&x[j * 8])));"),
            ("step", "float", "vstore(&y[j * 8], vstep(vload(&x[j * 8])));"),
            ("sqrt", "float", "vstore(&y[j * 8], vsqrt(vload(&x[j * 8])));"),
            ("sqrt", "double", "vstore(&y[j * 8], vsqrt(vload(&x[j * 8])));")]:
        body = (For(j, (Store("y", aff((j, 1)), "=", c.Un(fn, Load("x", aff((j, 1))))),)),)
        wide, lane = widen_to_lanes(body, set(), 8, {"x", "y"})
        assert want in statements(wide, C, 1, (lane, 8), real), (fn, real)
    # max of a lane value and a parameter: the parameter is broadcast
    body = (For(j, (Store("y", aff((j, 1)), "=", c.Max(Load("x", aff((j, 1))),
                                                        Load("w", aff((j, 1))))),)),)
    wide, lane = widen_to_lanes(body, {"w"}, 8, {"x", "y", "w"})
    assert "vstore(&y[j * 8], vfmax_(vload(&x[j * 8]), vsplat(w[j])));" in \
        statements(wide, C, 1, (lane, 8))
    # sqrt of a parameter in a vector statement: the scalar function, broadcast; at half width
    # the h helpers
    body = (For(j, (Store("y", aff((j, 1)), "=", Mul(Load("x", aff((j, 1))),
                                                     c.Un("sqrt", Load("w", aff((j, 1)))))),)),)
    wide, lane = widen_to_lanes(body, {"w"}, 8, {"x", "y", "w"})
    for real, fn in (("float", "sqrtf"), ("double", "sqrt")):
        assert f"vstore(&y[j * 8], vload(&x[j * 8]) * {fn}(w[j]));" in \
            statements(wide, C, 1, (lane, 8), real)
    body = (For(j, (Store("y", aff((j, 1)), "=", c.Un("sqrt", Load("x", aff((j, 1))))),)),)
    wide, lane = widen_to_lanes(body, set(), 4, {"x", "y"})
    assert "hstore(&y[j * 4], hsqrt(hload(&x[j * 4])));" in \
        statements(wide, C, 1, (lane, 4, "h"), "double")


SQRT_DRIVER = r"""
#include "model_sqrt_hand.c"
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    FILE *f = fopen(argv[1], "rb");
    fseek(f, 0, SEEK_END);
    const long n = ftell(f) / sizeof(real);
    rewind(f);
    real *x = malloc(n * sizeof(real)), *out = malloc(2 * n * sizeof(real));
    if (fread(x, sizeof(real), n, f) != (size_t)n) return 2;
    for (long i = 0; i + model_sqrt_hand_LANES <= n; i += model_sqrt_hand_LANES) {
        vreal v;
        memcpy(&v, &x[i], sizeof v);
        const vreal r = vsqrt(v);
        memcpy(&out[i], &r, sizeof r);
    }
    for (long i = 0; i + model_sqrt_hand_HLANES <= n; i += model_sqrt_hand_HLANES) {
        hreal v;
        memcpy(&v, &x[i], sizeof v);
        const hreal r = hsqrt(v);
        memcpy(&out[n + i], &r, sizeof r);
    }
    fwrite(out, sizeof(real), 2 * n, stdout);
    return 0;
}
"""


@pytest.mark.parametrize("precision, lanes", [("f32", 16), ("f32", 8), ("f64", 8)])
def test_vsqrt_is_sqrt_lane_by_lane_in_packed_instructions(tmp_path, precision, lanes):
    """vsqrt and hsqrt (extract/emit/templates/c/model.c.j2) give, lane by lane, the correctly
    rounded square root (NumPy's): NaN below 0 and at -inf, inf at inf, zeros as zeros, subnormals
    included; and the compiler makes them packed square roots (sqrtps/sqrtpd, VEX-encoded or
    not), never a call of the C library's function."""
    import json
    import re
    import shutil
    import subprocess
    import sysconfig
    from pathlib import Path

    import numpy as np

    from extract.emit import build as xbuild
    from extract.ir import dump as xdump
    from extract.passes.lower import Options
    from extract.emit.sources import generate
    if shutil.which("gcc") is None:
        pytest.skip("no gcc")
    d = json.loads((Path(__file__).resolve().parent / "data" / "sqrt.json").read_text())
    files = generate(xdump.parse(d), precision, Options(lanes=lanes)).files
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    assert "vsqrt(" in files["model_sqrt_hand.c"] and "hsqrt(" in files["model_sqrt_hand.c"]
    (tmp_path / "driver.c").write_text(SQRT_DRIVER)
    dtype = np.float32 if precision == "f32" else np.float64
    tiny = np.finfo(dtype).smallest_subnormal
    special = [0.0, -0.0, 1.0, -1.0, 2.0, 4.0, 1e-30, tiny, -tiny, np.finfo(dtype).max,
               -np.finfo(dtype).max, np.inf, -np.inf, np.nan, 0.25, 3.0]
    rng = np.random.default_rng(0)
    x = np.concatenate([special, np.exp(rng.uniform(-80, 80, 4000)),
                        rng.uniform(-1, 1, 4000)]).astype(dtype)
    x = x[:len(x) // 16 * 16]
    x.tofile(tmp_path / "x.bin")
    cflags = (sysconfig.get_config_var("CFLAGS") or "").split() + xbuild.CFLAGS
    exe = tmp_path / "driver"
    subprocess.run(["gcc", *cflags, "-I", str(tmp_path), str(tmp_path / "driver.c"), "-o",
                    str(exe), *xbuild.LDFLAGS, "-lm"], check=True, capture_output=True,
                   text=True)
    res = subprocess.run([str(exe), str(tmp_path / "x.bin")], check=True, capture_output=True)
    out = np.frombuffer(res.stdout, dtype)
    with np.errstate(invalid="ignore"):
        want = np.sqrt(x)
    for k, what in enumerate(("vsqrt", "hsqrt")):
        got = out[k * len(x):(k + 1) * len(x)]
        assert np.array_equal(np.isnan(got), np.isnan(want)), what
        ok = np.isnan(want) | (got == want)
        assert ok.all(), f"{what}({x[~ok][0]!r}) = {got[~ok][0]!r}, want {want[~ok][0]!r}"
    asm = subprocess.run(["gcc", *cflags, "-S", "-o", "-", "-I", str(tmp_path),
                          str(tmp_path / "model_sqrt_hand.c")], check=True, capture_output=True,
                         text=True).stdout
    assert ("sqrtps" if precision == "f32" else "sqrtpd") in asm
    assert not re.search(r"(call|jmp)\s+sqrtf?\b", asm)


def _helpers_program(tmp_path, dump_path, precision: str, main: str) -> str:
    """Build the generated C of a dump with ``main`` appended, run it, return its stdout."""
    import subprocess
    from extract.emit import build as xbuild
    from extract.ir import dump as xdump
    from extract.emit.sources import generate
    m = xdump.load(dump_path)
    files = generate(m, precision).files
    (tmp_path / f"{c_model(m.name)}.h").write_text(files[f"{c_model(m.name)}.h"])
    (tmp_path / "t.c").write_text(files[f"{c_model(m.name)}.c"] + main)
    exe = tmp_path / f"t_{m.name}_{precision}"
    subprocess.run(["gcc", *xbuild.CFLAGS, "-w", str(tmp_path / "t.c"), "-o", str(exe),
                    *xbuild.LDFLAGS, "-lm"], check=True, cwd=tmp_path)
    return subprocess.run([str(exe)], capture_output=True, text=True).stdout.strip()


_VALUES = "{-2, -0.0, 0.0, 1e-30, 1, 3, INFINITY, -INFINITY}"


def test_vector_helpers_agree_with_the_scalar_ones(tmp_path):
    """vrelu, vstep and vfmax_ of the template give, lane by lane, exactly what relu, step and
    fmax_ give, ties, zeros of both signs and infinities included (float and double); relu and
    step from LeNet-5's C, fmax_ from tests/data/max.json's (LeNet-5's max-pools are argmaxes
    since dump version 5: test_vector_argmax_is_the_scalar_loop)."""
    from pathlib import Path
    max_dump = Path(__file__).resolve().parent / "data" / "max.json"
    for precision in ("f32", "f64"):
        for dump_path, helpers in ((_lenet5_dump(), ("relu", "step")), (max_dump, ("fmax_",))):
            checks = {"relu": "memcmp(&r[l], &(real){relu(a[l])}, sizeof(real)) != 0",
                      "step": "s[l] != step(a[l])",
                      "fmax_": "memcmp(&m[l], &(real){fmax_(a[l], b[l])}, sizeof(real)) != 0"}
            defs = {"relu": "vreal r = vrelu(a);", "step": "vreal s = vstep(a);",
                    "fmax_": "vreal m = vfmax_(a, b);"}
            main = f"""
#include <stdio.h>
#include <math.h>
int main(void)
{{
    const real v[] = {_VALUES};
    int bad = 0;
    for (int i = 0; i < 8; i++) for (int k = 0; k < 8; k++) {{
        vreal a, b;
        for (int l = 0; l < 8; l++) {{ a[l] = v[(i + l) % 8]; b[l] = v[(k + 3 * l) % 8]; }}
        {" ".join(defs[h] for h in helpers)}
        for (int l = 0; l < 8; l++)
            bad += {" || ".join(checks[h] for h in helpers)};
    }}
    printf("%d\\n", bad);
    return bad != 0;
}}
"""
            assert _helpers_program(tmp_path, dump_path, precision, main) == "0", \
                (dump_path, precision)


def test_vector_argmax_is_the_scalar_loop(tmp_path):
    """vargstep, LeNet-5's max-pools across the lanes (extract/passes/lanes.py), against the scalar
    argmax loop (``if (at == 0 || top < v) { top = v; arg = at; }``) lane by lane: every
    sequence of 5 values of 0, -0, ±1, ±inf and NaN in every lane (ties keep the first, a
    NaN neither replaces nor is replaced), the largest value bitwise and the position; and
    vwhere(mask, x) is x where the mask holds and +0 elsewhere (float and double)."""
    main = """
#include <stdio.h>
#include <math.h>
int main(void)
{
    const real v[] = {0.0, -0.0, 1, -1, INFINITY, -INFINITY, NAN};
    const int nv = 7, n = 5;
    int bad = 0, total = 1;
    for (int k = 0; k < n; k++) total *= nv;
    for (int c0 = 0; c0 < total; c0 += 8) {
        vindex arg = (vindex){0};
        vreal top = vsplat(0);
        real stop[8];
        int sarg[8];
        for (int at = 0; at < n; at++) {
            vreal x;
            for (int l = 0; l < 8; l++) {
                int c = (c0 + l) % total;
                for (int k = 0; k < at; k++) c /= nv;
                x[l] = v[c % nv];
                if (at == 0 || stop[l] < x[l]) { stop[l] = x[l]; sarg[l] = at; }
            }
            vargstep(top, arg, x, at);
        }
        for (int l = 0; l < 8; l++)
            bad += memcmp(&top[l], &stop[l], sizeof(real)) != 0 || arg[l] != sarg[l];
        vreal w = vwhere(arg == 2, vsplat(3));
        for (int l = 0; l < 8; l++)
            bad += memcmp(&w[l], &(real){sarg[l] == 2 ? 3 : 0}, sizeof(real)) != 0;
    }
    printf("%d\\n", bad);
    return bad != 0;
}
"""
    for precision in ("f32", "f64"):
        assert _helpers_program(tmp_path, _lenet5_dump(), precision, main) == "0", precision




def _lenet5_dump():
    from pathlib import Path
    p = Path(__file__).resolve().parent.parent / "build" / "dump" / "zoo" / "lenet5.json"
    if not p.exists():
        pytest.skip("no build/dump/zoo/lenet5.json (make dump)")
    return p


def test_lane_name_avoids_taken_names():
    loops, st = conv_forward()
    _, lane = widen_to_lanes((nest(loops, st),), set(), 8, {"l", "x", "y", "k"})
    assert lane.name == "l_"
    with pytest.raises(ValueError):
        widen_to_lanes((nest(loops, st),), set(), 1)


@pytest.mark.parametrize("width", [2, 4, 8, 16, 32])
@pytest.mark.parametrize("p", ["v", "h"])
def test_transpose_program_transposes(width, p):
    """sources.transpose_program run on symbols, for either set of lane kernels (vreal and
    M_SHUF, hreal and M_HSHUF): t[l][k] ends as the old t[k][l]; no statement reads a t[i]
    after a round wrote it."""
    import re
    from extract.emit.sources import transpose_program
    t = [[(k, l) for l in range(width)] for k in range(width)]
    tmp, written = {}, set()

    def value(x):
        m = re.fullmatch(r"t\[(\d+)\]", x)
        if m:
            assert int(m.group(1)) not in written, f"t[{m.group(1)}] read after it was written"
            return t[int(m.group(1))]
        return tmp[x]
    shuf = "M_SHUF" if p == "v" else "M_HSHUF"
    for line in transpose_program(width, shuf, f"{p}real"):
        m = re.fullmatch(rf"(?:const {p}real )?(\S+) = (?:{shuf}\((\S+), (\S+), ([\d, ]+)\)|(\S+));",
                         line)
        assert m, line
        if m.group(5):
            v = value(m.group(5))
        else:
            both = value(m.group(2)) + value(m.group(3))
            v = [both[int(i)] for i in m.group(4).split(",")]
        d = re.fullmatch(r"t\[(\d+)\]", m.group(1))
        if d:
            t[int(d.group(1))] = v
            written.add(int(d.group(1)))
        else:
            tmp[m.group(1)] = v
    assert all(t[l][k] == (k, l) for k in range(width) for l in range(width))


def test_sixteen_lanes_on_amd_avx512(monkeypatch):
    """The default lane count follows the processor (AMD's AVX-512 processors, Zen 4 and
    later: 16 floats), the environment overrides it, and doubles keep 8."""
    from extract.emit import sources
    zen5 = {"vendor_id": "AuthenticAMD", "cpu family": "26", "flags": "fma avx2 avx512f"}
    assert sources.wide_lanes(zen5)
    assert sources.wide_lanes({**zen5, "cpu family": "25"})                # Zen 4
    assert not sources.wide_lanes({**zen5, "cpu family": "23"})            # Zen 2: no AVX-512
    assert not sources.wide_lanes({**zen5, "flags": "fma avx2"})
    assert not sources.wide_lanes({**zen5, "vendor_id": "GenuineIntel", "cpu family": "6"})
    assert not sources.wide_lanes({})
    monkeypatch.delenv(sources.ENV_LANES, raising=False)
    for info, want in ((zen5, 16), ({}, 8)):
        monkeypatch.setattr(sources, "cpuinfo", lambda info=info: info)
        assert sources.default_lanes("f32") == want
        assert sources.default_lanes("f64") == 8
    monkeypatch.setenv(sources.ENV_LANES, "8")
    monkeypatch.setattr(sources, "cpuinfo", lambda: zen5)
    assert sources.default_lanes("f32") == 8


def test_blocks_of_16_where_there_are_32_vector_registers(monkeypatch):
    """The register block limit follows the processor (AVX-512: 16), the environment
    overrides it, and a value other than 8 or 16 is an error naming the variable."""
    from extract.emit import sources
    from extract.passes.lower import ExtractError
    monkeypatch.delenv(sources.ENV_BLOCK, raising=False)
    for flags, want in (("fma avx2 avx512f", 16), ("fma avx2", 8), ("", 8)):
        monkeypatch.setattr(sources, "cpuinfo", lambda flags=flags: {"flags": flags})
        assert sources.default_block() == want
    monkeypatch.setenv(sources.ENV_BLOCK, "8")
    monkeypatch.setattr(sources, "cpuinfo", lambda: {"flags": "avx512f"})
    assert sources.default_block() == 8
    monkeypatch.setenv(sources.ENV_BLOCK, "12")
    with pytest.raises(ExtractError, match="PROVED_KERNELS_BLOCK"):
        sources.default_block()


def _pool_gradient(store_offset=None):
    """The gradient of a max-pool of width 2 along one axis, one sample (as lowered and
    split): for i, j: the argmax over the window i (``a[2 i + a0]``), then ``d[2 i + j] =
    j == arg0 ? s[i] : 0``."""
    i, j, a0 = IVar("i", 6, 0), IVar("j", 2, 1), IVar("a0", 2, 5)
    pos = IVar("arg0", 2, 9)
    group = (c.ArgDecl("arg0"), c.Decl("top1", c.ZERO),
             For(a0, (c.ArgStep("arg0", "top1", aff((a0, 1)), Load("a", aff((i, 2), (a0, 1)))),)))
    value = c.Select((c.Cmp(aff((j, 1), (pos, -1)), "eq"),), Load("s", aff((i, 1))))
    off = store_offset if store_offset is not None else aff((i, 2), (j, 1))
    return (For(i, (For(j, (*group, Store("d", off, "=", value))),)),)


def test_an_argmax_is_computed_once_for_the_elements_it_selects():
    """hoist_args: the loop over the window's elements (j) moves inside the argmax, which no
    longer depends on it; with stores that may meet (an offset not one-to-one) nothing moves.
    Widened, the position is a vindex, each step a vargstep, the selection a vwhere."""
    from extract.passes.lanes import _injective, hoist_args
    body = _pool_gradient()
    (i_loop,) = hoist_args(body)
    assert [type(x).__name__ for x in i_loop.body] == ["ArgDecl", "Decl", "For", "For"]
    assert i_loop.body[3].var.name == "j" and isinstance(i_loop.body[3].body[0], Store)
    assert hoist_args(_pool_gradient(aff((IVar("i", 6, 0), 1), (IVar("j", 2, 1), 1)))) == \
        _pool_gradient(aff((IVar("i", 6, 0), 1), (IVar("j", 2, 1), 1)))
    i, j = IVar("i", 6, 0), IVar("j", 2, 1)
    assert _injective(aff((i, 2), (j, 1)), [i, j]) and not _injective(aff((i, 1), (j, 1)), [i, j])
    assert not _injective(aff((i, 2)), [i, j])          # j not in the offset: the same element
    wide, lane = widen_to_lanes(body, {"s"}, 8, {"a", "d", "s"})
    text = statements(wide, C, 1, (lane, 8))
    assert "vindex arg0 = (vindex){0};" in text
    assert "vargstep(top1[0], arg0, vload(&a[i * 16 + a0 * 8]), a0);" in text
    assert "vstore(&d[i * 16 + j * 8], vwhere((j == arg0), vsplat(s[i])));" in text
    assert text.index("vargstep(") < text.index("for (int j = 0;")


def test_lenet5_pool_gradients_take_the_argmax_once_per_window():
    """LeNet-5's d_z1 and d_z2 lane kernels (a max-pool's gradient inside the ReLU's): one
    vargstep loop per 2×2 window, before the loops over the window's four elements."""
    from extract.ir import dump as xdump
    from extract.emit.sources import generate
    src = generate(xdump.load(_lenet5_dump()), "f32").files["model_lenet5.c"]
    for fn in ("model_lenet5_backward_a4_d_z1_lanes", "model_lenet5_backward_a4_d_z2_lanes",
               "model_lenet5_forward_a2_p1_lanes", "model_lenet5_forward_a2_p2_lanes"):
        start = src.index(f"static void {fn}(")
        body = src[start:src.index("\n}\n", start)]
        assert "for (int l = 0;" not in body and body.count("vargstep(") == 1, body
        if "backward" in fn:
            assert body.index("vargstep(") < body.index("for (int j1_r = 0;"), body
            assert "vwhere((j1_r == arg0 / 2) & (j2_r == arg0 % 2), " in body
        else:
            assert "top1[0]);" in body          # the pooled value is the largest, no gather
