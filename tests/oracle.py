"""An independent NumPy interpreter of the expression dump (docs/dump-format.md, versions 1 to 5).

This module is the test authority for everything that consumes a dump: the extractor's
generated C and CUDA are compared against it. It is written from the format document alone,
not from any generator, and it favours being obviously correct over being fast.

It offers:

- ``load(path_or_dict)``: read a dump (rejecting an unknown format or version, and an
  expression nested deeper than ``MAX_DEPTH`` nodes: both evaluators recurse on the tree, so
  the depth is measured first, without recursion, and the recursion limit raised to fit it);
- ``check_shapes(dump)``: walk every node and check its declared sort and shape against the
  rules of §4 (children's sorts and shapes, relations between shapes, scopes and de Bruijn
  indices), and the top level against §2 and §3; raises ``DumpError(json_path, message)``;
- ``evaluate(dump, context_values)``: the values of every chain binding, the seed (under the key
  ``SEED_KEY``) and every gradient entry, as NumPy arrays whose shape is the tuple of the leaves
  of the dump's shape (``[6, [5, 5]]`` -> ``(6, 5, 5)``), i.e. the row-major layout of §1;
- ``evaluate(..., method="naive")``: the same by a second, deliberately literal evaluator that
  loops over positions one at a time. It is slow and only meant for small dumps; the tests check
  that both evaluators agree.

How the fast evaluator works: an expression is evaluated once for all the positions of all
the enclosing binders at once, with NumPy broadcasting. A value inside ``d`` binders has ``d``
leading *batch* axes, one per binder (of that binder's size, or 1 where the value does not
depend on its index), followed by the leaves of its shape (an index value: one axis holding
its leaves). A binder over ``s`` evaluates its body once with the bound index as an array of
all positions of ``s`` along a new batch axis, then turns that axis into the leaves of ``s``
(imaps, imap, imapb) or sums it away (sum). A sub-expression that does not use an inner index
is therefore computed once, not once per position.

One special case keeps reverse-mode gradients affordable: ``imaps``/``imap`` over ``v`` of
``zero_but v k a`` (``k`` and ``a`` not using ``v``) is a one-hot array, kept as (position,
block) instead of being filled in, and a ``sum`` of such arrays is a scatter-add. Both
evaluators are compared on random dumps (tests/test_oracle.py), including dumps whose
gradients are full of that pattern. A sum whose one-hot sits under other sums or ``ix_minus``
binders (the gradient of a strided convolution) is first moved next to it (``sum_inward``:
those binders commute with the sum when their indices do not read its index), and
``Σ_v [v = k] a(v)`` is ``a`` with ``k`` for ``v``. A binder whose body would still exceed the
element budget (``MAX_ELEMENTS``) for all its positions at once is evaluated on runs of them
(``run_of``), halved until the body fits.
"""
from __future__ import annotations

import itertools
import json
import math
import os
import re
import sys
from typing import Any, Callable

import numpy as np

FORMAT = "ad-expression-dump"
VERSIONS = (1, 2, 3, 4, 5, 6)
# nodes a dump of an earlier version may not hold (§7)
SINCE = {"sqrt": 4, "argmax": 5, "detach": 5, "erf": 6, "derf": 6}
MAX_DEPTH = 1000    # nodes nested in one expression (the extractor's limit too)
SEED_KEY = "$seed"  # key of the seed's value in evaluate's result (never a C identifier)

SORTS = ("ar", "ix")
BIN_FNS = ("plus", "mul", "max")

# op -> (node's sort or None if declared by the node, {field: kind}); kinds: shape, ar, ix, idx,
# fn, n, pos (a position of the node's shape). A binder's body is listed as "ar".
OPS: dict[str, tuple[str | None, dict[str, str]]] = {
    "var": (None, {"idx": "idx"}),
    "zero": ("ar", {}),
    "one": ("ar", {}),
    "imaps": ("ar", {"s": "shape", "body": "ar"}),
    "sels": ("ar", {"a": "ar", "i": "ix"}),
    "imap": ("ar", {"s": "shape", "body": "ar"}),
    "sel": ("ar", {"a": "ar", "i": "ix"}),
    "imapb": ("ar", {"s": "shape", "p": "shape", "body": "ar"}),
    "selb": ("ar", {"s": "shape", "p": "shape", "a": "ar", "i": "ix"}),
    "sum": ("ar", {"s": "shape", "body": "ar"}),
    "zero_but": ("ar", {"i": "ix", "j": "ix", "a": "ar"}),
    "slide": ("ar", {"s": "shape", "p": "shape", "i": "ix", "a": "ar"}),
    "backslide": ("ar", {"s": "shape", "p": "shape", "i": "ix", "a": "ar"}),
    **{f: ("ar", {"a": "ar"}) for f in ("logistic", "exp", "log", "recip", "sqrt", "relu",
                                        "step", "detach", "erf", "derf")},
    "bin": ("ar", {"fn": "fn", "a": "ar", "b": "ar"}),
    "scaledown": ("ar", {"n": "n", "a": "ar"}),
    "minus": ("ar", {"a": "ar"}),
    "ix_const": ("ix", {"pos": "pos"}),
    "div": ("ix", {"s": "shape", "p": "shape", "i": "ix"}),
    "mod": ("ix", {"s": "shape", "p": "shape", "i": "ix"}),
    "ix_plus": ("ix", {"s": "shape", "p": "shape", "i": "ix", "j": "ix"}),
    "ix_minus": ("ar", {"s": "shape", "p": "shape", "i": "ix", "j": "ix", "body": "ar"}),
    "ix_minus_r": ("ar", {"s": "shape", "p": "shape", "i": "ix", "j": "ix", "body": "ar"}),
    "argmax": ("ix", {"s": "shape", "body": "ar"}),
}




def unary(fn: str, x: np.ndarray, dtype) -> np.ndarray:
    """The elementwise functions of §4 in ``dtype`` (IEEE results where they are undefined:
    ``log`` and ``sqrt`` of a negative number are NaN, ``recip(0)`` is inf)."""
    x = np.asarray(x, dtype)
    zero, one = dtype.type(0), dtype.type(1)
    if fn == "logistic":
        return one / (one + np.exp(-x))
    if fn == "exp":
        return np.exp(x)
    if fn == "log":
        return np.log(x)
    if fn == "recip":
        return one / x
    if fn == "sqrt":
        return np.sqrt(x)
    if fn == "relu":
        return np.where(x <= zero, zero, x)
    if fn == "step":
        return np.where(x <= zero, zero, one)
    if fn == "detach":    # the identity (its derivative, 0, is the gradients' business)
        return x
    if fn == "erf":       # NumPy has none: Python's math.erf, element by element
        return _by_element(x, "erf", math.erf, dtype)
    if fn == "derf":      # erf's derivative (2/√π) e^(−x²)
        if x.dtype == object:
            return _by_element(x, "derf", None, dtype)
        return dtype.type(2 / math.sqrt(math.pi)) * np.exp(-(x * x))
    raise ValueError(f"not an elementwise function: {fn!r}")


