"""Read an expression dump (docs/dump-format.md), check it, and build the typed IR.

``parse(data)`` checks, in this order, and raises ``DumpError`` at the first problem with one
message that names the JSON path of the offending value (``$.chain[2].expr.body.a``):

1. the top level: format, a version this extractor knows, the keys and their types;
2. every expression: known ``op`` (of the dump's version: ``sqrt`` needs 4, ``argmax`` and
   ``detach`` 5, ``erf`` and ``derf`` 6), the fields that op
   needs, declared sort and shape equal to the ones computed from the children (§4), relations
   between shapes (same tree structure), constant positions within their shape,
   de Bruijn indices in scope (§3), no ``d_`` placeholder in a forward binding, no gradient
   placeholder used before its entry;
3. the gradient list (one entry per chain binding, last first, then one per param), names
   unique, C identifiers that are not C/CUDA keywords, outputs naming chain bindings; sizes:
   no array, nor all parameters, inputs or bindings together, past what the generated C's
   structs can hold (``MAX_ELEMENTS``: 16 lanes of doubles within ``ptrdiff_t``, the C's
   largest object; its indices are ints where they fit and ``ptrdiff_t`` past them,
   extract/emit/printer.py), and one lane group's buffers within the memory budget
   (``$PROVED_KERNELS_MEMORY``, else the machine's memory), each refused at the name of the
   (largest) array with its shape and size;
4. the JSON Schema ``docs/dump-format.schema.json`` (when present), as a backstop for anything
   the checks above do not cover; once per dump (a dump that passed is remembered in the
   cache), since it costs seconds on a large one.

Nothing is written by this module; the CLI only writes once parsing succeeded.

Depth. Expressions are trees that the parser, the IR passes and the printer walk recursively,
so their nesting is bounded: ``loads`` refuses JSON text nested deeper than ``MAX_JSON_DEPTH``
before decoding it (``json.loads`` itself recurses), and ``parse`` an expression nested deeper
than ``MAX_DEPTH`` nodes, each with one ``DumpError`` naming the depth and the limit (never a
``RecursionError`` or a crash of the interpreter). The elaborator's own limit (200 levels of a
binding in a model file, docs/model-format.md) stays far below both.
"""
from __future__ import annotations

import hashlib
import functools
import itertools
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import ir
from .. import limits, paths
from ..limits import deep_enough  # noqa: F401  (re-exported: frontend, __main__)

FORMAT = "ad-expression-dump"
# 2 added ix_const and the elementwise functions exp, log, recip, relu, step (logistic was in 1);
# 3 added the context role "const", 4 the elementwise function sqrt, 5 the index node argmax and
# the elementwise function detach, 6 the elementwise functions erf and derf; a dump of version k
# is one of version k + 1 without them
VERSIONS = (1, 2, 3, 4, 5, 6)
ROLES = {1: ("input", "param"), 2: ("input", "param"),
         **{v: ("input", "param", "const") for v in (3, 4, 5, 6)}}
# the nodes a dump must say a later version for (version 2's are read in a version 1 dump)
SINCE = {"sqrt": 4, "argmax": 5, "detach": 5, "erf": 6, "derf": 6}
# the binary ops of "bin" (max is in version 2)
BIN_FNS = ("plus", "mul", "max")
SCHEMA = paths.locate("schema")

C_KEYWORDS = frozenset("""
auto break case char const continue default do double else enum extern float for goto if inline
int long register restrict return short signed sizeof static struct switch typedef union unsigned
void volatile while _Bool _Complex _Imaginary _Alignas _Alignof _Atomic _Generic _Noreturn
_Static_assert _Thread_local bool true false class new delete template this namespace operator
private public protected virtual friend typename using real size_t NULL main exp expf log logf
logistic recip relu step fmax_ idx sample imin imax sqrt sqrtf erf erff derf PK_2_SQRTPI lmin
memcpy memset omp_get_num_threads omp_get_thread_num share barrier part nparts blocks forward_n
backward_n LANE_LOOP BLOCK STRIDE_INPUTS STRIDE_VALUES STRIDE_GRADS dim3 uint3 gridDim blockDim
blockIdx threadIdx Launch pk_launch pk_cuda_host pk_cuda_host_order std PK_CUDA_HOST_H
nullptr try catch throw and or not xor bitand bitor compl not_eq or_eq xor_eq and_eq explicit
mutable export constexpr consteval constinit decltype noexcept static_assert static_cast
const_cast dynamic_cast reinterpret_cast typeid wchar_t char8_t char16_t char32_t thread_local
asm alignas alignof concept requires co_await co_return co_yield final override
""".split()) | frozenset(
    # the lane kernels' vector helpers (extract/emit/templates/c/model.c.j2), full (v) and
    # half (h) width
    p + h for p in "vh" for h in """real mask bits ints load store store_v splat sel fmax_ fmax_a
    fmax_b relu relu_x step step_x exp exp_at exp_x logistic logistic_at logistic_x sqrt sqrt_at
    sqrt_x""".split()
) | {"VEXP_MINMAX", "VEXP_AVX512", "HEXP_MINMAX", "HEXP_AVX512"}
# C's and C++'s keywords (the CUDA compiles as C++), and every identifier the generated C and
# CUDA use where a model's names are in scope. No longer refused: every name is mapped to a C
# name of its own (extract/ir/names.py), so these are kept for the ONNX importer's readable names
# alone. Refused: names that begin with an underscore or hold a double one (reserved by C and
# C++).
# tests/test_extract_build.py compiles models named after identifiers the kernels use that are
# not here, as inputs, parameters and bindings.

