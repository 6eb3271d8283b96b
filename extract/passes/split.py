"""split_div_loops: a loop whose variable is only read through ``div d`` / ``mod d`` becomes two
loops, ``v = d * q + r``, so that every index is affine again (compilers vectorise affine
indices, not ``v / 2``).

Before (the backward of a 2x2 average pool)::

    for j1 < 24:  for j2 < 24:
        d_c1[j1 * 24 + j2] = d_s1[j1 / 2 * 12 + j2 / 2] / 4;

After (same iterations in the same order)::

    for j1_q < 12:  for j1_r < 2:  for j2_q < 12:  for j2_r < 2:
        d_c1[j1_q * 48 + j1_r * 24 + j2_q * 2 + j2_r] = d_s1[j1_q * 12 + j2_q] / 4;

Applied to a loop without extra bounds whose extent is a multiple of ``d`` (and larger), and
only when the substitution removes every ``div`` / ``mod`` of the variable (the interval rules
of ``code.idiv`` decide); otherwise the loop is kept. The iterations run in the same order, so
the results are bitwise those of the unsplit loop. Not applied to CUDA kernels (their parallel
loops are threads).
"""
from __future__ import annotations

from ..ir import code as c
from ..ir.code import Affine, For, If, IVar
from ..ir.ir import fresh_name


def _affine_atoms(a: Affine, out: set) -> None:
    for atom, _ in a.terms:
        if isinstance(atom, (c.IDiv, c.IMod)):
            out.add(atom)
            _affine_atoms(atom.a, out)


def _expr_atoms(e, out: set) -> None:
    if isinstance(e, c.Load):
        _affine_atoms(e.offset, out)
    elif isinstance(e, (c.Lit, c.Local)):
        return
    elif isinstance(e, (c.Add, c.Mul, c.Max)):
        _expr_atoms(e.a, out)
        _expr_atoms(e.b, out)
    elif isinstance(e, c.Select):
        for cmp in e.cond:
            _affine_atoms(cmp.a, out)
        _expr_atoms(e.a, out)
    elif isinstance(e, c.Reduce):
        _expr_atoms(e.body, out)
    else:
        _expr_atoms(e.a, out)


def _atoms(stmts) -> set:
    """Every ``div`` / ``mod`` atom in the statements (offsets, bounds, conditions)."""
    out: set = set()
    for s in stmts:
        if isinstance(s, For):
            for a in (*s.lo, *s.hi):
                _affine_atoms(a, out)
            out |= _atoms(s.body)
        elif isinstance(s, If):
            for cmp in s.cond:
                _affine_atoms(cmp.a, out)
            out |= _atoms(s.body)
        elif isinstance(s, c.Store):
            _affine_atoms(s.offset, out)
            _expr_atoms(s.value, out)
        elif isinstance(s, (c.Decl, c.Acc, c.Assign)):
            _expr_atoms(s.value, out)
    return out


def _split(loop: For, taken) -> For:
    v = loop.var
    if loop.lo or loop.hi:
        return loop
    divisors = sorted({a.d for a in _atoms(loop.body) if v in a.a.ivars()})
    for d in divisors:
        if d < 2 or v.extent % d or v.extent == d:
            continue
        q = IVar(fresh_name(f"{v.name}_q", taken), v.extent // d, v.rank)
        r = IVar(fresh_name(f"{v.name}_r", taken), d, v.rank)
        body = c.subst_stmts(loop.body, {v: Affine.of(q).scale(d) + Affine.of(r)})
        if any(q in a.a.ivars() or r in a.a.ivars() for a in _atoms(body)):
            continue
        return For(q, (For(r, body, loop.parallel),), loop.parallel)
    return loop


def split_div_loops(stmts, taken=frozenset()) -> tuple:
    """``taken``: names the new loop variables must not take (the model's arrays: a C local
    of that name would hide the array)."""
    out = []
    for s in stmts:
        if isinstance(s, For):
            out.append(_split(For(s.var, split_div_loops(s.body, taken), s.parallel, s.lo, s.hi),
                              taken))
        elif isinstance(s, If):
            out.append(If(s.cond, split_div_loops(s.body, taken)))
        else:
            out.append(s)
    return tuple(out)
