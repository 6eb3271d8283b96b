"""widen_to_lanes: a loop nest over one sample becomes a loop nest over ``width`` samples at
once, the sample innermost ("lanes"), for the batch entry points of the C file.

Every array except the parameters and the buffers computed from them alone (``Buffer`` with
``shared``: extract/passes/winograd.py), which all samples share, gets a lane index: element ``e``
of sample ``l`` of a group sits at ``e * width + l``. Each statement that computes a value
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

A kernel with an argmax (dump version 5: ``ArgDecl``, an ``int`` position, different in every
lane) is widened too where its position is used only in conditions: the position becomes a
vector of ints (``ArgDecl`` with ``lanes``), each lane keeping its own largest value and its
position (``ArgStep`` in a loop over the lanes: a vector compare and a select, printed as the
template's ``vargstep``), and a condition on it a mask per lane (``vwhere``). A read of the
argmax's body at its position (the max-pool's value, ``maxs``) is first replaced by the largest
value itself (``top``, which always holds the body at the position: it is set from it, at the
first position and wherever the position moves; ``read_tops``). Before (the gradient of a
2×2 max-pool, one sample; ``top1`` from ``real top1 = 0;``)::

    int arg0 = 0;
    for (int a0 = 0; a0 < 4; a0++)
        if (a0 == 0 || top1 < a[i * 4 + a0]) { top1 = a[i * 4 + a0]; arg0 = a0; }
    d[i * 4 + j] = j == arg0 ? s[i] : 0;

After (``width`` 8; printed)::

    vindex arg0 = (vindex){0};
    for (int a0 = 0; a0 < 4; a0++)
        vargstep(top1[0], arg0, vload(&a[i * 32 + a0 * 8]), a0);
    vstore(&d[i * 32 + j * 8], vwhere((j == arg0), vload(&s[i * 8])));

Where a position is used otherwise (an offset: a gather per lane), the kernel is not widened
statement by statement: the whole nest runs once per sample, inside one loop over the lanes
(``per_sample``), every array but the shared ones read and written at ``e * width + l``, its
locals its own.
"""
from __future__ import annotations

from ..ir import code as c
from ..ir.code import Affine, Buffer, For, If, IVar, Load, Store, has_argmax, names_in
from ..ir.ir import Names, fresh_name


def lane_name(stmts, taken: set) -> str:
    """``l``, or ``l_``, ``l__``... if a loop variable, local or array of the kernel is so
    called."""
    return fresh_name("l", Names(taken, names_in(stmts)))


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
                out.append(s)       # a shared buffer (extract/passes/winograd.py): parameters only
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
            elif isinstance(s, c.ArgDecl):
                out.append(c.ArgDecl(s.name, self.width))
            elif isinstance(s, c.ArgStep):
                out.append(self.per_lane(c.ArgStep(s.index, s.top, s.at, self.expr(s.value))))
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
        tops = read_tops(hoist_args(stmts))
        if not lane_args(tops):
            return (For(lane, w.per_sample(stmts)),), lane
        stmts = tops
    return w.stmts(stmts), lane


# ---------------------------------------------------------------------------------------------
# argmax kernels

def _map_expr(e, f):
    """``e`` with ``f`` applied bottom-up to every subexpression."""
    if isinstance(e, (c.Add, c.Mul, c.Max)):
        e = type(e)(_map_expr(e.a, f), _map_expr(e.b, f))
    elif isinstance(e, c.Scale):
        e = c.Scale(_map_expr(e.a, f), e.n)
    elif isinstance(e, c.Neg):
        e = c.Neg(_map_expr(e.a, f))
    elif isinstance(e, c.Un):
        e = c.Un(e.fn, _map_expr(e.a, f))
    elif isinstance(e, c.Select):
        e = c.Select(e.cond, _map_expr(e.a, f))
    elif not isinstance(e, (c.Load, c.Local, c.Lit)):
        raise TypeError(f"cannot map {type(e).__name__}")
    return f(e)


def _map_stmts(stmts, f) -> tuple:
    out = []
    for s in stmts:
        if isinstance(s, For):
            out.append(For(s.var, _map_stmts(s.body, f), s.parallel, s.lo, s.hi))
        elif isinstance(s, If):
            out.append(If(s.cond, _map_stmts(s.body, f)))
        elif isinstance(s, Store):
            out.append(Store(s.array, s.offset, s.op, _map_expr(s.value, f)))
        elif isinstance(s, (c.Decl, c.Acc, c.Assign)):
            out.append(type(s)(s.name, _map_expr(s.value, f)))
        elif isinstance(s, c.ArgStep):
            out.append(c.ArgStep(s.index, s.top, s.at, _map_expr(s.value, f)))
        else:
            out.append(s)
    return tuple(out)


