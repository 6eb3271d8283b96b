"""block_sums (extract/passes/blocksum.py): on hand-built nests, executed exactly (every term
added once, into the right place, blocks of the size the pass promises, at every level) and
left alone where it does not apply; through the generated C, a long float32 sum is as accurate
as a blocked sum is and a sequential one is not. The field validation and the CUDA on the host
of a blocked kernel (tests/data/lse_long.json) are in tests/test_validate.py and
tests/test_cuda_host.py, which take every dump of tests/data."""
from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pytest

import dumpgen
from conftest import DTYPES, array_view, run_single
from extract.ir.names import c_model
from extract.ir.code import (ZERO, Acc, Add, Affine, Decl, For, IVar, Lit, Load, Local, Mul,
                             Store, names_in)
from extract.passes import blocksum
from extract.passes.blocksum import block_sums
from loopnest import aff, nest
from test_extract_numerics import built


def execute(stmts, x):
    """Run statements over integers: ``x`` is every input array's value (``Load`` of another
    array reads what the statements stored). Returns (stores by (array, offset), loads of x by
    offset as a Counter, the most terms any one ``+=`` target or local received)."""
    mem, local, adds, read = {}, {}, Counter(), Counter()
    current = {}          # a local's name -> the key of its latest declaration in ``adds``
    def value(e, env):
        if isinstance(e, Lit):
            return e.value
        if isinstance(e, Local):
            return local[e.name]
        if isinstance(e, Load):
            i = e.offset.subst(env).const
            if (e.array, i) in mem:
                return mem[(e.array, i)]
            read[i] += 1
            return x[i]
        if isinstance(e, Add):
            return value(e.a, env) + value(e.b, env)
        if isinstance(e, Mul):
            return value(e.a, env) * value(e.b, env)
        raise TypeError(e)

    def run(ss, env):
        for s in ss:
            if isinstance(s, For):
                lo = max([0, *(b.subst(env).const for b in s.lo)])
                hi = min([s.var.extent, *(b.subst(env).const for b in s.hi)])
                for k in range(lo, hi):
                    run(s.body, {**env, s.var: Affine.of(k)})
            elif isinstance(s, Decl):
                local[s.name] = value(s.value, env)
                current[s.name] = ("local", s.name, len(adds))
                adds[current[s.name]] = 0
            elif isinstance(s, Acc):
                local[s.name] += value(s.value, env)
                adds[current[s.name]] += 1
            elif isinstance(s, Store):
                key = (s.array, s.offset.subst(env).const)
                v = value(s.value, env)
                mem[key] = v if s.op == "=" else mem.get(key, 0) + v
                if s.op == "+=":
                    adds[key] += 1
            else:
                raise TypeError(s)
    run(stmts, {})
    return mem, read, max(adds.values(), default=0)


def loops_of(stmts) -> list:
    """(name, extent, bounded) of every loop, in order."""
    out = []
    for s in stmts:
        if isinstance(s, For):
            out.append((s.var.name, s.var.extent, bool(s.lo or s.hi)))
            out += loops_of(s.body)
    return out


def sum_into_local(n: int) -> tuple:
    t = IVar("t", n)
    return (Decl("acc", ZERO), nest([t], Acc("acc", Load("x", aff((t, 1))))),
            Store("y", Affine.of(0), "=", Local("acc")))


def test_a_long_sum_into_a_local_is_added_in_blocks_and_each_term_once():
    n = 10_007                                    # prime: the last block is short
    x = [(7 * i * i + 3) % 1001 for i in range(n)]
    before = sum_into_local(n)
    after = block_sums(before)
    assert loops_of(after) == [("t_q", 10, False), ("t_r", 1024, True)]
    mem, read, most = execute(after, x)
    assert mem[("y", 0)] == sum(x)
    assert read == Counter(range(n))
    assert most <= blocksum.BLOCK
    assert execute(before, x)[2] == n             # what it was: one chain of n additions


