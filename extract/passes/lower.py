"""lower_to_loops: each chain binding and gradient entry becomes a loop nest writing one
caller-owned buffer, with scalar locals only.

Before (IR of a binding ``y`` of shape ``[3, 4]``, with ``x`` of shape ``[7, 4]``)::

    y = imap i0<3>. sum t1<5>. x[i0 + t1]

After (``strategy="dest"``: the sum at the top of the map body accumulates into ``y``)::

    for (int i0 = 0; i0 < 3; i0++) {
        for (int j = 0; j < 4; j++) {
            y[i0 * 4 + j] = 0;
        }
        for (int t1 = 0; t1 < 5; t1++) {
            for (int j = 0; j < 4; j++) {
                y[i0 * 4 + j] += x[i0 * 4 + t1 * 4 + j];
            }
        }
    }

After (``strategy="element"``: every element computed on its own)::

    for (int j0 = 0; j0 < 3; j0++) {
        for (int j1 = 0; j1 < 4; j1++) {
            real acc0 = 0;
            for (int t1 = 0; t1 < 5; t1++) {
                acc0 += x[j0 * 4 + t1 * 4 + j1];
            }
            y[j0 * 4 + j1] = acc0;
        }
    }

How an element is computed: ``elem(e, pos)`` gives the scalar expression of ``e`` at a position
``pos`` (a tree of affine index expressions), following §4 of docs/dump-format.md: selections
and maps become index arithmetic (an ``ix_const`` is an integer at every leaf: it only moves the
constant terms of offsets and guards), slide/backslide/ix_minus become offsets and range guards,
and a ``sum`` becomes a ``Reduce``. The scheduler (``_Kernel.emit``) turns each ``Reduce`` into
a scalar accumulator and a loop, placed at the outermost loop level that binds a variable the
reduction depends on (loop-invariant hoisting), reusing an equal reduction already computed at
that level. A reduction is never moved out of a range guard (it could read out of bounds).
An ``argmax`` (version 5) is an index: the atom ``IArg`` in the offsets and conditions that use
it (its leaves ``div``/``mod`` of the flat position), placed by the same rule as a reduction
(``place_arg``) as an ``int`` local and its loop::

    int arg0 = 0;
    real top1 = 0;
    for (int a0 = 0; a0 < 1000; a0++) {
        if (a0 == 0 || top1 < x[a0]) {
            top1 = x[a0];
            arg0 = a0;
        }
    }

so the gradient ``imaps v. zero_but(v, argmax_i x[i], s)`` computes it once, outside the loop
over v. ``detach`` computes its argument (its derivative, 0, is already in the gradients).

Strategies: ``dest`` peels ``imap``/``imaps``/``imapb`` into loops over the output and turns a
``sum`` at the top of a binding (possibly under ``+``, ``minus`` or ``scaledown``) into ``+=``
accumulation into the zero-initialised output, so the innermost loop runs over contiguous
output elements (paper §7.1.2); ``imap i. sum t. x`` with a scalar ``x`` runs the sum loops
outside the map loops when that makes the innermost loop a unit-stride one (``sum_outside``).
``element`` computes every element independently (what the CUDA kernels do, one thread per
element). ``auto`` tries ``dest`` and falls back to ``element``.

The whole pass, per array: ``share_bindings`` (extract/passes/share.py) first, then the loop nest
above, then ``tighten_bounds`` (extract/passes/bounds.py: guards become loop bounds or points) and,
for C, ``split_div_loops`` (extract/passes/split.py: ``v / d`` indices become affine) and
``interchange_loops`` (extract/passes/interchange.py), and last ``block_sums``
(extract/passes/blocksum.py: a sum of thousands of terms into one place is added up in blocks).

**When a temporary array would be needed.** After hoisting, a reduction R sits inside a set of
loops. If one of them, of extent n > 1, is a loop whose variable R does not depend on (directly,
or through the locals it reads), and that loop's variable does not occur in a range guard
between the loop and R, then R is recomputed n times with the same value; the only way to
compute it once is to store its values for the inner loops it does depend on, which is a
temporary array. The recomputation factor of R is the product of those extents. When it exceeds
``Options.recompute_limit`` (default 1: none at all) lowering fails with ``ExtractError`` naming
the binding, the sum and the loop; ``auto`` first retries with the ``element`` strategy, whose
loop nest is different.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..ir import ir
from .blocksum import block_sums
from .bounds import tighten_bounds
from .interchange import interchange_loops
from .split import split_div_loops
from ..ir.code import (ZERO, ONE, Acc, Affine, ArgDecl, ArgStep, Assign, Cmp, Decl, For, If, IArg,
                   IDiv, IMod, IVar, Lit, Load, Local, Reduce, Select, Store, add, affine_args,
                   conj, cmp_eq, cond_ivars, contains_reduce, free_ivars, free_locals,
                   has_arg, idiv, imod, in_range, load_nodes, mul, neg, reduce, scale, select,
                   stmt_loads, un, max_)


class ExtractError(Exception):
    """The dump cannot be extracted to allocation-free code (see the module docstring)."""


@dataclass(frozen=True)
class Options:
    strategy: str = "auto"        # auto | dest | element
    recompute_limit: int = 1      # largest tolerated recomputation factor of a reduction
    threads: bool = False         # parallel loops are thread indices (CUDA): keep them whole
    blocks: bool = True           # lane kernels hold output blocks in registers (registers.py)
    winograd: bool = True         # lane kernels sum convolution rows by F(m, r) (winograd.py)
    fuse: bool = True             # parameter gradients added into the accumulator (fuse.py)
    inline: bool = True           # lane kernels compute elementwise bindings read once where
                                  # they are read (inline.py)
    lanes: int = 0                # samples per lane group in C (8 or 16); 0: sources.default_lanes
    block: int = 0                # most outputs in a register block (registers.py); 0:
                                  # sources.default_block
    tape: bool = False            # C entry points keeping a forward's values for a backward
                                  # (M_batch_forward, M_batch_backward: runtime.torch)


@dataclass(frozen=True)
class Kernel:
    """The loop nest computing one array of the model."""
    array: ir.Array
    reads: tuple            # names of the arrays read, in model order
    body: tuple             # statements
    strategy: str

    @property
    def name(self) -> str:
        return self.array.name


# ---------------------------------------------------------------------------------------------
# position trees: an Affine per leaf, nested as the shape

def _leaves(pos) -> list:
    if isinstance(pos, tuple):
        return _leaves(pos[0]) + _leaves(pos[1])
    return [pos]


def _zip(f, *trees):
    if isinstance(trees[0], tuple):
        return (_zip(f, *(t[0] for t in trees)), _zip(f, *(t[1] for t in trees)))
    return f(*trees)


def _flatten(pos, shape) -> Affine:
    off = Affine()
    for p, n in zip(_leaves(pos), ir.leaves(shape)):
        off = off.scale(n) + p
    return off


def _top_sum(e: ir.Node) -> bool:
    if isinstance(e, ir.Sum):
        return ir.size(e.s) != 1 or _top_sum(e.body)
    if isinstance(e, (ir.IMap, ir.IMapS, ir.IMapB)):
        return _top_sum(e.body)
    if isinstance(e, ir.Bin) and e.fn == "plus":
        return _top_sum(e.a) or _top_sum(e.b)
    if isinstance(e, (ir.Minus, ir.ScaleDown)):
        return _top_sum(e.a)
    return False


class _Frame:
    __slots__ = ("var", "parallel", "guard", "stmts", "memo", "defines")

    def __init__(self, var=None, parallel=False, guard=None):
        self.var = var
        self.parallel = parallel
        self.guard = guard
        self.stmts: list = []
        self.memo: dict = {}
        self.defines: set = set()


@dataclass
class Violation:
    reduction: Reduce
    loop: IVar
    factor: int


class _Kernel:
    def __init__(self, array: ir.Array, strategy: str, taken: set):
        self.array = array
        self.strategy = strategy
        self.taken = taken
        self.frames = [_Frame()]
        self.rank = 0
        self.nlocals = 0
        self.local_deps: dict[str, frozenset] = {}
        self.violations: list[Violation] = []
        self.arg_vars: set = set()      # the IVar locals of placed argmaxes

    # names and loops ----------------------------------------------------------------------
    def cname(self, base: str) -> str:
        return ir.fresh_name(base, self.taken)

    def local(self, base: str) -> str:
        name = self.cname(f"{base}{self.nlocals}")
        self.nlocals += 1
        return name

    def open_loops(self, shape, base: str, parallel: bool):
        ls = ir.leaves(shape)
        pos, opened = [], 0
        for k, n in enumerate(ls):
            if n == 1:
                pos.append(Affine.of(0))
                continue
            v = IVar(self.cname(base if len(ls) == 1 else f"{base}{k}" if base == "j"
                                else f"{base}_{k}"), n, self.rank)
            self.rank += 1
            self.frames.append(_Frame(v, parallel))
            pos.append(Affine.of(v))
            opened += 1
        it = iter(pos)
        return _rebuild(shape, it), opened

    def close_loops(self, n: int) -> None:
        for _ in range(n):
            f = self.frames.pop()
            if f.stmts:
                self.frames[-1].stmts.append(For(f.var, tuple(f.stmts), f.parallel))

    # elements -----------------------------------------------------------------------------
    def index(self, e: ir.Node, env: dict):
        if isinstance(e, ir.Var):
            return env[e.name]
        if isinstance(e, ir.IxConst):      # a compile-time constant at every leaf
            return _zip(Affine.of, e.pos)
        if isinstance(e, ir.Div):
            return _zip(lambda a, p: idiv(a, p), self.index(e.i, env), e.p)
        if isinstance(e, ir.Mod):
            return _zip(lambda a, p: imod(a, p), self.index(e.i, env), e.p)
        if isinstance(e, ir.IxPlus):
            return _zip(lambda a, b: a + b, self.index(e.i, env), self.index(e.j, env))
        if isinstance(e, ir.ArgMax):
            return self.argmax(e, env)
        raise TypeError(f"not an index expression: {type(e).__name__}")

    def argmax(self, e: ir.ArgMax, env: dict):
        """The position tree of an argmax: the flat position ``IArg`` (its loops named like a
        sum's), each leaf its row-major ``div``/``mod``; a shape of one position is 0."""
        ls = ir.leaves(e.s)
        n = ir.size(e.s)
        if n == 1:
            return _rebuild(e.s, iter([Affine.of(0)] * len(ls)))
        depth = len(env)
        vs = [IVar(self.cname(e.var if len(ls) == 1 else f"{e.var}_{k}"), m,
                   1000 + 16 * depth + k) for k, m in enumerate(ls)]
        tree = _rebuild(e.s, iter(Affine.of(v) for v in vs))
        body = self.elem(e.body, Affine.of(0), {**env, e.var: tree})
        flat = Affine.of(IArg(tuple(v for v in vs if v.extent != 1), _flatten(tree, e.s), n,
                              body, e))
        out, stride = [], n
        for m in ls:
            stride //= m
            out.append(imod(idiv(flat, stride), m))
        return _rebuild(e.s, iter(out))

    def elem(self, e: ir.Node, pos, env: dict):
        """The scalar expression of array expression ``e`` at position ``pos``."""
        if isinstance(e, ir.Var):
            return Load(e.name, _flatten(pos, e.shape))
        if isinstance(e, ir.Zero):
            return ZERO
        if isinstance(e, ir.One):
            return ONE
        if isinstance(e, ir.IMapS):
            return self.elem(e.body, Affine.of(0), {**env, e.var: pos})
        if isinstance(e, ir.SelS):
            return self.elem(e.a, self.index(e.i, env), env)
        if isinstance(e, ir.IMap):
            return self.elem(e.body, pos[1], {**env, e.var: pos[0]})
        if isinstance(e, ir.Sel):
            return self.elem(e.a, (self.index(e.i, env), pos), env)
        if isinstance(e, ir.IMapB):
            outer = _zip(lambda a, p: idiv(a, p), pos, e.p)
            inner = _zip(lambda a, p: imod(a, p), pos, e.p)
            return self.elem(e.body, inner, {**env, e.var: outer})
        if isinstance(e, ir.SelB):
            i = self.index(e.i, env)
            return self.elem(e.a, _zip(lambda a, p, k: a.scale(p) + k, i, e.p, pos), env)
        if isinstance(e, ir.Sum):
            depth = len(env)
            ls = ir.leaves(e.s)
            vs = [IVar(self.cname(e.var if len(ls) == 1 else f"{e.var}_{k}"), n,
                       1000 + 16 * depth + k) for k, n in enumerate(ls)]
            tree = _rebuild(e.s, iter(Affine.of(v) for v in vs))
            body = self.elem(e.body, pos, {**env, e.var: tree})
            return reduce(tuple(vs), body, e)
        if isinstance(e, ir.ZeroBut):
            i, j = _leaves(self.index(e.i, env)), _leaves(self.index(e.j, env))
            c = conj(*(cmp_eq(a - b) for a, b in zip(i, j)))
            return select(c, self.elem(e.a, pos, env))
        if isinstance(e, ir.Slide):
            i = self.index(e.i, env)
            return self.elem(e.a, _zip(lambda a, b: a + b, i, pos), env)
        if isinstance(e, ir.Backslide):
            i = self.index(e.i, env)
            k = _zip(lambda a, b: a - b, pos, i)
            c = _guard(k, ir.shape_suc(e.p))
            return select(c, self.elem(e.a, k, env)) if c is not False else ZERO
        if isinstance(e, ir.Un) and e.fn == "detach":   # the identity, as a value
            return self.elem(e.a, pos, env)
        if isinstance(e, ir.Un):
            return un(e.fn, self.elem(e.a, pos, env))
        if isinstance(e, ir.Bin):
            a, b = self.elem(e.a, pos, env), self.elem(e.b, pos, env)
            return add(a, b) if e.fn == "plus" else mul(a, b) if e.fn == "mul" else max_(a, b)
        if isinstance(e, ir.ScaleDown):
            return scale(self.elem(e.a, pos, env), e.n)
        if isinstance(e, ir.Minus):
            return neg(self.elem(e.a, pos, env))
        if isinstance(e, (ir.IxMinus, ir.IxMinusR)):
            k = _zip(lambda a, b: a - b, self.index(e.i, env), self.index(e.j, env))
            bound = ir.shape_suc(e.p) if isinstance(e, ir.IxMinus) else e.s
            c = _guard(k, bound)
            if c is False:
                return ZERO
            return select(c, self.elem(e.body, pos, {**env, e.var: k}))
        raise TypeError(f"not an array expression: {type(e).__name__}")

    # scheduling ---------------------------------------------------------------------------
    def emit(self, r):
        """Emit the statements ``r`` needs; return a scalar expression without reductions."""
        from ..ir import code as c
        if isinstance(r, c.Load) and affine_args(r.offset):
            return Load(r.array, self.resolve(r.offset))
        if isinstance(r, (c.Lit, c.Load, c.Local)):
            return r
        if isinstance(r, c.Add):
            return add(self.emit(r.a), self.emit(r.b))
        if isinstance(r, c.Mul):
            return mul(self.emit(r.a), self.emit(r.b))
        if isinstance(r, c.Neg):
            return neg(self.emit(r.a))
        if isinstance(r, c.Scale):
            return scale(self.emit(r.a), r.n)
        if isinstance(r, c.Un):
            return un(r.fn, self.emit(r.a))
        if isinstance(r, c.Max):
            return max_(self.emit(r.a), self.emit(r.b))
        if isinstance(r, c.Select) and not contains_reduce(r.a) and not has_arg(r):
            return r
        return self.place(r)

    # argmax: its position as an int local ----------------------------------------------------
    def resolve(self, a: Affine) -> Affine:
        """``a`` with every ``IArg`` placed (``place_arg``) and read as its local."""
        if not affine_args(a):
            return a
        out = Affine((), a.const)
        for t, k in a.terms:
            if isinstance(t, IArg):
                t = Affine.of(self.place_arg(t))
            elif isinstance(t, IDiv):
                t = idiv(self.resolve(t.a), t.d)
            elif isinstance(t, IMod):
                t = imod(self.resolve(t.a), t.d)
            else:
                t = Affine.of(t)
            out = out + t.scale(k)
        return out

    def resolve_cond(self, cond: tuple):
        return conj(*(Cmp(self.resolve(k.a), k.op) for k in cond))

    def target(self, fv: set, fl: set) -> int:
        """The outermost frame a value of free loop variables ``fv`` and locals ``fl`` may be
        computed at: inside every loop binding one of ``fv``, every range guard, and the
        frames defining ``fl``."""
        fl = fl | {v.name for v in fv & self.arg_vars}
        target = 0
        for k, f in enumerate(self.frames):
            if (f.var is not None and f.var in fv) or f.guard is not None or (f.defines & fl):
                target = k
        return target

    def deps(self, fv: set, fl: set) -> set:
        deps = set(fv)
        for name in fl | {v.name for v in fv & self.arg_vars}:
            deps |= self.local_deps.get(name, frozenset())
        return deps

    def place_arg(self, a: IArg) -> IVar:
        """Compute the argmax ``a`` where ``place`` would compute a reduction of the same
        variables (reused if equal), into an ``int`` local: ``ArgDecl``, a ``real`` local for
        the largest value so far, and its loops ending in an ``ArgStep``."""
        fv, fl = a.ivars(), free_locals(a.body)
        target = self.target(fv, fl)
        frame = self.frames[target]
        if a in frame.memo:
            return frame.memo[a]
        deps = self.deps(fv, fl)
        self.check_recompute(Reduce(a.vars, a.body, a.origin), target, deps)
        index, top = self.local("arg"), self.local("top")
        saved = self.frames
        self.frames = saved[:target + 1]
        frame.stmts.append(ArgDecl(index))
        frame.stmts.append(Decl(top, ZERO))
        for v in a.vars:
            self.frames.append(_Frame(v))
        value = self.emit(a.body)
        if not isinstance(value, (Load, Local, Lit)):   # read twice: computed once
            tmp = self.local("tmp")
            self.frames[-1].stmts.append(Decl(tmp, value))
            value = Local(tmp)
        self.frames[-1].stmts.append(ArgStep(index, top, a.at, value))
        self.close_loops(len(a.vars))
        self.frames = saved
        v = IVar(index, a.n, self.rank)
        self.rank += 1
        self.arg_vars.add(v)
        frame.memo[a] = v
        frame.defines.add(index)
        self.local_deps[index] = frozenset(deps)
        return v

    def place(self, r):
        if isinstance(r, Select) and any(affine_args(k.a) for k in r.cond):
            r = Select(self.resolve_cond(r.cond), r.a)
            if not contains_reduce(r.a) and not has_arg(r.a):
                return r
        fv, fl = free_ivars(r), free_locals(r)
        target = self.target(fv, fl)
        frame = self.frames[target]
        if r in frame.memo:
            return Local(frame.memo[r])
        deps = self.deps(fv, fl)
        if isinstance(r, Reduce):
            self.check_recompute(r, target, deps)
        name = self.local("acc" if isinstance(r, Reduce) else "tmp")
        saved = self.frames
        self.frames = saved[:target + 1]
        frame.stmts.append(Decl(name, ZERO))
        if isinstance(r, Reduce):
            for v in r.vars:
                self.frames.append(_Frame(v))
            value = self.emit(r.body)
            if isinstance(value, Select):   # a guarded term: an if (its bounds may tighten)
                self.frames[-1].stmts.append(If(value.cond, (Acc(name, value.a),)))
            elif value != ZERO:
                self.frames[-1].stmts.append(Acc(name, value))
            self.close_loops(len(r.vars))
        else:
            self.frames.append(_Frame(guard=r.cond))
            value = self.emit(r.a)
            self.frames[-1].stmts.append(Assign(name, value))
            g = self.frames.pop()
            frame.stmts.append(If(r.cond, tuple(g.stmts)))
        self.frames = saved
        frame.memo[r] = name
        frame.defines.add(name)
        self.local_deps[name] = frozenset(deps)
        return Local(name)

    def check_recompute(self, r: Reduce, target: int, deps: set) -> None:
        factor, worst = 1, None
        for k in range(1, target + 1):
            f = self.frames[k]
            if f.var is None or f.var.extent <= 1 or f.var in deps:
                continue
            if any(g.guard is not None and f.var in cond_ivars(g.guard)
                   for g in self.frames[k + 1:target + 1]):
                continue
            factor *= f.var.extent
            worst = worst or f.var
        if worst is not None:
            self.violations.append(Violation(r, worst, factor))

    def store(self, offset: Affine, value, acc: bool) -> None:
        array = self.array.name
        if acc:
            if value == ZERO:
                return
            if isinstance(value, Select):
                if any(affine_args(k.a) for k in value.cond):
                    value = select(self.resolve_cond(value.cond), value.a)
                    if not isinstance(value, Select):
                        self.store(offset, value, acc)
                        return
                self.frames.append(_Frame(guard=value.cond))
                v = self.emit(value.a)
                self.frames[-1].stmts.append(Store(array, offset, "+=", v))
                g = self.frames.pop()
                self.frames[-1].stmts.append(If(value.cond, tuple(g.stmts)))
                return
            self.frames[-1].stmts.append(Store(array, offset, "+=", self.emit(value)))
        else:
            self.frames[-1].stmts.append(Store(array, offset, "=", self.emit(value)))

    # destinations -------------------------------------------------------------------------
    def into(self, e: ir.Node, view, acc: bool, env: dict, wrap) -> None:
        """Write (``acc``: add) the value of ``e`` into the output through ``view``."""
        if self.strategy == "dest" and isinstance(e, (ir.IMap, ir.IMapS, ir.IMapB)):
            sums = self.sum_outside(e, env)
            if sums:
                # imap i. sum t. x(i, t)  ->  y = 0; for t: for i: y[i] += x(i, t)
                if not acc:
                    pos, n = self.open_loops(e.shape, "j", parallel=True)
                    self.store(view(pos), ZERO, False)
                    self.close_loops(n)
                inner_env, opened = dict(env), 0
                for sm in sums:
                    tv, nt = self.open_loops(sm.s, sm.var, parallel=False)
                    inner_env[sm.var] = tv
                    opened += nt
                pi, n = self.open_loops(e.s, e.var, parallel=False)
                inner_env[e.var] = pi
                self.into(sums[-1].body, _subview(e, view, pi), True, inner_env, wrap)
                self.close_loops(n + opened)
                return
            pi, n = self.open_loops(e.s, e.var, parallel=not acc)
            self.into(e.body, _subview(e, view, pi), acc, {**env, e.var: pi}, wrap)
            self.close_loops(n)
            return
        if self.strategy == "dest" and _top_sum(e):
            if isinstance(e, ir.Sum) and ir.size(e.s) == 1:   # a sum over a single position
                at = _rebuild(e.s, iter([Affine.of(0)] * len(ir.leaves(e.s))))
                self.into(e.body, view, acc, {**env, e.var: at}, wrap)
                return
            if isinstance(e, ir.Sum):
                if not acc:
                    pos, n = self.open_loops(e.shape, "j", parallel=True)
                    self.store(view(pos), ZERO, False)
                    self.close_loops(n)
                tv, n = self.open_loops(e.s, e.var, parallel=False)
                self.into(e.body, view, True, {**env, e.var: tv}, wrap)
                self.close_loops(n)
                return
            if isinstance(e, ir.Bin):
                # the side without a sum first: it initialises the output, the sums add to it
                first, second = (e.a, e.b) if not _top_sum(e.a) else (e.b, e.a)
                self.into(first, view, acc, env, wrap)
                self.into(second, view, True, env, wrap)
                return
            if isinstance(e, ir.Minus):
                self.into(e.a, view, acc, env, lambda x: wrap(neg(x)))
                return
            if isinstance(e, ir.ScaleDown):
                self.into(e.a, view, acc, env, lambda x, n=e.n: wrap(scale(x, n)))
                return
        pos, n = self.open_loops(e.shape, "j", parallel=not acc)
        self.store(view(pos), wrap(self.elem(e, pos, env)), acc)
        self.close_loops(n)

    def sum_outside(self, e: ir.Node, env: dict) -> list:
        """The sums to run outside the loops of ``imap i. sum t. ... x`` (x scalar per i), or
        ``[]``: with the sum loops outside, the innermost map loop updates consecutive outputs
        and reads every array with a stride of 0 or 1 along it (a vectorisable loop, not a
        chain of dependent additions). Each output gets the same terms either way."""
        sums, b = [], e.body
        while isinstance(b, ir.Sum):
            sums.append(b)
            b = b.body
        if not sums or all(ir.size(sm.s) == 1 for sm in sums) or ir.size(b.shape) != 1:
            return []
        ls = [n for n in ir.leaves(e.s) if n != 1]
        if not ls or ls[-1] < 4:
            return []
        probe = [IVar(f"probe{k}", n, -1) for k, n in enumerate(ir.leaves(e.s))]
        inner = [v for v in probe if v.extent != 1][-1]
        penv = {**env, e.var: _rebuild(e.s, iter(Affine.of(v) for v in probe))}
        for d, sm in enumerate(sums):
            tprobe = [IVar(f"tprobe{d}_{k}", n, -1) for k, n in enumerate(ir.leaves(sm.s))]
            penv[sm.var] = _rebuild(sm.s, iter(Affine.of(v) for v in tprobe))
        # the body's one position (of a shape 1, or 1×1: a tree of zeros)
        value = self.elem(b, _rebuild(b.shape, iter([Affine.of(0)] * len(ir.leaves(b.shape)))),
                          penv)
        if contains_reduce(value):
            return []
        if all(_offset_coeff(x, inner) in (0, 1) for x in load_nodes(value)):
            return sums
        return []

    def run(self) -> tuple:
        shape = self.array.shape
        self.into(self.array.expr, lambda pos: _flatten(pos, shape), False, {}, lambda x: x)
        assert len(self.frames) == 1
        return tuple(self.frames[0].stmts)


def _subview(e: ir.Node, view, pi):
    """The view of the body of a map ``e`` at map position ``pi``."""
    if isinstance(e, ir.IMap):
        return lambda k: view((pi, k))
    if isinstance(e, ir.IMapS):
        return lambda k: view(pi)
    return lambda k: view(_zip(lambda a, b, c: a.scale(b) + c, pi, e.p, k))


def _offset_coeff(load, v) -> int:
    k = load.offset.coeff(v)
    if k == 0 and v in load.offset.ivars():
        return -1          # under a div or mod: not a unit stride
    return k


def _rebuild(shape, it):
    if isinstance(shape, int):
        return next(it)
    left = _rebuild(shape[0], it)
    return (left, _rebuild(shape[1], it))


def _guard(k, bound_shape):
    return conj(*(in_range(a, n) for a, n in zip(_leaves(k), ir.leaves(bound_shape))))


# inline_sum (the function a sum is written under) is the dump IR's (extract/ir/ir.py): the
# front end warns with it too; re-exported here, where it was defined
inline_sum = ir.inline_sum


def _sums(e: ir.Node):
    if isinstance(e, ir.Sum):
        yield e
    for c in e.children():
        yield from _sums(c)


def _source(model: ir.Model, origin: ir.Node | None) -> ir.Array | None:
    """The model's binding that writes the sum a gradient repeats: the one with a sum reading
    the same arrays (the optimiser rewrites a sum's form, not what it reads)."""
    if origin is None:
        return None
    want = ir.reads(origin)
    return next((b for b in model.chain for t in _sums(b.expr) if ir.reads(t) == want), None)


def _describe(v: Violation, array: ir.Array, strategy: str, limit: int, model: ir.Model) -> str:
    sub = ir.show(v.reduction.origin) if v.reduction.origin is not None else "a sum"
    if len(sub) > 160:
        sub = sub[:157] + "..."
    text = (f"binding {array.name!r}: the subterm `{sub}` would need a temporary array: "
            f"({strategy} strategy) it is recomputed for every value of loop "
            f"{v.loop.name!r} (extent {v.loop.extent}), on which it does not depend; "
            f"recomputation factor {v.factor} > limit {limit}.")
    accept = " (python -m extract --recompute-limit N accepts the recomputation instead)"
    b = _source(model, v.reduction.origin) if array.kind == "grad" else None
    if b is not None and b.name != array.name:
        fn = inline_sum(b.expr)
        where = f" (a sum inside {fn})" if fn else ""
        return (text + f" The sum is written inside an expression in binding {b.name}{where}: "
                f"give it a line of its own and use its name there, and it is computed "
                f"once" + accept)
    return (text + " Where the model writes a sum inside an expression, give it a binding of "
            "its own (a line like `h = dense(w, x)`, then use h): it is then computed once"
            + accept)


def lower_array(model: ir.Model, array: ir.Array, options: Options = Options(),
                taken=None, order=None) -> Kernel:
    """Lower one chain binding or gradient entry; raises ExtractError (see module doc).
    ``taken`` (the model's names and the C words) and ``order`` (each array's position in
    the model): what ``lower_to_loops`` computes once for all kernels rather than once each."""
    taken = taken if taken is not None else set(model.arrays) | {"real", "idx", "sample"}
    order = order if order is not None else {a: k for k, a in enumerate(model.arrays)}
    if options.strategy == "auto":
        strategies = ["dest", "element"] if _top_sum(array.expr) else ["element"]
    else:
        strategies = [options.strategy]
    error = None
    for strategy in strategies:
        k = _Kernel(array, strategy, taken)
        body = tighten_bounds(k.run(), options.threads)
        if not options.threads:
            # splitting can turn a guard into an equality with a new loop: tighten again
            body = interchange_loops(tighten_bounds(split_div_loops(body, taken), options.threads))
        body = block_sums(body, taken)
        bad = [v for v in k.violations if v.factor > options.recompute_limit]
        if not bad:
            reads = stmt_loads(body)
            ordered = tuple(sorted((a for a in reads if a in order), key=order.get))
            return Kernel(array, ordered, body, strategy)
        error = _describe(bad[0], array, strategy, options.recompute_limit, model)
    raise ExtractError(error)


MAX_IR_DEPTH = 2000   # nodes: twice a dump's (dump.MAX_DEPTH), room for inline_bindings


def lower_to_loops(model: ir.Model, options: Options = Options()):
    """All kernels of a model: (forward kernels in chain order, backward kernels in order).

    The passes walk expressions recursively: an expression deeper than ``MAX_IR_DEPTH`` nodes
    (a dump's are at most ``dump.MAX_DEPTH``, but ``inline_bindings`` may put one binding
    inside another) is one ``ExtractError`` naming the binding and its depth."""
    from ..limits import deep_enough
    from .share import share_bindings
    deep_enough()
    for a in (*model.chain, *model.gradients):
        d = ir.depth(a.expr)
        if d > MAX_IR_DEPTH:
            raise ExtractError(f"{a.name}: the expression is {d:,} nodes deep (after bindings "
                               f"computed where they are read), more than the {MAX_IR_DEPTH:,} "
                               f"the passes walk; bind a part of it to a name first")
    model = share_bindings(model)
    taken = set(model.arrays) | {"real", "idx", "sample"}
    order = {a: k for k, a in enumerate(model.arrays)}
    fwd = tuple(lower_array(model, a, options, taken, order) for a in model.chain)
    bwd = tuple(lower_array(model, g, options, taken, order) for g in model.gradients)
    return fwd, bwd
