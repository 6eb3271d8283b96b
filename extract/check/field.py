"""The dump evaluated over the prime field F_p, p = 2^61 - 1 (what ``extract.check.validate``
compares the generated code with).

Written from docs/dump-format.md §4-5 alone, on the JSON (not on ``extract.ir`` nor anything
``lower.py`` makes), so that it is independent of the extractor. Arithmetic is that of F_p:
``plus``, ``mul`` and ``minus`` as in the field, ``scaledown n`` multiplies by n^-1 (p > n),
``recip`` is the field inverse with ``recip 0 = 0`` (x^(p-2)). The other elementwise functions
are *uninterpreted*, drawn at random for each trial (keyed hashes of the argument; the key is
the trial's), so a kernel passes only if it applies each to the right argument:

- ``logistic`` is a random function L into [1, p) (``logistic``), and ``exp(u)`` is
  ``L(-u)^-1 - 1`` (``exp``): one random function for both, so that the generated
  ``1 / (1 + exp(-x))`` is L(x) and a generated ``exp`` is the dump's;
- ``log`` is a second random function G into [0, p) (``log``), and ``sqrt`` a third, S
  (``sqrt``), independent of the others (a sqrt left out, or made a log, is a wrong value);
  ``erf`` (version 6) a fourth, E (``erf``); ``derf``, erf's derivative ``(2/√π) exp(−x²)``,
  is ``c · exp(−(x · x))`` with exp as above and ``c``, the field's stand-in for 2/√π, a random
  constant of the trial (``derf``: a derf without its constant, or of another argument than
  ``−x²``, is a wrong value);
- ``argmax`` (version 5) compares two values of its body: ``a < b`` is "not N(b - a)";
- ``relu`` and ``step`` compare their argument with 0: ``x <= 0`` is a random predicate N(x),
  true at 0 and a fair coin elsewhere (``nonpositive``); ``relu(x) = N(x) ? 0 : x``,
  ``step(x) = N(x) ? 0 : 1``; ``bin max`` compares the difference with 0 by the same predicate:
  ``max(a, b) = N(a - b) ? b : a`` (the generated ``fmax_``, ``a - b <= 0 ? b : a``).

extract/emit/templates/validate/field.h defines the same functions (same hashes, same keys) for the
compiled code. Values are NumPy ``uint64`` arrays of residues in [0, p).

How it evaluates: a node inside ``D`` binders is computed once for all the positions of those
binders, as an array with ``D`` leading *batch* axes (of the binder's size, or 1 where the value
does not depend on that binder) followed by the leaves of its shape; an index is a list of
integer arrays, one per leaf, over the batch axes. ``ix_minus``/``ix_minus_r`` bind their index
without a new batch axis (it is a function of the outer positions).

Example: ``evaluate(dump, values, key)`` with ``values`` the context as ``uint64`` residues
returns every chain binding and gradient entry by name. ``degrees(dump)`` gives, per binding,
the degrees of the numerator and denominator of its elements as rational functions of the
context and the random functions' values; ``schwartz_zippel`` turns them into the bound that
``extract.check.validate`` reports.
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


_GOLDEN = 0x9E3779B97F4A7C15


def subkey(key: int, t: int) -> np.uint64:
    """The key of the ``t``-th random function (1: log, 2: the predicate of relu and step,
    3: sqrt, 4: erf, 5: derf's constant); L uses ``key`` itself. field.h: ``subkey``."""
    with np.errstate(over="ignore"):
        return _mix(np.uint64((key + t * _GOLDEN) & _M64))


def _hash(a, key) -> np.ndarray:
    with np.errstate(over="ignore"):
        return _mix(_u(a) + np.uint64(int(key) & _M64))


def power(a, e: int) -> np.ndarray:
    """a^e elementwise (e >= 1)."""
    r, b = None, _u(a)
    while e:
        if e & 1:
            r = b if r is None else mul(r, b)
        e >>= 1
        if e:
            b = mul(b, b)
    return r


def recip(a) -> np.ndarray:
    """The field inverse, with recip(0) = 0 (a^(p-2); field.h: ``inverse``)."""
    return power(a, P - 2)


def logistic(a, key: int) -> np.ndarray:
    """The uninterpreted logistic: a keyed hash L of the argument into [1, p) (never 0, so the
    generated ``1 / (1 + exp(-x))`` can express it; see extract/emit/templates/validate/field.h)."""
    return np.uint64(1) + _hash(a, key) % np.uint64(P - 1)


def exp(a, key: int) -> np.ndarray:
    """The uninterpreted exp, tied to the logistic: exp(u) = L(-u)^-1 - 1 (never -1), so that
    1 / (1 + exp(-x)) = L(x)."""
    return add(recip(logistic(neg(a), key)), np.uint64(P - 1))


def log(a, key: int) -> np.ndarray:
    """The uninterpreted log: a second keyed hash G into [0, p), independent of L."""
    return _hash(a, subkey(key, 1)) % _P


def sqrt(a, key: int) -> np.ndarray:
    """The uninterpreted sqrt: a random function S into [0, p), a keyed hash under its own
    subkey (3), independent of L, G and the predicate (so ``sqrt(0)`` is S(0), not 0: nothing
    may fold it)."""
    return _hash(a, subkey(key, 3)) % _P


def erf(a, key: int) -> np.ndarray:
    """The uninterpreted erf: a random function E into [0, p), under its own subkey (4)."""
    return _hash(a, subkey(key, 4)) % _P


def sqrtpi2(key: int) -> np.uint64:
    """derf's 2/√π over the field: a random constant c of the trial (subkey 5; field.h:
    ``field_2_sqrtpi``)."""
    with np.errstate(over="ignore"):
        return _mix(subkey(key, 5)) % _P


def derf(a, key: int) -> np.ndarray:
    """erf's derivative ``(2/√π) exp(−x²)``: ``c · exp(−(x · x))``, exp the one tied to L."""
    return mul(sqrtpi2(key), exp(neg(mul(a, a)), key))


def nonpositive(a, key: int) -> np.ndarray:
    """``x <= 0`` as the field sees it: a random predicate N, true at 0 and a keyed fair coin
    elsewhere (the top bit of a third hash)."""
    a = _u(a)
    return (a == 0) | ((_hash(a, subkey(key, 2)) >> np.uint64(63)) == 1)


def relu(a, key: int) -> np.ndarray:
    a = _u(a)
    return np.where(nonpositive(a, key), np.uint64(0), a)


def step(a, key: int) -> np.ndarray:
    return np.where(nonpositive(a, key), np.uint64(0), np.uint64(1))


def maximum(a, b, key: int) -> np.ndarray:
    """``bin max``: ``N(a - b) ? b : a``, relu's predicate on the difference."""
    a, b = np.broadcast_arrays(_u(a), _u(b))
    return np.where(nonpositive(add(a, neg(b)), key), b, a)


# the elementwise functions of the dump, by op; recip needs no key
UNARY = {"logistic": logistic, "exp": exp, "log": log, "sqrt": sqrt, "relu": relu, "step": step,
         "recip": lambda a, key: recip(a), "erf": erf, "derf": derf}


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
        # elements passed to each function (the bound); "max": bin max's comparisons
        self.calls = dict.fromkeys((*UNARY, "max"), 0)

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
        if op == "detach":                              # the identity (version 5)
            return self.ar(n["a"], env, D)
        if op in UNARY:
            a = self.ar(n["a"], env, D)
            self.calls[op] += a.size
            return UNARY[op](a, self.key)
        if op == "bin":
            a, b = self.ar(n["a"], env, D), self.ar(n["b"], env, D)
            if n["fn"] == "max":
                r = maximum(a, b, self.key)
                self.calls["max"] += r.size
                return r
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
        if op == "argmax":
            return self.argmax(n, env, D)
        i = self.ix(n["i"], env, D)
        if op == "div":
            return [x // p for x, p in zip(i, leaves(n["p"]))]
        if op == "mod":
            return [x % p for x, p in zip(i, leaves(n["p"]))]
        if op == "ix_plus":
            return [x + y for x, y in zip(i, self.ix(n["j"], env, D))]
        raise ValueError(f"unknown index node {op!r}")

    def argmax(self, n: dict, env: list, D: int) -> list:
        """§4's argmax with the order's one comparison as the field sees it: ``top < v`` is
        "not N(v - top)" (relu's predicate on the difference, as ``bin max``'s), so ``best``
        starts at 0 and moves to ``i`` when not N(body(i) - body(best)); the generated code's
        ``top < v`` (extract/emit/templates/validate/field.h) is the same predicate."""
        s = leaves(n["s"])
        N = int(np.prod(s, dtype=np.int64))
        b = self.ar(n["body"], env + [("ix", self.positions(s, D), D + 1)], D + 1)[..., 0]
        b = np.broadcast_to(b, b.shape[:D] + (N,))
        best = np.zeros(b.shape[:D], np.int64)
        top = b[..., 0].copy()
        for i in range(1, N):
            v = b[..., i]
            better = ~nonpositive(add(v, neg(top)), self.key)
            self.calls["max"] += better.size
            best = np.where(better, i, best)
            top = np.where(better, v, top)
        out, stride = [], N
        for m in s:
            stride //= m
            out.append((best // stride) % m)
        return out

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

_BINDS = ("imaps", "imap", "imapb", "sum", "ix_minus", "ix_minus_r", "argmax")


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


def _subst(n: dict, k: dict, cut: int = 0) -> dict:
    """``n`` with the index expression ``k`` for variable ``cut`` (``k`` read ``cut`` binders
    further out, so shifted by ``cut``) and the variables beyond it one closer."""
    if n["op"] == "var":
        if n["idx"] == cut:
            return _rename(k, lambda q: q + cut)
        return {**n, "idx": n["idx"] - 1} if n["idx"] > cut else n
    out = dict(n)
    for g in ("a", "b", "i", "j", "body"):
        if g in n:
            out[g] = _subst(n[g], k, cut + (g == "body" and n["op"] in _BINDS))
    return out


# binders a sum over v commutes with when their indices do not read v: Σ_v Σ_u f = Σ_u Σ_v f,
# and ix_minus(i, j, ·), which binds i - j or is 0, is linear
_COMMUTE = ("sum", "ix_minus", "ix_minus_r")


def _one_hot_in(zb: dict, v: int) -> dict | None:
    """``k`` if ``zb`` is ``zero_but(v, k, a)`` or ``zero_but(k, v, a)`` with ``k`` free of v."""
    if zb["op"] != "zero_but":
        return None
    for x, k in ((zb["i"], zb["j"]), (zb["j"], zb["i"])):
        if _is_var(x, v) and not _uses(k, v):
            return k
    return None


def _guarded(n: dict, v: int) -> bool:
    """``n`` is binders of _COMMUTE whose indices do not read v around a one-hot in v."""
    while n["op"] in _COMMUTE:
        if any(_uses(n[f], v) for f in ("i", "j") if f in n):
            return False
        n, v = n["body"], v + 1
    return _one_hot_in(n, v) is not None


def _sum_of_one_hot(n: dict) -> dict:
    """``Σ_v zero_but(v, k, a)`` is ``a[v := k]``; a sum whose one-hot sits under other binders
    (a strided layer's gradient: Σ_v Σ_u ix_minus(i, j, zero_but(div p, v, a))) is moved in
    next to it first, binder by binder (_COMMUTE). Otherwise ``n`` as it is."""
    b = n["body"]
    k = _one_hot_in(b, 0)
    if k is not None:                                       # scope (.., v) -> (..)
        return _subst(b["a"], _rename(k, lambda q: q - 1))
    if b["op"] not in _COMMUTE or not _guarded(b, 0) or \
            (b["op"] == "sum" and _one_hot_in(b["body"], 0) is not None):
        return n                    # (an inner sum on a one-hot of its own is taken first)
    out = {g: (_rename(x, lambda q: q - 1) if g in ("i", "j") else x) for g, x in b.items()}
    swapped = _rename(b["body"], lambda q: {0: 1, 1: 0}.get(q, q))   # (.., v, u) -> (.., u, v)
    out["body"] = _sum_of_one_hot({**n, "shape": b["body"]["shape"], "body": swapped})
    return out


def unhot(n: dict) -> dict:
    """Rewrite ``Σ_x imap_v. zero_but(v, k, a)`` (``k`` and ``a`` free of ``v``), bottom-up, by
    linearity: to ``imap_v. zero_but(v, k, Σ_x a)`` when ``k`` is free of ``x``, and to
    ``imap_v. a[x := v]`` when ``k`` is ``x`` itself (same shape). The values are unchanged;
    the one-hot arrays of reverse mode are never filled in. (``imaps`` alike.) A sum of a
    one-hot in its own index is its body at that index (_sum_of_one_hot)."""
    out = dict(n)
    for g in ("a", "b", "i", "j", "body"):
        if g in n:
            out[g] = unhot(n[g])
    n = out
    if n["op"] == "sum" and n["body"]["op"] != "imap" and n["body"]["op"] != "imaps":
        return _sum_of_one_hot(n)
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
    the uninterpreted functions. ``stats`` (optional): the number of elements passed to each
    elementwise function (``UNARY``) is added to ``stats[fn]``.
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
        for fn, k in ev.calls.items():
            stats[fn] = stats.get(fn, 0) + k
    return out


# ---------------------------------------------------------------------------------------------
# degrees and the Schwartz-Zippel bound

# the random functions behind the elementwise ones: L (logistic, exp, and derf's exp), G (log),
# S (sqrt), E (erf), the predicate N of relu, step and max (on a - b); recip is interpreted (the
# field inverse)
RANDOM = {"L": ("logistic", "exp", "derf"), "G": ("log",), "S": ("sqrt",), "E": ("erf",),
          "N": ("relu", "step", "max")}


def degrees(dump: dict, exp_variable: bool = False) -> tuple[dict, dict]:
    """(name -> (num, den), fn -> (num, den)): bounds on the degrees of the numerator and the
    denominator of a binding's elements, and of the arguments of each elementwise function, as
    rational functions of the context (degree 1) and of the random functions' values.

    The variable of L at a point is its value L(x) (``logistic`` is (1, 0), ``exp(u) = (1 -
    L(-u)) / L(-u)`` is (1, 1)), or, ``exp_variable``, exp's value X(u) = L(-u)^-1 - 1 (``exp``
    is (1, 0), ``logistic(x) = 1 / (1 + X(-x))`` is (0, 1)): the same random function, two
    coordinates. G's, S's and E's values (``log``, ``sqrt``, ``erf``) have degree 1, and
    ``derf(x) = c · exp(−x²)`` has exp's degrees times c's, 1 (its L is applied to −x·x, of
    twice x's degrees); ``relu`` has its
    argument's degrees and ``step`` is constant, for each outcome of the predicate; ``recip``
    swaps numerator and denominator. ``a + b`` is (max(na + db, nb + da), da + db), ``a · b``
    (na + nb, da + db), a ``sum`` of s terms (n + (s - 1) d, s d) ((n, d) when its body does not
    read the summed index). Upper bounds: 0 for a constant; for polynomials (no ``recip``, no
    ``exp``) the denominators are 0 and the numerators are the polynomial degrees."""
    args = {fn: (0, 0) for fn in (*UNARY, "max")}   # max: the degrees of a - b

    def join(x: tuple, y: tuple) -> tuple:
        return max(x[0], y[0]), max(x[1], y[1])

    def deg(n: dict, env: list) -> tuple:
        op = n["op"]
        if op == "argmax":    # N on differences of two values of the body (bin max's args)
            nb, db = deg(n["body"], env + [(0, 0)])
            args["max"] = join(args["max"], (nb + db, 2 * db))
            return 0, 0
        if n["sort"] == "ix":
            for f in ("i", "j"):       # an argmax inside
                if f in n:
                    deg(n[f], env)
            return 0, 0
        if op == "var":
            return env[-1 - n["idx"]]
        if op in ("zero", "one"):
            return 0, 0
        if op in UNARY:
            a = deg(n["a"], env)
            # derf applies L to −x·x, of twice x's degrees
            args[op] = join(args[op], (2 * a[0], 2 * a[1]) if op == "derf" else a)
            if op == "logistic":
                return (0, 1) if exp_variable else (1, 0)
            if op == "exp":
                return (1, 0) if exp_variable else (1, 1)
            if op in ("log", "sqrt", "erf"):
                return 1, 0
            if op == "derf":          # c · exp(−x²): c has degree 1, exp as above
                return (2, 0) if exp_variable else (2, 1)
            if op == "recip":
                return a[1], a[0]
            return a if op == "relu" else (0, 0)
        if op == "bin":
            (na, da), (nb, db) = deg(n["a"], env), deg(n["b"], env)
            if n["fn"] == "mul":
                return na + nb, da + db
            diff = max(na + db, nb + da), da + db
            if n["fn"] == "max":      # a or b, for each outcome of N(a - b)
                args["max"] = join(args["max"], diff)
                return join((na, da), (nb, db))
            return diff
        if op == "sum":
            nb, db = deg(n["body"], env + [(0, 0)])
            if not _uses(n["body"], 0):
                return nb, db
            s = size(n["s"])
            return nb + (s - 1) * db, s * db
        out = (0, 0)
        for f in ("a", "body"):
            if f in n:
                out = join(out, deg(n[f], env + [(0, 0)] if op in _BINDS and f == "body"
                                    else env))
        return out

    env = [(1, 0)] * len(dump["context"])
    out = {}
    for b in dump["chain"]:
        out[b["name"]] = deg(b["expr"], env)
        env += [(0, 0), out[b["name"]]]
    slot = {b["name"]: len(dump["context"]) + 2 * k for k, b in enumerate(dump["chain"])}
    for g in dump["gradients"]:
        out[g["name"]] = deg(g["expr"], env)
        if g["wrt"] in slot:
            env[slot[g["wrt"]]] = out[g["name"]]
    return out, args


class Bound:
    """The Schwartz-Zippel bound of one trial (extract/check/validate.py's docstring derives it):
    a wrong element passes with probability at most ``numerator / (p - 1)``, where

    - ``degree`` bounds the degree of the numerator of (dump's value - code's value): n + d for
      a binding of degrees (n, d), and n + d + 2 (T - 1) d for a mean of T such values (the
      batch gradients, T = samples; the batch loss, T = samples x loss elements);
    - ``collisions`` = Σ over the random functions L, G, S, N of C(A, 2) e, A the applications
      of the function in the trial and e = n + d of their arguments: two different arguments
      that happen to be equal;
    - ``zeros`` = Σ over ``recip`` and the predicate of A n: an argument that happens to be 0
      (``recip 0 = 0`` is not the rational function's value; N(0) is not a coin).

    The smaller of the two coordinates of L (``degrees``' ``exp_variable``) is used."""

    def __init__(self, degree: int, collisions: int, zeros: int, calls: dict, args: dict,
                 exp_variable: bool):
        self.degree, self.collisions, self.zeros = degree, collisions, zeros
        self.calls, self.args, self.exp_variable = calls, args, exp_variable

    @property
    def numerator(self) -> int:
        return self.degree + self.collisions + self.zeros

    @property
    def probability(self) -> float:
        return self.numerator / (P - 1)

    @property
    def branches(self) -> int:
        """relu, step and max applications of a trial (the predicate's coins)."""
        return sum(self.calls.get(f, 0) for f in RANDOM["N"])


def schwartz_zippel(dump: dict, calls: dict, samples: int) -> Bound:
    """The bound for one trial of ``samples`` samples in which the dump applied each
    elementwise function ``calls[fn]`` times (``evaluate``'s ``stats``)."""
    grads = {g["name"] for g in dump["gradients"]
             if any(c["name"] == g["wrt"] and c["role"] == "param" for c in dump["context"])}
    loss = (dump.get("outputs") or {}).get("loss")
    loss_size = next((size(b["shape"]) for b in dump["chain"] if b["name"] == loss), 0)
    best = None
    for exp_variable in (False, True):
        degs, args = degrees(dump, exp_variable)
        D = 0
        for name, (n, d) in degs.items():
            T = samples if name in grads else samples * loss_size if name == loss else 1
            D = max(D, n + d + 2 * (T - 1) * d)
        coll = 0
        for fns in RANDOM.values():
            A = sum(calls.get(f, 0) for f in fns)
            used = [f for f in fns if calls.get(f, 0)]
            if A > 1:
                coll += A * (A - 1) // 2 * (max(args[f][0] for f in used) +
                                            max(args[f][1] for f in used))
        zeros = calls.get("recip", 0) * args["recip"][0]
        nb = sum(calls.get(f, 0) for f in RANDOM["N"])
        if nb:
            zeros += nb * max(args[f][0] for f in RANDOM["N"] if calls.get(f, 0))
        b = Bound(D, coll, zeros, dict(calls), args, exp_variable)
        if best is None or b.numerator < best.numerator:
            best = b
    return best