def _by_element(x: np.ndarray, name: str, f, dtype) -> np.ndarray:
    """``f`` at every element, in float64 then ``dtype``; on an object array, each element's
    own method ``name`` (as NumPy's ``np.exp`` calls ``.exp()`` on objects)."""
    if x.dtype == object:
        return np.array([getattr(v, name)() for v in x.ravel()], object).reshape(x.shape)
    return np.vectorize(f, otypes=[np.float64])(x).astype(dtype)


UNARY = ("logistic", "exp", "log", "recip", "sqrt", "relu", "step", "detach", "erf", "derf")


def first_argmax(values: np.ndarray) -> np.ndarray:
    """``argmax`` of §4 along the last axis of ``values`` (positions in row-major order):
    ``best`` starts at 0 and moves to ``i`` when ``values[best] < values[i]``, literally (ties
    keep the first position; a NaN neither replaces nor is replaced)."""
    best = np.zeros(values.shape[:-1] + (1,), np.int64)
    top = values[..., :1].copy()
    for i in range(1, values.shape[-1]):
        v = values[..., i:i + 1]
        better = top < v
        best = np.where(better, i, best)
        top = np.where(better, v, top)
    return best[..., 0]


def binary(fn: str, a: np.ndarray, b: np.ndarray, dtype) -> np.ndarray:
    """The binary ops of §4: ``plus``, ``mul`` and ``max`` (``a - b <= 0 ? b : a``: a tie gives
    b, by the sign of the difference as relu and step)."""
    if fn == "plus":
        return a + b
    if fn == "mul":
        return a * b
    if fn == "max":
        return np.where(a - b <= dtype.type(0), b, a)
    raise ValueError(f"not a binary op: {fn!r}")


class TooLarge(MemoryError):
    """The fast evaluator would build an array of more than ``max_elements`` elements.

    A dump whose gradients are not optimised (sums of one-hot arrays) can ask for far more
    memory than the machine has; this error says so instead. Raise the limit with the
    environment variable ``ORACLE_MAX_ELEMENTS`` or the ``max_elements`` argument."""


MAX_ELEMENTS = int(float(os.environ.get("ORACLE_MAX_ELEMENTS", "1e8")))


class DumpError(ValueError):
    """A dump that breaks the format: ``path`` is a JSON path such as ``$.chain[2].expr.a``."""

    def __init__(self, path: str, message: str):
        super().__init__(f"{path}: {message}")
        self.path = path
        self.message = message


# --------------------------------------------------------------------------------------------
# Shapes (§1)
# --------------------------------------------------------------------------------------------

def _is_nat(x: Any) -> bool:
    return isinstance(x, (int, np.integer)) and not isinstance(x, bool) and x >= 0


def is_shape(x: Any) -> bool:
    if _is_nat(x):
        return True
    return isinstance(x, (list, tuple)) and len(x) == 2 and is_shape(x[0]) and is_shape(x[1])


def norm_shape(x: Any, path: str = "$") -> Any:
    """The shape as plain JSON (``int`` or a two-element ``list``); DumpError if not a shape."""
    if _is_nat(x):
        return int(x)
    if isinstance(x, (list, tuple)) and len(x) == 2:
        return [norm_shape(x[0], path + "[0]"), norm_shape(x[1], path + "[1]")]
    raise DumpError(path, f"not a shape: {x!r}")


def leaves(shape: Any) -> tuple[int, ...]:
    """The leaves of a shape, left to right: the NumPy shape of an array of that shape."""
    if _is_nat(shape):
        return (int(shape),)
    return leaves(shape[0]) + leaves(shape[1])


def size(shape: Any) -> int:
    return int(np.prod(leaves(shape), dtype=np.int64))


def same_structure(s: Any, p: Any) -> bool:
    if _is_nat(s) and _is_nat(p):
        return True
    if _is_nat(s) or _is_nat(p):
        return False
    return same_structure(s[0], p[0]) and same_structure(s[1], p[1])


def leafwise(f: Callable[[int, int], int], s: Any, p: Any) -> Any:
    """Combine two shapes of the same tree structure leaf by leaf."""
    if _is_nat(s) and _is_nat(p):
        return int(f(int(s), int(p)))
    if _is_nat(s) or _is_nat(p):
        raise ValueError(f"shapes {s!r} and {p!r} differ in tree structure")
    return [leafwise(f, s[0], p[0]), leafwise(f, s[1], p[1])]


def shape_plus(s: Any, p: Any) -> Any:
    """``r`` with ``s + p ≈ r``."""
    return leafwise(lambda a, b: a + b, s, p)


def shape_suc(p: Any) -> Any:
    """``u`` with ``suc p ≈ u``."""
    return leafwise(lambda a, _: a + 1, p, p)


def shape_times(s: Any, p: Any) -> Any:
    """``q`` with ``s * p ≈ q``."""
    return leafwise(lambda a, b: a * b, s, p)


def check_position(x: Any, shape: Any, path: str = "$") -> tuple[int, ...]:
    """A position of ``shape`` written as JSON (§1: the shape's tree, each leaf below its
    dimension); its leaves, or DumpError at the first leaf or pair that is wrong."""
    if _is_nat(shape):
        _require(_is_nat(x) and x < shape, path,
                 f"a position leaf of a dimension of {shape} is a natural number below it, "
                 f"got {x!r}")
        return (int(x),)
    _require(isinstance(x, (list, tuple)) and len(x) == 2, path,
             f"a position of shape {show_shape(shape)} is a two-element array, got {x!r}")
    return check_position(x[0], shape[0], path + "[0]") + check_position(x[1], shape[1],
                                                                         path + "[1]")


def positions(shape: Any) -> list[tuple[int, ...]]:
    """Every position of a shape, as tuples of leaf indices, in row-major order."""
    return list(itertools.product(*(range(n) for n in leaves(shape))))


def show_shape(shape: Any) -> str:
    return json.dumps(shape, separators=(",", ""))


# --------------------------------------------------------------------------------------------
# Loading
# --------------------------------------------------------------------------------------------

def _recursion_for(depth: int) -> None:
    """A recursion limit the evaluators' walks fit in at ``depth`` (a few frames a level)."""
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 8 * depth + 1000))


def _decode(text: str) -> Any:
    _recursion_for(MAX_DEPTH + 100)
    try:
        return json.loads(text)
    except RecursionError:
        raise DumpError("$", f"the JSON nests too deeply to decode (the oracle reads "
                             f"expressions at most {MAX_DEPTH} nodes deep)") from None


def expr_depth(x: Any) -> int:
    """The most expression nodes (objects with an "op") nested in ``x``, without recursion."""
    best, todo = 0, [(x, 0)]
    while todo:
        v, d = todo.pop()
        if isinstance(v, dict):
            d += "op" in v
            best = max(best, d)
            todo.extend((w, d) for w in v.values())
        elif isinstance(v, list):
            todo.extend((w, d) for w in v)
    return best


