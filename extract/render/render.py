"""See the model as mathematics: a dump rendered as formulas, as a paper would write them.

``python -m extract MODEL --html [FILE]`` writes one self-contained HTML page (MathML, no
script) and ``--latex [FILE]`` a LaTeX fragment (``align*``) with the same content: the inputs
and parameters with their shapes, every forward binding, the loss and its seed, and every
gradient entry after the optimiser. One renderer, two printers: this module turns the parsed
IR (``extract/ir/ir.py``) into a tree of presentation nodes (``extract/render/render_print.py``),
which ``html_page`` and ``latex_fragment`` print.

How a binding is read. A binding whose expression is elementwise (variables of its own shape,
the elementwise functions, ``bin``, ``minus``, ``scaledown``, ``zero``, ``one``) is written
without indices (``c1 = σ(c11)``, products as ``⊙``). The functions are written σ (logistic),
exp, log, x⁻¹ (recip), √x (sqrt), relu, step and detach (the stop-gradient). Any other is
written at a position of its result: every array node is evaluated *at a position* (a tuple of
index terms, one per leaf of its shape), so maps, selections, blocks and windows turn into index
arithmetic and only sums and maxima stay (an ``argmax`` is the index term ``argmax_{p<n} b``; the
maximum ``sels (imaps b) (argmax b)`` is ``max_{p<n} b``)::

    c11 = imap i0<6>. (sum t1<[5,5]>. slide(t1, inp) * (imaps i2<[24,24]>. k1[i0][t1]))
                      + (imaps i1<[24,24]>. b1[i0])
    c^(11)_{i,j,l} = Σ_{p,q<5} inp_{j+p, l+q} · k^(1)_{i,p,q} + b^(1)_i

(k is skipped: it names the array k1.) ``extract/render/render_math.py`` has the index terms and the
formula nodes with their simplifications.

Names: the positions of the array being defined are i, j, k, l, m, n (by dimension), summation
variables p, q, r, s, t, u, v, w (by nesting), letters that name an array of the model are
skipped, primes when a pool runs out. Index terms are simplified only where the value is known:
a dimension of extent 1 has the index 0 (and is not written), ``x + 0`` is ``x``. The windows of
``ix_minus``, ``ix_minus_r`` and ``backslide`` become Iverson brackets ``[0 ≤ j − s < 8]`` (a
bound implied by the variables' ranges is not written; on a dimension of extent 1 the bracket is
``[i = q]``) and ``zero_but`` becomes ``[i = j]``. Arithmetic is as in the dump, except that
``a + (−b)`` is written ``a − b``, ``x · x`` is ``x²``, sums and products are flattened, and
the brackets of a product are put in front. A binding name ending in digits takes them as a
superscript (``k1`` is ``k^(1)``), so that subscripts are free for positions; the gradient
``d_x`` of ``x`` is ``∂x``.
"""
from __future__ import annotations

import os
import re
import sys
from dataclasses import dataclass, replace
from pathlib import Path

from ..ir import ir
from .render_math import (ZERO, IAdd, IArg, IConst, IFloor, IMod, IScale, ISub, IVar, MAdd,
                          MApp, MArr, MConst, MElem, MIverson, MMax, MMaxOver, MMul, MNeg, MPow,
                          MScale, MSqrt, MSum, bounds, maximum, has_sum, iadd, ifloor, imod, iscale, isub, madd, mmul,
                          units_zero)
from .render_print import (Eq, Fence, Frac, Id, Num, Op, Page, Section, Space, Sqrt, Stack, Sub,
                           SubSup, Sup, Txt, Under, html_page, latex_fragment, row, width)

MAP_POOL = "ijklmn"           # positions of the array being defined
SUM_POOL = "pqrstuvw"         # summation variables
_IX_CONST = getattr(ir, "IxConst", ())   # ix_const (a constant position), where the IR has it
LINE = 64                     # characters (roughly) per line of a right-hand side


# ---------------------------------------------------------------------------------------------
# the renderer