LANE_WORDS = frozenset({"lanes", "hlanes"})

MAX_DEPTH = 1000                      # nodes nested in one expression (see Depth above)
MAX_JSON_DEPTH = 2 * MAX_DEPTH + 100  # arrays and objects nested in a dump's JSON text
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")

PTRDIFF_MAX = 2 ** 63 - 1             # the largest C object, in bytes; the widest index
MAX_LANES = 16                        # the most lanes a kernel has (extract/emit/sources.py)
MAX_ELEMENTS = PTRDIFF_MAX // (MAX_LANES * 8)   # per array and per group: see _fits_index
# The memory budget of one lane group's buffers (see _fits_memory): PROVED_KERNELS_MEMORY, in
# bytes (a suffix K, M, G or T: powers of 1024), else this machine's physical memory.
ENV_MEMORY = "PROVED_KERNELS_MEMORY"

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class DumpError(ValueError):
    """A dump that is not valid; ``path`` is the JSON path of the offending value."""

    def __init__(self, path: str, message: str):
        super().__init__(f"{path}: {message}")
        self.path = path
        self.message = message


def _req(cond: bool, path: str, message: str) -> None:
    if not cond:
        raise DumpError(path, message)


def _shape(x: Any, path: str) -> ir.Shape:
    if isinstance(x, bool) or not (isinstance(x, int) or isinstance(x, list)):
        raise DumpError(path, f"not a shape: {json.dumps(x)[:60]}")
    if isinstance(x, int):
        _req(x >= 0, path, f"a shape leaf must be a natural number, got {x}")
        return x
    _req(len(x) == 2, path, f"a product shape is a two-element array, got {len(x)} elements")
    return (_shape(x[0], f"{path}[0]"), _shape(x[1], f"{path}[1]"))


def _pos(x: Any, shape: ir.Shape, path: str) -> ir.Shape:
    """A position of ``shape`` (§1): the same tree, each leaf below its dimension."""
    if isinstance(shape, int):
        _req(isinstance(x, int) and not isinstance(x, bool), path,
             f"a position leaf must be an integer, got {json.dumps(x)[:60]}")
        _req(0 <= x < shape, path,
             f"position leaf {x} is out of range for a dimension of {shape}")
        return x
    _req(isinstance(x, list) and len(x) == 2, path,
         f"a position of shape {ir.show_shape(shape)} is a two-element array, got "
         f"{json.dumps(x)[:60]}")
    return (_pos(x[0], shape[0], f"{path}[0]"), _pos(x[1], shape[1], f"{path}[1]"))


def _same(s: ir.Shape, p: ir.Shape, path: str, what: str) -> None:
    _req(ir.same_structure(s, p), path,
         f"{what}: shapes {ir.show_shape(s)} and {ir.show_shape(p)} differ in tree structure")


@dataclass(frozen=True)
class _Entry:
    name: str
    sort: str
    shape: ir.Shape
    kind: str          # context | chain | grad | index


# op -> field names (besides op/sort/shape); bodies are parsed in an extended scope
_FIELDS = {
    "var": ("idx",), "zero": (), "one": (),
    "imaps": ("s", "body"), "sels": ("a", "i"),
    "imap": ("s", "body"), "sel": ("a", "i"),
    "imapb": ("s", "p", "body"), "selb": ("s", "p", "a", "i"),
    "sum": ("s", "body"), "zero_but": ("i", "j", "a"),
    "slide": ("s", "p", "i", "a"), "backslide": ("s", "p", "i", "a"),
    **{f: ("a",) for f in ir.UNARY},
    "bin": ("fn", "a", "b"), "scaledown": ("n", "a"), "minus": ("a",),
    "ix_const": ("pos",), "div": ("s", "p", "i"), "mod": ("s", "p", "i"),
    "ix_plus": ("s", "p", "i", "j"),
    "ix_minus": ("s", "p", "i", "j", "body"), "ix_minus_r": ("s", "p", "i", "j", "body"),
    "argmax": ("s", "body"),
}
_BINDER_ROLE = {"imaps": "i", "imap": "i", "imapb": "i", "sum": "t",
                "ix_minus": "k", "ix_minus_r": "k", "argmax": "a"}


