"""split_div_loops on hand-built loop nests: ``v / d`` and ``v % d`` indices become affine, the
statements run on the same elements in the same order (a trace of every executed store and
load, before and after), and loops that cannot be split are kept."""
from __future__ import annotations

import itertools

from extract.ir.code import Affine, For, IDiv, IMod, IVar, If, Load, Mul, Store, cmp_eq, idiv, imod
from extract.passes.split import _atoms, split_div_loops


def aff(*terms, const: int = 0) -> Affine:
    out = Affine.of(const)
    for v, k in terms:
        out = out + (v if isinstance(v, Affine) else Affine.of(v)).scale(k)
    return out


def trace(stmts, env=None) -> list:
    """(array, offset) of every load and store, in execution order."""
    env = env or {}
    out = []

    def ev(a: Affine) -> int:
        r = a.subst(env)
        assert r.is_const, r
        return r.const

    def loads(e):
        if isinstance(e, Load):
            return [(e.array, ev(e.offset))]
        if isinstance(e, Mul):
            return loads(e.a) + loads(e.b)
        return []

    for s in stmts:
        if isinstance(s, For):
            for i in range(s.var.extent):
                out += trace(s.body, {**env, s.var: Affine.of(i)})
        elif isinstance(s, If):
            if all(ev(cmp.a) == 0 if cmp.op == "eq" else ev(cmp.a) >= 0 for cmp in s.cond):
                out += trace(s.body, env)
        elif isinstance(s, Store):
            out += loads(s.value) + [(s.array, ev(s.offset))]
    return out


def pool_backward():
    """d_c1[j1, j2] = d_s1[j1 / 2, j2 / 2] * c[j1, j2] (a 2x2 pool's backward, 6 x 8)."""
    j1, j2 = IVar("j1", 6, 0), IVar("j2", 8, 1)
    src = aff((idiv(Affine.of(j1), 2), 4), (idiv(Affine.of(j2), 2), 1))
    st = Store("d_c1", aff((j1, 8), (j2, 1)), "=",
               Mul(Load("d_s1", src), Load("c", aff((j1, 8), (j2, 1)))))
    return (For(j1, (For(j2, (st,)),)),)


def test_div_indices_become_affine_in_the_same_order():
    before = pool_backward()
    assert any(isinstance(a, IDiv) for a in _atoms(before))
    after = split_div_loops(before)
    assert _atoms(after) == set()
    names = []
    s = after[0]
    while isinstance(s, For):
        names.append((s.var.name, s.var.extent))
        s = s.body[0]
    assert names == [("j1_q", 3), ("j1_r", 2), ("j2_q", 4), ("j2_r", 2)]
    assert trace(after) == trace(before)


def test_new_loop_variables_avoid_the_models_names():
    """A model's array named j1_q would be hidden by a C local j1_q."""
    before = pool_backward()
    after = split_div_loops(before, taken={"j1_q", "j1_q_", "j2_r", "c"})
    names, s = [], after[0]
    while isinstance(s, For):
        names.append(s.var.name)
        s = s.body[0]
    assert names == ["j1_q__", "j1_r", "j2_q", "j2_r_"]
    assert trace(after) == trace(before)


def test_mod_guard_is_split_and_keeps_the_same_terms():
    # acc[i] += x[t] for t < 6 with t % 2 == i: the guard reads t only through mod 2
    i, t = IVar("i", 2, 0), IVar("t", 6, 1)
    st = Store("y", Affine.of(i), "+=", Mul(Load("x", Affine.of(t)), Load("w", Affine.of(i))))
    guard = If((cmp_eq(Affine.of(i) - imod(Affine.of(t), 2)),), (st,))
    before = (For(i, (For(t, (guard,)),)),)
    assert any(isinstance(a, IMod) for a in _atoms(before))
    after = split_div_loops(before)
    assert _atoms(after) == set()
    assert trace(after) == trace(before)


def test_loops_that_cannot_be_split_are_kept():
    # extent 7 is not a multiple of 2; the div of a sum j + k with k free stays a div after
    # splitting j by 3 (so j is not split), and a loop with extra bounds is left alone
    j, k = IVar("j", 7, 0), IVar("k", 6, 1)
    st = Store("y", aff((j, 6), (k, 1)), "=", Load("x", aff((idiv(Affine.of(j), 2), 1))))
    odd = (For(j, (For(k, (st,)),)),)
    assert split_div_loops(odd) == odd
    j6 = IVar("j", 6, 0)
    st2 = Store("y", aff((j6, 6), (k, 1)), "=",
                Load("x", idiv(aff((j6, 1), (k, 1)), 3)))
    nest = (For(j6, (For(k, (st2,)),)),)
    out = split_div_loops(nest)
    assert out[0].var == j6                       # j6 + k over 3 cannot lose its div by j6
    assert trace(out) == trace(nest)
    st3 = Store("y", aff((k, 6), (j6, 1)), "=", Load("x", idiv(Affine.of(j6), 2)))
    bounded = (For(k, (For(j6, (st3,), hi=(aff((k, 1), const=1),)),)),)
    assert split_div_loops(bounded) == bounded


def test_every_point_is_visited_once():
    before = pool_backward()
    stores = [off for arr, off in trace(split_div_loops(before)) if arr == "d_c1"]
    assert sorted(stores) == list(range(48)) and len(set(stores)) == 48
    assert list(itertools.islice(stores, 3)) == [0, 1, 2]