@dataclass(frozen=True)
class _Ctx:
    env: dict          # IR binder variable -> index terms (one per leaf)
    ranges: dict       # index name in scope -> extent

    def bind(self, var: str, terms: tuple, names=()) -> "_Ctx":
        return _Ctx({**self.env, var: tuple(terms)}, {**self.ranges, **dict(names)})


class Renderer:
    """Renders one model; ``page()`` is the whole page (``Page``)."""

    def __init__(self, model: ir.Model):
        self.model = model
        self.grad_of = {g.name: g.role for g in model.gradients if g.name == "d_" + g.role}
        names = [a.name for a in model.context] + [a.name for a in model.chain]
        self.avoid = {self._split(n)[0] for n in names if len(self._split(n)[0]) == 1}
        self.seen: set[str] = set()    # notation used, for the legend
        self._small: dict = {}

    # names ----------------------------------------------------------------------------------
    @staticmethod
    def _split(name: str) -> tuple[str, str]:
        m = re.fullmatch(r"([A-Za-z]+)(\d+)", name)
        return (m[1], m[2]) if m else (name, "")

    def name(self, name: str, idx: tuple | None = None):
        """An array's name, with the index terms of an element as a subscript."""
        partial = name in self.grad_of
        base, digits = self._split(self.grad_of.get(name, name))
        sup = row(Op("("), Num(digits), Op(")")) if digits else None
        if digits:
            self.seen.add("superscript")
        sub = None
        if idx:
            sub = row(*[x for n, t in enumerate(idx) for x in ((Op(","),) if n else ())
                        + (self.ix(t),)])
        core = (Id(base) if sub is None and sup is None else Sup(Id(base), sup) if sub is None
                else Sub(Id(base), sub) if sup is None else SubSup(Id(base), sub, sup))
        if partial:
            self.seen.add("partial")
            return row(Id("∂"), core)
        return core

    def units(self, shape: ir.Shape) -> None:
        leaves = ir.leaves(shape)
        if len(leaves) > 1 and 1 in leaves:        # an index left out of a subscript
            self.seen.add("units")

    def fresh(self, pool: str, used) -> str:
        for mark in ("", "′", "″", "‴"):
            for c in pool:
                if c not in self.avoid and c + mark not in used:
                    return c + mark
        n = 1
        while f"{pool[0]}{n}" in used:
            n += 1
        return f"{pool[0]}{n}"

    def positions(self, shape: ir.Shape, pool: str, ctx: _Ctx):
        """Fresh index names for the leaves of ``shape`` (extent 1: the constant 0)."""
        used, names, terms = set(ctx.ranges), [], []
        self.units(shape)
        for n in ir.leaves(shape):
            if n == 1:
                terms.append(ZERO)
                continue
            v = self.fresh(pool, used)
            used.add(v)
            names.append((v, n))
            terms.append(IVar(v))
        return tuple(terms), tuple(names)

    # index expressions ----------------------------------------------------------------------
    def ixl(self, e: ir.Node, ctx: _Ctx) -> tuple:
        """The index terms (one per leaf) of an index expression."""
        if isinstance(e, ir.Var):
            terms = ctx.env[e.name]
        elif isinstance(e, ir.Div):
            self.seen.add("floor")
            terms = tuple(ifloor(t, c) for t, c in zip(self.ixl(e.i, ctx), ir.leaves(e.p)))
        elif isinstance(e, ir.Mod):
            self.seen.add("floor")              # one legend entry for ⌊j/n⌋ and j mod n
            terms = tuple(imod(t, c) for t, c in zip(self.ixl(e.i, ctx), ir.leaves(e.p)))
        elif isinstance(e, _IX_CONST):
            terms = tuple(IConst(n) for n in ir.leaves(e.pos))
        elif isinstance(e, ir.IxPlus):
            terms = tuple(iadd(a, b) for a, b in zip(self.ixl(e.i, ctx), self.ixl(e.j, ctx)))
        elif isinstance(e, ir.ArgMax):
            at, names = self.positions(e.s, SUM_POOL, ctx)
            body = self.elem(e.body, (ZERO,), ctx.bind(e.var, at, names))
            ks = iter(range(len(names)))
            terms = tuple(t if t == ZERO else IArg(names, body, next(ks)) for t in at)
        else:
            raise TypeError(f"not an index expression: {type(e).__name__}")
        return units_zero(terms, e.shape)

    def window(self, i: tuple, j: tuple, bound: ir.Shape, ctx: _Ctx):
        """``k = i − j`` leafwise with ``0 ≤ k < bound``: the terms of k and the conditions
        that the variables' ranges do not already imply."""
        ks, conds = [], []
        for a, b, n in zip(i, j, ir.leaves(bound)):
            if n == 1:
                ks.append(ZERO)
                if a != b:
                    conds.append(("eq", a, b))
                continue
            k = isub(a, b)
            ks.append(k)
            lo, hi = bounds(k, ctx.ranges)
            if lo < 0 or hi >= n:
                conds.append(("range", k, lo < 0, n if hi >= n else None))
        return tuple(ks), tuple(conds)

    # array expressions, at a position -------------------------------------------------------
    def elem(self, e: ir.Node, pos: tuple, ctx: _Ctx):
        """The math of ``e`` at position ``pos`` (index terms, one per leaf of e's shape)."""
        if isinstance(e, ir.Var):
            self.units(e.shape)
            m = MElem(e.name, tuple(t for t, n in zip(pos, ir.leaves(e.shape)) if n != 1))
            return maximum(m) or m     # x at the argmax of x itself: max_p x_p
        if isinstance(e, ir.Zero):
            return MConst(0)
        if isinstance(e, ir.One):
            return MConst(1)
        if isinstance(e, ir.IMapS):
            return self.elem(e.body, (ZERO,), ctx.bind(e.var, pos))
        if isinstance(e, ir.SelS):
            return self.elem(e.a, self.ixl(e.i, ctx), ctx)
        if isinstance(e, ir.IMap):
            n = len(ir.leaves(e.s))
            return self.elem(e.body, pos[n:], ctx.bind(e.var, pos[:n]))
        if isinstance(e, ir.Sel):
            return self.elem(e.a, self.ixl(e.i, ctx) + tuple(pos), ctx)
        if isinstance(e, ir.IMapB):
            self.seen.add("floor")
            outer = units_zero([ifloor(t, c) for t, c in zip(pos, ir.leaves(e.p))], e.s)
            inner = units_zero([imod(t, c) for t, c in zip(pos, ir.leaves(e.p))], e.p)
            return self.elem(e.body, inner, ctx.bind(e.var, outer))
        if isinstance(e, ir.SelB):
            i = self.ixl(e.i, ctx)
            at = [iadd(iscale(c, a), k) for a, k, c in zip(i, pos, ir.leaves(e.p))]
            return self.elem(e.a, units_zero(at, e.a.shape), ctx)
        if isinstance(e, ir.Sum):
            terms, names = self.positions(e.s, SUM_POOL, ctx)
            body = self.elem(e.body, pos, ctx.bind(e.var, terms, names))
            if not names:          # a sum over one position
                return body
            self.seen.add("sum")
            return MSum(names, body)
        if isinstance(e, ir.ZeroBut):
            conds = tuple(("eq", a, b) for a, b in zip(self.ixl(e.i, ctx), self.ixl(e.j, ctx))
                          if a != b)
            return self.guard(conds, self.elem(e.a, pos, ctx))
        if isinstance(e, ir.Slide):
            at = [iadd(k, i) for k, i in zip(pos, self.ixl(e.i, ctx))]
            return self.elem(e.a, units_zero(at, e.a.shape), ctx)
        if isinstance(e, ir.Backslide):
            ks, conds = self.window(tuple(pos), self.ixl(e.i, ctx), e.a.shape, ctx)
            return self.guard(conds, self.elem(e.a, ks, ctx))
        if isinstance(e, (ir.IxMinus, ir.IxMinusR)):
            bound = ir.shape_suc(e.p) if isinstance(e, ir.IxMinus) else e.s
            ks, conds = self.window(self.ixl(e.i, ctx), self.ixl(e.j, ctx), bound, ctx)
            return self.guard(conds, self.elem(e.body, pos, ctx.bind(e.var, ks)))
        if isinstance(e, ir.Un):
            return self.fn(e.fn, self.elem(e.a, pos, ctx))
        if isinstance(e, ir.Bin):
            a, b = self.elem(e.a, pos, ctx), self.elem(e.b, pos, ctx)
            if e.fn == "max":
                return MMax(a, b)
            return madd(a, b) if e.fn == "plus" else mmul(a, b)
        if isinstance(e, ir.ScaleDown):
            return MScale(self.elem(e.a, pos, ctx), e.n)
        if isinstance(e, ir.Minus):
            return MNeg(self.elem(e.a, pos, ctx))
        raise TypeError(f"not an array expression: {type(e).__name__}")

    def fn(self, name: str, m):
        """An elementwise function of ``m``: σ(m), exp(m), log(m), m⁻¹, √m, relu(m), step(m),
        detach(m), erf(m) or erf′(m) (derf)."""
        self.seen.add(name)
        if name == "recip":
            return MPow(m, -1)
        if name == "sqrt":
            return MSqrt(m)
        return MApp({"logistic": "σ", "derf": "erf′"}.get(name, name), m)

    def guard(self, conds: tuple, m):
        if not conds:
            return m
        self.seen.add("iverson")
        return mmul(MIverson(conds), m)

    # whole arrays (elementwise bindings) ----------------------------------------------------
    @staticmethod
    def elementwise(e: ir.Node) -> bool:
        if isinstance(e, ir.Var):
            return e.kind != "index"
        if isinstance(e, (ir.Zero, ir.One)):
            return True
        if isinstance(e, (ir.Un, ir.Minus, ir.ScaleDown, ir.Bin)):
            return all(Renderer.elementwise(c) for c in e.children())
        return False

    def whole(self, e: ir.Node):
        if isinstance(e, ir.Var):
            return MArr(e.name)
        if isinstance(e, ir.Zero):
            return MConst(0)
        if isinstance(e, ir.One):
            return MConst(1)
        if isinstance(e, ir.Un):
            return self.fn(e.fn, self.whole(e.a))
        if isinstance(e, ir.Minus):
            return MNeg(self.whole(e.a))
        if isinstance(e, ir.ScaleDown):
            return MScale(self.whole(e.a), e.n)
        a, b = self.whole(e.a), self.whole(e.b)
        if e.fn == "max":
            return MMax(a, b)
        if e.fn == "plus":
            return madd(a, b)
        if e.shape == 1:
            return mmul(a, b)
        self.seen.add("hadamard")
        return mmul(a, b, "⊙")

    # layout: math -> presentation nodes -----------------------------------------------------
    def ix(self, t, prec: float = 0):
        """An index term; ``prec`` is how tightly the context binds (parentheses if needed)."""
        if isinstance(t, IConst):
            return Num(str(t.n))
        if isinstance(t, IVar):
            return Id(t.name)
        if isinstance(t, IAdd):
            own, p = 1, row(self.ix(t.a, 1), Op("+"), self.ix(t.b, 1))
        elif isinstance(t, ISub):
            own, p = 1, row(self.ix(t.a, 1), Op("−"), self.ix(t.b, 1.5))
        elif isinstance(t, IScale):
            own, p = 2, row(Num(str(t.c)), self.ix(t.a, 2.5))
        elif isinstance(t, IFloor):
            return Fence("⌊", row(self.ix(t.a, 2.5), Op("/"), Num(str(t.c))), "⌋")
        elif isinstance(t, IMod):
            own, p = 0.5, row(self.ix(t.a, 2.5), Op("mod"), Num(str(t.c)))
        elif isinstance(t, IArg):
            self.seen.add("argmax")
            head = Under(Op("argmax"), self.limits(t.vars))
            p = row(head, Fence("(", self.lay(t.body), ")"))
            if len(t.vars) > 1:                 # leaf k of the position: (argmax …)_k
                return Sub(Fence("(", p, ")"), Num(str(t.k + 1)))
            own = 0
        else:
            raise TypeError(type(t).__name__)
        return Fence("(", p, ")") if own < prec else p

    def cond(self, c):
        if c[0] == "eq":
            return row(self.ix(c[1]), Op("="), self.ix(c[2]))
        _, t, lower, upper = c
        return row(*((Num("0"), Op("≤")) if lower else ()), self.ix(t),
                   *((Op("<"), Num(str(upper))) if upper is not None else ()))

    def small(self, m) -> bool:
        """Whether ``m / n`` is written as a fraction (else as ``1/n`` times ``m``)."""
        key = id(m)
        if key not in self._small:
            self._small[key] = (m, not has_sum(m) and width(self.lay(m)) <= 14)
        return self._small[key][1]

    def lay(self, m):
        return row(*self.flow(m, False))

    def flow(self, m, split: bool) -> list:
        """``m`` as a list of pieces, a line break allowed between two (only between the
        terms, factors and sums near the top when ``split``)."""
        if isinstance(m, MConst):
            return [Num(str(m.n))]
        if isinstance(m, MArr):
            return [self.name(m.name)]
        if isinstance(m, MElem):
            return [self.name(m.name, m.idx)]
        if isinstance(m, MApp):
            return [row(Id(m.fn), Fence("(", self.lay(m.a), ")"))]
        if isinstance(m, MSqrt):
            return [Sqrt(self.lay(m.a))]
        if isinstance(m, MMax):
            return [row(Id("max"), Fence("(", row(self.lay(m.a), Op(","), self.lay(m.b)), ")"))]
        if isinstance(m, MIverson):
            return [row(*[Fence("[", self.cond(c), "]") for c in m.conds])]
        if isinstance(m, MPow):
            # x_p² is clear, ∂k^(1)_p² is not: brackets unless the name is a plain one
            atom = isinstance(m.a, (MConst, MApp, MSqrt)) or (
                isinstance(m.a, (MElem, MArr)) and m.a.name not in self.grad_of
                and not self._split(m.a.name)[1])
            base = self.lay(m.a) if atom else Fence("(", self.lay(m.a), ")")
            k = Num(str(m.k)) if m.k >= 0 else row(Op("−"), Num(str(-m.k)))   # x⁻¹: recip
            if isinstance(base, Sub):                   # z_p², not (z_p)²
                return [SubSup(base.base, base.sub, k)]
            return [Sup(base, k)]
        if isinstance(m, MScale) and self.small(m.a):
            return [Frac(self.lay(m.a), Num(str(m.n)))]
        if isinstance(m, MScale):
            return self.prefix(Frac(Num("1"), Num(str(m.n))),
                               self.group(m.a, isinstance(m.a, (MAdd, MNeg)), split))
        if isinstance(m, MNeg):
            return self.prefix(Op("−"), self.group(m.a, isinstance(m.a, MAdd), split))
        if isinstance(m, MSum):
            head = Under(Op("∑", big=True), self.limits(m.vars))
            return self.prefix(head, self.group(m.body, isinstance(m.body, MAdd), split))
        if isinstance(m, MMaxOver):
            self.seen.add("max")
            head = Under(Op("max"), self.limits(m.vars))
            return self.prefix(head, self.group(m.body, isinstance(m.body, MAdd), split))
        if isinstance(m, MAdd):
            return [p for n, (sign, t) in enumerate(m.terms) for p in self.term(n, sign, t, split)]
        if isinstance(m, MMul):
            out = []
            for n, f in enumerate(m.factors):
                last = n == len(m.factors) - 1
                paren = (isinstance(f, MAdd) or (isinstance(f, MNeg) and n > 0)
                         or (not last and (isinstance(f, (MSum, MMaxOver)) or (
                             isinstance(f, MScale) and not self.small(f.a)))))
                part = self.group(f, paren, split)
                if n == 0:
                    out += part
                elif isinstance(m.factors[n - 1], MIverson):    # [i = q] x: no break between
                    out[-1:] = [row(out[-1], Space(0.2), part[0])] + part[1:]
                else:
                    out += self.prefix(Op(m.op), part)
            return out
        raise TypeError(type(m).__name__)

    @staticmethod
    def limits(names: tuple):
        """The ranges under a Σ, a max or an argmax: ``p, q < 5`` (neighbours of one extent
        together), stacked when there are several."""
        groups = []
        for v, n in names:
            if groups and groups[-1][1] == n:
                groups[-1][0].append(v)
            else:
                groups.append(([v], n))
        lim = [row(*[x for k, v in enumerate(vs) for x in ((Op(","),) if k else ())
                     + (Id(v),)], Op("<"), Num(str(n))) for vs, n in groups]
        return lim[0] if len(lim) == 1 else Stack(tuple(lim))

    def term(self, n: int, sign: str, t, split: bool) -> list:
        """The ``n``-th term of a sum, with its sign."""
        part = self.group(t, isinstance(t, MAdd) or (sign == "−" and isinstance(t, MNeg)), split)
        return self.prefix(Op(sign), part) if n or sign == "−" else part

    @staticmethod
    def prefix(head, parts: list) -> list:
        return [row(head, parts[0])] + parts[1:]

    def group(self, m, paren: bool, split: bool) -> list:
        if not paren:
            return self.flow(m, split)
        if not split or width(self.lay(m)) <= LINE / 2:
            return [Fence("(", self.lay(m), ")")]
        inner = self.flow(m, True)
        if len(inner) == 1:
            return [Fence("(", inner[0], ")")]
        return [row(Op("("), inner[0])] + inner[1:-1] + [row(inner[-1], Op(")"))]

    def lines(self, m) -> tuple:
        """The right-hand side ``m`` in lines of about ``LINE`` characters: whole terms of a
        top-level sum where they fit, else broken between factors and sums."""
        if isinstance(m, MAdd):
            terms = [self.term(n, sign, t, True) for n, (sign, t) in enumerate(m.terms)]
        else:
            terms = [self.flow(m, True)]
        out, cur, w = [], [], 0.0
        for term in terms:
            tw = width(row(*term))
            if cur and w + tw > LINE:
                out.append(row(*cur))
                cur, w = [], 0.0
            for p in (term if tw > LINE else [row(*term)]):
                pw = width(p)
                if cur and w + pw > LINE:
                    out.append(row(*cur))
                    cur, w = [], 0.0
                cur.append(p)
                w += pw
        out.append(row(*cur))
        return tuple(out)

    # the page ---------------------------------------------------------------------------------
    def shape(self, s: ir.Shape):
        if s == 1:
            return Id("ℝ")
        ls = ir.leaves(s)
        dims = [x for n, d in enumerate(ls) for x in ((Op("×"),) if n else ()) + (Num(str(d)),)]
        return Sup(Id("ℝ"), row(*dims))

    def formula(self, shape: ir.Shape, expr: ir.Node):
        """The math of a binding of ``shape``: ``(None, m)`` with ``m`` over whole arrays when
        it is elementwise, else ``(names, m)`` with ``m`` at the position whose leaves of
        extent ≠ 1 are the index variables ``names`` ((name, extent), left to right)."""
        if self.elementwise(expr):
            return None, self.whole(expr)
        pos, names = self.positions(shape, MAP_POOL, _Ctx({}, {}))
        return names, self.elem(expr, pos, _Ctx({}, dict(names)))

    def equation(self, name: str, shape: ir.Shape, expr: ir.Node, label: str = "") -> Eq:
        note = row(self.name(name), Op("∈"), self.shape(shape),
                   *((Space(1), Txt(label)) if label else ()))
        names, m = self.formula(shape, expr)
        lhs = self.name(name, None if names is None else tuple(IVar(v) for v, _ in names))
        return Eq(lhs, "=", self.lines(m), note)

    def page(self) -> Page:
        m = self.model
        data = {v: k for k, v in m.data}
        fan_in = dict(m.fan_in)
        outputs = {v: k for k, v in m.outputs}
        ctx_rows = []
        for a in m.context:
            what = {"input": "input", "const": "constant (fixed, no gradient)"}.get(a.role,
                                                                                  "parameter")
            if a.name in data:
                what += {"features": ", the features", "target": ", the target (one-hot)"}.get(
                    data[a.name], f", {data[a.name]}")
            if a.name in fan_in:
                what += f", fan-in {fan_in[a.name]}"
            ctx_rows.append(Eq(self.name(a.name), "∈", (self.shape(a.shape),), Txt(what)))
        loss = m.output("loss") or m.seed_of
        own = m.chain and m.chain[-1].name == loss and loss == m.seed_of
        forward = [self.equation(b.name, b.shape, b.expr, outputs.get(b.name, ""))
                   for b in (m.chain[:-1] if own else m.chain)]
        loss_rows = []
        if own:
            b = m.chain[-1]
            loss_rows.append(self.equation(b.name, b.shape, b.expr))
        seed = self.equation(m.seed_of, self.model.arrays[m.seed_of].shape, m.seed)
        loss_rows.append(Eq(row(Txt("seed on"), Space(0.3), self.name(m.seed_of)), "=", seed.lines))
        chain_names = {b.name for b in m.chain}
        grads = [self.equation(g.name, g.shape, g.expr) for g in m.gradients
                 if g.role in chain_names]
        pgrads = [self.equation(g.name, g.shape, g.expr) for g in m.gradients
                  if g.role not in chain_names]
        sections = (
            Section("Inputs and parameters", "", tuple(ctx_rows)),
            Section("Forward", "Each binding is computed once, in this order, from the inputs, "
                               "the parameters and the bindings above it." if forward else
                    "No binding besides the loss.", tuple(forward)),
            Section("Loss", f"The objective is `{loss}`"
                    + ("" if own else " (above)") + f"; the reverse pass starts from the seed "
                    f"on `{m.seed_of}`.", tuple(loss_rows)),
            Section("Gradients of the bindings",
                    "The reverse pass, in order, after the optimiser: each gradient may use "
                    "the forward bindings and the gradients above it.", tuple(grads)),
            Section("Gradients of the parameters", "" if pgrads else "No parameter.",
                    tuple(pgrads)),
        )
        about = (f"The model `{m.name}` as the generated kernels compute it, read from its "
                 f"expression dump (generator {m.generator}, sha256 {m.dump_hash[:12]}).")
        return Page(f"{m.name}: the model as mathematics", about, self.legend(), sections)

    def legend(self) -> tuple:
        seen, x = set(self.seen), Id("x")
        example = next((a.name for a in (*self.model.context, *self.model.chain)
                        if self._split(a.name)[1]), "k1")
        items = [
            ("", Sub(x, row(Id("i"), Op(","), Id("j"))),
             "the element of the array x at position (i, j); subscripts follow the "
             "dimensions of the shape, left to right"),
            ("units", Sub(x, Id("i")),
             "also x[i][0]…[0] when x has the shape n×1×…×1: an index of a dimension of "
             "extent 1 is always 0 and is not written"),
            ("superscript", self.name(example), f"the array named {example} in the model (a "
                                                 f"name's trailing digits are a superscript)"),
            ("", row(Id("i"), Op(","), Id("j"), Op(","), Id("k"), Op(","), Op("…")),
             "the position of the array being defined; p, q, r, … are summation variables "
             "(a letter that names an array of the model is skipped)"),
            ("sum", Under(Op("∑", big=True), row(Id("p"), Op("<"), Num("n"))),
             "the sum over p = 0, 1, …, n − 1"),
            ("max", Under(Op("max"), row(Id("p"), Op("<"), Num("n"))),
             "the largest value over p = 0, 1, …, n − 1 (IEEE comparisons: a NaN never wins)"),
            ("argmax", Under(Op("argmax"), row(Id("p"), Op("<"), Num("n"))),
             "the first p (row-major over several variables) where the value is largest; "
             "(argmax …)ₖ is the k-th index of that position"),
            ("iverson", Fence("[", Id("P"), "]"),
             "1 if P holds, else 0 (Iverson bracket); a term it multiplies is 0 when P fails, "
             "even where an index of that term is out of range"),
            ("logistic", row(Id("σ"), Fence("(", x, ")")),
             "the logistic function 1/(1 + exp(−x))"),
            ("exp", row(Id("exp"), Fence("(", x, ")")), "the exponential function"),
            ("log", row(Id("log"), Fence("(", x, ")")), "the natural logarithm"),
            ("recip", Sup(x, row(Op("−"), Num("1"))), "1/x, elementwise"),
            ("sqrt", Sqrt(x), "the square root (NaN below 0)"),
            ("relu", row(Id("relu"), Fence("(", x, ")")), "x if x > 0, else 0"),
            ("step", row(Id("step"), Fence("(", x, ")")),
             "1 if x > 0, else 0 (the derivative of relu, taken to be 0 at 0)"),
            ("detach", row(Id("detach"), Fence("(", x, ")")),
             "x, but a constant for differentiation (stop-gradient: its derivative is 0)"),
            ("erf", row(Id("erf"), Fence("(", x, ")")),
             "the error function, (2/√π) times the integral of exp(−t²) from 0 to x"),
            ("derf", row(Id("erf′"), Fence("(", x, ")")),
             "erf's derivative (2/√π) exp(−x²), a function of its own (derf in the dump)"),
            ("hadamard", Op("⊙"), "the elementwise product; a binding written without "
                                  "indices is elementwise"),
            ("floor", Fence("⌊", row(Id("j"), Op("/"), Id("n")), "⌋"),
             "the block of j, for blocks of n (j mod n: the position in the block)"),
            ("partial", row(Id("∂"), x),
             "the gradient of the loss with respect to x (d_x in the dump)"),
        ]
        return tuple((sym, text) for key, sym, text in items if not key or key in seen)


