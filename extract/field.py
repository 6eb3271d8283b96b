"""The dump evaluated over the prime field F_p, p = 2^61 - 1 (what ``extract.validate`` compares
the generated code with).

Written from docs/dump-format.md §4-5 alone, on the JSON (not on ``extract.ir`` nor anything
``lower.py`` makes), so that it is independent of the extractor. Arithmetic is that of F_p:
``plus``, ``mul`` and ``minus`` as in the field, ``scaledown n`` multiplies by n^-1 (p > n), and
``logistic`` is *uninterpreted*: a function ``L`` of its argument drawn at random for each trial
(a keyed hash, ``logistic``), so a kernel passes only if it applies ``logistic`` to the right
argument. Values are NumPy ``uint64`` arrays of residues in [0, p).

How it evaluates: a node inside ``D`` binders is computed once for all the positions of those
binders, as an array with ``D`` leading *batch* axes (of the binder's size, or 1 where the value
does not depend on that binder) followed by the leaves of its shape; an index is a list of
integer arrays, one per leaf, over the batch axes. ``ix_minus``/``ix_minus_r`` bind their index
without a new batch axis (it is a function of the outer positions).

Example: ``evaluate(dump, values)`` with ``values`` the context as ``uint64`` residues returns
every chain binding and gradient entry by name. ``degrees(dump)`` gives, per binding, the
degree of its elements as polynomials in the context and the ``logistic`` values (each one a
fresh variable): the Schwartz-Zippel bound of ``extract.validate`` is that degree over p.
"""
from __future__ import annotations

import numpy as np

P = (1 << 61) - 1                  # a Mersenne prime
_M64 = (1 << 64) - 1
_LO31 = np.uint64((1 << 31) - 1)
_LO30 = np.uint64((1 << 30) - 1)
_LO32 = np.uint64((1 << 32) - 1)
_P = np.uint64(P)


# ---------------------------------------------------------------------------------------------
# the field on uint64 arrays

def _u(x) -> np.ndarray:
    return np.asarray(x, dtype=np.uint64)


def _fold(x: np.ndarray) -> np.ndarray:
    """x mod p for x < 2^64: 2^61 = 1 (mod p)."""
    x = (x & _P) + (x >> np.uint64(61))
    x = (x & _P) + (x >> np.uint64(61))
    return x - np.where(x >= _P, _P, np.uint64(0))


def add(a, b) -> np.ndarray:
    return _fold(_u(a) + _u(b))                      # < 2^62: no overflow


def neg(a) -> np.ndarray:
    a = _u(a)
    return np.where(a == 0, a, _P - a)


def mul(a, b) -> np.ndarray:
    """a*b mod p by 31/30-bit halves: every partial product and sum stays below 2^64."""
    a, b = _u(a), _u(b)
    a0, a1 = a & _LO31, a >> np.uint64(31)            # a = a1*2^31 + a0, a1 < 2^30
    b0, b1 = b & _LO31, b >> np.uint64(31)
    hi = (a1 * b1) << np.uint64(1)                    # a1 b1 2^62 = 2 a1 b1
    mid = a1 * b0 + a0 * b1                           # < 2^62; mid 2^31 = m1 2^61 + m0 2^31
    mid = (mid >> np.uint64(30)) + ((mid & _LO30) << np.uint64(31))
    return _fold(_fold(hi + mid) + _fold(a0 * b0))


def sum_axis(a: np.ndarray, axis: int) -> np.ndarray:
    """Σ along an axis, mod p (an axis shorter than 2^32)."""
    lo = (a & _LO32).sum(axis=axis, dtype=np.uint64)
    hi = (a >> np.uint64(32)).sum(axis=axis, dtype=np.uint64)
    return add(mul(_fold(hi), np.uint64(1 << 32)), _fold(lo))


def inverse(n: int) -> int:
    n %= P
    if n == 0:
        raise ZeroDivisionError("0 has no inverse mod p")
    return pow(n, P - 2, P)