def _affines(stmts):
    """Every index expression of statements: offsets, conditions, loop bounds, positions."""
    def of_expr(e):
        if isinstance(e, c.Load):
            yield e.offset
        elif isinstance(e, c.Select):
            yield from (k.a for k in e.cond)
            yield from of_expr(e.a)
        elif isinstance(e, (c.Add, c.Mul, c.Max)):
            yield from of_expr(e.a)
            yield from of_expr(e.b)
        elif not isinstance(e, (c.Local, c.Lit)):
            yield from of_expr(e.a)
    for s in stmts:
        if isinstance(s, For):
            yield from (*s.lo, *s.hi)
            yield from _affines(s.body)
        elif isinstance(s, If):
            yield from (k.a for k in s.cond)
            yield from _affines(s.body)
        elif isinstance(s, Store):
            yield s.offset
            yield from of_expr(s.value)
        elif isinstance(s, (c.Decl, c.Acc, c.Assign)):
            yield from of_expr(s.value)
        elif isinstance(s, c.ArgStep):
            yield s.at
            yield from of_expr(s.value)


def _arg_vars(stmts) -> dict:
    """The positions of argmax loops as the index expressions read them: name -> IVar."""
    names, out = set(), {}

    def decls(ss):
        for s in ss:
            if isinstance(s, c.ArgDecl):
                names.add(s.name)
            elif isinstance(s, (For, If)):
                decls(s.body)
    decls(stmts)
    for a in _affines(stmts):
        for v in a.ivars():
            if v.name in names:
                out[v.name] = v
    return out


def _steps(stmts, out: list) -> list:
    for s in stmts:
        if isinstance(s, c.ArgStep):
            out.append(s)
        elif isinstance(s, (For, If)):
            _steps(s.body, out)
    return out


def _decls(stmts, out: dict) -> dict:
    """The scalar locals of statements and the values they are declared with."""
    for s in stmts:
        if isinstance(s, c.Decl):
            out[s.name] = s.value
        elif isinstance(s, (For, If)):
            _decls(s.body, out)
    return out


def _digits(at: Affine, pos: IVar) -> dict | None:
    """The loop variables of an argmax's flat position ``at`` (row-major: coefficients 1, n1,
    n1 n2, ... over variables of extents n1, n2, ...) as digits of the position ``pos``;
    None if ``at`` is not such a sum."""
    if at.const or not all(isinstance(v, IVar) for v, _ in at.terms):
        return None
    out, stride = {}, 1
    for v, k in sorted(at.terms, key=lambda t: t[1]):
        if k != stride:
            return None
        out[v] = c.imod(c.idiv(Affine.of(pos), k), v.extent)
        stride *= v.extent
    return out


def read_tops(stmts) -> tuple:
    """``stmts`` with every read of an argmax's body at its position replaced by the largest
    value, the local ``top`` of its ``ArgStep``: the same value (``top`` is only ever set from
    the body, where the position is set), and no gather per lane."""
    args = _arg_vars(stmts)
    decls = _decls(stmts, {})
    out = stmts
    for step in _steps(stmts, []):
        pos = args.get(step.index)
        digits = _digits(step.at, pos) if pos is not None else None
        value = step.value
        if isinstance(value, c.Local) and value.name in decls:
            value = decls[value.name]       # a body read twice, computed once (lower.py)
        if digits is None or c.free_locals(value):
            continue
        at_pos = c.subst(value, digits)
        if pos not in c.free_ivars(at_pos):
            continue        # a body the same at every position: no read to replace
        top = c.Local(step.top)
        out = _map_stmts(out, lambda e, at_pos=at_pos, top=top: top if e == at_pos else e)
    return out


