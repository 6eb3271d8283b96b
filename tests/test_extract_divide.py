"""Groups the threads share: divide_among_threads (extract/passes/divide.py) divides a kernel's
loops among the threads. Run on an interpreter of the parts (each thread's share of every part
between two barriers, threads in any order), a divided kernel gives every element the terms,
in order, of the undivided one; no element is written by two threads, and no thread reads
what another writes between the same two barriers."""
from __future__ import annotations

import itertools

import pytest

from extract.ir import code as c
from extract.ir.code import (Acc, Affine, Barrier, Buffer, Decl, Divided, For, IVar, Lit, Load,
                          Local, Mul, OnePart, Store, idiv)
from extract.passes.divide import divide_among_threads, divisible
from loopnest import aff, nest, run


class Race(AssertionError):
    pass


def run_parts(stmts, out: str, nparts: int, order=None) -> dict:
    """``run`` (tests/loopnest.py) of divided statements on ``nparts`` threads: the segments
    between barriers one after the other, each thread's share of a segment in ``order``
    (default 0, 1, ...). Raises Race where two threads write one element of ``out``, or one
    reads what another writes, inside a segment. Local buffers are each thread's own."""
    mem: dict = {}
    buffers: set = set()
    wrote: dict = {}        # element of out -> the thread that wrote it in this segment
    read: dict = {}         # element of out -> the threads that read it in this segment

    def value(e, env, part):
        if isinstance(e, Load):
            key = (e.array, e.offset.subst(env).const)
            if e.array == out:
                if wrote.get(key, part) != part:
                    raise Race(f"thread {part} reads {key}, which thread {wrote[key]} writes")
                read.setdefault(key, set()).add(part)
            if e.array == out or e.array in buffers:
                return list(mem.get(key, []))
            return key
        if isinstance(e, Mul):
            return (value(e.a, env, part), value(e.b, env, part))
        if isinstance(e, Lit):
            return ("lit", e.value)
        raise TypeError(e)

    def loop(f, lo, hi, env, part):
        lo = max([lo, *(b.subst(env).const for b in f.lo)])
        hi = min([hi, *(b.subst(env).const for b in f.hi)])
        for k in range(lo, hi):
            exec_(f.body, {**env, f.var: Affine.of(k)}, part)

    def exec_(ss, env, part):
        for s in ss:
            if isinstance(s, Divided):
                n = s.loop.var.extent
                loop(s.loop, n * part // nparts, n * (part + 1) // nparts, env, part)
            elif isinstance(s, OnePart):
                if part == 0:
                    exec_(s.body, env, part)
            elif isinstance(s, For):
                loop(s, 0, s.var.extent, env, part)
            elif isinstance(s, Buffer):
                buffers.add(s.name)
            elif isinstance(s, Store):
                key = (s.array, s.offset.subst(env).const)
                if s.array == out:
                    if wrote.get(key, part) != part:
                        raise Race(f"threads {wrote[key]} and {part} write {key}")
                    if read.get(key, {part}) - {part}:
                        raise Race(f"thread {part} writes {key}, which another reads")
                    wrote[key] = part
                v = value(s.value, env, part)
                if s.op == "=":
                    mem[key] = v if isinstance(v, list) else [v]
                else:
                    mem.setdefault(key, []).append(v)
            elif not isinstance(s, c.Comment):
                raise TypeError(s)

    segments = [[]]
    for s in stmts:
        if isinstance(s, Barrier):
            segments.append([])
        else:
            segments[-1].append(s)
    for ss in segments:
        wrote.clear()
        read.clear()
        for part in order or range(nparts):
            exec_(ss, {}, part)
    return {k[1]: v for k, v in mem.items() if k[0] == out}


def check(stmts, out: str, lane=None, most: int = 5):
    """Divided, the statements give every element of ``out`` the terms of the undivided ones
    on 1 to ``most`` threads, in either order of the threads."""
    want = run(stmts, out)
    divided = divide_among_threads(stmts, lane)
    for nparts in range(1, most + 1):
        for order in (range(nparts), range(nparts - 1, -1, -1)):
            assert run_parts(divided, out, nparts, order) == want, (nparts, list(order))
    return divided


def conv_forward(channels: int = 3, rows: int = 6):
    """c11-shaped: for o: (y[o, j] = b[o]; for t: for j: y[o, j] += x[j + t] * k[o, t])."""
    o, j, t, j2 = IVar("o", channels, 0), IVar("j", rows, 1), IVar("t", 3, 2), IVar("j2", rows, 3)
    init = For(j, (Store("y", aff((o, rows), (j, 1)), "=", Load("b", aff((o, 1)))),))
    acc = For(t, (For(j2, (Store("y", aff((o, rows), (j2, 1)), "+=",
                                 Mul(Load("x", aff((j2, 1), (t, 1))),
                                     Load("k", aff((o, 3), (t, 1))))),)),))
    return For(o, (init, acc))


def input_gradient(sums: int = 4, channels: int = 3, cols: int = 5):
    """d_s1-shaped: for t (the channels summed): for o: for j: y[o, j] += d[t, j] * k[t, o];
    every iteration of t writes all of y."""
    t, o, j = IVar("t", sums, 0), IVar("o", channels, 1), IVar("j", cols, 2)
    st = Store("y", aff((o, cols), (j, 1)), "+=",
               Mul(Load("d", aff((t, cols), (j, 1))), Load("k", aff((t, channels), (o, 1)))))
    zero = nest([IVar("z", channels * cols, 3)], Store("y", aff((IVar("z", channels * cols, 3), 1)),
                                                       "=", Lit(0.0)))
    return (zero, nest([t, o, j], st))


def test_a_convolution_is_divided_by_its_channels():
    divided = check((conv_forward(),), "y")
    assert divided == (Divided(conv_forward()),)


def test_an_input_gradient_is_divided_inside_the_sum():
    """The loop over the channels summed writes all of y: its inner loop over y's channels is
    divided, and every thread runs every channel summed, in order."""
    stmts = input_gradient()
    divided = check(stmts, "y")
    zero, acc = divided[0], divided[2]
    assert isinstance(zero, Divided) and isinstance(divided[1], Barrier)
    assert isinstance(acc, For) and acc.var.name == "t" and isinstance(acc.body[0], Divided)
    assert acc.body[0].loop.var.name == "o"


def test_more_threads_than_iterations():
    check((conv_forward(channels=2),), "y", most=5)


def test_overlapping_windows_are_not_divided():
    """y[2 i + j], j < 3: iterations i and i + 1 both write y[2 i + 2]."""
    i, j = IVar("i", 4, 0), IVar("j", 3, 1)
    loop = nest([i, j], Store("y", aff((i, 2), (j, 1)), "+=", Load("x", aff((i, 3), (j, 1)))))
    assert not divisible(loop)
    divided = check((loop,), "y")
    assert divided == (OnePart((loop,)),)


def test_reading_another_iterations_output_is_not_divided():
    """y[i + 1] = y[i] * x[i]: iteration i reads what i - 1 wrote."""
    i = IVar("i", 5, 0)
    loop = For(i, (Store("y", aff((i, 1), const=1), "=",
                         Mul(Load("y", aff((i, 1))), Load("x", aff((i, 1))))),))
    assert not divisible(loop)
    check((loop,), "y")


def test_reading_its_own_window_is_divided():
    i, j = IVar("i", 4, 0), IVar("j", 3, 1)
    loop = nest([i, j], Store("y", aff((i, 3), (j, 1)), "=",
                              Mul(Load("y", aff((i, 3), (j, 1))), Load("x", aff((j, 1))))))
    assert divisible(loop)


def test_a_second_loop_reads_the_first_after_a_barrier():
    """y[0..6) written by a divided loop, then y[6..11) from y[1..6) by thread 0 (the second
    loop reads y outside the window it writes, so it is not divided): a barrier between them.
    Without it, thread 0 would read y[3..6) while thread 1 writes it."""
    i, k = IVar("i", 6, 0), IVar("k", 5, 1)
    first = For(i, (Store("y", aff((i, 1)), "=", Load("x", aff((i, 1)))),))
    second = For(k, (Store("y", aff((k, 1), const=6), "=", Load("y", aff((k, 1), const=1))),))
    divided = check((first, second), "y")
    assert divided == (Divided(first), Barrier(), OnePart((second,)))
    with pytest.raises(Race):
        run_parts((divided[0], divided[2]), "y", 2, (1, 0))


def test_scalar_locals_and_top_level_declarations_run_on_one_thread():
    i = IVar("i", 4, 0)
    acc = (Decl("s", Lit(0.0)), For(i, (Acc("s", Load("x", aff((i, 1)))),)),
           Store("y", Affine.of(0), "=", Local("s")))
    assert divide_among_threads(acc) == (OnePart(acc),)
    # a loop that adds into a local declared outside it is not divisible: y[i] = x[0] + ... +
    # x[i] carries s from one iteration to the next
    prefix = For(i, (Acc("s", Load("x", aff((i, 1)))), Store("y", aff((i, 1)), "=", Local("s"))))
    assert not divisible(prefix)
    assert divisible(For(i, (Decl("s", Lit(0.0)), *prefix.body)))     # a local of each iteration


def test_the_divided_loop_inside_a_div_is_not_divided():
    """y[i div 3 + j]: iterations 0, 1 and 2 write the same elements."""
    i, j = IVar("i", 6, 0), IVar("j", 2, 1)
    loop = nest([i, j], Store("y", idiv(aff((i, 1)), 3) + aff((j, 1)), "=",
                              Load("x", aff((j, 1)))))
    assert not divisible(loop)
    check((loop,), "y")


def test_the_lane_loop_and_single_iterations_stay_whole():
    lane, one = IVar("l", 8, 0), IVar("u", 1, 1)
    lanes = For(lane, (Store("y", aff((lane, 1)), "=", Load("x", aff((lane, 1)))),))
    assert divisible(lanes) and not divisible(lanes, lane)
    assert divide_among_threads((lanes,), lane) == (OnePart((lanes,)),)
    assert not divisible(For(one, (Store("y", aff((one, 1)), "=", Lit(1.0)),)))


def test_a_block_buffer_inside_the_loop_is_private():
    """A register block (extract/passes/registers.py) is a local buffer of each iteration."""
    o, q, t = IVar("o", 3, 0), IVar("q", 4, 1), IVar("t", 2, 2)
    body = (Buffer("acc_", 4),
            For(q, (Store("acc_", aff((q, 1)), "=", Load("y", aff((o, 4), (q, 1)))),)),
            For(t, (For(q, (Store("acc_", aff((q, 1)), "+=",
                                  Mul(Load("x", aff((t, 4), (q, 1))), Load("k", aff((o, 2), (t, 1))))),)),)),
            For(q, (Store("y", aff((o, 4), (q, 1)), "=", Load("acc_", aff((q, 1)))),)))
    loop = For(o, body)
    assert divisible(loop)
    check((For(IVar("z", 12, 3), (Store("y", aff((IVar("z", 12, 3), 1)), "=", Lit(0.0)),)), loop),
          "y")


@pytest.mark.parametrize("nparts", [2, 3])
def test_the_interpreter_sees_a_race(nparts):
    """The checker itself: a loop divided although its iterations overlap is caught."""
    i, j = IVar("i", 4, 0), IVar("j", 3, 1)
    loop = nest([i, j], Store("y", aff((i, 2), (j, 1)), "+=", Load("x", aff((i, 3), (j, 1)))))
    with pytest.raises(Race):
        for order in itertools.permutations(range(nparts)):
            run_parts((Divided(loop),), "y", nparts, order)


def test_border_nests_at_other_constants_share_one_window():
    """A padded convolution's rows: the interior y[i, 1 + j'] (j' < 4) and the borders y[i, 0]
    and y[i, 5] of each row i: one window of 6 per row, so the rows divide."""
    i, j, b = IVar("i", 4, 0), IVar("j", 4, 1), IVar("b", 1, 2)
    body = (Store("y", aff((i, 6)), "=", Load("x", aff((i, 1)))),
            For(j, (Store("y", aff((i, 6), (j, 1), const=1), "=", Load("x", aff((j, 1)))),)),
            Store("y", aff((i, 6), const=5), "=", Load("x", aff((i, 1), const=1))))
    loop = For(i, body)
    assert divisible(loop)
    check((loop,), "y")
    # one more element and the rows overlap
    wide = For(i, body + (Store("y", aff((i, 6), const=6), "=", Lit(1.0)),))
    assert not divisible(wide)


def test_a_loop_reusing_the_divided_variable_is_not_divided():
    """for i: for i (shadowing): y[i] += ...: every outer iteration writes all of y."""
    i = IVar("i", 4, 0)
    loop = For(i, (For(i, (Store("y", aff((i, 1)), "+=", Load("x", aff((i, 1)))),)),))
    assert not divisible(loop)
    check((loop,), "y")


def test_a_buffer_is_private_to_its_block_only():
    """A buffer declared in one inner loop does not make the same name private in a sibling:
    there the name is an array like any other (here y, which iteration i writes all of)."""
    i, q = IVar("i", 3, 0), IVar("q", 2, 1)
    loop = For(i, (For(q, (Buffer("y", 2), Store("y", aff((q, 1)), "=", Lit(0.0)))),
                   Store("z", aff((i, 1)), "=", Load("x", aff((i, 1)))),
                   Store("y", Affine.of(0), "+=", Load("x", aff((i, 1))))))
    assert not divisible(loop)


def test_a_kernels_own_buffers_are_filled_on_every_thread():
    """extract/passes/winograd.py's transformed rows: a buffer at the top of a kernel, filled from
    what the kernel does not write, is filled by every thread (each its own copy, the same)
    and the rest divided. Not when a later statement writes the buffer (each thread would
    update its own copy, for its share only: a reviewer's counterexample), nor when the fill
    reads what the kernel writes, nor when nothing after it is divided."""
    i, j = IVar("i", 8, 0), IVar("j", 8, 1)
    buf = Buffer("b", 8)
    fill = For(i, (Store("b", aff((i, 1)), "=", Load("x", aff((i, 1)))),))
    use = For(j, (Store("y", aff((j, 1)), "=",
                        Mul(Load("b", aff((j, 1))), Load("w", aff((j, 1))))),))
    parts = check((buf, fill, use), "y")
    assert parts[:2] == (buf, fill) and isinstance(parts[2], Divided)
    bump = For(i, (Store("b", aff((i, 1)), "+=", Lit(1)),))
    mirror = For(j, (Store("z", aff((j, 1)), "=", Load("b", aff((j, -1), const=7))),))
    kernel = (buf, fill, use, bump, mirror)
    assert divide_among_threads(kernel) == (OnePart(kernel),)
    fill_y = For(i, (Store("b", aff((i, 1)), "=", Load("y", aff((i, 1)))),))
    assert divide_among_threads((buf, fill_y, use)) == (OnePart((buf, fill_y, use)),)
    total = For(j, (Store("y", Affine.of(0), "+=", Load("b", aff((j, 1)))),))
    assert divide_among_threads((buf, fill, total)) == (OnePart((buf, fill, total)),)
