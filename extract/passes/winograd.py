"""winograd_rows (batch kernels only, before peel.py and registers.py): a convolution's sums
along its rows by Winograd's minimal filtering F(m, r), ``m`` outputs of an ``r``-tap row from
``n = m + r - 1`` products instead of ``m * r``.

The ``m`` outputs ``y[q] = Σ_t x[q + t] w[t]`` of a tile are ``Aᵀ ((G w) ⊙ (Bᵀ x))`` over the
``n`` inputs they read (Toom-Cook at the points 0, ±1, ±2, ±1/2 and ∞: ``matrices`` builds the
three exactly, in fractions, and checks them). ``G w`` of a parameter is made once per call;
``Bᵀ x`` serves every output channel and kernel row that reads the same row of ``x``; ``Aᵀ`` is
linear, so the products are first summed over everything else the nest sums (channels, kernel
rows) and each row of outputs is transformed once. The CNN's ``c21`` (F(4, 5)) takes 46,080
products per sample instead of 115,200, plus the transforms (bench/PROFILE.md).

Before (one sample, output channel ``i0`` of 12; ``s1`` a binding, ``k2`` a parameter)::

    for t1_0 < 6:  for t1_1 < 5:  for t1_2 < 5:  for j1 < 8:  for j2 < 8:
        c21[i0 * 64 + j1 * 8 + j2] += s1[t1_0 * 144 + (t1_1 + j1) * 12 + t1_2 + j2]
                                      * k2[i0 * 150 + t1_0 * 25 + t1_1 * 5 + t1_2];

After (``k2_w`` and ``s1_w`` at the top of the kernel, ``k2_w`` without a lane index; the
rest where the nest was)::

    real k2_w[8 * 360]:  k2_w[k * 360 + p] = (G k2[p * 5 .. p * 5 + 4])[k]
    real s1_w[2 * 8 * 72]:  s1_w[(T * 8 + k) * 72 + p] = (Bᵀ s1[p * 12 + 4 T .. + 7])[k]
    real c21_w[8 * 8];
    for T < 2:
        for j1 < 8:  for k < 8:  for t1_0 < 6:  for t1_1 < 5:      (the blocks start from 0)
            c21_w[k * 8 + j1] += s1_w[(T * 8 + k) * 72 + t1_0 * 12 + t1_1 + j1]
                                 * k2_w[k * 360 + i0 * 30 + t1_0 * 5 + t1_1];
        for yr < 8:  c21[i0 * 64 + yr * 8 + 4 T + q] += (Aᵀ (c21_w[yr], c21_w[8 + yr], ...))[q]

The middle nest is an ordinary accumulation nest, which registers.py blocks (8 rows × 2 of
the ``k``). The rows of ``Bᵀ`` of a pair of points ±p share their sums over the even and the
odd inputs (``even1``, ``odd1``: ``e + o`` and ``e - o``), and ``Aᵀ`` combines the pair's
products first (``sum1``, ``dif1``). The scatter form of an input gradient,
``d_s1[.. t + j] += d_c21[.. j] * k2[.. t]`` (a full convolution, the output row ``r - 1``
longer), is the correlation of the row padded with ``r - 1`` zeros with the reversed kernel
row: ``G`` over the reversed row of ``w``, ``Bᵀ`` over windows that start ``r - 1`` before the
tile, each tile written out with its own padding; then the middle nest slides a window of rows
(registers.py).

A weight gradient has the gather form too, the taps a sample's own array: ``d_k2[.. q] +=
s1[.. j + q] * d_c21[.. j]`` gives 5 outputs ``q`` (the kernel row) of a row of 8 taps ``j``
(the output gradient's row). A row that long is cut into chunks of ``s`` taps, each an F(m,
s) over the window the chunk reads, and the chunks are summed with the rest (``sizes``: F(5,
4), 2 chunks for ``d_k2``, 6 for ``d_k1``; LeNet-5's ``d_k2``, 10 taps, takes 3, the last of
2 taps and its window past the row's end padded with 0). Taps that are not parameters go
through G where the nest was, for the rows its loops reach (one output channel's), a lane
index on them, the rows of ±p paired and each scaled by a product with ``1/d``, a constant
(``recip``; a parameter's rows, made once per call, keep the exact division)::

    vreal d_c21_w[2 * 8 * 8]:
        d_c21_w[(ch * 8 + k) * 8 + p] = (G d_c21[i0, p, 4 ch .. 4 ch + 3])[k]
    for T < 1:  for i1_0 < 6:  for i1_1 < 5:  for k < 8:  for ch < 2:  for t2_1 < 8:
        d_k2_w[k * 30 + i1_0 * 5 + i1_1] += s1_w[(ch * 8 + k) * 72 + i1_0 * 12 + t2_1 + i1_1]
                                            * d_c21_w[(ch * 8 + k) * 8 + t2_1];

Applied to a perfect nest without bounds or guards, inside loops without bounds, whose one
statement is ``out[O] += x[X] * w[W]`` with ``x`` not a parameter, neither written by the
kernel: ``j`` an output loop and ``t`` a loop of ``r`` taps with coefficient 1 in ``X`` and
``O`` (gather: ``X = .. + j + t``, ``O = .. + j``; scatter: ``X = .. + j``, ``O = .. + j + t``)
and ``W = .. + t``; ``m`` 4, or 2, dividing the row of outputs (``r`` 3 to 5, or to 7 at 2), or
in the gather form chunks (``sizes``). The buffers live on the stack (``LIMIT``, ``SHARED``);
a nest whose buffers do not fit is tried again inside its outermost loop. Rows the nest never
reaches (offsets with gaps) are transformed too: they add 0 to elements inside the original's
range.

Exact wherever 2, 3 and 5 are invertible: extract/check/validate.py checks the emitted kernels over
GF(2^61 - 1) like any other. In floating point the sums are in another order, the error like the
direct sums' (float: 2e-7 of the largest gradient of the CNN's batch, against 1e-5 allowed by
the oracle tests): the lane kernels no longer give the bits of the one-sample kernels, and
``Options(winograd=False)`` (``--no-winograd``) restores the direct sums. An infinity or a
NaN in a row spreads over its tile (``inf - inf``), where the direct sums keep it to the
outputs that read it.
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from fractions import Fraction

from ..ir import code as c
from ..ir.code import Affine, Buffer, For, If, IVar, Load, Store, in_range, names_in
from ..ir.ir import Names, fresh_name

# the buffers live on the stack: at most LIMIT elements per sample for those with a lane
# index (the input's rows, the products, taps that are not parameters), SHARED for the
# parameter's rows; f64 at 16 lanes, 512 KiB and 64 KiB (the CNN's largest, d_s1: 2,880 and
# 2,880; d_k1: 2,536)
LIMIT = 4096
SHARED = 8192
POINTS = (0, 1, -1, 2, -2, Fraction(1, 2), Fraction(-1, 2))


@dataclass(frozen=True)
class Matrices:
    m: int
    r: int
    AT: tuple        # m × n
    G: tuple         # n × r
    BT: tuple        # n × n, whole numbers

    @property
    def n(self) -> int:
        return self.m + self.r - 1

    @property
    def Gdiv(self) -> tuple:
        """The denominator of each row of ``G``."""
        return tuple(math.lcm(*(Fraction(x).denominator for x in row)) for row in self.G)

    @property
    def Gd(self) -> tuple:
        """``G``'s rows times their denominators: whole numbers."""
        return tuple(tuple(int(x * d) for x in row) for row, d in zip(self.G, self.Gdiv))