def load(path_or_dict: Any) -> dict:
    """Read a dump from a path, a JSON string or a dict; reject an unknown format or version,
    or an expression nested deeper than ``MAX_DEPTH``."""
    if isinstance(path_or_dict, dict):
        dump = path_or_dict
    elif isinstance(path_or_dict, (str, os.PathLike)) and os.path.exists(path_or_dict):
        with open(path_or_dict, encoding="utf-8") as f:
            dump = _decode(f.read())
    elif isinstance(path_or_dict, str) and path_or_dict.lstrip().startswith("{"):
        dump = _decode(path_or_dict)
    else:
        raise FileNotFoundError(path_or_dict)
    if not isinstance(dump, dict):
        raise DumpError("$", "a dump is a JSON object")
    if dump.get("format") != FORMAT:
        raise DumpError("$.format", f"expected {FORMAT!r}, got {dump.get('format')!r}")
    if dump.get("version") not in VERSIONS or isinstance(dump.get("version"), bool):
        raise DumpError("$.version", f"unknown version {dump.get('version')!r} (known: {VERSIONS})")
    depth = expr_depth(dump)
    if depth > MAX_DEPTH:
        raise DumpError("$", f"an expression is nested {depth:,} nodes deep, more than the "
                             f"{MAX_DEPTH:,} the oracle reads (its evaluators recurse)")
    _recursion_for(depth)
    return dump


# --------------------------------------------------------------------------------------------
# Top level: names and scopes (§2, §3)
# --------------------------------------------------------------------------------------------

class _Entry:
    """A variable in scope: an array (context, placeholder d_b, binding b) or an index."""

    __slots__ = ("sort", "shape", "name", "kind")

    def __init__(self, sort: str, shape: Any, name: str | None, kind: str):
        self.sort, self.shape, self.name, self.kind = sort, shape, name, kind


def _top_scope(dump: dict, upto: int | None = None) -> list[_Entry]:
    """The scope of chain binding ``upto`` (all of them if None), outermost first."""
    scope = [_Entry("ar", norm_shape(c["shape"]), c["name"], "context") for c in dump["context"]]
    chain = dump["chain"] if upto is None else dump["chain"][:upto]
    for b in chain:
        shape = norm_shape(b["shape"])
        scope.append(_Entry("ar", shape, "d_" + b["name"], "placeholder"))
        scope.append(_Entry("ar", shape, b["name"], "binding"))
    return scope


def _require(cond: bool, path: str, message: str) -> None:
    if not cond:
        raise DumpError(path, message)


def _check_name(x: Any, path: str) -> str:
    _require(isinstance(x, str) and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", x) is not None,
             path, f"not a C identifier: {x!r}")
    return x


def check_shapes(dump: dict) -> None:
    """Check a whole dump against §2-§4; raise DumpError at the first problem."""
    for key in ("format", "version", "model", "generator", "context", "chain", "seed",
                "gradients"):
        _require(key in dump, "$", f"missing key {key!r}")
    load(dump)
    _require(isinstance(dump["context"], list), "$.context", "expected a list")
    _require(isinstance(dump["chain"], list), "$.chain", "expected a list")
    _require(isinstance(dump["gradients"], list), "$.gradients", "expected a list")

    names: dict[str, str] = {}

    def claim(name: Any, path: str) -> str:
        _check_name(name, path)
        _require(name not in names, path, f"name {name!r} already used at {names.get(name)}")
        names[name] = path
        return name

    params = []
    for n, c in enumerate(dump["context"]):
        path = f"$.context[{n}]"
        _require(isinstance(c, dict), path, "expected an object")
        _require({"name", "shape", "role"} <= set(c) <= {"name", "shape", "role", "fan_in"},
                 path, f"expected keys name, shape, role (and fan_in); got {sorted(c)}")
        if "fan_in" in c:
            _require(c["role"] == "param" and _is_nat(c["fan_in"]) and c["fan_in"] >= 1,
                     path + ".fan_in", "a fan-in is a positive integer, of a param")
        claim(c["name"], path + ".name")
        norm_shape(c["shape"], path + ".shape")
        roles = ("input", "param", "const") if dump["version"] >= 3 else ("input", "param")
        _require(c["role"] in roles, path + ".role", f"bad role {c['role']!r}")
        if c["role"] == "param":
            params.append(c)

    bindings: dict[str, Any] = {}
    for k, b in enumerate(dump["chain"]):
        path = f"$.chain[{k}]"
        _require(isinstance(b, dict), path, "expected an object")
        _require(set(b) == {"name", "shape", "expr"}, path,
                 f"expected keys name, shape, expr; got {sorted(b)}")
        claim(b["name"], path + ".name")
        shape = norm_shape(b["shape"], path + ".shape")
        scope = _top_scope(dump, k)
        sort, got = _check_node(b["expr"], scope, path + ".expr", forbid_placeholders=set("*"),
                                version=dump["version"])
        _require(sort == "ar" and got == shape, path + ".expr",
                 f"binding of shape {show_shape(shape)} has an expression of sort {sort}, "
                 f"shape {show_shape(got)}")
        bindings[b["name"]] = shape

    full = _top_scope(dump)
    seed = dump["seed"]
    _require(isinstance(seed, dict) and set(seed) == {"of", "expr"}, "$.seed",
             "expected an object with keys of, expr")
    _require(seed["of"] in bindings, "$.seed.of", f"not a chain binding: {seed['of']!r}")
    sort, got = _check_node(seed["expr"], full, "$.seed.expr", forbid_placeholders=set("*"),
                            version=dump["version"])
    _require(sort == "ar" and got == bindings[seed["of"]], "$.seed.expr",
             f"seed of {seed['of']!r} (shape {show_shape(bindings[seed['of']])}) has sort "
             f"{sort}, shape {show_shape(got)}")

    expected = [(b["name"], "d_" + b["name"]) for b in reversed(dump["chain"])]
    expected += [(c["name"], None) for c in params]
    grads = dump["gradients"]
    _require(len(grads) == len(expected), "$.gradients",
             f"expected {len(expected)} entries (one per chain binding, then one per param), "
             f"got {len(grads)}")
    pending = {"d_" + b["name"] for b in dump["chain"]}
    shapes = {**bindings, **{c["name"]: norm_shape(c["shape"]) for c in params}}
    for n, (g, (wrt, name)) in enumerate(zip(grads, expected)):
        path = f"$.gradients[{n}]"
        _require(isinstance(g, dict) and set(g) == {"name", "wrt", "shape", "expr"}, path,
                 "expected an object with keys name, wrt, shape, expr")
        _require(g["wrt"] == wrt, path + ".wrt", f"expected {wrt!r}, got {g['wrt']!r}")
        if name is not None:
            _require(g["name"] == name, path + ".name", f"expected {name!r}, got {g['name']!r}")
        claim(g["name"], path + ".name")
        shape = norm_shape(g["shape"], path + ".shape")
        _require(shape == shapes[wrt], path + ".shape",
                 f"{wrt!r} has shape {show_shape(shapes[wrt])}, not {show_shape(shape)}")
        sort, got = _check_node(g["expr"], full, path + ".expr", forbid_placeholders=pending,
                                version=dump["version"])
        _require(sort == "ar" and got == shape, path + ".expr",
                 f"gradient of shape {show_shape(shape)} has sort {sort}, shape {show_shape(got)}")
        if name is not None:
            pending.discard(name)

    if "outputs" in dump:
        outs = dump["outputs"]
        _require(isinstance(outs, dict), "$.outputs", "expected an object")
        for key, val in outs.items():
            _check_name(key, f"$.outputs.{key}")
            _require(val in bindings, f"$.outputs.{key}", f"not a chain binding: {val!r}")
    if "data" in dump:
        data = dump["data"]
        _require(isinstance(data, dict) and set(data) <= {"features", "target"}, "$.data",
                 "expected an object with features and target")
        inputs = {c["name"] for c in dump["context"] if c["role"] == "input"}
        for key, val in data.items():
            _require(val in inputs, f"$.data.{key}", f"not an input: {val!r}")