# ---------------------------------------------------------------------------------------------
# entry points

def html(model: ir.Model) -> str:
    """The model's page: one self-contained HTML file (MathML, no script)."""
    return html_page(Renderer(model).page())


def latex(model: ir.Model) -> str:
    """The same content as a LaTeX fragment (``align*``; needs amsmath and amssymb)."""
    return latex_fragment(Renderer(model).page())


def default_path(model: ir.Model, ext: str) -> Path:
    """``build/gen/MODEL.EXT`` under the current directory."""
    return Path("build") / "gen" / f"{model.name}.{ext}"


def write(model: ir.Model, html_file: str | None = None, latex_file: str | None = None) -> list:
    """Write the page (``html_file``) and the fragment (``latex_file``); ``""`` means the
    default path, ``"-"`` standard output, ``None`` not at all. Returns what was written."""
    written = []
    for target, ext, text in ((html_file, "html", html), (latex_file, "tex", latex)):
        if target is None:
            continue
        out = text(model)
        if target == "-":
            sys.stdout.write(out)
            continue
        path = Path(target) if target else default_path(model, ext)
        path.parent.mkdir(parents=True, exist_ok=True)
        if not (path.exists() and path.read_text(encoding="utf-8") == out):
            tmp = path.with_name(f"{path.name}.tmp{os.getpid()}")
            tmp.write_text(out, encoding="utf-8")
            os.replace(tmp, path)
        written.append(path)
    return written