def _inverse(rows: list) -> list:
    n = len(rows)
    a = [list(r) + [Fraction(int(i == j)) for j in range(n)] for i, r in enumerate(rows)]
    for col in range(n):
        p = next(i for i in range(col, n) if a[i][col] != 0)
        a[col], a[p] = a[p], a[col]
        a[col] = [x / a[col][col] for x in a[col]]
        for i in range(n):
            if i != col and a[i][col] != 0:
                f = a[i][col]
                a[i] = [x - f * y for x, y in zip(a[i], a[col])]
    return [r[n:] for r in a]


@functools.lru_cache(maxsize=None)
def matrices(m: int, r: int) -> Matrices:
    """F(m, r) at the points 0, ±1, ±2, ±1/2 (the first n - 1) and ∞: the evaluation
    matrices of m and r coefficients (``Aᵀ`` transposed, ``G``) and the transposed inverse of
    the one of n (``Bᵀ``), each row of ``Bᵀ`` scaled to whole numbers and that of ``G``
    divided alike; checked on the unit vectors (exact)."""
    n = m + r - 1
    if not 2 <= n - 1 <= len(POINTS):
        raise ValueError(f"F({m}, {r}) needs {n - 1} finite points, at most {len(POINTS)}")
    pts = [Fraction(p) for p in POINTS[:n - 1]]

    def vandermonde(k: int) -> list:
        return [[p ** e for e in range(k)] for p in pts] + [[Fraction(0)] * (k - 1) + [1]]
    inv = _inverse(vandermonde(n))
    bt = [[inv[j][i] for j in range(n)] for i in range(n)]
    g = vandermonde(r)
    for i in range(n):
        d = math.lcm(*(x.denominator for x in bt[i]))
        bt[i] = [x * d for x in bt[i]]
        g[i] = [x / d for x in g[i]]
    vm = vandermonde(m)
    at = [[vm[i][q] for i in range(n)] for q in range(m)]
    # check: for every x (unit vectors) and w, Aᵀ((G w) ⊙ (Bᵀ x)) is the correlation
    for a in range(n):
        for b in range(r):
            u = [bt[k][a] for k in range(n)]
            v = [g[k][b] for k in range(n)]
            y = [sum(at[q][k] * u[k] * v[k] for k in range(n)) for q in range(m)]
            if y != [Fraction(int(a == q + b)) for q in range(m)]:
                raise AssertionError(f"F({m}, {r}) is not a correlation")
    return Matrices(m, r, tuple(map(tuple, at)), tuple(map(tuple, g)),
                    tuple(tuple(int(x) for x in row) for row in bt))