def _check_node(node: Any, scope: list[_Entry], path: str,
                forbid_placeholders: set[str], version: int = VERSIONS[-1]) -> tuple[str, Any]:
    """Check one node and everything under it; return its (sort, shape).

    ``forbid_placeholders``: names of ``d_`` placeholders that may not be read here (``{"*"}``:
    none may). ``version``: the dump's (§7: ``sqrt`` is in version 4)."""
    _require(isinstance(node, dict), path, "a node is an object")
    op = node.get("op")
    _require(op in OPS, path + ".op", f"unknown op {op!r}")
    _require(version >= SINCE.get(op, 1), path + ".op",
             f"op {op!r} is in version {SINCE.get(op)}, not in a dump of version {version}")
    fixed_sort, fields = OPS[op]
    want = {"op", "sort", "shape", *fields}
    _require(set(node) == want, path, f"op {op!r} has keys {sorted(want)}; got {sorted(node)}")
    sort = node["sort"]
    _require(sort in SORTS, path + ".sort", f"bad sort {sort!r}")
    if fixed_sort is not None:
        _require(sort == fixed_sort, path + ".sort", f"op {op!r} has sort {fixed_sort}")
    shape = norm_shape(node["shape"], path + ".shape")
    sh = {f: norm_shape(node[f], f"{path}.{f}") for f, kind in fields.items() if kind == "shape"}

    def child(f: str, extra: list[_Entry] = ()) -> tuple[str, Any]:
        got_sort, got_shape = _check_node(node[f], scope + list(extra), f"{path}.{f}",
                                          forbid_placeholders, version)
        _require(got_sort == fields[f], f"{path}.{f}", f"expected sort {fields[f]}, got {got_sort}")
        return got_sort, got_shape

    def expect(f: str, got: Any, want_shape: Any, what: str = "") -> None:
        _require(got == want_shape, f"{path}.{f}",
                 f"{op}: expected {what or f} of shape {show_shape(want_shape)}, "
                 f"got {show_shape(got)}")

    def related(a: str, b: str) -> None:
        _require(same_structure(sh[a], sh[b]), path,
                 f"{op}: {a} = {show_shape(sh[a])} and {b} = {show_shape(sh[b])} differ in "
                 f"tree structure")

    def declared(result: Any) -> tuple[str, Any]:
        _require(shape == result, path + ".shape",
                 f"{op}: declared shape {show_shape(shape)}, rules give {show_shape(result)}")
        return sort, shape

    ix = lambda s: _Entry("ix", s, None, "index")  # noqa: E731

    if op == "var":
        idx = node["idx"]
        _require(_is_nat(idx), path + ".idx", f"bad index {idx!r}")
        _require(idx < len(scope), path + ".idx",
                 f"variable {idx} out of scope (scope has {len(scope)} variables)")
        e = scope[len(scope) - 1 - idx]
        if e.kind == "placeholder":
            _require("*" not in forbid_placeholders and e.name not in forbid_placeholders,
                     path, f"reads {e.name!r}, which is not computed yet here")
        _require(sort == e.sort, path + ".sort",
                 f"variable {idx} ({e.name or 'index'}) has sort {e.sort}, declared {sort}")
        return declared(e.shape)
    if op in ("zero", "one"):
        return sort, shape
    if op == "imaps":
        _, b = child("body", [ix(sh["s"])])
        expect("body", b, 1)
        return declared(sh["s"])
    if op == "sels":
        _, a = child("a")
        _, i = child("i")
        expect("i", i, a, "an index of a's shape")
        return declared(1)
    if op == "imap":
        _, b = child("body", [ix(sh["s"])])
        return declared([sh["s"], b])
    if op == "sel":
        _, a = child("a")
        _require(not _is_nat(a), f"{path}.a", f"sel: expected a product shape, got {show_shape(a)}")
        _, i = child("i")
        expect("i", i, a[0])
        return declared(a[1])
    if op == "imapb":
        related("s", "p")
        _, b = child("body", [ix(sh["s"])])
        expect("body", b, sh["p"])
        return declared(shape_times(sh["s"], sh["p"]))
    if op == "selb":
        related("s", "p")
        _, a = child("a")
        expect("a", a, shape_times(sh["s"], sh["p"]))
        _, i = child("i")
        expect("i", i, sh["s"])
        return declared(sh["p"])
    if op == "sum":
        _, b = child("body", [ix(sh["s"])])
        return declared(b)
    if op == "zero_but":
        _, i = child("i")
        _, j = child("j")
        expect("j", j, i, "an index of i's shape")
        _, a = child("a")
        return declared(a)
    if op in ("slide", "backslide"):
        related("s", "p")
        r, u = shape_plus(sh["s"], sh["p"]), shape_suc(sh["p"])
        _, i = child("i")
        expect("i", i, sh["s"])
        _, a = child("a")
        expect("a", a, r if op == "slide" else u)
        return declared(u if op == "slide" else r)
    if op in UNARY or op in ("scaledown", "minus"):
        if op == "scaledown":
            n = node["n"]
            _require(_is_nat(n) and n >= 1, path + ".n", f"scaledown needs an integer >= 1: {n!r}")
        _, a = child("a")
        return declared(a)
    if op == "bin":
        _require(node["fn"] in BIN_FNS, path + ".fn", f"bad fn {node['fn']!r}")
        _, a = child("a")
        _, b = child("b")
        expect("b", b, a, "b of a's shape")
        return declared(a)
    if op == "ix_const":
        check_position(node["pos"], shape, path + ".pos")
        return sort, shape
    if op in ("div", "mod"):
        related("s", "p")
        _, i = child("i")
        expect("i", i, shape_times(sh["s"], sh["p"]))
        return declared(sh["s"] if op == "div" else sh["p"])
    if op == "ix_plus":
        related("s", "p")
        _, i = child("i")
        expect("i", i, sh["s"])
        _, j = child("j")
        expect("j", j, shape_suc(sh["p"]))
        return declared(shape_plus(sh["s"], sh["p"]))
    if op in ("ix_minus", "ix_minus_r"):
        related("s", "p")
        r, u = shape_plus(sh["s"], sh["p"]), shape_suc(sh["p"])
        _, i = child("i")
        expect("i", i, r)
        _, j = child("j")
        expect("j", j, sh["s"] if op == "ix_minus" else u)
        _, b = child("body", [ix(u if op == "ix_minus" else sh["s"])])
        return declared(b)
    if op == "argmax":
        _require(min(leaves(sh["s"])) >= 1, path + ".s",
                 f"argmax over {show_shape(sh['s'])}: a shape with a leaf 0 has no position")
        _, b = child("body", [ix(sh["s"])])
        expect("body", b, 1)
        return declared(sh["s"])
    raise AssertionError(op)  # pragma: no cover