def _mix(z: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser (wrapping uint64 arithmetic)."""
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def logistic(a, key: int) -> np.ndarray:
    """The uninterpreted logistic: a keyed hash of the argument into [1, p) (never 0, so the
    generated ``1 / (1 + exp(-x))`` can express it; see templates/validate/field.h)."""
    with np.errstate(over="ignore"):
        z = _mix(_u(a) + np.uint64(key & _M64))
    return np.uint64(1) + z % np.uint64(P - 1)


def random_elements(rng: np.random.Generator, shape) -> np.ndarray:
    """Uniform residues in [0, p)."""
    return rng.integers(0, P, size=shape, dtype=np.uint64)


# ---------------------------------------------------------------------------------------------
# shapes

def leaves(shape) -> tuple:
    if isinstance(shape, int):
        return (shape,)
    return leaves(shape[0]) + leaves(shape[1])


def size(shape) -> int:
    return int(np.prod(leaves(shape), dtype=np.int64))


def _plus(s, p) -> tuple:
    return tuple(a + b for a, b in zip(leaves(s), leaves(p)))


def _suc(p) -> tuple:
    return tuple(a + 1 for a in leaves(p))


# ---------------------------------------------------------------------------------------------
# the evaluator

def _all(conds: list) -> np.ndarray:
    out = conds[0]
    for c in conds[1:]:
        out = out & c
    return out

class _Eval:
    def __init__(self, key: int):
        self.key = key
        self.logistic_calls = 0               # elements passed to logistic (for the bound)

    # env entries: ("ar", array, depth) or ("ix", [leaf arrays], depth)
    @staticmethod
    def lift(entry, D: int):
        kind, x, d = entry
        if kind == "ar":
            return x.reshape(x.shape[:d] + (1,) * (D - d) + x.shape[d:])
        return [i.reshape(i.shape + (1,) * (D - d)) for i in x]

    def ar(self, n: dict, env: list, D: int) -> np.ndarray:  # noqa: C901 - one case per op
        op = n["op"]
        if op == "var":
            entry = env[-1 - n["idx"]]
            if entry is None:
                raise ValueError("a chain binding reads a d_ placeholder")
            return self.lift(entry, D)
        if op in ("zero", "one"):
            return np.full((1,) * D + leaves(n["shape"]), op == "one", np.uint64)
        if op in ("imaps", "imap", "imapb", "sum"):
            s = leaves(n["s"])
            N = int(np.prod(s, dtype=np.int64))
            b = self.ar(n["body"], env + [("ix", self.positions(s, D), D + 1)], D + 1)
            if op == "sum":
                if b.shape[D] == 1:
                    return mul(np.squeeze(b, D), np.uint64(N % P))
                return sum_axis(b, D)
            b = np.broadcast_to(b, b.shape[:D] + (N,) + b.shape[D + 1:])
            if op == "imaps":
                return b[..., 0].reshape(b.shape[:D] + s)
            if op == "imap":
                return b.reshape(b.shape[:D] + s + b.shape[D + 1:])
            p = leaves(n["p"])                        # imapb: r[j] = body(j div p)[j mod p]
            k = len(s)
            b = b.reshape(b.shape[:D] + s + p)
            order = list(range(D)) + [D + x for t in range(k) for x in (t, k + t)]
            return b.transpose(order).reshape(b.shape[:D] + tuple(a * c for a, c in zip(s, p)))
        if op == "sels":
            return self.gather(self.ar(n["a"], env, D), D, self.ix(n["i"], env, D), ())[..., None]
        if op == "sel":
            a = self.ar(n["a"], env, D)
            i = self.ix(n["i"], env, D)
            rest = a.shape[D + len(i):]
            return self.gather(a, D, i + [self.axis(t, rest, D) for t in range(len(rest))], rest)
        if op in ("selb", "slide"):
            i = self.ix(n["i"], env, D)
            a = self.ar(n["a"], env, D)
            if op == "selb":                              # a[i*p + k], k < p
                out = leaves(n["p"])
                idx = [it[(...,) + (None,) * len(out)] * pt + self.axis(t, out, D)
                       for t, (it, pt) in enumerate(zip(i, out))]
            else:                                         # a[i + k], k < p + 1
                out = _suc(n["p"])
                idx = [it[(...,) + (None,) * len(out)] + self.axis(t, out, D)
                       for t, it in enumerate(i)]
            return self.gather(a, D, idx, out)
        if op == "backslide":                             # a[j - i] if 0 <= j - i < p + 1
            i = self.ix(n["i"], env, D)
            a = self.ar(n["a"], env, D)
            out, u = _plus(n["s"], n["p"]), _suc(n["p"])
            k = [self.axis(t, out, D) - it[(...,) + (None,) * len(out)]
                 for t, it in enumerate(i)]
            ok = _all([(kt >= 0) & (kt < ut) for kt, ut in zip(k, u)])
            r = self.gather(a, D, [np.clip(kt, 0, ut - 1) for kt, ut in zip(k, u)], out)
            return np.where(ok, r, np.uint64(0))
        if op == "zero_but":
            i, j = self.ix(n["i"], env, D), self.ix(n["j"], env, D)
            a = self.ar(n["a"], env, D)
            eq = _all([x == y for x, y in zip(i, j)])
            return np.where(eq.reshape(eq.shape + (1,) * (a.ndim - D)), a, np.uint64(0))
        if op == "logistic":
            a = self.ar(n["a"], env, D)
            self.logistic_calls += a.size
            return logistic(a, self.key)
        if op == "bin":
            a, b = self.ar(n["a"], env, D), self.ar(n["b"], env, D)
            return add(a, b) if n["fn"] == "plus" else mul(a, b)
        if op == "scaledown":
            return mul(self.ar(n["a"], env, D), np.uint64(inverse(n["n"])))
        if op == "minus":
            return neg(self.ar(n["a"], env, D))
        if op in ("ix_minus", "ix_minus_r"):
            i, j = self.ix(n["i"], env, D), self.ix(n["j"], env, D)
            bound = _suc(n["p"]) if op == "ix_minus" else leaves(n["s"])
            k = [x - y for x, y in zip(i, j)]
            ok = _all([(kt >= 0) & (kt < b) for kt, b in zip(k, bound)])
            k = [np.clip(kt, 0, b - 1) for kt, b in zip(k, bound)]
            body = self.ar(n["body"], env + [("ix", k, D)], D)
            return np.where(ok.reshape(ok.shape + (1,) * (body.ndim - D)), body, np.uint64(0))
        raise ValueError(f"unknown array node {op!r}")

    def ix(self, n: dict, env: list, D: int) -> list:
        op = n["op"]
        if op == "var":
            return self.lift(env[-1 - n["idx"]], D)
        if op == "ix_const":
            return [np.full((1,) * D, v, np.int64) for v in leaves(n["pos"])]
        i = self.ix(n["i"], env, D)
        if op == "div":
            return [x // p for x, p in zip(i, leaves(n["p"]))]
        if op == "mod":
            return [x % p for x, p in zip(i, leaves(n["p"]))]
        if op == "ix_plus":
            return [x + y for x, y in zip(i, self.ix(n["j"], env, D))]
        raise ValueError(f"unknown index node {op!r}")

    @staticmethod
    def positions(s: tuple, D: int) -> list:
        """The index bound by a binder over leaves ``s``: one array per leaf over the new axis."""
        N = int(np.prod(s, dtype=np.int64))
        flat = np.arange(N, dtype=np.int64)
        out, stride = [], N
        for n in s:
            stride //= n
            out.append(((flat // stride) % n).reshape((1,) * D + (N,)))
        return out

    @staticmethod
    def axis(t: int, out: tuple, D: int) -> np.ndarray:
        """arange(out[t]) along the t-th of the axes ``out`` that follow ``D`` batch axes."""
        return np.arange(out[t], dtype=np.int64).reshape(
            (1,) * D + tuple(-1 if x == t else 1 for x in range(len(out))))

    @staticmethod
    def gather(a: np.ndarray, D: int, idx: list, out: tuple) -> np.ndarray:
        """a[batch..., idx_1, ..., idx_k]: ``idx`` one integer array per leaf of ``a``, over the
        batch axes then the result's leaves ``out``."""
        r = len(out)
        parts = [np.arange(a.shape[k]).reshape((1,) * k + (-1,) + (1,) * (D - 1 - k + r))
                 for k in range(D)]
        for x in idx:
            parts.append(x.reshape(x.shape + (1,) * (D + r - x.ndim)) if x.ndim < D + r else x)
        return a[tuple(parts)]


# ---------------------------------------------------------------------------------------------
# sums of one-hot arrays (reverse mode without opt: tests/data/cnn_ad.json)

_BINDS = ("imaps", "imap", "imapb", "sum", "ix_minus", "ix_minus_r")


def _uses(n: dict, k: int) -> bool:
    """Whether de Bruijn variable ``k`` occurs free in ``n``."""
    if n["op"] == "var":
        return n["idx"] == k
    return any(_uses(n[f], k + (f == "body" and n["op"] in _BINDS))
               for f in ("a", "b", "i", "j", "body") if f in n)


def _rename(n: dict, f, cut: int = 0) -> dict:
    """``n`` with every free variable ``m`` (>= ``cut`` binders deep) renamed to ``f(m)``."""
    if n["op"] == "var":
        return {**n, "idx": cut + f(n["idx"] - cut)} if n["idx"] >= cut else n
    out = dict(n)
    for g in ("a", "b", "i", "j", "body"):
        if g in n:
            out[g] = _rename(n[g], f, cut + (g == "body" and n["op"] in _BINDS))
    return out


def _is_var(n: dict, k: int) -> bool:
    return n["op"] == "var" and n["idx"] == k


def unhot(n: dict) -> dict:
    """Rewrite ``Σ_x imap_v. zero_but(v, k, a)`` (``k`` and ``a`` free of ``v``), bottom-up, by
    linearity: to ``imap_v. zero_but(v, k, Σ_x a)`` when ``k`` is free of ``x``, and to
    ``imap_v. a[x := v]`` when ``k`` is ``x`` itself (same shape). The values are unchanged;
    the one-hot arrays of reverse mode are never filled in. (``imaps`` alike.)"""
    out = dict(n)
    for g in ("a", "b", "i", "j", "body"):
        if g in n:
            out[g] = unhot(n[g])
    n = out
    if n["op"] != "sum" or n["body"]["op"] not in ("imap", "imaps") or \
            n["body"]["body"]["op"] != "zero_but":
        return n
    m, zb = n["body"], n["body"]["body"]           # in zb: var 0 is v, var 1 is x
    if _is_var(zb["i"], 0):
        k = zb["j"]
    elif _is_var(zb["j"], 0):
        k = zb["i"]
    else:
        return n
    a = zb["a"]
    if _uses(k, 0) or _uses(a, 0):
        return n
    if not _uses(k, 1):                            # scope (.., x, v) -> (.., v) and (.., v, x)
        k2 = _rename(k, lambda q: q - 1 if q >= 2 else q)
        a2 = _rename(a, lambda q: 0 if q == 1 else q)
        inner = unhot({"op": "sum", "sort": "ar", "shape": a["shape"], "s": n["s"],
                       "body": a2})
        zb2 = {**zb, "a": inner, "i": zb["i"] if _is_var(zb["i"], 0) else k2,
               "j": zb["j"] if _is_var(zb["j"], 0) else k2}
        return {**m, "body": zb2}
    if _is_var(k, 1) and n["s"] == m["s"]:         # scope (.., x, v) -> (.., v)
        return {**m, "body": _rename(a, lambda q: q - 1 if q >= 1 else q)}
    return n


def evaluate(dump: dict, values: dict, key: int, stats: dict | None = None,
             one_hot: bool = True) -> dict:
    """Every chain binding and gradient entry (flat ``uint64`` arrays of residues), for context
    ``values`` (name -> residues of any shape with the right number of elements); ``key`` picks
    the uninterpreted ``logistic``. ``stats`` (optional) receives ``logistic_calls``.
    ``one_hot``: evaluate sums of one-hot arrays by linearity (``unhot``), not densely."""
    ev = _Eval(key)
    prep = unhot if one_hot else (lambda e: e)
    env: list = []
    for c in dump["context"]:
        v = _u(values[c["name"]]).reshape(leaves(c["shape"]))
        env.append(("ar", v, 0))
    out = {}
    for b in dump["chain"]:
        v = ev.ar(prep(b["expr"]), env, 0)
        out[b["name"]] = np.broadcast_to(v, leaves(b["shape"])).ravel().copy()
        env += [None, ("ar", out[b["name"]].reshape(leaves(b["shape"])), 0)]
    slot = {b["name"]: len(dump["context"]) + 2 * k for k, b in enumerate(dump["chain"])}
    for g in dump["gradients"]:
        v = ev.ar(prep(g["expr"]), env, 0)
        out[g["name"]] = np.broadcast_to(v, leaves(g["shape"])).ravel().copy()
        if g["wrt"] in slot:
            env[slot[g["wrt"]]] = ("ar", out[g["name"]].reshape(leaves(g["shape"])), 0)
    if stats is not None:
        stats["logistic_calls"] = stats.get("logistic_calls", 0) + ev.logistic_calls
    return out


# ---------------------------------------------------------------------------------------------
# degrees (for the Schwartz-Zippel bound)

def degrees(dump: dict) -> tuple[dict, int]:
    """(name -> degree of the binding's elements, largest degree of a logistic argument), as
    polynomials in the context with each logistic value a fresh variable (degree 1); 0 for a
    constant. An upper bound: the degree of a sum is that of its largest term."""
    arg = [0]

    def deg(n: dict, env: list) -> int:
        op = n["op"]
        if n["sort"] == "ix":
            return 0
        if op == "var":
            return env[-1 - n["idx"]]
        if op in ("zero", "one"):
            return 0
        if op == "logistic":
            arg[0] = max(arg[0], deg(n["a"], env))
            return 1
        if op == "bin":
            a, b = deg(n["a"], env), deg(n["b"], env)
            return a + b if n["fn"] == "mul" else max(a, b)
        binds = op in ("imaps", "imap", "imapb", "sum", "ix_minus", "ix_minus_r")
        return max([deg(n[f], env + [0] if binds and f == "body" else env)
                    for f in ("a", "body") if f in n] or [0])

    env = [1] * len(dump["context"])
    out = {}
    for b in dump["chain"]:
        out[b["name"]] = deg(b["expr"], env)
        env += [0, out[b["name"]]]
    slot = {b["name"]: len(dump["context"]) + 2 * k for k, b in enumerate(dump["chain"])}
    for g in dump["gradients"]:
        out[g["name"]] = deg(g["expr"], env)
        if g["wrt"] in slot:
            env[slot[g["wrt"]]] = out[g["name"]]
    return out, arg[0]