def _term(coef: Fraction, e: c.RExpr) -> c.RExpr:
    """coef · e, as a product by a whole number and a scaledown (exact in the field)."""
    k = abs(coef.numerator)
    t = e if k == 1 else c.mul(c.Lit(k), e)
    if coef.denominator != 1:
        t = c.Scale(t, coef.denominator)
    return c.neg(t) if coef < 0 else t


def _combination(coefs, terms) -> c.RExpr:
    """Σ coefs[i] · terms[i], the common denominator divided once."""
    d = math.lcm(*(Fraction(k).denominator for k in coefs))
    out = None
    for k, e in zip(coefs, terms):
        if k:
            t = _term(Fraction(k) * d, e)
            out = t if out is None else c.add(out, t)
    if out is None:
        return c.Lit(0)
    return c.Scale(out, d) if d != 1 else out


def _partner(a, b) -> int:
    """s where b[i] = s (-1)^i a[i] for every i (the rows of the points p and -p), else 0."""
    for s in (1, -1):
        if any(a) and all(y == s * (-1) ** i * x for i, (x, y) in enumerate(zip(a, b))):
            return s
    return 0


def _pairs(rows) -> list:
    """The rows as (i, None, 0) alone or (i, j, s) paired (``_partner``)."""
    out, used = [], set()
    for i in range(len(rows)):
        if i in used:
            continue
        j = next((j for j in range(i + 1, len(rows))
                  if j not in used and _partner(rows[i], rows[j])), None)
        used |= {i, j}
        out.append((i, j, _partner(rows[i], rows[j]) if j is not None else 0))
    return out


def _rows_of(rows, terms, local, tag: str = "") -> tuple:
    """(declarations, Σ_i rows[k][i] terms[i] for each k): the rows of a pair ±p share their
    even and odd halves, ``e = Σ_even``, ``o = Σ_odd``, as ``e + o`` and ``s (e - o)``;
    ``local(base)``: a fresh scalar name (``even1``, ``odd1``...: the pair's first row, then
    ``tag``)."""
    decls, out = [], [None] * len(rows)
    for i, j, s in _pairs(rows):
        if j is None:
            out[i] = _combination(rows[i], terms)
            continue
        halves = []
        for parity in (0, 1):
            e = _combination([x if q % 2 == parity else 0 for q, x in enumerate(rows[i])], terms)
            if not isinstance(e, (Load, c.Lit)):
                name = local(("even", "odd")[parity] + f"{i}{tag}")
                decls.append(c.Decl(name, e))
                e = c.Local(name)
            halves.append(e)
        ev, od = halves
        out[i] = c.add(ev, od)
        out[j] = c.add(ev, c.neg(od)) if s == 1 else c.add(c.neg(ev), od)
    return decls, out