# --------------------------------------------------------------------------------------------
# Evaluation (§5)
# --------------------------------------------------------------------------------------------

def evaluate(dump: dict, context_values: dict[str, Any], dtype: Any = np.float64,
             method: str = "vector", check: bool = True,
             forward_only: bool = False, max_elements: int | None = None,
             stored: Callable[[np.ndarray], np.ndarray] | None = None
             ) -> dict[str, np.ndarray]:
    """Evaluate a dump; return {binding name, SEED_KEY, gradient name: array}.

    ``context_values`` maps every context name to an array with as many elements as its shape
    (any NumPy shape; it is reshaped to the leaves). ``method`` is ``"vector"`` (batched, fast
    enough for the CNN) or ``"naive"`` (one position at a time; small dumps only).
    ``forward_only`` stops after the chain (no seed, no gradients). The fast evaluator raises
    ``TooLarge`` rather than build one array of more than ``max_elements`` (default
    ``MAX_ELEMENTS``) elements. ``stored``, if given, is applied to the value of every binding
    and gradient entry before a later one reads it or it is returned (a model of the rounding
    of storing it: tests/test_front.py's conditioning)."""
    keep = stored or (lambda x: x)
    dump = load(dump)
    if check:
        check_shapes(dump)
    ev = {"vector": _VectorEval, "naive": _NaiveEval}[method](np.dtype(dtype))
    if max_elements is not None:
        ev.max_elements = max_elements
    top: dict[str, np.ndarray] = {}
    for c in dump["context"]:
        if c["name"] not in context_values:
            raise KeyError(f"no value for context variable {c['name']!r}")
        v = np.asarray(context_values[c["name"]], dtype=dtype)
        want = leaves(c["shape"])
        if v.size != size(c["shape"]):
            raise ValueError(f"{c['name']}: {v.size} elements for shape {show_shape(c['shape'])}")
        top[c["name"]] = v.reshape(want)
    out: dict[str, np.ndarray] = {}

    def scope_values(upto: int | None, grads: dict[str, np.ndarray]) -> list[Any]:
        return [grads.get(e.name) if e.kind == "placeholder" else (out[e.name] if
                e.kind == "binding" else top[e.name]) for e in _top_scope(dump, upto)]

    def run(expr: dict, vals: list[Any], shape: Any) -> np.ndarray:
        r = ev.top(expr, vals)
        assert r.shape == leaves(shape), (r.shape, shape)
        return r

    for k, b in enumerate(dump["chain"]):
        out[b["name"]] = keep(run(b["expr"], scope_values(k, {}), b["shape"]))
    if forward_only:
        return out
    of = next(b for b in dump["chain"] if b["name"] == dump["seed"]["of"])
    out[SEED_KEY] = run(dump["seed"]["expr"], scope_values(None, {}), of["shape"])
    grads: dict[str, np.ndarray] = {}
    for g in dump["gradients"]:
        val = keep(run(g["expr"], scope_values(None, grads), g["shape"]))
        out[g["name"]] = val
        if any(b["name"] == g["wrt"] for b in dump["chain"]):
            grads["d_" + g["wrt"]] = val
    return out


def evaluate_expr(expr: dict, env: list[Any], dtype: Any = np.float64,
                  method: str = "vector") -> Any:
    """Evaluate one node in a scope given outermost first: arrays (leaf-shaped NumPy arrays) for
    array variables, tuples of ints for index variables. Returns an array or a position."""
    ev = {"vector": _VectorEval, "naive": _NaiveEval}[method](np.dtype(dtype))
    return ev.top(expr, env)