class _ExprParser:
    """Parses one top-level expression; ``forbidden`` are placeholder names not yet usable."""

    def __init__(self, forbidden: dict[str, str], reserved: set[str], version: int):
        self.forbidden = forbidden      # name -> reason
        self.reserved = reserved        # array names: binder names avoid them
        self.version = version          # the dump's: a node of a later version is refused
        self.counts: dict[str, int] = {}
        self.depth = 0                  # nodes open above the current one
        self.top = "$"                  # the path of the top-level expression

    def ar_top(self, x: dict, key: str, scope, path: str) -> ir.Node:
        """The top-level expression ``x[key]`` (a binding's, the seed's, a gradient's)."""
        self.top = f"{path}.{key}"
        return self.ar(x, key, scope, path)

    def fresh(self, role: str, depth: int) -> str:
        # named by role and binder depth: nested binders get distinct names, and equal
        # subterms at equal depths get equal names (so later passes can share their work)
        return ir.fresh_name(f"{role}{depth}", self.reserved)

    def node(self, x: Any, scope: list[_Entry], path: str) -> ir.Node:
        if self.depth >= MAX_DEPTH:
            raise DumpError(self.top, f"the expression is nested more than {MAX_DEPTH} nodes "
                                      f"deep (the most this extractor reads: its passes are "
                                      f"recursive); bind a part of it to a name first")
        self.depth += 1
        try:
            return self._node(x, scope, path)
        finally:
            self.depth -= 1

    def _node(self, x: Any, scope: list[_Entry], path: str) -> ir.Node:
        _req(isinstance(x, dict), path, "an expression must be an object")
        _req("op" in x, path, "missing key 'op'")
        op = x["op"]
        _req(isinstance(op, str) and op in _FIELDS, path + ".op", f"unknown node {op!r}")
        _req(self.version >= SINCE.get(op, 1), path + ".op",
             f"node {op!r} is in version {SINCE.get(op)}, but the dump says version "
             f"{self.version}")
        for key in ("sort", "shape") + _FIELDS[op]:
            _req(key in x, path, f"missing key {key!r} of node {op!r}")
        extra = set(x) - {"op", "sort", "shape", *_FIELDS[op]}
        _req(not extra, path, f"unexpected key(s) {sorted(extra)} in node {op!r}")
        sort = x["sort"]
        _req(sort in ("ar", "ix"), path + ".sort", f"sort must be 'ar' or 'ix', got {sort!r}")
        shape = _shape(x["shape"], path + ".shape")
        node = getattr(self, "op_" + op)(x, scope, path)
        _req(node.sort == sort, path + ".sort",
             f"node {op!r} has sort {node.sort!r}, declared {sort!r}")
        _req(node.shape == shape, path + ".shape",
             f"node {op!r} has shape {ir.show_shape(node.shape)}, declared "
             f"{ir.show_shape(shape)}")
        return node

    # children ---------------------------------------------------------------------------
    def ar(self, x: dict, key: str, scope, path: str) -> ir.Node:
        n = self.node(x[key], scope, f"{path}.{key}")
        _req(n.sort == "ar", f"{path}.{key}", "expected an array expression (sort 'ar')")
        return n

    def ix(self, x: dict, key: str, scope, path: str, shape: ir.Shape | None = None) -> ir.Node:
        n = self.node(x[key], scope, f"{path}.{key}")
        _req(n.sort == "ix", f"{path}.{key}", "expected an index expression (sort 'ix')")
        if shape is not None:
            _req(n.shape == shape, f"{path}.{key}",
                 f"index of shape {ir.show_shape(n.shape)} where {ir.show_shape(shape)} "
                 f"is expected")
        return n

    def ashape(self, node: ir.Node, shape: ir.Shape, path: str) -> None:
        _req(node.shape == shape, path,
             f"array of shape {ir.show_shape(node.shape)} where {ir.show_shape(shape)} is "
             f"expected")

    def body(self, x: dict, op: str, ishape: ir.Shape, scope, path: str):
        var = self.fresh(_BINDER_ROLE[op], sum(e.kind == "index" for e in scope))
        inner = scope + [_Entry(var, "ix", ishape, "index")]
        return var, self.ar(x, "body", inner, path)

    def sp(self, x: dict, path: str):
        s = _shape(x["s"], path + ".s")
        p = _shape(x["p"], path + ".p")
        _same(s, p, path, "s and p")
        return s, p

    # nodes --------------------------------------------------------------------------------
    def op_var(self, x, scope, path):
        idx = x["idx"]
        _req(isinstance(idx, int) and not isinstance(idx, bool) and idx >= 0, path + ".idx",
             f"a de Bruijn index is a natural number, got {idx!r}")
        _req(idx < len(scope), path + ".idx",
             f"variable {idx} out of scope (only {len(scope)} variable(s) in scope)")
        e = scope[len(scope) - 1 - idx]
        if e.name in self.forbidden:
            raise DumpError(path, f"refers to {e.name!r}: {self.forbidden[e.name]}")
        return ir.Var(e.shape, e.name, e.kind, e.sort)

    def op_zero(self, x, scope, path):
        return ir.Zero(_shape(x["shape"], path + ".shape"))

    def op_one(self, x, scope, path):
        return ir.One(_shape(x["shape"], path + ".shape"))

    def op_imaps(self, x, scope, path):
        s = _shape(x["s"], path + ".s")
        var, body = self.body(x, "imaps", s, scope, path)
        self.ashape(body, 1, path + ".body")
        return ir.IMapS(s, s, var, body)

    def op_sels(self, x, scope, path):
        a = self.ar(x, "a", scope, path)
        i = self.ix(x, "i", scope, path, a.shape)
        return ir.SelS(1, a, i)

    def op_imap(self, x, scope, path):
        s = _shape(x["s"], path + ".s")
        var, body = self.body(x, "imap", s, scope, path)
        return ir.IMap((s, body.shape), s, var, body)

    def op_sel(self, x, scope, path):
        a = self.ar(x, "a", scope, path)
        _req(isinstance(a.shape, tuple), path + ".a",
             f"sel needs an array of product shape, got {ir.show_shape(a.shape)}")
        i = self.ix(x, "i", scope, path, a.shape[0])
        return ir.Sel(a.shape[1], a, i)

    def op_imapb(self, x, scope, path):
        s, p = self.sp(x, path)
        var, body = self.body(x, "imapb", s, scope, path)
        self.ashape(body, p, path + ".body")
        return ir.IMapB(ir.shape_times(s, p), s, p, var, body)

    def op_selb(self, x, scope, path):
        s, p = self.sp(x, path)
        a = self.ar(x, "a", scope, path)
        self.ashape(a, ir.shape_times(s, p), path + ".a")
        i = self.ix(x, "i", scope, path, s)
        return ir.SelB(p, s, p, a, i)

    def op_sum(self, x, scope, path):
        s = _shape(x["s"], path + ".s")
        var, body = self.body(x, "sum", s, scope, path)
        return ir.Sum(body.shape, s, var, body)

    def op_zero_but(self, x, scope, path):
        i = self.ix(x, "i", scope, path)
        j = self.ix(x, "j", scope, path, i.shape)
        a = self.ar(x, "a", scope, path)
        return ir.ZeroBut(a.shape, i, j, a)

    def op_slide(self, x, scope, path):
        s, p = self.sp(x, path)
        i = self.ix(x, "i", scope, path, s)
        a = self.ar(x, "a", scope, path)
        self.ashape(a, ir.shape_plus(s, p), path + ".a")
        return ir.Slide(ir.shape_suc(p), s, p, i, a)

    def op_backslide(self, x, scope, path):
        s, p = self.sp(x, path)
        i = self.ix(x, "i", scope, path, s)
        a = self.ar(x, "a", scope, path)
        self.ashape(a, ir.shape_suc(p), path + ".a")
        return ir.Backslide(ir.shape_plus(s, p), s, p, i, a)

    def unary(self, x, scope, path):
        a = self.ar(x, "a", scope, path)
        return ir.Un(a.shape, x["op"], a)

    op_logistic = op_exp = op_log = op_recip = op_sqrt = op_relu = op_step = op_detach = unary
    op_erf = op_derf = unary

    def op_bin(self, x, scope, path):
        fn = x["fn"]
        _req(fn in BIN_FNS, path + ".fn", f"fn must be 'plus', 'mul' or 'max', got {fn!r}")
        a = self.ar(x, "a", scope, path)
        b = self.ar(x, "b", scope, path)
        self.ashape(b, a.shape, path + ".b")
        return ir.Bin(a.shape, fn, a, b)

    def op_scaledown(self, x, scope, path):
        n = x["n"]
        _req(isinstance(n, int) and not isinstance(n, bool) and n >= 1, path + ".n",
             f"scaledown needs an integer n >= 1, got {n!r}")
        a = self.ar(x, "a", scope, path)
        return ir.ScaleDown(a.shape, n, a)

    def op_minus(self, x, scope, path):
        a = self.ar(x, "a", scope, path)
        return ir.Minus(a.shape, a)

    def op_ix_const(self, x, scope, path):
        shape = _shape(x["shape"], path + ".shape")
        return ir.IxConst(shape, _pos(x["pos"], shape, path + ".pos"))

    def op_div(self, x, scope, path):
        s, p = self.sp(x, path)
        i = self.ix(x, "i", scope, path, ir.shape_times(s, p))
        return ir.Div(s, s, p, i)

    def op_mod(self, x, scope, path):
        s, p = self.sp(x, path)
        i = self.ix(x, "i", scope, path, ir.shape_times(s, p))
        return ir.Mod(p, s, p, i)

    def op_argmax(self, x, scope, path):
        s = _shape(x["s"], path + ".s")
        _req(min(ir.leaves(s)) >= 1, path + ".s",
             f"argmax over shape {ir.show_shape(s)}: a shape with a leaf 0 has no position")
        var, body = self.body(x, "argmax", s, scope, path)
        self.ashape(body, 1, path + ".body")
        return ir.ArgMax(s, s, var, body)

    def op_ix_plus(self, x, scope, path):
        s, p = self.sp(x, path)
        i = self.ix(x, "i", scope, path, s)
        j = self.ix(x, "j", scope, path, ir.shape_suc(p))
        return ir.IxPlus(ir.shape_plus(s, p), s, p, i, j)

    def op_ix_minus(self, x, scope, path):
        s, p = self.sp(x, path)
        i = self.ix(x, "i", scope, path, ir.shape_plus(s, p))
        j = self.ix(x, "j", scope, path, s)
        var, body = self.body(x, "ix_minus", ir.shape_suc(p), scope, path)
        return ir.IxMinus(body.shape, s, p, i, j, var, body)

    def op_ix_minus_r(self, x, scope, path):
        s, p = self.sp(x, path)
        i = self.ix(x, "i", scope, path, ir.shape_plus(s, p))
        j = self.ix(x, "j", scope, path, ir.shape_suc(p))
        var, body = self.body(x, "ix_minus_r", s, scope, path)
        return ir.IxMinusR(body.shape, s, p, i, j, var, body)


