"""block_accumulators: in a perfect loop nest that adds terms into an output (``+=``), keep a
block of at most ``BLOCK`` outputs (16 in two or more rows, with ``limit`` 16: below) in a local
buffer across all the loops the output does not move along (the reductions), then store the
block once. Applied to the batch (lane) kernels of
the C file before ``widen_to_lanes``, where every element is a vector of samples and the
printer types the buffer as an array of vectors, so the compiler keeps the block in registers
(bench/PROFILE.md: an accumulating ``+=`` otherwise loads and stores the output for every term).

Before (``c21``, reductions ``t1_*``, outputs ``j1``, ``j2``)::

    for t1_0 < 6:  for t1_1 < 5:  for t1_2 < 5:  for j1 < 8:  for j2 < 8:
        c21[j1 * 8 + j2] += s1[...] * k2[...];

After (the block is the 8 outputs along ``j2``)::

    for j1 < 8:
        real c21_acc[8];
        for j2 < 8:  c21_acc[j2] = c21[j1 * 8 + j2];
        for t1_0 < 6:  for t1_1 < 5:  for t1_2 < 5:  for j2 < 8:
            c21_acc[j2] += s1[...] * k2[...];
        for j2 < 8:  c21[j1 * 8 + j2] = c21_acc[j2];

Applied only to nests in *gather form*: the output offset is an affine function of some of the
loop variables (plain terms, no ``div`` / ``mod``) that is one-to-one on their ranges, and the
nest is perfect (one statement at the bottom, no guards). Then two iterations write the same
element only if they differ in the reduction loops alone, so moving output loops across
reduction loops, while the reduction loops keep their relative order, gives every element the
same terms in the same order: the results are bitwise those of the nest before (the tests
compare them).

Loops may carry extra bounds when each bound mentions a reduction loop and none mentions a
loop of the block: the bounds, as one guard around the block, become bounds of the reduction
loops again (``tighten_bounds``, each on the innermost loop it mentions), so the same points
run in the same order and every element of a block has the same ones. The output loops outside
the block then run over their whole extent: where their bounds left an element out, the block
loads it and stores it back unchanged (the array spans those extents: the loops are its
shape, and a lane kernel's buffers belong to one thread). A padded convolution's
weight gradient (LeNet-5's ``d_k1``: the kernel positions bounded by the image positions) keeps
its channels in a block, its kernel positions outside, and the image loops bounded by them::

    for i0 < 6:  for t0 < 28:  for t1 < 28:
      for k0 in [max(0, 2 - t0), min(5, 30 - t0)):  for k1 in [...):
        d_k1[i0, k0, k1] += d_z1[i0, t0, t1] * x[t0 + k0 - 2, t1 + k1 - 2];

becomes, the block along its kernel columns k1 and 3 of its channels (``_edges``: the bounds
that mention k1 tie it to t1 alone, so t1's first and last 2 iterations are written out, each
with constant bounds on k1, and the 24 between them run every k1)::

    for i0_o < 2:  for k0 < 5:
      for t0 in [max(0, 2 - k0), min(28, 30 - k0)):
        for i0_i < 3:  for k1 in [2, 5):  d_k1_acc[i0_i, k1] += ...;     -- t1 = 0
        for i0_i < 3:  for k1 in [1, 5):  d_k1_acc[i0_i, k1] += ...;     -- t1 = 1
        for t1_p < 24:  for i0_i < 3:  for k1 < 5:  d_k1_acc[i0_i, k1] += ...;
        (t1 = 26: k1 in [0, 4); t1 = 27: k1 in [0, 3))

Every element still receives its terms in the order of t0, then t1. Without the edges (more
than ``EDGE`` iterations to write out) the block is the channels alone, and every bound moves
onto the image loops.

(A padded convolution's forward has its bounds on the output loops: extract/passes/peel.py first
splits off their interior.)

The block runs along the output loop with the smallest stride (the contiguous one); a loop
longer than ``BLOCK`` is strip-mined by its largest divisor ``d`` with ``MIN_SPLIT <= d <=
BLOCK`` (``j < 24`` becomes ``j_o < 3``, ``j_i < 8``), or left unblocked when it has none. A
nest without output loops (a sum into one element) gets a block of one.

With room for more accumulators (``limit``: 16 where the processor has 32 vector registers,
AVX-512), the block also spans ``r`` rows of the output loop with the next smallest stride,
``r`` its largest divisor with ``2 <= r <= limit / d`` (``c21``: 2 rows of 8, ``j1`` becomes
``j1_o < 4``, ``j1_i < 2``), or if it has none the next output loop's (a convolution's weight
gradient: 5 outputs along the kernel's row, none of whose 5 rows divides, times 3 of its 6
channels): enough independent FMA chains to cover the latency of two FMA pipes. A sliding
window (scatter form) may then hold 24 outputs instead of 12 (LeNet-5's input gradient of its
second convolution: 10 + 5 - 1 = 14 columns).

A block or window starts from 0 instead of loading the output where the statement just before
the nest sets to 0 exactly the elements the nest adds into (``_zeroed``: compared as affine
offsets in the loops outside), and that statement goes; a window only when the windows of the
loops outside it are disjoint. The values are those of the zeroing and the loads (0 + x).

Before blocking, a loop whose body is an init of an output then its accumulation (a weight
gradient's zeroing and sum, inside the loop over its channels) is split in two where that
changes nothing (``_distribute``), so that the accumulation is one perfect nest and a block
can span that loop: with room for rows (limit 16), and at any limit in a nest that zeroes each
element on its own right before its sum (the element form of the lowering's ``dest`` loops:
a bias gradient, a padded multi-channel convolution's weight gradient), whose block would
otherwise be one element, one chain of dependent additions::

    for c < 64:  for d < 32:  for a < 3:
        dk[c, d, a] = 0;
        for j in [max(0, 1 - a), min(16, 17 - a)):  dk[c, d, a] += dz[c, j] * x[d, j + a - 1];

becomes a zeroing nest and, from c outwards, one perfect accumulation nest, which gets a
block of 4 channels d times the 3 kernel positions a (the edges of j written out).
"""
from __future__ import annotations