class _NaiveEval:
    """The table of §4 transcribed literally: one position at a time."""

    def __init__(self, dtype: np.dtype):
        self.dtype = dtype

    def top(self, expr: dict, env: list[Any]) -> Any:
        env = [e if e is None or isinstance(e, tuple) else np.asarray(e, self.dtype)
               for e in env]
        with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
            return self.ev(expr, env)

    def zeros(self, shape: Any) -> np.ndarray:
        return np.zeros(leaves(shape), self.dtype)

    def ev(self, n: dict, env: list[Any]) -> Any:  # noqa: C901 - one case per op
        op, ev = n["op"], self.ev
        if op == "var":
            return env[len(env) - 1 - n["idx"]]
        if op == "zero":
            return self.zeros(n["shape"])
        if op == "one":
            return np.ones(leaves(n["shape"]), self.dtype)
        if op == "imaps":
            r = self.zeros(n["s"])
            for j in positions(n["s"]):
                r[j] = ev(n["body"], env + [j])[0]
            return r
        if op == "sels":
            a, i = ev(n["a"], env), ev(n["i"], env)
            return np.array([a[i]], self.dtype)
        if op == "imap":
            r = self.zeros(n["shape"])
            for i in positions(n["s"]):
                r[i] = ev(n["body"], env + [i])
            return r
        if op == "sel":
            a, i = ev(n["a"], env), ev(n["i"], env)
            return np.array(a[i], self.dtype)
        if op == "imapb":
            ps = leaves(n["p"])
            r = self.zeros(n["shape"])
            cache: dict[tuple, np.ndarray] = {}
            for j in positions(n["shape"]):
                i = tuple(jt // pt for jt, pt in zip(j, ps))
                k = tuple(jt % pt for jt, pt in zip(j, ps))
                if i not in cache:
                    cache[i] = ev(n["body"], env + [i])
                r[j] = cache[i][k]
            return r
        if op == "selb":
            a, i = ev(n["a"], env), ev(n["i"], env)
            ps = leaves(n["p"])
            r = self.zeros(n["p"])
            for k in positions(n["p"]):
                r[k] = a[tuple(it * pt + kt for it, pt, kt in zip(i, ps, k))]
            return r
        if op == "sum":
            r = self.zeros(n["shape"])
            for i in positions(n["s"]):
                r = r + ev(n["body"], env + [i])
            return r
        if op == "zero_but":
            i, j, a = ev(n["i"], env), ev(n["j"], env), ev(n["a"], env)
            return a if i == j else np.zeros_like(a)
        if op == "slide":
            i, a = ev(n["i"], env), ev(n["a"], env)
            r = self.zeros(n["shape"])
            for k in positions(n["shape"]):
                r[k] = a[tuple(it + kt for it, kt in zip(i, k))]
            return r
        if op == "backslide":
            i, a = ev(n["i"], env), ev(n["a"], env)
            u = leaves(shape_suc(n["p"]))
            r = self.zeros(n["shape"])
            for j in positions(n["shape"]):
                m = tuple(jt - it for jt, it in zip(j, i))
                if all(0 <= mt < ut for mt, ut in zip(m, u)):
                    r[j] = a[m]
            return r
        if op in UNARY:
            return unary(op, ev(n["a"], env), self.dtype)
        if op == "bin":
            a, b = ev(n["a"], env), ev(n["b"], env)
            return binary(n["fn"], a, b, self.dtype)
        if op == "scaledown":
            return ev(n["a"], env) / self.dtype.type(n["n"])
        if op == "minus":
            return -ev(n["a"], env)
        if op == "ix_const":
            return leaves(n["pos"])
        if op in ("div", "mod"):
            i = ev(n["i"], env)
            ps = leaves(n["p"])
            if op == "div":
                return tuple(it // pt for it, pt in zip(i, ps))
            return tuple(it % pt for it, pt in zip(i, ps))
        if op == "ix_plus":
            i, j = ev(n["i"], env), ev(n["j"], env)
            return tuple(it + jt for it, jt in zip(i, j))
        if op in ("ix_minus", "ix_minus_r"):
            i, j = ev(n["i"], env), ev(n["j"], env)
            bound = leaves(shape_suc(n["p"]) if op == "ix_minus" else n["s"])
            k = tuple(it - jt for it, jt in zip(i, j))
            if all(0 <= kt < bt for kt, bt in zip(k, bound)):
                return ev(n["body"], env + [k])
            return self.zeros(n["shape"])
        if op == "argmax":   # §4, literally: a strict < keeps the first of equal values
            ps = positions(n["s"])
            best = ps[0]
            for i in ps:
                if ev(n["body"], env + [best])[0] < ev(n["body"], env + [i])[0]:
                    best = i
            return best
        raise AssertionError(op)


class _Val:
    """A dense batched value: ``x`` has one axis per enclosing binder (size 1 where the value
    does not depend on that binder's index), then the leaves of its shape (for an index, one
    axis with its leaves' values)."""

    __slots__ = ("x",)

    def __init__(self, x: np.ndarray):
        self.x = x


class _Hot:
    """A batched one-hot array: zero except for the block ``vals`` at position ``pos``.

    ``pos`` has the batch axes then one axis of ``len(lead)`` leaf indices; ``vals`` has the
    batch axes then ``rest``; the array's leaves are ``lead + rest``. It is what ``imaps`` and
    ``imap`` of ``zero_but v k a`` (v the bound index, k and a not depending on it) denote;
    keeping it sparse lets a sum of such arrays (the shape of unoptimised gradients) cost the
    number of terms rather than terms times the array's size."""

    __slots__ = ("pos", "vals", "lead", "rest")

    def __init__(self, pos: np.ndarray, vals: np.ndarray, lead: tuple, rest: tuple):
        self.pos, self.vals, self.lead, self.rest = pos, vals, lead, rest


# Moving a sum inward, to the one-hot its body selects -------------------------------------------
#
# A gradient through a strided layer reads Σ_v B₁ … Bₘ zero_but(k, v, a(v)): the one-hot in v sits
# under other binders (sums, ix_minus), and broadcasting would hold every v for all of them.
# Those binders commute with Σ_v when their own indices do not use v (Σ_v Σ_u f = Σ_u Σ_v f;
# ix_minus binds i − j or gives 0, and i, j free of v make Σ_v ix_minus(i, j, f) =
# ix_minus(i, j, Σ_v f)), so the sum is moved next to its zero_but, where Σ_v [v = k] a(v) =
# a(k) (one_hot_body).

_COMMUTE = ("sum", "ix_minus", "ix_minus_r")


def _renamed(n: Any, f: Callable[[int], int], depth: int = 0) -> Any:
    """n with every free variable index x (x ≥ depth, counted from n) replaced by f(x)."""
    if not isinstance(n, dict) or "op" not in n:
        return n
    if n["op"] == "var":
        return {**n, "idx": n["idx"] if n["idx"] < depth else f(n["idx"] - depth) + depth}
    return {k: _renamed(v, f, depth + 1 if k == "body" else depth) for k, v in n.items()}


def _mentions(n: Any, x: int, depth: int = 0) -> bool:
    """Whether the free variable x (an index counted from n) occurs in n."""
    if not isinstance(n, dict) or "op" not in n:
        return False
    if n["op"] == "var":
        return n["idx"] == x + depth
    return any(_mentions(v, x, depth + 1 if k == "body" else depth) for k, v in n.items())


def _guarded(n: dict, v: int) -> bool:
    """n is binders of _COMMUTE whose indices do not use v, around zero_but(k, v, a), k free
    of v (v counted from n)."""
    while n["op"] in _COMMUTE:
        if any(_mentions(n[f], v) for f in ("i", "j") if f in n):
            return False
        n, v = n["body"], v + 1
    if n["op"] != "zero_but":
        return False
    for x, y in ((n["i"], n["j"]), (n["j"], n["i"])):
        if x["op"] == "var" and x["idx"] == v and not _mentions(y, v):
            return True
    return False


def sum_inward(n: dict) -> dict | None:
    """``sum v . B(u . body)`` as ``B(u . sum v . body)`` (B the outermost binder of the body,
    its indices read outside the sum) when the body leads to a one-hot in v (_guarded); else
    None."""
    b = n["body"]
    if b["op"] not in _COMMUTE or not _guarded(b, 0):
        return None
    if b["op"] == "sum" and _guarded(b["body"], 0):
        return None  # the inner sum is on a one-hot of its own: it goes first
    out = {f: (_renamed(x, lambda i: i - 1) if f in ("i", "j") else x) for f, x in b.items()}
    swap = {0: 1, 1: 0}
    out["body"] = {**n, "shape": b["body"]["shape"],
                   "body": _renamed(b["body"], lambda i: swap.get(i, i))}
    return out


class _VectorEval:
    """Batched evaluation with NumPy broadcasting (see the module docstring)."""

    def __init__(self, dtype: np.dtype):
        self.dtype = dtype
        self.depth = 0  # number of enclosing binders = number of batch axes
        self.max_elements = MAX_ELEMENTS
        self.hot_sums = 0  # how often a sum of one-hot arrays was taken sparsely (for tests)
        self.sums_moved = 0  # how often a sum was moved inside a binder (sum_inward)
        self.runs_split = 0  # how often a binder's positions were split in two (run_of)

    def budget(self, shape: tuple[int, ...], what: str) -> None:
        n = float(np.prod(shape, dtype=np.float64))
        if n > self.max_elements:
            raise TooLarge(f"oracle: {what} would hold {n:.3g} elements (limit "
                           f"{self.max_elements:.3g}, ORACLE_MAX_ELEMENTS)")

    def top(self, expr: dict, env: list[Any]) -> Any:
        benv = [None if e is None else _Val(np.asarray(e, np.int64).reshape(-1))
                if isinstance(e, tuple) else _Val(np.asarray(e, self.dtype)) for e in env]
        with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
            r = self.dense(self.ev(expr, [(v, 0) for v in benv]))
        if expr["sort"] == "ix":
            return tuple(int(x) for x in r.x)
        return np.array(r.x, self.dtype)

    # helpers ---------------------------------------------------------------------------------
    def batch(self, *xs: np.ndarray) -> tuple[int, ...]:
        """The broadcast batch shape of some arrays (their first ``depth`` axes)."""
        return np.broadcast_shapes(*(x.shape[:self.depth] for x in xs))

    def batch_index(self, x: np.ndarray, extra: int) -> tuple[np.ndarray, ...]:
        """Index arrays selecting x's batch entries, broadcastable over ``extra`` more axes."""
        D = self.depth
        return tuple(np.arange(x.shape[k]).reshape((1,) * k + (-1,) + (1,) * (D - 1 - k + extra))
                     for k in range(D))

    def dense(self, v: "_Val | _Hot") -> _Val:
        if isinstance(v, _Val):
            return v
        D = self.depth
        b = self.batch(v.pos, v.vals)
        self.budget(b + v.lead + v.rest, "a one-hot array made dense")
        out = np.zeros(b + v.lead + v.rest, self.dtype)
        pos = np.broadcast_to(v.pos, b + v.pos.shape[D:])
        idx = tuple(np.arange(n).reshape((1,) * k + (-1,) + (1,) * (D - 1 - k))
                    for k, n in enumerate(b))
        out[idx + tuple(pos[..., t] for t in range(len(v.lead)))] = v.vals
        return _Val(out)

    def gather(self, a: np.ndarray, i: np.ndarray) -> _Val:
        """a[i] for each batch entry: a is (batch, *s, *rest), i is (batch, len(s))."""
        L = i.shape[-1]
        rest = a.shape[self.depth + L:]
        self.budget(self.batch(a, i) + rest, "a selection")
        return _Val(a[self.batch_index(a, 0) + tuple(i[..., t] for t in range(L))])

    # evaluation ------------------------------------------------------------------------------
    def ev(self, n: dict, env: list[tuple[_Val | None, int]]) -> "_Val | _Hot":
        """Evaluate n with ``self.depth`` batch axes; env holds (value, its depth)."""
        op = n["op"]
        if op == "var":
            v, d = env[len(env) - 1 - n["idx"]]
            x = v.x.reshape(v.x.shape[:d] + (1,) * (self.depth - d) + v.x.shape[d:])
            return _Val(x)
        if op in ("imaps", "imap", "sum", "imapb"):
            return self.binder(n, env)
        if op == "argmax":
            return self.argmax(n, env)
        if op == "bin" and n["fn"] == "plus" and "zero" in (n["a"]["op"], n["b"]["op"]):
            # 0 + x: keep x as it is (possibly one-hot); shapes agree by check_shapes
            other = n["b"] if n["a"]["op"] == "zero" else n["a"]
            return self.ev(other, env)
        return self.op(n, env)

    def evd(self, n: dict, env: list) -> np.ndarray:
        return self.dense(self.ev(n, env)).x

    def binder(self, n: dict, env: list) -> "_Val | _Hot":
        if n["op"] == "sum":
            inward = sum_inward(n)
            if inward is not None:
                self.sums_moved += 1
                return self.ev(inward, env)
        try:
            return self.binder_whole(n, env)
        except TooLarge:
            if n["op"] == "imapb":
                raise
        # the body is too large for all positions at once: a run of them at a time
        op, D = n["op"], self.depth
        sl = leaves(n["s"])
        pos = np.indices(sl).reshape(len(sl), -1).T.astype(np.int64)
        x = self.run_of(n, env, pos)
        if op == "sum":
            return _Val(x)
        x = x.reshape(x.shape[:D] + sl + x.shape[D + 1:])
        return _Val(x[..., 0] if op == "imaps" else x)

    def run_of(self, n: dict, env: list, pos: np.ndarray) -> np.ndarray:
        """A sum, imap or imaps over the positions ``pos`` only (a run of its shape's, in
        row-major order): the sum of the body over them, or the body at each along a batch axis.
        A body too large for the run is taken over each half of it, the halves then summed or
        put side by side."""
        op, D = n["op"], self.depth
        self.depth = D + 1
        try:
            body = self.evd(n["body"], env + [(_Val(pos.reshape((1,) * D + pos.shape)), D + 1)])
        except TooLarge:
            if len(pos) < 2:
                raise
            body = None
        finally:
            self.depth = D
        if body is None:
            self.runs_split += 1
            h = len(pos) // 2
            a, b = self.run_of(n, env, pos[:h]), self.run_of(n, env, pos[h:])
            if op == "sum":
                return a + b
            batch = np.broadcast_shapes(a.shape[:D], b.shape[:D])
            return np.concatenate([np.broadcast_to(x, batch + x.shape[D:]) for x in (a, b)],
                                  axis=D)
        shape = body.shape[:D] + (len(pos),) + body.shape[D + 1:]
        if op == "sum":
            return np.broadcast_to(body, shape).sum(axis=D)
        self.budget(shape, f"{op} over a run of {len(pos)} positions")
        return np.broadcast_to(body, shape)

    def binder_whole(self, n: dict, env: list) -> "_Val | _Hot":
        op, D = n["op"], self.depth
        sl = leaves(n["s"])
        N = int(np.prod(sl, dtype=np.int64))
        pos = np.indices(sl).reshape(len(sl), -1).T.astype(np.int64)  # (N, L), row-major
        bound = (_Val(pos.reshape((1,) * D + pos.shape)), D + 1)
        self.depth = D + 1
        try:
            hot = self.one_hot_body(n, env + [bound]) if op != "imapb" else None
            body = self.ev(n["body"], env + [bound]) if hot is None else None
        finally:
            self.depth = D
        if hot is not None:
            return hot
        if isinstance(body, _Hot) and op == "sum":
            return self.scatter_sum(body, N)
        x = self.dense_at(body, D + 1).x  # (batch, n, *p) with n = N or 1
        shape = x.shape[:D] + (N,) + x.shape[D + 1:]
        if op == "sum":
            return _Val(np.broadcast_to(x, shape).sum(axis=D))
        self.budget(shape, f"{op} over {sl}")
        x = np.broadcast_to(x, shape).reshape(x.shape[:D] + sl + x.shape[D + 1:])
        if op == "imaps":
            return _Val(x[..., 0])
        if op == "imap":
            return _Val(x)
        L = len(sl)  # imapb: interleave (s1..sL, p1..pL) -> (s1, p1, ..., sL, pL) -> q
        order = list(range(D)) + [D + a for t in range(L) for a in (t, L + t)]
        return _Val(x.transpose(order).reshape(x.shape[:D] + leaves(n["shape"])))

    def argmax(self, n: dict, env: list) -> _Val:
        """The body at every position of ``s`` along a new batch axis, then ``first_argmax``
        along it; the flat position's leaves by row-major division."""
        D = self.depth
        sl = leaves(n["s"])
        pos = np.indices(sl).reshape(len(sl), -1).T.astype(np.int64)  # (N, L), row-major
        self.depth = D + 1
        try:
            body = self.evd(n["body"], env + [(_Val(pos.reshape((1,) * D + pos.shape)), D + 1)])
        finally:
            self.depth = D
        values = np.broadcast_to(body[..., 0], body.shape[:D] + (len(pos),))
        return _Val(pos[first_argmax(values)])

    def dense_at(self, v: "_Val | _Hot", depth: int) -> _Val:
        saved, self.depth = self.depth, depth
        try:
            return self.dense(v)
        finally:
            self.depth = saved

    def one_hot_body(self, n: dict, env: list) -> "_Val | _Hot | None":
        """imaps/imap/sum over v of ``zero_but v k a`` (either side) with k, a free of v."""
        body, D = n["body"], self.depth - 1
        if body["op"] != "zero_but":
            return None
        v0 = lambda m: m["op"] == "var" and m["idx"] == 0  # noqa: E731
        if v0(body["i"]) == v0(body["j"]):
            return None
        k = self.ev(body["j"] if v0(body["i"]) else body["i"], env).x
        if k.shape[D] != 1:
            return None  # k depends on v: evaluate the body as written
        drop = lambda x: x[(slice(None),) * D + (0,)]  # noqa: E731
        if n["op"] == "sum":  # Σ_v [v = k] a(v) = a(k): a with k for the bound index
            a = self.ev(body["a"], env[:-1] + [(_Val(k), D + 1)])
            return _Hot(drop(a.pos), drop(a.vals), a.lead, a.rest) if isinstance(a, _Hot) \
                else _Val(drop(a.x))
        a = self.ev(body["a"], env)
        parts = [a.pos, a.vals] if isinstance(a, _Hot) else [a.x]
        if any(x.shape[D] != 1 for x in parts):
            return None  # a depends on v after all: evaluate the body as written
        k = k[(slice(None),) * D + (0,)]
        lead = leaves(n["s"])
        if n["op"] == "imaps":
            a = self.dense_at(a, D + 1)
            return _Hot(k, drop(a.x)[..., 0], lead, ())
        if isinstance(a, _Hot):  # imap of a one-hot: a one-hot with a longer position
            apos, avals = drop(a.pos), drop(a.vals)
            b = np.broadcast_shapes(k.shape[:D], apos.shape[:D])
            pos = np.concatenate([np.broadcast_to(k, b + k.shape[D:]),
                                  np.broadcast_to(apos, b + apos.shape[D:])], axis=-1)
            return _Hot(pos, avals, lead + a.lead, a.rest)
        return _Hot(k, drop(a.x), lead, a.x.shape[D + 1:])

    def scatter_sum(self, h: _Hot, N: int) -> _Val:
        """Σ over the innermost batch axis (of size N) of a one-hot array: a dense array."""
        D = self.depth  # h has D + 1 batch axes
        self.hot_sums += 1
        b = np.broadcast_shapes(h.pos.shape[:D + 1], h.vals.shape[:D + 1], (1,) * D + (N,))
        self.budget(b[:D] + h.lead + h.rest, "a sum of one-hot arrays")
        out = np.zeros(b[:D] + h.lead + h.rest, self.dtype)
        pos = np.broadcast_to(h.pos, b + h.pos.shape[D + 1:])
        idx = tuple(np.broadcast_to(np.arange(b[k]).reshape((1,) * k + (-1,) + (1,) * (D - k)),
                                    b) for k in range(D))
        vals = np.broadcast_to(h.vals, b + h.rest)
        np.add.at(out, idx + tuple(pos[..., t] for t in range(len(h.lead))), vals)
        return _Val(out)

    def op(self, n: dict, env: list) -> _Val:  # noqa: C901 - one case per op
        op, evd, D = n["op"], self.evd, self.depth
        if op == "zero":
            return _Val(np.zeros((1,) * D + leaves(n["shape"]), self.dtype))
        if op == "one":
            return _Val(np.ones((1,) * D + leaves(n["shape"]), self.dtype))
        if op in ("sels", "sel"):
            r = self.gather(evd(n["a"], env), evd(n["i"], env))
            return _Val(r.x[..., None]) if op == "sels" else r
        if op == "selb":
            a, i = evd(n["a"], env), evd(n["i"], env)
            sl, pl = leaves(n["s"]), leaves(n["p"])
            L = len(sl)
            split = a.reshape(a.shape[:D] + tuple(x for t in range(L) for x in (sl[t], pl[t])))
            order = list(range(D)) + [D + 2 * t for t in range(L)] + [D + 2 * t + 1
                                                                       for t in range(L)]
            return self.gather(split.transpose(order), i)
        if op == "zero_but":
            i, j, a = evd(n["i"], env), evd(n["j"], env), evd(n["a"], env)
            eq = np.all(i == j, axis=-1)
            eq = eq.reshape(eq.shape + (1,) * (a.ndim - D))
            self.budget(np.broadcast_shapes(eq.shape, a.shape), "zero_but")
            return _Val(np.where(eq, a, self.dtype.type(0)))
        if op in ("slide", "backslide"):
            i, a = evd(n["i"], env), evd(n["a"], env)
            out = leaves(n["shape"])
            L = len(out)
            u = leaves(shape_suc(n["p"]))
            self.budget(self.batch(i, a) + out, op)

            def axis(t: int, v: np.ndarray) -> np.ndarray:  # (batch, out[t]) -> broadcastable
                return v.reshape(v.shape[:D] + tuple(out[t] if x == t else 1 for x in range(L)))

            rows = self.batch_index(a, L)
            if op == "slide":  # r'[k] = a[i + k]
                idx = [axis(t, i[..., t:t + 1] + np.arange(out[t])) for t in range(L)]
                return _Val(a[rows + tuple(idx)])
            # backslide: r'[j] = a[j - i] if 0 <= j - i < u, else 0
            m = [axis(t, np.arange(out[t]) - i[..., t:t + 1]) for t in range(L)]
            ok = np.ones((1,) * (D + L), bool)
            for t in range(L):
                ok = ok & (m[t] >= 0) & (m[t] < u[t])
            got = a[rows + tuple(np.clip(m[t], 0, u[t] - 1) for t in range(L))]
            return _Val(np.where(ok, got, self.dtype.type(0)))
        if op in UNARY:
            return _Val(unary(op, evd(n["a"], env), self.dtype))
        if op == "bin":
            a, b = evd(n["a"], env), evd(n["b"], env)
            self.budget(np.broadcast_shapes(a.shape, b.shape), n["fn"])
            return _Val(binary(n["fn"], a, b, self.dtype))
        if op == "scaledown":
            return _Val(evd(n["a"], env) / self.dtype.type(n["n"]))
        if op == "minus":
            return _Val(-evd(n["a"], env))
        if op == "ix_const":  # the same position for every batch entry
            return _Val(np.array(leaves(n["pos"]), np.int64).reshape((1,) * D + (-1,)))
        if op in ("div", "mod"):
            i = evd(n["i"], env)
            p = np.array(leaves(n["p"]), np.int64)
            return _Val(i // p if op == "div" else i % p)
        if op == "ix_plus":
            return _Val(evd(n["i"], env) + evd(n["j"], env))
        if op in ("ix_minus", "ix_minus_r"):
            i, j = evd(n["i"], env), evd(n["j"], env)
            bound = np.array(leaves(shape_suc(n["p"]) if op == "ix_minus" else n["s"]), np.int64)
            if np.any(bound == 0):  # no position to bind: the condition never holds
                return _Val(np.zeros((1,) * D + leaves(n["shape"]), self.dtype))
            k = i - j
            ok = np.all((k >= 0) & (k < bound), axis=-1)
            body = evd(n["body"], env + [(_Val(np.clip(k, 0, bound - 1)), D)])
            ok = ok.reshape(ok.shape + (1,) * (body.ndim - D))
            return _Val(np.where(ok, body, self.dtype.type(0)))
        raise AssertionError(op)