def name_problem(x: str) -> str | None:
    """Why the generated C cannot take the identifier ``x`` as a model's name (None if it
    can): the one rule for dumps and for the names the ONNX importer makes."""
    # a keyword or a name of libc, libm or the generated code is fine: no name is written
    # into C as it is (extract/ir/names.py)
    if x.startswith("_") or "__" in x:
        return (f"name {x!r} begins with an underscore or holds a double one (reserved by C "
                f"and C++)")
    return None


def _name(x: Any, path: str, used: dict[str, str]) -> str:
    _req(isinstance(x, str) and _IDENT.fullmatch(x) is not None, path,
         f"not a C identifier: {json.dumps(x)[:60]}")
    problem = name_problem(x)
    _req(problem is None, path, problem or "")
    _req(x not in used, path, f"name {x!r} is already used at {used.get(x)}")
    used[x] = path
    return x


def _kind(a: ir.Array) -> str:
    return a.role if a.kind == "context" else "binding" if a.kind == "chain" else "gradient"


def _dims(s: ir.Shape) -> str:
    """A shape as a model file writes it: ``1000×1000×1000``."""
    return "×".join(map(str, ir.leaves(s)))


def _bytes(n: int) -> str:
    for unit, k in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 2 ** k:
            return f"{n / 2 ** k:,.1f} {unit}"
    return f"{n} bytes"