from .bounds import tighten_bounds
from ..ir.ir import Names, fresh_name
from ..ir.code import (Affine, Buffer, For, If, IVar, Lit, Load, Store, cmp_ge, names_in,
                   stmt_loads, subst_stmts)

BLOCK = 8        # outputs held at once: 8 vectors of accumulators + the operands fit 16 registers
MIN_SPLIT = 4    # a strip of fewer outputs than this is not worth a block
WINDOW = 12      # outputs of a sliding-window block (scatter form, see _window); twice as
                 # many with twice the limit
UNROLL = 64      # iterations of the innermost loops of a window block (the compiler unrolls them)


def _perfect(s: For, bounds: bool = False):
    """The loops of a perfect nest rooted at ``s`` and its one ``+=`` store (whose value does
    not read the output), or None; loops with extra bounds only with ``bounds``."""
    loops = []
    while isinstance(s, For):
        if (s.lo or s.hi) and not bounds or len(s.body) != 1:
            return None
        loops.append(s)
        s = s.body[0]
    if not isinstance(s, Store) or s.op != "+=" or not loops or s.array in stmt_loads((s,)):
        return None         # (a value that reads the output would see the block's stale copy)
    return loops, s


def _one_to_one(offset: Affine, nest: set, outs: list) -> bool:
    """Whether the nest's variables occur in the offset as plain terms (``outs``) only, and
    the offset takes distinct values on distinct points of them (the variables of loops
    outside the nest are constants here)."""
    terms = []
    for atom, k in offset.terms:
        if not isinstance(atom, IVar):
            if atom.a.ivars() & nest:
                return False
        elif atom in nest:
            terms.append((abs(k), atom.extent))
    reach = 0            # the largest offset the smaller strides reach together
    for k, n in sorted(terms):
        if k <= reach:
            return False
        reach += k * (n - 1)
    return True


def _split(n: int):
    if n <= BLOCK:
        return n
    for d in range(BLOCK, MIN_SPLIT - 1, -1):
        if n % d == 0:
            return d
    return None