def lane_args(stmts) -> bool:
    """Whether the argmax positions of ``stmts`` are read only by the conditions of ``Select``
    expressions (a mask per lane once widened), so the kernel can be widened statement by
    statement."""
    names = set(_arg_vars(stmts))

    def free(a: Affine) -> bool:
        return not {v.name for v in a.ivars()} & names

    def expr_ok(e) -> bool:
        if isinstance(e, c.Load):
            return free(e.offset)
        if isinstance(e, (c.Local, c.Lit)):
            return True
        if isinstance(e, c.Select):
            return expr_ok(e.a)
        if isinstance(e, (c.Add, c.Mul, c.Max)):
            return expr_ok(e.a) and expr_ok(e.b)
        return expr_ok(e.a)

    def ok(ss) -> bool:
        for s in ss:
            if isinstance(s, For):
                if not all(free(a) for a in (*s.lo, *s.hi)) or not ok(s.body):
                    return False
            elif isinstance(s, If):
                if not all(free(k.a) for k in s.cond) or not ok(s.body):
                    return False
            elif isinstance(s, Store):
                if not free(s.offset) or not expr_ok(s.value):
                    return False
            elif isinstance(s, (c.Decl, c.Acc, c.Assign)):
                if not expr_ok(s.value):
                    return False
            elif isinstance(s, c.ArgStep):
                if not free(s.at) or not expr_ok(s.value) or _has_select_on(s.value, names):
                    return False
            elif isinstance(s, Buffer):
                return False        # the passes that make them leave argmax kernels alone
        return True
    return ok(stmts)


def _has_select_on(e, names: set) -> bool:
    """Whether a condition in ``e`` reads one of the positions ``names`` (an argmax whose body
    depends on another's position: not widened)."""
    found = []

    def f(x):
        if isinstance(x, c.Select) and any({v.name for v in k.a.ivars()} & names
                                           for k in x.cond):
            found.append(x)
        return x
    _map_expr(e, f)
    return bool(found)


def hoist_args(stmts) -> tuple:
    """``stmts`` with each perfect nest of element loops whose body is one argmax (``ArgDecl``,
    its ``top``, its loops) and then stores ``=`` that read it reordered: the loops the argmax
    depends on outside, the argmax between, the others inside, so it is computed once for
    them all (a max-pool's gradient: once per window, not once per element of it). Sound
    when the stores write distinct elements in distinct iterations (``_injective``) and read
    nothing the nest writes: the iterations are then independent and each still computes its
    element from the same values."""
    out = []
    for s in stmts:
        if isinstance(s, For):
            s = _hoisted(s) or For(s.var, hoist_args(s.body), s.parallel, s.lo, s.hi)
        elif isinstance(s, If):
            s = If(s.cond, hoist_args(s.body))
        out.append(s)
    return tuple(out)


def _hoisted(loop: For) -> For | None:
    loops, body = [], (loop,)
    while len(body) == 1 and isinstance(body[0], For):
        loops.append(body[0])
        body = body[0].body
    if len(body) < 4 or not isinstance(body[0], c.ArgDecl) or \
            not isinstance(body[1], c.Decl) or not isinstance(body[2], For) or \
            not all(isinstance(x, Store) and x.op == "=" for x in body[3:]):
        return None
    steps = _steps(body[2:3], [])
    if len(steps) != 1 or (steps[0].index, steps[0].top) != (body[0].name, body[1].name):
        return None
    if any(x.lo or x.hi for x in loops):
        return None
    group, stores = body[:3], body[3:]
    need = set()
    for a in _affines(group):
        need |= a.ivars()
    if {x.array for x in stores} & c.stmt_loads(body):
        return None
    vars_ = [x.var for x in loops]
    if not all(_injective(x.offset, vars_) for x in stores):
        return None
    outer = [x for x in loops if x.var in need]
    inner = [x for x in loops if x.var not in need]
    if not inner:
        return None
    nest = stores
    for x in reversed(inner):
        nest = (For(x.var, nest, x.parallel),)
    nest = (*group, *nest)
    for x in reversed(outer):
        nest = (For(x.var, nest, x.parallel),)
    return nest[0]


def _injective(off: Affine, vars_: list) -> bool:
    """Whether distinct values of the loop variables ``vars_`` (each over its whole extent)
    give distinct offsets: each variable's coefficient, in increasing size, exceeds the
    largest sum of the smaller ones' terms (a mixed radix); other atoms: not decided."""
    terms = dict(off.terms)
    if any(not isinstance(a, IVar) for a in terms) or set(terms) - set(vars_):
        return False
    reach = 0
    for v in sorted((v for v in vars_ if v.extent > 1), key=lambda v: abs(terms.get(v, 0))):
        k = abs(terms.get(v, 0))
        if k <= reach:
            return False
        reach += k * (v.extent - 1)
    return True