def _shown(a: ir.Array) -> str:
    """``binding 'z' of shape 1000×1000×1000 (1,000,000,000 elements)``"""
    return f"{_kind(a)} {a.name!r} of shape {_dims(a.shape)} ({ir.size(a.shape):,} elements)"


def _fits_index(what: str, group: list, paths: dict) -> None:
    """The generated C's structs hold all parameters, all inputs or all bindings, the lane
    kernels' MAX_LANES samples' worth of each, in double at most; a C object (and the
    ptrdiff_t that indexes past int's range, extract/emit/printer.py) stops at PTRDIFF_MAX
    bytes: an array past that, or a group whose arrays are together, is refused at the name of
    the (largest) array (``paths``: name -> JSON path of the name), naming its shape and
    size. (The memory budget, _fits_memory, refuses far smaller models on any machine of
    today; this bound holds whatever the budget says.)"""
    reach = (f"more than the generated C's structs hold ({MAX_ELEMENTS:,}: {PTRDIFF_MAX:,} "
             f"bytes over {MAX_LANES} lanes of doubles)")
    for a in group:
        if ir.size(a.shape) > MAX_ELEMENTS:
            raise DumpError(paths[a.name], f"{_kind(a)} {a.name!r} of shape "
                                           f"{_dims(a.shape)} holds "
                                           f"{ir.size(a.shape):,} elements, {reach}")
    total = sum(ir.size(a.shape) for a in group)
    if total > MAX_ELEMENTS:
        big = max(group, key=lambda a: ir.size(a.shape))
        raise DumpError(paths[big.name], f"the {what} hold {total:,} elements, {reach}; the "
                                         f"largest is {_shown(big)}")