class _Names:
    def __init__(self, stmts, taken: set):
        self.used = Names(taken, names_in(stmts))

    def fresh(self, base: str) -> str:
        name = fresh_name(base, self.used)
        self.used.add(name)
        return name


def _rows(v: IVar, most: int):
    for r in range(min(most, v.extent), 1, -1):
        if v.extent % r == 0:
            return r
    return None


def _constraints(loops: list) -> list | None:
    """The extra bounds of the loops as conditions ``a >= 0``; None if one never holds."""
    out = []
    for f in loops:
        v = Affine.of(f.var)
        for c in [*(cmp_ge(v - b) for b in f.lo),
                  *(cmp_ge(b - v - Affine.of(1)) for b in f.hi)]:
            if c is False:
                return None
            if c is not True:
                out.append(c)
    return out


def _no_guards(ss) -> bool:
    return all(not isinstance(s, If) and (not isinstance(s, For) or _no_guards(s.body))
               for s in ss)


EDGE = 8         # iterations of a reduction loop written out at its two ends (_edges)


def _edges(b: IVar, cond: list, reds: list):
    """A padded convolution's weight gradient (``d_k1[k1] += d[t1] * x[t1 + k1 - 2]`` for the
    image columns t1 that kernel column k1 reaches): when every bound that mentions the block's
    loop ``b`` is ``±b ± r + c >= 0`` for one reduction loop ``r``, the values of r at which
    they hold for every b (``[lo, hi)``) and the few before and after, at which they do not;
    ``(r, lo, hi, bounds on b, the other bounds)``, or None. The other bounds may not mention
    b, r or a reduction loop inside r."""
    on_b = [c for c in cond if b in c.a.ivars()]
    rest = [c for c in cond if b not in c.a.ivars()]
    partners = {v for c in on_b for v in c.a.ivars()} - {b}
    if len(partners) != 1:
        return None
    (r,) = partners
    if r not in reds or any(not isinstance(a, IVar) or abs(k) != 1
                            for c in on_b for a, k in c.a.terms):
        return None
    inside = set(reds[reds.index(r):])
    if any(c.a.ivars() & inside for c in rest):
        return None
    lo, hi = 0, r.extent
    for c in on_b:
        kb, kr = c.a.coeff(b), c.a.coeff(r)
        worst = c.a.const + min(0, kb * (b.extent - 1))     # the least over b
        if kr > 0:            # r + worst >= 0
            lo = max(lo, -worst)
        else:                 # worst - r >= 0
            hi = min(hi, worst + 1)
    if hi <= lo or lo + (r.extent - hi) > EDGE or (lo == 0 and hi == r.extent):
        return None
    return r, lo, hi, tuple(on_b), tuple(rest)


def _edge_body(edges, reds: list, inner: list, term: Store, names: _Names):
    """The statements over reduction loop r and those inside it, for a block along a loop
    whose bounds tie it to r (_edges): r's first ``lo`` and last iterations written out, each
    with the block's loop bounded by constants (the bounds on it, r a constant, become loop
    bounds: ``tighten_bounds``), and its interior ``[lo, hi)`` as a loop without bounds. Every
    element still gets its terms in the order of r; None if a bound does not become one."""
    r, lo, hi, on_b, _ = edges
    below = reds[reds.index(r) + 1:]

    def nest(guard: bool):
        stmt = If(on_b, (term,)) if guard else term
        for v in reversed(inner):
            stmt = For(v, (stmt,))
        for v in reversed(below):
            stmt = For(v, (stmt,))
        return stmt

    def written_out(k: int):
        tight = tighten_bounds(subst_stmts((nest(True),), {r: Affine.of(k)}))
        return tight if _no_guards(tight) else None
    mid = IVar(names.fresh(f"{r.name}_p"), hi - lo, r.rank)
    pieces = [written_out(k) for k in range(lo)]
    pieces.append(subst_stmts((For(mid, (nest(False),)),), {r: Affine.of(mid) + Affine.of(lo)}))
    pieces += [written_out(k) for k in range(hi, r.extent)]
    if any(p is None for p in pieces):
        return None
    return tuple(x for p in pieces for x in p)