def test_every_level_is_blocked_until_the_partial_sums_are_few(monkeypatch):
    """With blocks of 4 and sums of 16 or more blocked: a nest of 7 x 13 terms into one output
    element becomes blocks of 4 terms, blocks of 4 blocks, and 7 of those added into y[3]."""
    monkeypatch.setattr(blocksum, "BLOCK", 4)
    monkeypatch.setattr(blocksum, "LONG", 16)
    a, b = IVar("a", 7), IVar("b", 13)
    x = list(range(1, 7 * 13 + 1))
    before = (Store("y", Affine.of(3), "=", Lit(5)),
              nest([a, b], Store("y", Affine.of(3), "+=", Load("x", aff((a, 13), (b, 1))))))
    after = block_sums(before)
    assert [n for n, _, _ in loops_of(after)] == ["a", "b_q", "b_r"]
    mem, read, most = execute(after, x)
    assert mem[("y", 3)] == 5 + sum(x)
    assert read == Counter(range(7 * 13))
    assert most == 7                               # y[3]: one term per a; blocks 4 and 4


def test_a_nest_of_several_loops_splits_where_the_block_is_reached():
    """100 x 100 terms: the inner loop is 100 terms, so the outer one is split by 11 (1,100
    terms a block), its last block of one row."""
    i, j = IVar("i", 100), IVar("j", 100)
    before = (Decl("acc", ZERO), nest([i, j], Acc("acc", Load("x", aff((i, 100), (j, 1))))),
              Store("y", Affine.of(0), "=", Local("acc")))
    after = block_sums(before)
    assert loops_of(after) == [("i_q", 10, False), ("i_r", 11, True), ("j", 100, False)]
    x = [(i * 31) % 97 for i in range(10_000)]
    mem, read, most = execute(after, x)
    assert mem[("y", 0)] == sum(x) and read == Counter(range(10_000)) and most == 1100


@pytest.mark.parametrize("what", ["short", "row", "reads itself", "parallel", "bounded"])
def test_left_alone(what):
    t, j = IVar("t", 5000), IVar("j", 4)
    term = Load("x", aff((t, 1)))
    cases = {
        "short": sum_into_local(blocksum.LONG - 1),
        # a row of outputs at once: the partial sums would need a buffer as long as the row
        "row": (nest([t, j], Store("y", aff((j, 1)), "+=", Load("x", aff((t, 4), (j, 1))))),),
        "reads itself": (Decl("acc", ZERO), nest([t], Acc("acc", Mul(Local("acc"), term)))),
        "parallel": (Decl("acc", ZERO), For(t, (Acc("acc", term),), parallel=True)),
        "bounded": (Decl("acc", ZERO), For(t, (Acc("acc", term),), hi=(Affine.of(4000),))),
    }
    assert block_sums(cases[what]) == cases[what]


def test_the_new_names_avoid_the_models_and_the_kernels():
    before = (Decl("part0", ZERO), *sum_into_local(5000))
    after = block_sums(before, taken={"t_q", "part1"})
    assert [n for n, _, _ in loops_of(after)] == ["t_q_", "t_r"]
    assert {"part0", "part2"} <= names_in(after) and "part1" not in names_in(after)


@pytest.mark.parametrize("where", ["one sample", "lanes"])
def test_a_long_float32_sum_is_as_accurate_as_blocks_make_it(kernel_cache, where):
    """The mean of 400,000 values in [0, 1) in float32, as the generated C computes it (the
    one-sample kernels, and the batch entry point's lane kernels), against the exact sum of the
    same float32 values: within 2e-6 relative. Added one after the other in float32 the error
    is 1.1e-5 for these values (the C without the pass, and NumPy's cumsum); in blocks of
    1,024, 4.0e-7."""
    n = 400_000
    b = dumpgen.Builder("longsum")
    w = b.param("w", n)
    s = b.let("s", dumpgen.sum_(n, lambda i: w[i]))
    b.seed(s, dumpgen.one(1))
    b.autodiff()
    b.output("prediction", s)
    b.output("loss", s)
    d = b.build()
    m, _, ffi, lib = built(d, "f32")
    values = np.random.default_rng(3).random(n).astype(np.float32)
    exact = math.fsum(values.astype(np.float64))
    if where == "one sample":
        got = float(run_single(ffi, lib, m, {"w": values}, "f32")["s"][0])
    else:
        M = c_model(m.name)
        wp, xs = ffi.new(f"{M}_params *"), ffi.new(f"{M}_inputs[1]")
        array_view(ffi, wp, DTYPES["f32"])[:] = values
        ws = ffi.new("char[]", getattr(lib, f"{M}_workspace_size")(1))
        out = ffi.new("real[]", 1)
        getattr(lib, f"{M}_batch_predict")(wp, xs, 1, 1, ws, out)
        got = float(out[0])
    assert abs(got - exact) / exact < 2e-6, (got, exact)