def memory_budget() -> int:
    """Bytes one lane group's buffers may take (``ENV_MEMORY``, else the physical memory)."""
    text = os.environ.get(ENV_MEMORY, "").strip()
    if text:
        m = re.fullmatch(r"(\d+(?:\.\d+)?)\s*([KMGT]?)i?B?", text, re.I)
        if m is None:
            raise DumpError("$", f"${ENV_MEMORY} must be a number of bytes (a suffix K, M, G "
                                 f"or T allowed), not {text!r}")
        return int(float(m[1]) * 1024 ** "_KMGT".index(m[2].upper() or "_"))
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return 2 ** 40


def _fits_memory(context, chain, paths: dict) -> None:
    """The buffers the kernels need for one group of MAX_LANES samples, at 4 bytes (float) an
    element: every parameter and its gradient, every const, and MAX_LANES samples' inputs,
    bindings and bindings' gradients. More than the budget (``memory_budget``) is refused at
    the array that contributes most, naming it."""
    need = {a.name: ir.size(a.shape) * (2 if a.role == "param" else 1)
            for a in context if a.role in ("param", "const")}
    need.update({a.name: ir.size(a.shape) * MAX_LANES for a in context if a.role == "input"})
    need.update({a.name: ir.size(a.shape) * 2 * MAX_LANES for a in chain})
    total, budget = 4 * sum(need.values()), memory_budget()
    if total > budget:
        arrays = {a.name: a for a in (*context, *chain)}
        big = arrays[max(need, key=need.get)]
        raise DumpError(paths[big.name], f"the kernels' buffers for {MAX_LANES} samples need "
                                         f"{_bytes(total)} in float, more than the "
                                         f"memory budget of {_bytes(budget)} "
                                         f"(${ENV_MEMORY}, else this machine's memory); the "
                                         f"largest is {_shown(big)}")


def _list(d: dict, key: str) -> list:
    _req(isinstance(d[key], list), f"$.{key}", "expected an array")
    return d[key]


def _obj(x: Any, path: str, keys: tuple[str, ...], optional: tuple[str, ...] = ()) -> dict:
    _req(isinstance(x, dict), path, "expected an object")
    for k in keys:
        _req(k in x, path, f"missing key {k!r}")
    extra = set(x) - set(keys) - set(optional)
    _req(not extra, path, f"unexpected key(s) {sorted(extra)}")
    return x


def dump_hash(data: dict) -> str:
    canon = json.dumps(data, sort_keys=True, separators=(",", ":")).encode()
    return hashlib.sha256(canon).hexdigest()


def parse(data: Any, *, schema: bool = True) -> ir.Model:
    """Check a dump (a decoded JSON value) and return its IR; raises DumpError."""
    with limits.stage("parse"):
        return _parse(data, schema)


