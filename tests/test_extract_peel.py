"""Padded convolutions: peel_bounds (extract/passes/peel.py) splits an accumulation's bounded output
loops into an interior without bounds and border parts, and block_accumulators
(extract/passes/registers.py) holds a block across reduction loops that carry the bounds. Both give
every output element the same terms in the same order (the term-recording interpreter of
tests/loopnest.py, which runs loops over their bounds)."""
from __future__ import annotations

from extract.ir.code import Affine, Buffer, For, IVar, Load, Mul, Store
from extract.passes.peel import peel_bounds
from extract.passes.registers import block_accumulators
from loopnest import aff, order, run


def bounded(v: IVar, body, lo=(), hi=()) -> For:
    return For(v, (body,), False, tuple(lo), tuple(hi))


def padded_forward(rows: int = 10, cols: int = 12):
    """z1-shaped: y[j0, j1] += x[j0 + t0 - 1, j1 + t1 - 1] * k[t0, t1], a 3 x 3 kernel padded
    by 1: the output rows kernel row t0 reaches are [max(0, 1 - t0), min(rows, rows + 1 - t0))."""
    t0, t1 = IVar("t0", 3, 0), IVar("t1", 3, 1)
    j0, j1 = IVar("j0", rows, 2), IVar("j1", cols, 3)
    st = Store("y", aff((j0, cols), (j1, 1)), "+=",
               Mul(Load("x", aff((j0, cols), (t0, cols), (j1, 1), (t1, 1), const=-cols - 1)),
                   Load("k", aff((t0, 3), (t1, 1)))))
    inner = bounded(j1, st, [aff((t1, -1), const=1)], [aff((t1, -1), const=cols + 1)])
    mid = bounded(j0, inner, [aff((t0, -1), const=1)], [aff((t0, -1), const=rows + 1)])
    return For(t0, (For(t1, (mid,)),))


def padded_weight_gradient(rows: int = 10, cols: int = 12):
    """d_k1-shaped: dk[o, i0, i1] += d[o, t0, t1] * x[t0 + i0 - 1, t1 + i1 - 1], the kernel's
    positions (outputs) innermost, bounded by the image positions (reductions) outside them."""
    o, t0, t1 = IVar("o", 3, 0), IVar("t0", rows, 1), IVar("t1", cols, 2)
    i0, i1 = IVar("i0", 3, 3), IVar("i1", 3, 4)
    st = Store("dk", aff((o, 9), (i0, 3), (i1, 1)), "+=",
               Mul(Load("d", aff((o, rows * cols), (t0, cols), (t1, 1))),
                   Load("x", aff((t0, cols), (i0, cols), (t1, 1), (i1, 1), const=-cols - 1))))
    inner = bounded(i1, st, [aff((t1, -1), const=1)], [aff((t1, -1), const=cols + 1)])
    mid = bounded(i0, inner, [aff((t0, -1), const=1)], [aff((t0, -1), const=rows + 1)])
    return For(o, (For(t0, (For(t1, (mid,)),)),))


def _bounds(s) -> int:
    """How many loops in the statements carry extra bounds."""
    n = 0
    for x in s:
        if isinstance(x, For):
            n += bool(x.lo or x.hi) + _bounds(x.body)
    return n


def test_the_interior_of_a_padded_convolution_has_no_bounds():
    before = (padded_forward(),)
    after = peel_bounds(before)
    # rows: before the interior, the interior (its columns: before, interior, after), after
    assert len(after) == 5
    interior = after[2]
    assert order(interior) == ["t0", "t1", "j0_p", "j1_p"] and _bounds((interior,)) == 0
    assert [interior.body[0].body[0].var.extent, interior.body[0].body[0].body[0].var.extent] \
        == [8, 10]
    assert run(after, "y") == run(before, "y")


def test_the_peeled_interior_gets_a_register_block():
    before = (padded_forward(),)
    after = block_accumulators(peel_bounds(before), limit=16)
    blocks = [s for s in after if isinstance(s, For) and order(s)[0] == "j0_p_o"]
    assert len(blocks) == 1
    assert run(after, "y") == run(before, "y")
    # without the peel nothing is blocked: both output loops have bounds, and the contiguous
    # one (12 columns) is wider than a block (registers._split)
    assert _bounds(block_accumulators(before, limit=16)) == 2


def test_a_weight_gradient_blocks_kernel_columns_with_the_image_ends_written_out():
    before = (padded_weight_gradient(),)
    assert peel_bounds(before) == before        # its outputs' interior is one position wide
    for limit, size, outer in ((8, 3, ["o", "i0"]), (16, 9, ["i0"])):
        after = block_accumulators(before, limit=limit)
        assert run(after, "dk") == run(before, "dk")
        (top,) = after
        assert order(top) == outer
        inner = top
        while not isinstance(inner.body[0], Buffer):
            inner = inner.body[0]
        buf, init, sums, store = inner.body
        # the block: the kernel's 3 columns (and, with room, the 3 channels)
        assert isinstance(buf, Buffer) and buf.size == size
        # image rows bounded by the kernel row; the first and last image columns written out
        # (kernel columns 1-2, then 0-1), the 10 between them a loop without bounds
        assert sums.var.name == "t0" and sums.lo and sums.hi
        head, mid, tail = sums.body
        assert isinstance(mid, For) and mid.var.extent == 10 and _bounds((mid,)) == 0
        assert "t1" not in order(head) + order(tail)
        assert all(b.is_const for f in _flat((head, tail)) if isinstance(f, For)
                   for b in (*f.lo, *f.hi))