def _block(s: For, names: _Names, limit: int = BLOCK, zero: bool = False):
    """``zero``: the block starts from 0 instead of loading the output (``_zeroed``)."""
    found = _perfect(s, bounds=True)
    if found is None:
        return None
    loops, store = found
    vs = [f.var for f in loops]
    outs = [v for v in vs if store.offset.coeff(v) != 0]
    reds = [v for v in vs if v not in outs]
    if not reds or not _one_to_one(store.offset, set(vs), outs):
        return None
    cond = _constraints(loops)
    if cond is None:
        return None
    bounded = set().union(*(c.a.ivars() for c in cond)) & set(vs)
    if any(not (c.a.ivars() & set(reds)) for c in cond):
        return None           # a bound among output loops alone: not a block's business
    # the block's loops run in full: output loops no bound mentions, or the contiguous one
    # when its bounds tie it to one reduction loop alone (_edges: that loop's first and last
    # iterations written out, each with constant bounds on the block)
    free = [v for v in outs if v not in bounded]
    edges = None
    if outs:
        b0 = min(outs, key=lambda v: (abs(store.offset.coeff(v)), -vs.index(v)))
        if b0 in bounded and _split(b0.extent) == b0.extent:
            edges = _edges(b0, cond, reds)
    if cond and not free and edges is None:
        return None
    name = names.fresh(f"{store.array}_acc")
    if not outs:
        size, outer, inner, m = 1, [], [], {}
    else:
        b = b0 if edges is not None else \
            min(free, key=lambda v: (abs(store.offset.coeff(v)), -vs.index(v)))
        d = _split(b.extent)
        if d is None:
            return None
        if d == b.extent:
            outer, inner, m = [v for v in outs if v != b], [b], {}
            at = Affine.of(b)
        else:
            bo = IVar(names.fresh(f"{b.name}_o"), b.extent // d, b.rank)
            bi = IVar(names.fresh(f"{b.name}_i"), d, b.rank)
            outer = [bo if v == b else v for v in outs]
            inner, m = [bi], {b: Affine.of(bo).scale(d) + Affine.of(bi)}
            at = Affine.of(bi)
        size = d
        rest = [v for v in outer if v in outs]
        r = None
        if limit >= 2 * d:
            # the output loop of the smallest stride that has a divisor fitting the limit
            for b2 in sorted((v for v in rest if v not in bounded),
                             key=lambda v: (abs(store.offset.coeff(v)), -vs.index(v))):
                r = _rows(b2, limit // d)
                if r is not None:
                    break
        if r is not None:
            if r == b2.extent:
                outer, inner = [v for v in outer if v != b2], [b2] + inner
                at = Affine.of(b2).scale(d) + at
            else:
                ro = IVar(names.fresh(f"{b2.name}_o"), b2.extent // r, b2.rank)
                ri = IVar(names.fresh(f"{b2.name}_i"), r, b2.rank)
                outer = [ro if v == b2 else v for v in outer]
                inner = [ri] + inner
                m = {**m, b2: Affine.of(ro).scale(r) + Affine.of(ri)}
                at = Affine.of(ri).scale(d) + at
            size = d * r
    if not outs:
        at = Affine()
    offset = store.offset.subst(m) if m else store.offset
    (term,) = subst_stmts((store,), m) if m else (store,)

    def over_block(stmt):
        for v in reversed(inner):
            stmt = For(v, (stmt,))
        return stmt
    if edges is not None:
        # the reduction loops from r inwards, r's ends written out; the other bounds below
        body = _edge_body(edges, reds, inner, Store(name, at, "+=", term.value), names)
        if body is None:
            return None
        cond, reds = list(edges[4]), reds[:reds.index(edges[0])]
    else:
        body = (over_block(Store(name, at, "+=", term.value)),)
    if cond:
        # the bounds, as a guard around the block, become bounds of the reduction loops
        # (each on the innermost loop it mentions): the same points run, in the same order
        body = (If(tuple(cond), body),)
    for v in reversed(reds):
        body = (For(v, body),)
    if cond:
        body = tighten_bounds(body)
        if len(body) != 1 or not _no_guards(body):
            return None
    block = (Buffer(name, size),
             over_block(Store(name, at, "=", Lit(0) if zero else Load(store.array, offset))),
             *body,
             over_block(Store(store.array, offset, "=", Load(name, at))))
    for v in reversed(outer):
        block = (For(v, block),)
    return block


ZEROED = 1 << 16    # points _zeroed may enumerate (0.44 s at 16K points in Python)


def _offsets(vs: list, store: Store):
    """The offsets ``store`` writes over the loops ``vs`` (affine in the loops outside), with
    their multiplicity, or None: ``(terms, values, counts)``, the terms in the loops outside
    (the same at every point), the distinct numbers the loops ``vs`` and the constant add up
    to (sorted) and how often each is written. In NumPy: an Affine per point took 95 of
    ResNet-50's 110 s of generation."""
    import numpy as np
    size = 1
    for v in vs:
        size *= v.extent
    if size > ZEROED or any(not isinstance(a, IVar) for a, _ in store.offset.terms):
        return None
    inner = set(vs)
    coeff = dict(store.offset.terms)
    rest = tuple((a, c) for a, c in store.offset.terms if a not in inner)
    nums = np.array([store.offset.const], dtype=np.int64)
    for v in vs:
        nums = (nums[:, None] + coeff.get(v, 0) * np.arange(v.extent, dtype=np.int64)).ravel()
    values, counts = np.unique(nums, return_counts=True)
    return rest, values, counts


def _zeroed(prev, s: For) -> bool:
    """Whether ``prev``, the statement before the accumulation nest ``s``, sets to 0 each
    element ``s`` adds into, once, and no other: then a block of ``s`` can start from 0 and
    ``prev`` go (extract/passes/winograd.py's products: a pass of stores and one of loads fewer, 0.3
    µs per image of the CNN's ``c11``)."""
    import numpy as np
    zero, acc = _nest_store(prev), _perfect(s)
    if zero is None or acc is None or any(f.lo or f.hi for f in (*acc[0], *_loops(prev))):
        return False
    (zvs, z), (loops, a) = zero, acc
    if not (z.op == "=" and isinstance(z.value, Lit) and z.value.value == 0
            and z.array == a.array):
        return False
    zs = _offsets(zvs, z)
    acc_s = _offsets([f.var for f in loops if a.offset.coeff(f.var)], a)
    return (zs is not None and acc_s is not None and zs[0] == acc_s[0]
            and np.array_equal(zs[1], acc_s[1]) and int(zs[2].max()) == 1)


def _loops(s) -> list:
    out = []
    while isinstance(s, For):
        out.append(s)
        s = s.body[0] if len(s.body) == 1 else None
    return out


def _points(vs: list):
    pts = [{}]
    for v in vs:
        pts = [{**p, v: k} for p in pts for k in range(v.extent)]
    return pts


ENUMERATE = 1 << 20   # iteration points the order check may enumerate


def _same_order(old: list, new: list, offset: Affine) -> bool:
    """Whether the nest with its loops in order ``new`` gives every output element its terms
    in the same order as in order ``old`` (checked point by point: every element's
    iterations, listed in the new order, come in increasing old order)."""
    import numpy as np
    size = 1
    for v in old:
        size *= v.extent
    if size > ENUMERATE:
        return False
    grids = np.meshgrid(*(np.arange(v.extent) for v in new), indexing="ij")
    at = {v: g.ravel() for v, g in zip(new, grids)}
    rank = np.zeros(size, dtype=np.int64)
    for v in old:
        rank = rank * v.extent + at[v]
    elem = np.zeros(size, dtype=np.int64)
    for v in new:
        elem += offset.coeff(v) * at[v]
    by_elem = np.argsort(elem, kind="stable")       # stable: new order within an element
    e, r = elem[by_elem], rank[by_elem]
    same = e[1:] == e[:-1]
    return bool(np.all(r[1:][same] > r[:-1][same]))


def _window(s: For, names: _Names, window: int = WINDOW, zero: bool = False):
    """Scatter form (``d_s1[t2 + i0] += ...``, several points per element): the longest run of
    innermost loops whose part of the offset covers a short contiguous range that they write
    more than once; the range is held in a buffer across those loops, in their order, and
    across the loops just outside them that the offset does not mention. The
    loops with the smallest stride of the output move innermost first (keeping their relative
    order) when that keeps every element's order of terms (``_same_order``)."""
    found = _perfect(s)
    if found is None:
        return None
    loops, store = found
    vs = [f.var for f in loops]
    if any(not isinstance(a, IVar) and a.a.ivars() & set(vs) for a, _ in store.offset.terms):
        return None
    strides = [abs(store.offset.coeff(v)) for v in vs if store.offset.coeff(v)]
    if strides:
        unit = min(strides)
        moved = [v for v in vs if abs(store.offset.coeff(v)) != unit] + \
                [v for v in vs if abs(store.offset.coeff(v)) == unit]
        if moved != vs and _same_order(vs, moved, store.offset):
            vs = moved
    for k in range(len(vs)):
        inner_vs = vs[k:]
        size = 1
        for v in inner_vs:
            size *= v.extent
        if size > UNROLL:
            continue
        inner = Affine(tuple((a, n) for a, n in store.offset.terms if a in inner_vs))
        values = {sum(n * p[a] for a, n in inner.terms) for p in _points(inner_vs)}
        lo, hi = min(values), max(values)
        span = hi - lo + 1
        if span > window or len(values) != span or span >= size:
            continue
        # the loops just outside that the output does not move along (sums: extract/
        # winograd.py's channels) run inside the window too
        while k and store.offset.coeff(vs[k - 1]) == 0:
            k -= 1
        if zero:
            # from 0 only when the windows of the loops outside are disjoint
            if any(store.offset.coeff(v) == 0 for v in vs[:k]):
                return None
            starts = [(store.offset - inner).subst({v: Affine.of(x) for v, x in p.items()}
                                                   ).const for p in _points(vs[:k])]
            if len(starts) * span != len({a + lo + q for a in starts for q in range(span)}):
                return None
        name = names.fresh(f"{store.array}_acc")
        q = IVar(names.fresh("q"), span, 10 ** 5)
        at = store.offset - inner + Affine.of(lo)       # the window's first element
        body = Store(name, inner - Affine.of(lo), "+=", store.value)
        for v in reversed(vs[k:]):
            body = For(v, (body,))
        block = (Buffer(name, span),
                 For(q, (Store(name, Affine.of(q), "=",
                               Lit(0) if zero else Load(store.array, at + Affine.of(q))),)),
                 body,
                 For(q, (Store(store.array, at + Affine.of(q), "=", Load(name, Affine.of(q))),)))
        for v in reversed(vs[:k]):
            block = (For(v, block),)
        return block
    return None


def _nest_store(s, bare: bool = False):
    """The loops (outermost first) and the one store of a nest with one statement per level
    (bounds allowed), or None; ``bare``: a store alone is a nest of no loops."""
    loops = []
    while isinstance(s, For) and len(s.body) == 1:
        loops.append(s.var)
        s = s.body[0]
    return (loops, s) if isinstance(s, Store) and (loops or bare) else None


def _region(v: IVar, loops: list, st: Store):
    """``(coefficient of v, the rest of the offset outside v and the nest's loops, lo, hi)``:
    iteration v writes within ``rest + coefficient * v + [lo, hi]``; None where an inner loop
    or v occurs inside a ``div`` / ``mod``."""
    inner, lo, hi = set(loops), 0, 0
    for a, n in st.offset.terms:
        if not isinstance(a, IVar):
            if a.a.ivars() & (inner | {v}):
                return None
        elif a in inner:
            lo, hi = (lo, hi + n * (a.extent - 1)) if n > 0 else (lo + n * (a.extent - 1), hi)
    rest = Affine(tuple((a, n) for a, n in st.offset.terms if a not in inner and a != v),
                  st.offset.const)
    return st.offset.coeff(v), rest, lo, hi


def _distribute(s: For):
    """``for v: [init; accumulation]`` as ``for v: init`` then ``for v: accumulation`` when
    that changes nothing: the init stores a constant (``y[...] = 0``), the accumulation adds
    (``y[...] += value``, value not reading y), and iteration v of both writes the same region
    of y, which no other iteration touches. Then the accumulation is one perfect nest from v
    outwards, which _block can give rows along v (a convolution's weight gradient: its
    channels)."""
    if len(s.body) != 2 or s.lo or s.hi:
        return None
    a, b = (_nest_store(x, bare=True) for x in s.body)
    if a is None or b is None:
        return None
    (la, init), (lb, acc) = a, b
    if not (init.op == "=" and isinstance(init.value, Lit) and acc.op == "+="
            and init.array == acc.array and acc.array not in stmt_loads(s.body)):
        return None
    ra, rb = _region(s.var, la, init), _region(s.var, lb, acc)
    if ra is None or rb is None or ra[:2] != rb[:2] or ra[0] == 0:
        return None
    # both nests of iteration v write within one window of v's stride: no other iteration
    # touches it
    if max(ra[3], rb[3]) - min(ra[2], rb[2]) >= abs(ra[0]):
        return None
    return tuple(For(s.var, (x,), s.parallel) for x in s.body)


def _element_init(s) -> bool:
    """Whether some loop of ``s`` sets an element alone and then adds its terms into it,
    ``for v: [y[e] = 0; for t...: y[e] += ...]``, in a form ``_distribute`` takes."""
    if isinstance(s, If):
        return any(_element_init(x) for x in s.body)
    if not isinstance(s, For):
        return False
    if len(s.body) == 2 and isinstance(s.body[0], Store) and _distribute(s) is not None:
        return True
    return any(_element_init(x) for x in s.body)


def block_accumulators(stmts, taken: set = frozenset(), limit: int = BLOCK) -> tuple:
    """The statements with every eligible accumulation nest blocked (see the module doc);
    ``taken``: names a new buffer or loop variable must not take (the model's arrays);
    ``limit``: the most outputs a gather-form block holds (``BLOCK``, or twice that for a
    block of two or more rows)."""
    names = _Names(stmts, taken)

    def split(ss) -> tuple:
        """Every distributable loop distributed, innermost first."""
        out = []
        for s in ss:
            if isinstance(s, For):
                s = For(s.var, split(s.body), s.parallel, s.lo, s.hi)
                parts = _distribute(s)
                out.extend(parts if parts is not None else (s,))
            elif isinstance(s, If):
                out.append(If(s.cond, split(s.body)))
            else:
                out.append(s)
        return tuple(out)

    def walk(ss) -> tuple:
        out = []
        for s in ss:
            if isinstance(s, For):
                zero = bool(out) and _zeroed(out[-1], s)
                blocked = _block(s, names, limit, zero)
                if blocked is None:
                    blocked = _window(s, names, WINDOW * limit // BLOCK, zero)
                if blocked is None and zero:     # windows that overlap: loaded, not from 0
                    zero = False
                    blocked = _window(s, names, WINDOW * limit // BLOCK)
                if blocked is not None:
                    if zero:
                        out.pop()
                    out.extend(blocked)
                else:
                    out.append(For(s.var, walk(s.body), s.parallel, s.lo, s.hi))
            elif isinstance(s, If):
                out.append(If(s.cond, walk(s.body)))
            else:
                out.append(s)
        return tuple(out)
    # at limit 8 the split serves only nests that set each element on its own before its sums
    # (_element_init: without it their block is one element, one chain of dependent additions;
    # a padded multi-channel convolution's weight gradient, the CIFAR-sized network's d_k2:
    # 430 -> 78 us per image); elsewhere it serves blocks of several rows and is one more pass
    # over the output (LeNet-5's training at 8 lanes, 2 threads: 0.265-0.277 s per epoch with
    # it, 0.250-0.259 without)
    if limit > BLOCK:
        return walk(split(stmts))
    out = []
    for s in stmts:
        out.extend(split((s,)) if _element_init(s) else (s,))
    return walk(tuple(out))