def _parse(data: Any, schema: bool) -> ir.Model:
    deep_enough()
    _req(isinstance(data, dict), "$", "a dump is a JSON object")
    if "version" in data:
        v = data["version"]
        _req(v in VERSIONS and not isinstance(v, bool), "$.version",
             f"unsupported dump version {json.dumps(v)} (this extractor reads version "
             f"{', '.join(map(str, VERSIONS))})")
    _obj(data, "$", ("format", "version", "model", "generator", "context", "chain", "seed",
                     "gradients"), ("outputs", "data"))
    _req(data["format"] == FORMAT, "$.format", f"expected {FORMAT!r}, got {data['format']!r}")
    _req(isinstance(data["model"], str) and _IDENT.fullmatch(data["model"]) is not None,
         "$.model", f"the model name must be a C identifier, got {data['model']!r}")
    _req(isinstance(data["generator"], str), "$.generator", "expected a string")

    version = data["version"]
    used: dict[str, str] = {}
    scope: list[_Entry] = []
    context = []
    fan_in: dict[str, int] = {}
    for n, c in enumerate(_list(data, "context")):
        path = f"$.context[{n}]"
        _obj(c, path, ("name", "shape", "role"), ("fan_in",))
        name = _name(c["name"], path + ".name", used)
        shape = _shape(c["shape"], path + ".shape")
        roles = ROLES[version]
        _req(c["role"] in roles, path + ".role",
             f"role must be {', '.join(map(repr, roles[:-1]))} or {roles[-1]!r}"
             + (" (const is in version 3)" if c["role"] == "const" else "")
             + f", got {c['role']!r}")
        if "fan_in" in c:
            fi = c["fan_in"]
            _req(c["role"] == "param", path + ".fan_in", "only a param has a fan-in")
            _req(isinstance(fi, int) and not isinstance(fi, bool) and fi >= 1,
                 path + ".fan_in", f"expected a positive integer, got {fi!r}")
            fan_in[name] = fi
        context.append(ir.Array(name, shape, "context", c["role"]))
        scope.append(_Entry(name, "ar", shape, "context"))

    paths = {c.name: f"$.context[{n}].name" for n, c in enumerate(context)}
    _fits_index("parameters", [c for c in context if c.role in ("param", "const")], paths)
    _fits_index("inputs", [c for c in context if c.role == "input"], paths)
    chain_json = _list(data, "chain")
    grads_json = _list(data, "gradients")
    # placeholder names: the gradient entry for binding b (its name, normally "d_" + b)
    placeholder = {}
    for n, g in enumerate(grads_json):
        if isinstance(g, dict) and isinstance(g.get("wrt"), str) and isinstance(g.get("name"), str):
            placeholder.setdefault(g["wrt"], g["name"])

    reserved = {c.name for c in context}
    for b in chain_json:
        if isinstance(b, dict) and isinstance(b.get("name"), str):
            reserved.add(b["name"])
            reserved.add(placeholder.get(b["name"], "d_" + b["name"]))

    chain = []
    for k, b in enumerate(chain_json):
        path = f"$.chain[{k}]"
        _obj(b, path, ("name", "shape", "expr"))
        name = _name(b["name"], path + ".name", used)
        shape = _shape(b["shape"], path + ".shape")
        forbidden = {e.name: "a forward binding may not use a derivative placeholder"
                     for e in scope if e.kind == "grad"}
        expr = _ExprParser(forbidden, reserved, version).ar_top(b, "expr", scope, path)
        _req(expr.shape == shape, path + ".expr",
             f"binding {name!r} of shape {ir.show_shape(shape)} has an expression of shape "
             f"{ir.show_shape(expr.shape)}")
        chain.append(ir.Array(name, shape, "chain", "", expr))
        d_name = placeholder.get(name, "d_" + name)
        scope.append(_Entry(d_name, "ar", shape, "grad"))
        scope.append(_Entry(name, "ar", shape, "chain"))

    paths.update({b.name: f"$.chain[{n}].name" for n, b in enumerate(chain)})
    _fits_index("bindings", chain, paths)
    _fits_memory(context, chain, paths)
    pending = {e.name: "a gradient placeholder used before its gradient entry"
               for e in scope if e.kind == "grad"}
    seed = _obj(data["seed"], "$.seed", ("of", "expr"))
    bindings = {b.name: b for b in chain}
    _req(isinstance(seed["of"], str) and seed["of"] in bindings, "$.seed.of", f"not a chain binding: {seed['of']!r}")
    seed_expr = _ExprParser(dict(pending), reserved, version).ar_top(seed, "expr", scope,
                                                                 "$.seed")
    _req(seed_expr.shape == bindings[seed["of"]].shape, "$.seed.expr",
         f"the seed of {seed['of']!r} must have shape "
         f"{ir.show_shape(bindings[seed['of']].shape)}, got {ir.show_shape(seed_expr.shape)}")

    expected = [b.name for b in reversed(chain)] + [c.name for c in context
                                                     if c.role == "param"]
    _req(len(grads_json) == len(expected), "$.gradients",
         f"expected {len(expected)} entries (one per chain binding, last first, then one per "
         f"param), got {len(grads_json)}")
    shapes = {a.name: a.shape for a in (*context, *chain)}
    gradients = []
    for n, g in enumerate(grads_json):
        path = f"$.gradients[{n}]"
        _obj(g, path, ("name", "wrt", "shape", "expr"))
        _req(g["wrt"] == expected[n], path + ".wrt",
             f"expected the gradient with respect to {expected[n]!r}, got {g['wrt']!r}")
        if g["wrt"] in bindings:
            _req(g["name"] == "d_" + g["wrt"], path + ".name",
                 f"the gradient of binding {g['wrt']!r} must be named {'d_' + g['wrt']!r}, got "
                 f"{g['name']!r}")
            pending.pop(g["name"], None)  # its own placeholder: still forbidden below
        name = _name(g["name"], path + ".name", used)
        shape = _shape(g["shape"], path + ".shape")
        _req(shape == shapes[g["wrt"]], path + ".shape",
             f"{g['wrt']!r} has shape {ir.show_shape(shapes[g['wrt']])}, not "
             f"{ir.show_shape(shape)}")
        forbidden = dict(pending)
        if g["wrt"] in bindings:
            forbidden[g["name"]] = "a gradient may not use its own placeholder"
        expr = _ExprParser(forbidden, reserved, version).ar_top(g, "expr", scope, path)
        _req(expr.shape == shape, path + ".expr",
             f"gradient {name!r} of shape {ir.show_shape(shape)} has an expression of shape "
             f"{ir.show_shape(expr.shape)}")
        gradients.append(ir.Array(name, shape, "grad", g["wrt"], expr))

    outputs = ()
    if "outputs" in data:
        outs = data["outputs"]
        _req(isinstance(outs, dict), "$.outputs", "expected an object")
        for key, val in outs.items():
            _req(_IDENT.fullmatch(str(key)) is not None, f"$.outputs.{key}",
                 "an output key must be a C identifier")
            _req(isinstance(val, str) and val in bindings, f"$.outputs.{key}", f"not a chain binding: {val!r}")
        outputs = tuple(sorted(outs.items()))

    roles = ()
    if "data" in data:
        d = _obj(data["data"], "$.data", (), ("features", "target"))
        inputs = {a.name for a in context if a.role == "input"}
        for key, val in d.items():
            _req(isinstance(val, str) and val in inputs, f"$.data.{key}",
                 f"not an input of the context: {val!r}")
        roles = tuple(sorted(d.items()))

    digest = dump_hash(data)
    if schema:
        _check_schema(data, digest)

    model = ir.Model(data["model"], data["version"], data["generator"], tuple(context),
                     tuple(chain), seed["of"], seed_expr, tuple(gradients), outputs,
                     digest, data=roles, fan_in=tuple(fan_in.items()))
    model.arrays.update({a.name: a for a in (*context, *chain, *gradients)})
    return model


