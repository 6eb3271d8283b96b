"""widen_to_lanes: a loop nest over one sample becomes a loop nest over ``width`` samples at
once, the sample innermost ("lanes"), for the batch entry points of the C file.

Every array except the parameters and the buffers computed from them alone (``Buffer`` with
``shared``: extract/winograd.py), which all samples share, gets a lane index: element ``e`` of
sample ``l`` of a group sits at ``e * width + l``. Each statement that computes a value
(``Store``, ``Decl``, ``Acc``, ``Assign``) is wrapped in a loop over the lanes (a store into a
shared buffer is not); a scalar local becomes a ``Buffer`` of ``width`` values. The loops over
the sample's elements keep their order, so every lane computes its value with the same
operations, in the same order, as the nest it is given (for a convolution in Winograd's form,
not the one-sample kernel's); what changes is that the innermost loop now has a constant trip
count and unit stride whatever the shape of the layer (rows of 5 or 8 outputs vectorise badly;
8 samples do not).
The parameters are read once per lane group and broadcast.

Before (one sample; ``k2`` a parameter)::

    for (int j2 = 0; j2 < 8; j2++) {
        c21[j1 * 8 + j2] += s1[j1 * 12 + t1_2 + j2] * k2[t1_2];
    }

After (``width`` 8)::

    for (int j2 = 0; j2 < 8; j2++) {
        for (int l = 0; l < 8; l++) {
            c21[j1 * 64 + j2 * 8 + l] += s1[j1 * 96 + t1_2 * 8 + j2 * 8 + l] * k2[t1_2];
        }
    }

Conditions (range guards) only read loop variables, never lanes, so they stay outside the lane
loops. The pass runs last, after bounds, split and interchange.

A kernel with an argmax (dump version 5: ``ArgDecl``, whose ``int`` local is a position that
offsets use, different in every lane) is not widened statement by statement: the whole nest
runs once per sample, inside one loop over the lanes (``per_sample``), every array but the
shared ones read and written at ``e * width + l``, its locals its own.
"""
from __future__ import annotations

from . import code as c
from .code import Affine, Buffer, For, If, IVar, Load, Store, has_argmax, names_in
from .ir import fresh_name


def lane_name(stmts, taken: set) -> str:
    """``l``, or ``l_``, ``l__``... if a loop variable, local or array of the kernel is so
    called."""
    return fresh_name("l", set(taken) | names_in(stmts))


class _Widen:
    def __init__(self, shared: set, width: int, lane: IVar):
        self.shared = shared
        self.width = width
        self.lane = lane
        self.at = Affine.of(lane)

    def offset(self, off: Affine) -> Affine:
        return off.scale(self.width) + self.at

    def expr(self, e):
        if isinstance(e, c.Load):
            if e.array in self.shared:
                return e
            return Load(e.array, self.offset(e.offset))
        if isinstance(e, c.Local):
            return Load(e.name, self.at)
        if isinstance(e, c.Lit):
            return e
        if isinstance(e, (c.Add, c.Mul, c.Max)):
            return type(e)(self.expr(e.a), self.expr(e.b))
        if isinstance(e, c.Scale):
            return c.Scale(self.expr(e.a), e.n)
        if isinstance(e, c.Neg):
            return c.Neg(self.expr(e.a))
        if isinstance(e, c.Un):
            return c.Un(e.fn, self.expr(e.a))
        if isinstance(e, c.Select):
            return c.Select(e.cond, self.expr(e.a))
        raise TypeError(f"cannot widen {type(e).__name__}")

    def sample_expr(self, e):
        """``e`` of one sample ``lane`` (per_sample): arrays at ``e * width + l``, locals
        as they are."""
        if isinstance(e, c.Load):
            return e if e.array in self.shared else Load(e.array, self.offset(e.offset))
        if isinstance(e, (c.Local, c.Lit)):
            return e
        if isinstance(e, (c.Add, c.Mul, c.Max)):
            return type(e)(self.sample_expr(e.a), self.sample_expr(e.b))
        if isinstance(e, c.Scale):
            return c.Scale(self.sample_expr(e.a), e.n)
        if isinstance(e, c.Neg):
            return c.Neg(self.sample_expr(e.a))
        if isinstance(e, c.Un):
            return c.Un(e.fn, self.sample_expr(e.a))
        if isinstance(e, c.Select):
            return c.Select(e.cond, self.sample_expr(e.a))
        raise TypeError(f"cannot widen {type(e).__name__}")

    def per_sample(self, ss) -> tuple:
        """The statements of one sample, ``lane``, inside the loop over the lanes."""
        out = []
        for s in ss:
            if isinstance(s, For):
                out.append(For(s.var, self.per_sample(s.body), s.parallel, s.lo, s.hi))
            elif isinstance(s, If):
                out.append(If(s.cond, self.per_sample(s.body)))
            elif isinstance(s, Store):
                out.append(Store(s.array, s.offset if s.array in self.shared else
                                 self.offset(s.offset), s.op, self.sample_expr(s.value)))
            elif isinstance(s, (c.Decl, c.Acc, c.Assign)):
                out.append(type(s)(s.name, self.sample_expr(s.value)))
            elif isinstance(s, c.ArgStep):
                out.append(c.ArgStep(s.index, s.top, s.at, self.sample_expr(s.value)))
            elif isinstance(s, (c.ArgDecl, c.Comment)):
                out.append(s)
            else:       # a Buffer: the passes that make them leave argmax kernels alone
                raise TypeError(f"cannot widen {type(s).__name__} per sample")
        return tuple(out)

    def per_lane(self, stmt) -> For:
        return For(self.lane, (stmt,))

    def stmts(self, ss) -> tuple:
        out = []
        for s in ss:
            if isinstance(s, For):
                out.append(For(s.var, self.stmts(s.body), s.parallel, s.lo, s.hi))
            elif isinstance(s, If):
                out.append(If(s.cond, self.stmts(s.body)))
            elif isinstance(s, Store) and s.array in self.shared:
                out.append(s)       # a shared buffer (extract/winograd.py): parameters only
            elif isinstance(s, Store):
                out.append(self.per_lane(Store(s.array, self.offset(s.offset), s.op,
                                               self.expr(s.value))))
            elif isinstance(s, c.Decl):
                out.append(Buffer(s.name, self.width))
                out.append(self.per_lane(Store(s.name, self.at, "=", self.expr(s.value))))
            elif isinstance(s, c.Acc):
                out.append(self.per_lane(Store(s.name, self.at, "+=", self.expr(s.value))))
            elif isinstance(s, c.Assign):
                out.append(self.per_lane(Store(s.name, self.at, "=", self.expr(s.value))))
            elif isinstance(s, Buffer) and s.shared:
                self.shared.add(s.name)
                out.append(s)
            elif isinstance(s, Buffer):
                out.append(Buffer(s.name, s.size * self.width))
            elif isinstance(s, c.Comment):
                out.append(s)
            else:
                raise TypeError(f"cannot widen {type(s).__name__}")
        return tuple(out)


def widen_to_lanes(stmts, shared: set, width: int, taken: set = frozenset()):
    """The statements of a one-sample kernel, over ``width`` samples (see the module doc), and
    the lane variable. ``shared``: the arrays without a lane index (the parameters);
    ``taken``: names the lane variable must not take (the model's arrays)."""
    if width < 2:
        raise ValueError(f"lane width must be at least 2, not {width}")
    lane = IVar(lane_name(stmts, taken), width, 10 ** 6)
    w = _Widen(set(shared), width, lane)
    if has_argmax(stmts):
        return (For(lane, w.per_sample(stmts)),), lane
    return w.stmts(stmts), lane
