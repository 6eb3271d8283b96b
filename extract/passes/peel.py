"""peel_bounds: in an accumulation nest whose output loops have bounds (a padded convolution:
the output rows a kernel row reaches depend on that row), split each such loop into the part
every iteration of the loops outside reaches (no bounds there) and the border parts before and
after it, each a nest of its own; the interior is then a perfect nest for block_accumulators
(extract/passes/registers.py).

Before (``z1``, LeNet-5's first convolution, padding 2; 28 x 28 outputs)::

    for t0 < 5:  for t1 < 5:
      for j0 in [max(0, 2 - t0), min(28, 30 - t0)):
        for j1 in [max(0, 2 - t1), min(28, 30 - t1)):
          z1[j0 * 28 + j1] += x[(j0 + t0 - 2) * 28 + j1 + t1 - 2] * k1[t0 * 5 + t1];

After (rows 2..25 are reached by every t0; columns likewise)::

    for t0 < 5:  for t1 < 5:  for j0 in [max(0, 2 - t0), 2):  for j1 in [...): (same)
    for t0 < 5:  for t1 < 5:  for j0_p < 24:                  -- j0 = j0_p + 2
        for j1 in [max(0, 2 - t1), 2):  (same)
    for t0 < 5:  for t1 < 5:  for j0_p < 24:  for j1_p < 24:  -- the interior, no bounds
        z1[(j0_p + 2) * 28 + j1_p + 2] += x[(j0_p + t0) * 28 + j1_p + t1] * k1[t0 * 5 + t1];
    for t0 < 5:  for t1 < 5:  for j0_p < 24:  for j1 in [26, min(28, 30 - t1)):  (same)
    for t0 < 5:  for t1 < 5:  for j0 in [26, min(28, 30 - t0)):  for j1 in [...): (same)

Each output element receives exactly the terms it received before, in the same order: the
output offset is one-to-one on the output loops (checked as in registers.py), so an element
fixes the value of the split loop and lies in one part only; the parts write disjoint elements
and read nothing they write (the value does not load the output), so running them one after
the other changes no element's sequence of terms. The results are bitwise those of the nest
before (the tests run both on a term-recording interpreter).

Applied to a perfect ``+=`` nest (one statement per level) whose bounded output loop has bounds
in the variables of loops outside it alone, when the interior holds at least ``MIN_INTERIOR``
iterations and at least half the loop's extent; the border parts keep the bounds on their side
and end at the interior's edge. Bounds on reduction loops (a padded convolution's weight
gradient) are left alone: splitting them would change the order of an element's terms.
"""
from __future__ import annotations

from ..ir.code import Affine, For, If, IVar, Store, subst_stmts
from .registers import _Names, _one_to_one, _perfect

MIN_INTERIOR = 4     # iterations the interior must keep to be worth a nest of its own


def _interior(f: For, inside: set):
    """``[lo, hi)``: the values of f's variable that every point of the loops outside reaches
    (over the whole range of each variable a bound mentions: a superset of the points that
    run), or None when a bound mentions f's variable or a loop inside it, or nothing is
    gained."""
    lo, hi = 0, f.var.extent
    for b in f.lo:
        if b.ivars() & inside:
            return None
        lo = max(lo, b.range[1])
    for b in f.hi:
        if b.ivars() & inside:
            return None
        hi = min(hi, b.range[0])
    n = f.var.extent
    if hi - lo < MIN_INTERIOR or 2 * (hi - lo) < n or (lo == 0 and hi == n):
        return None
    return lo, hi


def _rebuild(loops: list, k: int, f: For, store: Store, m: dict) -> For:
    """The nest with loop k replaced by f and the substitution m applied inside it."""
    inner = (store,)
    for g in reversed(loops[k + 1:]):
        inner = (For(g.var, inner, g.parallel, g.lo, g.hi),)
    body = subst_stmts(inner, m) if m else inner
    out = For(f.var, body, f.parallel, f.lo, f.hi)
    for g in reversed(loops[:k]):
        out = For(g.var, (out,), g.parallel, g.lo, g.hi)
    return out


def _peel(s: For, names: _Names):
    found = _perfect(s, bounds=True)
    if found is None:
        return None
    loops, store = found
    vs = [f.var for f in loops]
    outs = [v for v in vs if store.offset.coeff(v) != 0]
    if not _one_to_one(store.offset, set(vs), outs):
        return None
    for k, f in enumerate(loops):
        if f.var not in outs or not (f.lo or f.hi):
            continue
        cut = _interior(f, set(vs[k:]))
        if cut is None:
            continue
        lo, hi = cut
        v = f.var
        before, after = [], []
        if lo > 0:      # [max(0, *lo), lo): v itself, of extent lo; its upper bounds are met
            head = IVar(names.fresh(f"{v.name}_h"), lo, v.rank)
            before.append(_rebuild(loops, k, For(head, (), f.parallel, f.lo, ()), store,
                                   {v: Affine.of(head)}))
        mid = IVar(names.fresh(f"{v.name}_p"), hi - lo, v.rank)
        interior = _rebuild(loops, k, For(mid, (), f.parallel), store,
                            {v: Affine.of(mid) + Affine.of(lo)})
        if hi < v.extent:   # [hi, min(extent, *hi)): v = hi + tail; its lower bounds are met
            tail = IVar(names.fresh(f"{v.name}_t"), v.extent - hi, v.rank)
            after.append(_rebuild(loops, k, For(tail, (), f.parallel, (),
                                                tuple(b - Affine.of(hi) for b in f.hi)),
                                  store, {v: Affine.of(tail) + Affine.of(hi)}))
        return before, interior, after
    return None


def peel_bounds(stmts, taken: set = frozenset()) -> tuple:
    """The statements with every eligible nest peeled (see the module doc), the interior part
    peeled again along its other bounded output loops (not the border parts: only a few rows
    or columns wide, they are left to registers.py, which blocks those whose bounds it can move
    onto the reductions); ``taken``: names a new loop variable must not take."""
    names = _Names(stmts, taken)

    def walk(ss) -> tuple:
        out = []
        for s in ss:
            if isinstance(s, For):
                peeled = _peel(s, names)
                if peeled is None:
                    out.append(For(s.var, walk(s.body), s.parallel, s.lo, s.hi))
                else:
                    before, interior, after = peeled
                    out.extend((*before, *walk((interior,)), *after))
            elif isinstance(s, If):
                out.append(If(s.cond, walk(s.body)))
            else:
                out.append(s)
        return tuple(out)
    return walk(tuple(stmts))
