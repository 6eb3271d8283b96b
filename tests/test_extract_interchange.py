"""interchange_loops on hand-built accumulation nests: which loop moves where, when nothing
moves, and that every output element still receives the same terms (a small interpreter of
the loop IR, exact in integers, compares the nest before and after)."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

from extract.ir.code import Affine, For, IVar, Load, Mul, Store
from extract.passes.interchange import TILE, interchange_loops
from loopnest import aff, nest, order


def var(name: str, extent: int, rank: int) -> IVar:
    return IVar(name, extent, rank)


def run(stmt, arrays: dict, out: str) -> dict:
    """Execute a perfect nest ending in ``out[...] += a[...] * b[...]``; record, for every
    output element, the sequence of (term) index pairs it receives, in order."""
    loops = []
    while isinstance(stmt, For):
        loops.append(stmt.var)
        stmt = stmt.body[0]
    terms: dict = {}
    for point in itertools.product(*(range(v.extent) for v in loops)):
        m = {v: Affine.of(i) for v, i in zip(loops, point)}
        o = stmt.offset.subst(m).const
        a, b = stmt.value.a, stmt.value.b
        ia, ib = a.offset.subst(m).const, b.offset.subst(m).const
        arrays[out][o] += arrays[a.array][ia] * arrays[b.array][ib]
        terms.setdefault(o, []).append((ia, ib))
    return terms


def weight_gradient():
    """d_k2-shaped: y[i0, c, u, w] += d[i0, p, q] * x[c, p + u, q + w] (75 outputs per i0)."""
    i0, p, q, c, u, w = (var("i0", 2, 0), var("p", 4, 1), var("q", 4, 2), var("c", 3, 3),
                         var("u", 5, 4), var("w", 5, 5))
    y = aff((i0, 75), (c, 25), (u, 5), (w, 1))
    d = Load("d", aff((i0, 16), (p, 4), (q, 1)))
    x = Load("x", aff((c, 64), (p, 8), (u, 8), (q, 1), (w, 1)))
    return [i0, p, q, c, u, w], Store("y", y, "+=", Mul(d, x)), {"d": 32, "x": 192, "y": 150}


def test_short_reduction_loop_moves_next_to_the_innermost():
    loops, st, _ = weight_gradient()
    out = interchange_loops((nest(loops, st),))[0]
    # c*u*w = 75 > TILE outputs per (p, q): q (extent 4, unit stride in both reads) moves in
    assert 3 * 5 * 5 > TILE
    assert order(out) == ["i0", "p", "c", "u", "q", "w"]


def test_same_terms_in_the_same_order_after_the_moves():
    loops, st, sizes = weight_gradient()
    rng = np.random.default_rng(0)
    arrays = {k: rng.integers(-3, 4, n).astype(np.int64) for k, n in sizes.items()}
    before = {k: v.copy() for k, v in arrays.items()}
    after = {k: v.copy() for k, v in arrays.items()}
    t0 = run(nest(loops, st), before, "y")
    t1 = run(interchange_loops((nest(loops, st),))[0], after, "y")
    assert np.array_equal(before["y"], after["y"])
    # only loops the output does not move along changed places relative to output loops:
    # each element gets its terms in the original order
    assert t0 == t1


def test_small_output_block_is_left_alone():
    # the output block of the innermost loops fits TILE: a forward-convolution shape
    i0, t0, t1, j0, j1 = (var("i0", 2, 0), var("t0", 3, 1), var("t1", 3, 2), var("j0", 4, 3),
                          var("j1", 8, 4))
    st = Store("y", aff((i0, 32), (j0, 8), (j1, 1)), "+=",
               Mul(Load("x", aff((t0, 10), (j0, 10), (t1, 1), (j1, 1))),
                   Load("k", aff((i0, 9), (t0, 3), (t1, 1)))))
    loops = [i0, t0, t1, j0, j1]
    assert interchange_loops((nest(loops, st),))[0] == nest(loops, st)


@pytest.mark.parametrize("blocker", ["bounds", "long", "strided"])
def test_reduction_loop_stays_when_moving_it_is_not_allowed(blocker):
    loops, st, _ = weight_gradient()
    i0, p, q, c, u, w = loops
    if blocker == "bounds":
        # an inner loop whose bounds mention q: q may not move inside it
        n = (For(w, (st,)),)
        n = (For(u, n, hi=(aff((q, 1), const=2),)),)
        for v in reversed([i0, p, q, c]):
            n = (For(v, n),)
        out = interchange_loops(n)[0]
        assert order(out) == ["i0", "p", "q", "c", "u", "w"]
        return
    if blocker == "long":
        q = var("q", 9, 2)            # longer than SHORT
    x_q = 1 if blocker != "strided" else 2
    st = Store("y", st.offset, "+=",
               Mul(Load("d", aff((i0, 16), (p, 4), (q, 1))),
                   Load("x", aff((c, 64), (p, 8), (u, 8), (q, x_q), (w, 1)))))
    out = interchange_loops((nest([i0, p, q, c, u, w], st),))[0]
    assert order(out) == ["i0", "p", "q", "c", "u", "w"]