def test_a_weight_gradient_with_wide_padding_keeps_a_block_of_channels():
    """Padding 5 on a 11 x 11 kernel: 10 image columns at the ends, more than registers.EDGE
    to write out; the block is then the channels, every bound on the image loops."""
    o, t0, t1 = IVar("o", 4, 0), IVar("t0", 12, 1), IVar("t1", 12, 2)
    i0, i1 = IVar("i0", 11, 3), IVar("i1", 11, 4)
    st = Store("dk", aff((o, 121), (i0, 11), (i1, 1)), "+=",
               Mul(Load("d", aff((o, 144), (t0, 12), (t1, 1))),
                   Load("x", aff((t0, 12), (i0, 12), (t1, 1), (i1, 1), const=-65))))
    inner = bounded(i1, st, [aff((t1, -1), const=5)], [aff((t1, -1), const=17)])
    mid = bounded(i0, inner, [aff((t0, -1), const=5)], [aff((t0, -1), const=17)])
    before = (For(o, (For(t0, (For(t1, (mid,)),)),)),)
    after = block_accumulators(before)
    assert run(after, "dk") == run(before, "dk")
    assert order(after[0]) == ["i0", "i1"] and after[0].body[0].body[0].size == 4


def test_small_images_shared_outputs_and_inner_bounds():
    # an image no wider than twice the padding: the interior would hold under 4 positions
    small = (padded_forward(rows=4, cols=5),)
    assert peel_bounds(small) == small
    # a value that reads the output: the parts would not be independent
    t0, t1 = IVar("t0", 3, 0), IVar("t1", 3, 1)
    j0 = IVar("j0", 10, 2)
    st = Store("y", aff((j0, 1)), "+=", Mul(Load("y", aff((j0, 1), (t1, 1))), Load("k", aff((t0, 1)))))
    reads = (For(t0, (For(t1, (bounded(j0, st, [aff((t0, -1), const=1)],
                                        [aff((t0, -1), const=11)]),)),)),)
    assert peel_bounds(reads) == reads
    # an offset that is not one-to-one on the output loops (y[j + t]): an element would take
    # terms from several parts, out of their order
    t0, j, t = IVar("t0", 3, 0), IVar("j", 10, 1), IVar("t", 3, 2)
    st3 = Store("y", aff((j, 1), (t, 1)), "+=",
                Mul(Load("x", aff((j, 1), (t0, 1))), Load("k", aff((t0, 3), (t, 1)))))
    shared = (For(t0, (bounded(j, For(t, (st3,)), [aff((t0, -1), const=1)],
                               [aff((t0, -1), const=11)]),)),)
    assert peel_bounds(shared) == shared
    # a bound in a loop inside the bounded one (peeled, and still the same terms)
    i = IVar("i", 6, 3)
    st2 = Store("y", aff((j0, 6), (i, 1)), "+=", Load("x", aff((t0, 1), (j0, 1), (i, 1))))
    inside = (For(t0, (bounded(j0, bounded(i, st2, [], [aff((j0, -1), const=12)]),
                               [aff((t0, -1), const=1)]),)),)
    assert run(peel_bounds(inside), "y") == run(inside, "y")


def test_a_strided_weight_gradient_keeps_its_bounds():
    """Stride 2: the kernel column's bounds are ``±2 t1 + k1 ...``, not ``±t1``, so its ends
    cannot be written out (registers._edges); nothing is blocked, the terms are the same."""
    t1, k1 = IVar("t1", 6, 0), IVar("k1", 3, 1)
    st = Store("dk", aff((k1, 1)), "+=",
               Mul(Load("d", aff((t1, 1))), Load("x", aff((t1, 2), (k1, 1), const=-1))))
    strided = (For(t1, (bounded(k1, st, [aff((t1, -2), const=1)], [aff((t1, -2), const=9)]),)),)
    after = block_accumulators(strided)
    assert run(after, "dk") == run(strided, "dk")
    assert after == strided


def test_a_value_that_reads_the_output_is_not_blocked():
    t, j = IVar("t", 4, 0), IVar("j", 4, 1)
    st = Store("y", aff((j, 1)), "+=", Mul(Load("x", aff((j, 1))), Load("y", aff((t, 1)))))
    reads = (For(t, (For(j, (st,)),)),)
    assert block_accumulators(reads) == reads


def test_a_bound_among_output_loops_alone_is_not_blocked():
    # y[j0, j1] += x[t] for j1 < j0 + 1 (a triangle): the bound ties two outputs together.
    # registers._block refuses it up front; without that check the guard tighten_bounds would
    # leave around the reduction loop refuses it too (either way the terms stay as they were)
    t, j0, j1 = IVar("t", 4, 0), IVar("j0", 8, 1), IVar("j1", 8, 2)
    st = Store("y", aff((j0, 8), (j1, 1)), "+=", Load("x", aff((t, 1), (j1, 1))))
    tri = (For(t, (For(j0, (bounded(j1, st, [], [aff((j0, 1), const=1)]),)),)),)
    after = block_accumulators(tri, limit=16)
    assert run(after, "y") == run(tri, "y")
    assert not any(isinstance(s, Buffer) for s in _flat(after))


def _flat(ss):
    for s in ss:
        yield s
        if isinstance(s, For):
            yield from _flat(s.body)


def test_the_interpreter_runs_loops_over_their_bounds():
    """The checks above would pass vacuously if bounds were ignored."""
    v = IVar("v", 10, 0)
    st = Store("y", Affine.of(v), "+=", Load("x", Affine.of(v)))
    out = run((bounded(v, st, [Affine.of(3)], [Affine.of(7)]),), "y")
    assert sorted(out) == [3, 4, 5, 6]