def _columns_of(rows, terms, local) -> tuple:
    """(declarations, Σ_i rows[q][i] terms[i] for each q), the columns of a pair ±p combined
    first: ``rows[q][j] = s (-1)^q rows[q][i]``, so the pair adds ``rows[q][i] (terms[i] + s
    (-1)^q terms[j])``, the sum for even q and the difference for odd."""
    cols = [list(col) for col in zip(*rows)]
    decls, new_terms, new_cols = [], [], []
    for i, j, s in _pairs(cols):
        if j is None:
            new_terms.append(terms[i])
            new_cols.append(cols[i])
            continue
        for parity in (0, 1):
            name = local(("sum", "dif")[parity] + str(i))
            other = terms[j] if s * (-1) ** parity == 1 else c.neg(terms[j])
            decls.append(c.Decl(name, c.add(terms[i], other)))
            new_terms.append(c.Local(name))
            new_cols.append([x if q % 2 == parity else 0 for q, x in enumerate(cols[i])])
    return decls, [_combination(row, new_terms) for row in zip(*new_cols)]


@dataclass(frozen=True)
class _Row:
    """An offset ``const + step * row`` where ``row`` is affine in the loops (coprime terms)."""
    const: int
    step: int
    row: Affine

    @staticmethod
    def of(a: Affine, keep=None) -> "_Row":
        terms = [(v, k) for v, k in a.terms if keep is None or v in keep]
        const = a.const if keep is None else 0
        step = math.gcd(*(k for _, k in terms)) if terms else 1
        return _Row(const, step, Affine(tuple((v, k // step) for v, k in terms), 0))

    @property
    def rows(self) -> int:
        lo, hi = self.row.range
        return hi - lo + 1

    def index(self) -> Affine:
        """The row counted from 0."""
        return self.row - self.row.range[0]

    def offset(self, r: IVar) -> Affine:
        """The offset of row ``r`` (counted from 0)."""
        return Affine.of(self.const + self.step * self.row.range[0]) + Affine.of(r).scale(self.step)


def _nest(s: For):
    """The loops of a perfect nest headed by ``s`` and its one statement, or None."""
    loops = []
    while isinstance(s, For):
        if s.lo or s.hi or len(s.body) != 1:
            return None
        loops.append(s)
        s = s.body[0]
    return (loops, s) if isinstance(s, Store) else None


def sizes(width: int, r: int, chunked: bool = True):
    """(m, s) for ``width`` outputs of an ``r``-tap row, or None: F(4, r) (``r`` 3 to 5) or
    F(2, r) (to 7) over tiles of ``m`` outputs when they divide the row; else, where ``chunked``
    (the gather form), the taps in chunks of ``s`` (the whole row when ``s = r``; the last
    chunk shorter where ``s`` does not divide ``r``) each an F(m, s) with ``m`` dividing the row
    and ``m + s - 1 <= 8``, the one of fewest products per output, if at most half the direct
    ones (a weight gradient: 5 outputs of 24 taps by F(5, 4), 2.5 times fewer; of 10 taps, 3
    chunks of F(5, 4), 2.08 times; 5 outputs of 3 taps by F(5, 3), 2.14 times)."""
    if 3 <= r <= 7:
        if width % 4 == 0 and r <= 5:
            return 4, r
        if width % 2 == 0:
            return 2, r
    best = None
    for s in range(2, min(r, len(POINTS)) + 1):
        for m in range(2, len(POINTS) + 3 - s):
            if width % m or not chunked:
                continue
            key = (Fraction(m * r, -(-r // s) * (m + s - 1)), s)
            if key[0] >= 2 and (best is None or key > best[0]):
                best = key, (m, s)
    return best and best[1]


def _plain(a: Affine) -> bool:
    return all(isinstance(v, IVar) for v, _ in a.terms)


class _Rewrite:
    def __init__(self, stmts, shared: set, taken: set):
        self.shared = shared
        self.used = Names(taken, names_in(stmts))
        self.written = set()
        self._writes(stmts)
        self.top = []           # the transforms of x and w, at the top of the kernel
        self.rank = 10 ** 5

    def _writes(self, ss):
        for s in ss:
            if isinstance(s, (For, If)):
                self._writes(s.body)
            elif isinstance(s, Store):
                self.written.add(s.array)

    def fresh(self, base: str) -> str:
        name = fresh_name(base, self.used)
        self.used.add(name)
        return name

    def ivar(self, base: str, extent: int) -> IVar:
        self.rank += 1
        return IVar(self.fresh(base), extent, self.rank)

    def stmts(self, ss) -> tuple:
        out = []
        for s in ss:
            if isinstance(s, For):
                done = self.nest(s) if not (s.lo or s.hi) else None
                if done is not None:
                    out.extend(done)
                elif s.lo or s.hi:
                    out.append(s)       # its bounds would cut the rows: left as it is
                else:
                    out.append(For(s.var, self.stmts(s.body), s.parallel, s.lo, s.hi))
            else:
                out.append(s)           # under a guard too: left as it is
        return tuple(out)

    def match(self, loops, st: Store):
        v = st.value
        if st.op != "+=" or not isinstance(v, c.Mul):
            return None
        a, b = v.a, v.b
        if not (isinstance(a, Load) and isinstance(b, Load)):
            return None
        if not all(_plain(o) for o in (st.offset, a.offset, b.offset)):
            return None
        nest = [f.var for f in loops]
        # the parameter as the taps first (the convolutions), then either way round (a
        # weight gradient: the output's gradient as the taps, a long row cut into chunks)
        pairs = [(a, b), (b, a)] if b.array in self.shared else [(b, a), (a, b)]
        for x, w in pairs:
            if (x.array in self.shared or st.array in (x.array, w.array)
                    or x.array in self.written or w.array in self.written):
                continue
            for j in nest:
                for t in nest:
                    if j == t or st.offset.coeff(j) != 1 or x.offset.coeff(j) != 1 \
                            or w.offset.coeff(t) != 1 or w.offset.coeff(j) != 0:
                        continue
                    gather = x.offset.coeff(t) == 1 and st.offset.coeff(t) == 0
                    scatter = x.offset.coeff(t) == 0 and st.offset.coeff(t) == 1
                    if not (gather or scatter):
                        continue
                    width = j.extent if gather else j.extent + t.extent - 1
                    size = sizes(width, t.extent, chunked=gather)
                    if size is not None:
                        return x, w, j, t, gather, *size
        return None

    def nest(self, s: For):
        got = _nest(s)
        if got is None:
            return None
        loops, st = got
        found = self.match(loops, st)
        if found is None:
            return None
        x, w, j, t, gather, m, size = found
        F = matrices(m, size)
        n, r = F.n, t.extent
        chunks = -(-r // size)              # the last one shorter: its missing taps are 0
        ragged = chunks * size != r
        width = j.extent if gather else j.extent + r - 1
        tiles = width // m
        inner = {f.var for f in loops}
        laned = w.array not in self.shared
        xrow = _Row.of(x.offset - Affine.of(j) - (Affine.of(t) if gather else Affine()))
        wrest = w.offset - Affine.of(t)
        wrow = _Row.of(wrest, keep=inner if laned else None)
        wouter = wrest - wrow.row.scale(wrow.step) if laned else Affine()
        orest = st.offset - Affine.of(j) - (Affine() if gather else Affine.of(t))
        orow = _Row.of(orest, keep=inner)
        outer = orest - orow.row.scale(orow.step)          # the loops outside, constants
        vsize = wrow.rows * chunks * n
        if xrow.rows * tiles * chunks * n + orow.rows * n + (vsize if laned else 0) > LIMIT \
                or not laned and vsize > SHARED:
            return None
        # the rows of taps through G, chunk by chunk (the scatter form's reversed): a
        # parameter's once per call, at the top; another array's where the nest was, the rows
        # its loops reach
        V = self.fresh(f"{w.array}_w")
        p = self.ivar("wr", wrow.rows)
        wfill = []
        for ch in range(chunks):
            taps = [Load(w.array, wouter + wrow.offset(p)
                         + (size * ch + i if gather else r - 1 - i)) for i in range(size)]
            have = [size * ch + i < r for i in range(size)]

            def cut(rows):
                return [[g if h else 0 for g, h in zip(row, have)] for row in rows]
            if laned:       # once per row of every sample: ±p paired, a product by 1/d
                decls, ys = _rows_of(cut(F.Gd), taps, self.fresh)
                ys = [y if d == 1 else c.mul(y, c.Un("recip", c.Lit(d)))
                      for y, d in zip(ys, F.Gdiv)]
            else:
                decls, ys = (), [_combination(g, taps) for g in cut(F.G)]
            wfill += [*decls, *(Store(V, Affine.of(p) + (ch * n + k) * wrow.rows, "=", y)
                                for k, y in enumerate(ys))]
        vfill = [Buffer(V, vsize, shared=not laned), For(p, tuple(wfill))]
        if not laned:
            self.top += vfill
        # the rows of x through Bᵀ, tile by tile and chunk by chunk (the scatter form's windows
        # and the last chunk's past the row padded with 0)
        U = self.fresh(f"{x.array}_w")
        p = self.ivar("xr", xrow.rows)
        T = self.ivar("T", tiles)

        def at(tt, ch: int, k: int) -> Affine:
            return ((Affine.of(tt).scale(chunks) + ch).scale(n) + k).scale(xrow.rows) \
                + Affine.of(p)

        def tile(tt, ch: int = 0) -> tuple:
            """Bᵀ over the window of tile ``tt`` (a loop variable, or a number: the tiles of the
            scatter form or of a short last chunk, each with its own padding, are written out)
            and chunk ``ch``."""
            window = []
            for i in range(n):
                pos = Affine.of(tt).scale(m) + (size * ch + i if gather else i - (r - 1))
                e = Load(x.array, xrow.offset(p) + pos)
                window.append(c.select(in_range(pos, width + r - 1), e) if gather
                              else c.select(in_range(pos, j.extent), e))
            decls, rows = _rows_of(F.BT, window, self.fresh,
                                   "" if isinstance(tt, IVar) else f"_{tt}")
            return (*decls, *(Store(U, at(tt, ch, k), "=", e) for k, e in enumerate(rows)))
        self.top += [Buffer(U, xrow.rows * tiles * chunks * n),
                     For(p, (For(T, sum((tile(T, ch) for ch in range(chunks)), ())),)
                         if gather and not ragged
                         else sum((tile(tt, ch) for tt in range(tiles)
                                   for ch in range(chunks)), ()))]
        # tile by tile: the products summed over the rest of the nest (the loops the outputs
        # move along outside, then the sums, the chunks among them, then the pairs that add up
        # to a row of outputs: registers.py blocks the first kind and slides a window along the
        # last), then each row of outputs through Aᵀ
        M = self.fresh(f"{st.array}_w")
        T = IVar(self.fresh("T"), tiles, j.rank)
        k = IVar(self.fresh("k"), n, t.rank)
        C = IVar(self.fresh("ch"), chunks, t.rank) if chunks > 1 else None
        ch = Affine.of(C) if C else Affine()
        mat = Affine.of(k).scale(orow.rows) + orow.index()
        uat = ((Affine.of(T).scale(chunks) + ch).scale(n) + Affine.of(k)).scale(xrow.rows) \
            + xrow.index()
        vat = (ch.scale(n) + Affine.of(k)).scale(wrow.rows) + wrow.index()
        coeff = dict(orow.row.terms)

        def paired(v: IVar) -> bool:
            return v in coeff and list(coeff.values()).count(coeff[v]) > 1
        others = [f for f in loops if f.var not in (j, t)]
        order = [*(f for f in others if f.var in coeff and not paired(f.var)),
                 For(k, ()),
                 *([For(C, ())] if C else []),
                 *(f for f in others if f.var not in coeff),
                 *(f for f in others if paired(f.var))]
        body = Store(M, mat, "+=", c.mul(Load(U, uat), Load(V, vat)))
        for f in reversed(order):
            body = For(f.var, (body,), f.parallel)
        z = self.ivar("z", orow.rows * n)
        p = self.ivar("yr", orow.rows)
        prods = [Load(M, Affine.of(p) + q * orow.rows) for q in range(n)]
        dest = outer + orow.offset(p) + Affine.of(T).scale(m)
        decls, ys = _columns_of(F.AT, prods, self.fresh)
        outputs = For(p, (*decls, *(Store(st.array, dest + q, "+=", y)
                                    for q, y in enumerate(ys))))
        return [*(vfill if laned else ()), Buffer(M, orow.rows * n),
                For(T, (For(z, (Store(M, Affine.of(z), "=", c.Lit(0)),)), body, outputs))]


def winograd_rows(stmts, shared: set, taken: set = frozenset()) -> tuple:
    """The statements with every eligible nest in Winograd's form (see the module doc; the
    parameter's rows through G in a ``Buffer`` with ``shared``, which extract/passes/lanes.py gives
    no lane index); ``shared``: the parameters; ``taken``: names a new buffer or loop variable
    must not take."""
    rw = _Rewrite(stmts, shared, taken)
    body = rw.stmts(tuple(stmts))
    return (*rw.top, *body)