@functools.lru_cache(maxsize=1)
def _validator():
    """The schema's validator, and the schema's own hash. The schema picks a node's fields by
    its op with an ``allOf`` of one ``if``/``then`` per op, which jsonschema evaluates in full
    at every node (37 s for a 2.4 MB dump); here that ``allOf`` becomes a lookup of the op that
    applies the same ``then`` (6.5 s), which accepts and rejects the same documents."""
    import jsonschema
    from jsonschema import validators

    text = SCHEMA.read_text()
    schema = json.loads(text)
    node = schema["$defs"]["node"]
    table = {}
    for b in node.get("allOf", ()):
        op = b.get("if", {}).get("properties", {}).get("op", {}).get("const")
        if b != {"if": {"required": ["op"], "properties": {"op": {"const": op}}},
                 "then": b.get("then")} or not isinstance(op, str):
            table = None  # not the shape this lookup stands for: the schema as written
            break
        table[op] = b["then"]

    def by_op(validator, table, instance, _schema):
        op = instance.get("op") if isinstance(instance, dict) else None
        if isinstance(op, str) and op in table:
            yield from validator.descend(instance, table[op])

    if table:
        schema["$defs"]["node"] = {**{k: v for k, v in node.items() if k != "allOf"},
                                   "x-by-op": table}
    cls = validators.extend(jsonschema.Draft202012Validator, {"x-by-op": by_op})
    return cls(schema), hashlib.sha256(text.encode()).hexdigest()[:16]


def _check_schema(data: dict, digest: str) -> None:
    """The schema backstop, once per dump: a dump that passed is remembered in the cache
    (``schema-checked/<dump hash>-<schema hash>``, an empty file), so loading it again costs
    nothing."""
    if not SCHEMA.exists():
        return
    import jsonschema
    validator, schema_hash = _validator()
    mark = paths.cache_dir() / "schema-checked" / f"{digest}-{schema_hash}"
    if mark.exists():
        return
    err = jsonschema.exceptions.best_match(validator.iter_errors(data))
    if err is not None:
        path = "$" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}"
                             for p in err.absolute_path)
        raise DumpError(path, f"does not match the schema: {err.message[:200]}")
    try:
        paths.private_dir(mark.parent)  # 0700 whatever the umask (extract/cache.py)
        os.close(os.open(mark, os.O_WRONLY | os.O_CREAT, 0o600))
    except OSError:  # a read-only cache: check again next time
        pass


def json_depth(text: str) -> int:
    """How deeply arrays and objects nest in the JSON ``text`` (0 for a number), counted
    without decoding it (strings left out): iterative, whatever the depth."""
    brackets = _NOT_BRACKET.sub("", _STRING.sub("", text))
    return max(itertools.accumulate(1 if c in "[{" else -1 for c in brackets), default=0)


def loads(text: str):
    """``json.loads`` of a dump's text, refusing (``DumpError``) text that is not JSON or that
    nests deeper than ``MAX_JSON_DEPTH`` (``json.loads`` recurses: a RecursionError, or at a
    high recursion limit a crash, is what it would give)."""
    with limits.stage("parse"):
        return _loads(text)


def _loads(text: str):
    depth = json_depth(text)
    if depth > MAX_JSON_DEPTH:
        raise DumpError("$", f"the JSON nests {depth:,} levels deep, more than the "
                             f"{MAX_JSON_DEPTH:,} this extractor reads (an expression at most "
                             f"{MAX_DEPTH:,} nodes deep)")
    deep_enough()
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise DumpError("$", f"not JSON ({exc.msg} at line {exc.lineno}, column "
                             f"{exc.colno})") from None
    except RecursionError:
        raise DumpError("$", f"the JSON nests too deeply to decode (more than the "
                             f"{MAX_JSON_DEPTH:,} levels this extractor reads)") from None


def load(path: str | Path) -> ir.Model:
    """Read and parse a dump file; a file that is not JSON is reported as a DumpError."""
    return parse(loads(Path(path).read_text()))
