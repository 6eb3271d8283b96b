"""block_sums: a long sum into one place (a scalar local, or one element of an output) is added
up in blocks of about ``BLOCK`` terms, each block into a partial sum of its own, and the partial
sums are added up the same way: the rounding error of a sum of ``n`` terms grows as
``BLOCK + n / BLOCK`` roundings instead of ``n`` (issue #35: the gradient of a log-sum-exp over
1,280,000 elements with the maximum inside is ``1 - Σ_j softmax_j`` at the argmax, which a
sequential sum gets wrong by 3e-12 relative in float64).

Before (``a3_d_m``, a gradient entry accumulated in place; 1,280,000 terms)::

    for (int t0 = 0; t0 < 1280000; t0++) {
        a3_d_m[0] += -(d[0] * (1 / acc0) * exp(x[t0] - m[0]));
    }

After::

    for (int t0_q = 0; t0_q < 1250; t0_q++) {
        real part0 = 0;
        for (int t0_r = 0; t0_r < 1024; t0_r++) {
            part0 += -(d[0] * (1 / acc0) * exp(x[t0_q * 1024 + t0_r] - m[0]));
        }
        a3_d_m[0] += part0;
    }

Applied to a perfect nest of sequential loops without extra bounds (not a CUDA thread index)
whose only statement, at the bottom, adds a term into one place the nest does not move
(``acc += v`` with ``v`` not reading ``acc``, or ``y[k] += v`` with ``k`` free of the nest's
variables and ``v`` not reading ``y``), when the nest runs at least ``LONG`` terms. The inner
loops of the nest that make up about ``BLOCK`` terms become the block (the loop where the
product of the inner extents first reaches ``BLOCK`` is split into ``q`` and ``r``, the last
block clipped by a bound when the extent is not a multiple); when the blocks are still at least
``LONG``, the loops over them are blocked again (three levels for 4 billion terms). The zoo's
longest such sum has 1,024 terms (below ``LONG``): its kernels are unchanged. The terms are the
same and each is added once, so over the prime field of extract/check/field.py the value is
exactly that of the sequential sum; in floating point only the association changes. Sums
accumulated into a whole row of outputs at once (``for t: for j: y[j] += ...``) are left as
they are: their partial sums would need a buffer as large as the row.
"""
from __future__ import annotations

from math import prod

from ..ir.code import (ZERO, Acc, Affine, Decl, For, If, IVar, Local, Store, free_locals, loads,
                       names_in, subst_stmts)
from ..ir.ir import Names, fresh_name

BLOCK = 1024    # terms per block
LONG = 4096     # a sum of fewer terms is left as it is


def _target(s):
    """(update, ivars of the place, what the term must not read) of an accumulating statement,
    or None: ``update(e)`` adds ``e`` into the same place."""
    if isinstance(s, Acc):
        return (lambda e: Acc(s.name, e)), set(), ("local", s.name)
    if isinstance(s, Store) and s.op == "+=":
        return (lambda e: Store(s.array, s.offset, "+=", e)), s.offset.ivars(), ("array", s.array)
    return None


def _reads(s, what) -> bool:
    kind, name = what
    return name in (free_locals(s.value) if kind == "local" else loads(s.value))


def _nest(s: For):
    """The loops of the perfect nest at ``s`` (outermost first) and the statement at the bottom
    that adds into a place none of them moves, or None."""
    loops, cur = [], s
    while isinstance(cur, For) and not cur.parallel and not cur.lo and not cur.hi:
        loops.append(cur)
        if len(cur.body) != 1:
            return None
        cur = cur.body[0]
    target = _target(cur)
    if not loops or target is None:
        return None
    _, place, what = target
    if place & {f.var for f in loops} or _reads(cur, what):
        return None
    return loops, cur


def _wrap(loops, body: tuple) -> tuple:
    for f in reversed(loops):
        body = (For(f.var, body, False, f.lo, f.hi),)
    return body


class _Namer:
    def __init__(self, taken: Names):
        self.taken = taken

    def __call__(self, base: str) -> str:
        name = fresh_name(base, self.taken)
        self.taken.add(name)
        return name

    def local(self) -> str:
        k = 0
        while f"part{k}" in self.taken:
            k += 1
        return self(f"part{k}")


def _split(loops, name: _Namer):
    """(outer loops, inner loops, substitution): the inner loops run about BLOCK terms."""
    j, inner = len(loops), 1
    while j > 0 and inner * loops[j - 1].var.extent < BLOCK:
        j -= 1
        inner *= loops[j].var.extent
    # loops[j:] run `inner` < BLOCK terms; loops[j - 1] is where BLOCK is reached
    v = loops[j - 1].var
    b = -(-BLOCK // inner)               # iterations of v per block
    if b >= v.extent:                    # v whole is a block (at most 2 * BLOCK terms)
        return loops[:j - 1], loops[j - 1:], {}
    q = IVar(name(f"{v.name}_q"), -(-v.extent // b), v.rank)
    r = IVar(name(f"{v.name}_r"), b, v.rank)
    at = Affine.of(q).scale(b) + Affine.of(r)
    hi = () if v.extent % b == 0 else (Affine.of(v.extent) - Affine.of(q).scale(b),)
    outer = [*loops[:j - 1], For(q, (), False)]
    inner_loops = [For(r, (), False, (), hi), *loops[j:]]
    return outer, inner_loops, {v: at}


def _block(loops, body, update, name: _Namer) -> tuple:
    """The statements computing ``update(Σ over loops of the value body gives)``; ``body(u)``
    is the statements of one iteration that add its value with ``u``."""
    if prod(f.var.extent for f in loops) < LONG:
        return _wrap(loops, body(update))
    outer, inner, at = _split(loops, name)
    part = name.local()
    block = _wrap(inner, subst_stmts(body(lambda e: Acc(part, e)), at))
    return _block(outer, lambda u: (Decl(part, ZERO), *block, u(Local(part))), update, name)


def _walk(stmts, name: _Namer) -> tuple:
    out = []
    for s in stmts:
        found = _nest(s) if isinstance(s, For) else None
        if found is not None:
            loops, bottom = found
            update = _target(bottom)[0]
            out.extend(_block(loops, lambda u, v=bottom.value: (u(v),), update, name))
        elif isinstance(s, For):
            out.append(For(s.var, _walk(s.body, name), s.parallel, s.lo, s.hi))
        elif isinstance(s, If):
            out.append(If(s.cond, _walk(s.body, name)))
        else:
            out.append(s)
    return tuple(out)


def block_sums(stmts, taken=frozenset()) -> tuple:
    """``taken``: names the new loop variables and partial sums must not take (the model's
    arrays); the kernel's own names are added."""
    return _walk(tuple(stmts), _Namer(Names(taken, names_in(stmts))))
