"""Translation validation over a finite field: ``python -m extract.check.validate DIR``.

Checks the C (and the CUDA, run on the CPU by extract/check/cuda_host.py) that ``python -m extract
MODEL --out DIR`` wrote against the dump it came from (``DIR/MODEL.dump.json``, which that
command writes next to the sources, or ``--dump``; the banner's dump hash must match).

Method. The emitted sources are compiled as C++ with ``real`` the prime field F_p, p = 2^61 - 1
(extract/emit/templates/validate/field.h): three typedef lines are replaced (``typedef float real;``
in M.h, the ``vreal`` and ``hreal`` vector typedefs in M.c, which become arrays of residues, one
per lane), everything else is compiled as written. A driver (``_C_DRIVER``, ``_CUDA_DRIVER``)
runs every entry point on random field elements: ``M_forward``/``M_backward`` per sample, the
lane kernels at both widths (``M_forward_lanes`` / ``M_backward_lanes``, 8 or 16 samples at a
time, and ``M_forward_hlanes`` / ``M_backward_hlanes``, half as many: the code the batch entry
points run; the lanes ``M_gather_lanes`` / ``M_gather_hlanes`` fill are compared with the
samples' inputs first),
``M_batch_grad`` with 1, 2 and 3 threads, and on the first ``SHARED`` (3) samples, one group
that 2 and 3 threads share (extract/passes/divide.py), ``M_batch_predict``; for the CUDA the same
entry points, and ``forward_n``/``backward_n`` over all samples at once (every kernel launch with
the sample as ``blockIdx.y``). Every output element is compared with the dump evaluated over the
same field by extract/check/field.py, which is written from docs/dump-format.md and shares nothing
with the extractor's lowering. Outputs start as "never written" (a value outside [0, p)).

Arithmetic is exact: ``+ - *`` of F_p, ``scaledown n`` as multiplication by n^-1, the batch mean
as multiplication by (number of samples)^-1, ``recip`` (printed ``1 / x``) as the field inverse
with recip 0 = 0. The other elementwise functions are uninterpreted, random functions (keyed
hashes, a new key per trial) that extract/check/field.py and field.h define alike: ``logistic`` is a
random L into [1, p), which the generated ``1 / (1 + exp(-x))`` computes exactly because the
field's ``exp(u)`` is ``L(-u)^-1 - 1`` (so ``exp`` and ``logistic`` are one random function,
seen through two coordinates); ``log`` is a second random function G and ``sqrt`` (printed
``sqrtf``, and ``vsqrt`` lane by lane) a third, S; the comparison ``x <= 0`` of the generated
``relu`` and ``step`` helpers is a random predicate N (true at 0, a fair coin elsewhere), so
``relu(x) = N(x) ? 0 : x`` and ``step(x) = N(x) ? 0 : 1``; ``bin max`` is ``N(a - b) ? b : a``
and an ``argmax`` (version 5) moves from its best position ``t`` to ``v`` when ``t < v``, which
is "not N(v - t)" (so its comparisons are N's too, counted with max's); ``detach`` (version 5)
is the identity (its derivative, 0, is in the dump's gradients). No other comparison of reals
compiles. So the check holds for every scalar structure the proofs' ``Laws`` describe and every
logistic, exp, log, sqrt and sign, not only for floats: what it cannot see is rounding, any
property of exp, log and sqrt themselves (exp(a + b) = exp(a) exp(b), log = exp^-1, sqrt(x)^2 =
x, ...), and the order (``x < 0`` and ``x <= 0`` differ only at 0).

Bound (Schwartz-Zippel). Fix the predicate's outcomes (the relu/step/max branches). Each output
element is then a rational function of the inputs and of the random functions' values at the
arguments they are applied to (fresh variables, uniform on sets of at least p - 1 elements: L's
values in [1, p), or exp's, which avoid -1, G's and S's in [0, p)); ``field.degrees`` bounds
the degrees (n, d) of its numerator and denominator (without ``recip`` and ``exp``, d = 0 and n
is the polynomial degree). If the generated code computes, for some element, a different
rational function, of degrees at most the dump's, their difference has a nonzero numerator of
degree at most n + d (n + d + 2 (T - 1) d for a mean of T values: the batch gradients and
loss), at most D over the dump, and one trial misses it with probability at most (D + C + Z) /
(p - 1) (``field.Bound``): C = Σ C(A, 2) e over L, G, S and N, with A the function's
applications in the trial and e the n + d of their arguments (two different arguments that
happen to be equal), and Z = Σ A n over ``recip`` and N (an argument that happens to be 0:
recip 0 = 0 is not the rational function's value, N(0) is not a coin). Of L's two coordinates
(its values or exp's) the smaller bound is reported. Independent trials multiply. Assumed of
the generated code, as of any program close to the dump: degrees at most the dump's (degrees
(n', d') would put max(n + d', n' + d) in place of n + d) and no more applications of each
function. With ``relu`` or ``step`` the bound is for the branch outcomes drawn: they are fair
coins, independent of the field values while the arguments are distinct and nonzero (C and Z),
so an element that is wrong only for a fraction q of its branches' outcomes passes one sample
with probability at most 1 - q + (D + C + Z) / (p - 1); every sample and trial draws new
outcomes.

Exit status 0 when every element of every entry point equals the dump's; 1 with one line
naming the first file, entry point, kernel, binding, sample and element that differ (in
evaluation order: the first differing binding is computed by the kernel at fault, from inputs
that were right), or when the sources cannot be found, matched with a dump or compiled.
"""
from __future__ import annotations

import argparse
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..emit import build
from . import cuda_host, field
from ..ir import names
from ..emit.sources import lane_names

CXX = "g++"
CXXFLAGS = ["-std=c++17", "-fopenmp", "-w"]     # only the values matter here
# g++'s level for the drivers: compiling a model's C costs in proportion to its text, far more
# at -O1 than at -O0, and running the drivers in proportion to its arrays, several times more
# at -O0 (the values are residues, the same bytes at either level). Measured on this project's
# 2-core EPYC (gcc 12), one trial, -O0 against -O1 in seconds: the CNN (202 KB of C, 27,640
# elements in its arrays and gradients) 12 against 57, LeNet-5 (202 KB, 153,412) 13 / 27, the
# encoder (310 KB, 44,886) 17 / 25, the MLP (73 KB, 204,888) 4.4 / 5.4, wide1000 (82 KB,
# 920,730) 117 / 31. -O0 while twice the text outweighs the elements of every trial.
def optimization(c_bytes: int, elements: int, trials: int) -> str:
    """g++'s -O level for the drivers of a model with ``c_bytes`` of C and ``elements`` array
    elements, validated in ``trials`` trials."""
    return "-O0" if 2 * c_bytes > elements * trials else "-O1"


def samples_for(lanes: int) -> int:
    """Samples per trial (11 at 8 lanes, 19 at 16): a full group of lanes and a short one of
    3; in the batch entry points, at 1 thread a full group and a half-width one, at 2 two
    short groups of the full width, at 3 three of the half width (and a batch of the first
    ``SHARED`` samples, which 2 and 3 threads share)."""
    return lanes + 3


HEADER = "validate/field.h"
_BANNER = re.compile(r'/\* (\S+): .* for model "(\w+)", real = (\w+)\.\n'
                     r' \* Generated by extract \S+ from a dump by ".*" \(sha256 ([0-9a-f]{16})\)')


class ValidationError(Exception):
    """One line: what differs, or what could not be done; the arrays in the user's names
    (``a3_c21`` -> ``c21``; a kernel keeps its C name: extract/ir/names.py)."""

    def __init__(self, message: str):
        super().__init__(names.user_text(message))


@dataclass
class Sources:
    model: str
    real: str
    dump_hash: str        # the 16 hex digits of the banner
    h: Path
    c: Path | None
    cu: Path | None


def find_sources(directory: Path) -> list[Sources]:
    """The models whose generated sources are in ``directory`` (read from the banners)."""
    found: dict[str, dict] = {}
    for path in sorted(directory.iterdir()):
        if path.suffix not in (".h", ".c", ".cu") or not path.is_file():
            continue
        m = _BANNER.match(path.read_text(errors="replace"))
        if m is None or m.group(1) != path.name:
            continue
        entry = found.setdefault(m.group(2), {"real": m.group(3), "hash": m.group(4)})
        if (entry["real"], entry["hash"]) != (m.group(3), m.group(4)):
            raise ValidationError(f"{path}: made from another dump or precision than the other "
                                  f"files of model {m.group(2)!r}")
        entry[path.suffix] = path
    out = []
    for model, e in found.items():
        if ".h" not in e:
            raise ValidationError(f"{directory}: {model}.c or {model}.cu without {model}.h")
        out.append(Sources(model, e["real"], e["hash"], e[".h"], e.get(".c"), e.get(".cu")))
    if not out:
        raise ValidationError(f"{directory}: no generated sources (M.h, M.c, M.cu written by "
                              f"python -m extract)")
    return out


def find_dump(src: Sources, given: Path | None) -> dict:
    from ..ir.dump import dump_hash
    path = given if given is not None else src.h.parent / f"{src.model}.dump.json"
    if not path.exists():
        raise ValidationError(f"no dump for {src.h.parent / src.model}.*: {path} does not exist "
                              f"(python -m extract ... --out DIR writes it; or pass --dump)")
    from ..ir import dump as dump_mod
    try:
        data = dump_mod.loads(path.read_text())
    except (OSError, dump_mod.DumpError) as exc:
        raise ValidationError(f"{path}: not a JSON dump ({exc})") from None
    if dump_hash(data)[:16] != src.dump_hash:
        raise ValidationError(f"{path}: sha256 {dump_hash(data)[:16]}, but the sources of "
                              f"{src.model} were generated from a dump with sha256 "
                              f"{src.dump_hash}")
    from ..ir import dump as dump_mod
    try:
        dump_mod.parse(data)
    except dump_mod.DumpError as exc:
        raise ValidationError(f"{path}: {exc}") from None
    return data


# ---------------------------------------------------------------------------------------------
# the field build

def _replace_once(text: str, pattern: str, new: str, what: str) -> str:
    hits = re.findall(pattern, text, re.M)
    if len(hits) != 1:
        raise ValidationError(f"{what}: expected one line matching {pattern!r}, found "
                              f"{len(hits)}")
    return re.sub(pattern, new, text, flags=re.M)


def field_header(src: Sources) -> str:
    return _replace_once(src.h.read_text(), r"^typedef (float|double) real;$",
                         "typedef pk_field::Fp real;", src.h.name)


def field_c(src: Sources) -> str:
    text = src.c.read_text()
    for p in ("v", "h"):     # the lane kernels' width and half of it
        text = _replace_once(
            text, rf"^typedef real {p}real __attribute__\(\(vector_size\((\w+) \* sizeof\(real\)\)\)\);$",
            rf"typedef pk_field::Vec<\1> {p}real;", src.c.name)
    return text


_COMMON = r"""
#include <cstdio>
#include <cstdlib>
#include <cstring>

static FILE *out_file;
template <class T>
static T *fresh(size_t n = 1)         /* "never written": 0xff bytes, a residue >= p */
{{
    T *p = (T *)malloc(n * sizeof(T) + 1);
    memset((void *)p, 0xff, n * sizeof(T));
    return p;
}}
static void put(const void *p, size_t bytes) {{ fwrite(p, 1, bytes, out_file); }}
static {M}_params *w;
static {M}_inputs *xs;
static int n;

static void start(int argc, char **argv)
{{
    if (argc != 3) exit(2);
    FILE *in = fopen(argv[1], "rb");
    unsigned long long head[2];
    if (!in || fread(head, sizeof head, 1, in) != 1) exit(2);
    pk_field::key = head[0];
    n = (int)head[1];
    w = fresh<{M}_params>();
    xs = fresh<{M}_inputs>(n);
    if (fread(w, sizeof *w, 1, in) != 1 || fread(xs, sizeof *xs, n, in) != (size_t)n) exit(2);
    fclose(in);
    out_file = fopen(argv[2], "wb");
    const unsigned long long sizes[4] = {{sizeof({M}_params), sizeof({M}_inputs),
                                          sizeof({M}_values), sizeof({M}_grads)}};
    put(sizes, sizeof sizes);
}}
"""

# the lane kernels of one width (S: lanes or hlanes), N samples at once
_LANE_GROUPS = r"""    for (int i = 0; i < n; i += {N}) {{     /* the lane kernels, {N} samples at once */
        const int m = n - i < {N} ? n - i : {N};
        {M}_inputs_{S} *x = fresh<{M}_inputs_{S}>();
        {M}_values_{S} *v = fresh<{M}_values_{S}>();
        {M}_grads_{S} *g = fresh<{M}_grads_{S}>();
        {M}_gather_{S}(&xs[i], m, x);
        put(x, sizeof *x);
        {M}_forward_{S}(w, x, v{parts});
        {M}_backward_{S}(w, x, v, g{parts});
        put(v, sizeof *v);
        put(g, sizeof *g);
    }}
"""

# the samples of a batch small enough that every thread of the batch entry points shares its
# one group (extract/passes/divide.py)
SHARED = 3
# (threads, samples: 0 for all of them) of the C driver's batch_grad and batch_predict runs,
# in the order it writes them
C_GRADS = ((1, 0), (2, 0), (3, 0), (2, SHARED), (3, SHARED))
C_PREDICTIONS = ((1, 0), (2, 0), (2, SHARED))


def _table(runs) -> str:
    return ", ".join(f"{{{{{nt}, {count}}}}}" for nt, count in runs)


_C_DRIVER = r"""#include "{M}.c"
""" + _COMMON + r"""
int main(int argc, char **argv)
{{
    start(argc, argv);
    for (int s = 0; s < n; s++) {{                     /* one sample at a time */
        {M}_values *v = fresh<{M}_values>();
        {M}_grads *g = fresh<{M}_grads>();
        {M}_forward(w, &xs[s], v);
        {M}_backward(w, &xs[s], v, g);
        put(v, sizeof *v);
        put(g, sizeof *g);
    }}
{lane_groups}    /* (threads, samples: 0 for all) of each run: validate.C_GRADS, C_PREDICTIONS */
    static const int grads[][2] = {{""" + _table(C_GRADS) + r"""}};
    static const int predictions[][2] = {{""" + _table(C_PREDICTIONS) + r"""}};
    for (size_t r = 0; r < sizeof grads / sizeof *grads; r++) {{
        const int nt = grads[r][0], count = grads[r][1] ? grads[r][1] : n;
        void *ws = fresh<char>({M}_workspace_size(nt));
        {M}_params *grad = fresh<{M}_params>();
        real *loss = fresh<real>();
        {M}_batch_grad(w, xs, count, nt, ws, grad, loss);
        put(grad, sizeof *grad);
        put(loss, sizeof *loss);
    }}
    for (size_t r = 0; r < sizeof predictions / sizeof *predictions; r++) {{
        const int nt = predictions[r][0], count = predictions[r][1] ? predictions[r][1] : n;
        void *ws = fresh<char>({M}_workspace_size(nt));
        real *pred = fresh<real>((size_t)count * {M}_SIZE_{pred});
        {M}_batch_predict(w, xs, count, nt, ws, pred);
        put(pred, sizeof(real) * count * {M}_SIZE_{pred});
    }}
    fclose(out_file);
    return 0;
}}
"""

_CUDA_DRIVER = r"""#include "{M}.host.cpp"
""" + _COMMON + r"""
int main(int argc, char **argv)
{{
    start(argc, argv);
    pk_cuda_host_set_order(2);          /* the threads of a launch in a shuffled order */
    for (int s = 0; s < n; s++) {{
        {M}_values *v = fresh<{M}_values>();
        {M}_grads *g = fresh<{M}_grads>();
        {M}_cuda_forward(w, &xs[s], v);
        {M}_cuda_backward(w, &xs[s], v, g);
        put(v, sizeof *v);
        put(g, sizeof *g);
    }}
    {{                                     /* every sample at once: blockIdx.y is the sample */
        {M}_values *v = fresh<{M}_values>(n);
        {M}_grads *g = fresh<{M}_grads>(n);
        forward_n(w, xs, v, n);
        backward_n(w, xs, v, g, n);
        put(v, n * sizeof *v);
        put(g, n * sizeof *g);
    }}
    for (int nt = 1; nt <= 3; nt += 2) {{
        void *ws = fresh<char>({M}_cuda_workspace_size(nt));
        {M}_params *grad = fresh<{M}_params>();
        real *loss = fresh<real>();
        {M}_cuda_batch_grad(w, xs, n, nt, ws, grad, loss);
        put(grad, sizeof *grad);
        put(loss, sizeof *loss);
    }}
    for (int nt = 1; nt <= 2; nt++) {{
        void *ws = fresh<char>({M}_cuda_workspace_size(nt));
        real *pred = fresh<real>((size_t)n * {M}_SIZE_{pred});
        {M}_cuda_batch_predict(w, xs, n, nt, ws, pred);
        put(pred, sizeof(real) * n * {M}_SIZE_{pred});
    }}
    fclose(out_file);
    return 0;
}}
"""


def _compile(source: Path, exe: Path, includes: list, what: str, level: str = "-O0") -> None:
    if shutil.which(CXX) is None:
        raise ValidationError(f"{CXX} not found: the validator compiles the generated code as "
                              f"C++ (apt-get install g++)")
    cmd = [CXX, *CXXFLAGS, level]
    for h in includes:
        cmd += ["-include", str(h)]
    cmd += ["-Drestrict=__restrict__", str(source), "-o", str(exe)]
    res = subprocess.run(cmd, capture_output=True, text=True, cwd=source.parent)
    if res.returncode != 0:
        first = next((ln for ln in res.stderr.splitlines() if "error" in ln), res.stderr[:300])
        raise ValidationError(f"{what} does not compile over the field: "
                              f"{first.replace(str(source.parent) + '/', '')}")


def build_drivers(src: Sources, work: Path, prediction: str, level: str = "-O0") -> dict:
    """Compile the field drivers of the C and the CUDA into ``work`` (g++ at ``level``);
    kind -> executable."""
    M = names.c_model(src.model)      # the C names (extract/ir/names.py)
    fh = build.locate("templates") / HEADER
    (work / f"{M}.h").write_text(field_header(src))
    exes = {}
    if src.c is not None:
        (work / f"{M}.c").write_text(field_c(src))
        # width, half (whose kernels take their part of a shared group: all of it here)
        groups = "".join(_LANE_GROUPS.format(M=M, N=k["LANES"], S=k["set"],
                                             parts=", 0, 1" if k["p"] == "h" else "")
                         for k in (lane_names(M, "v"), lane_names(M, "h")))
        (work / "driver_c.cpp").write_text(_C_DRIVER.format(M=M, pred=prediction,
                                                            lane_groups=groups))
        _compile(work / "driver_c.cpp", work / "driver_c", [fh], src.c.name, level)
        exes["c"] = work / "driver_c"
    if src.cu is not None:
        try:
            (work / f"{M}.host.cpp").write_text(cuda_host.host_source(src.cu.read_text()))
        except ValueError as exc:
            raise ValidationError(f"{src.cu.name}: {exc}") from None
        (work / "driver_cuda.cpp").write_text(_CUDA_DRIVER.format(M=M, pred=prediction))
        _compile(work / "driver_cuda.cpp", work / "driver_cuda", [fh, cuda_host.header()],
                 src.cu.name, level)
        exes["cuda"] = work / "driver_cuda"
    return exes


# ---------------------------------------------------------------------------------------------
# comparing

class _Model:
    """What the comparison needs of the dump: names, sizes, roles, in evaluation order."""

    def __init__(self, d: dict):
        self.d = d
        self.name = d["model"]
        sz = {c["name"]: field.size(c["shape"]) for c in d["context"]}
        sz.update({b["name"]: field.size(b["shape"]) for b in d["chain"]})
        sz.update({g["name"]: field.size(g["shape"]) for g in d["gradients"]})
        self.size = sz
        self.shape = {x["name"]: field.leaves(x["shape"])
                      for x in (*d["context"], *d["chain"], *d["gradients"])}
        self.params = [c["name"] for c in d["context"] if c["role"] == "param"]
        # the struct of the parameters holds the consts too, in context order
        self.stored = [c["name"] for c in d["context"] if c["role"] in ("param", "const")]
        self.inputs = [c["name"] for c in d["context"] if c["role"] == "input"]
        self.chain = [b["name"] for b in d["chain"]]
        self.grads = [g["name"] for g in d["gradients"]]
        self.param_grad = {g["wrt"]: g["name"] for g in d["gradients"] if g["wrt"] in self.params}
        outs = d.get("outputs") or {}
        self.prediction = outs.get("prediction") or self.chain[-1]
        self.loss = outs.get("loss")
        # the arrays of the lane kernels' structs (lane_arrays): the dump's but those computed
        # where they are read (extract/passes/inline.py)
        self.lane_chain, self.lane_grads = self.chain, self.grads

    def fields(self, names: list) -> list:
        """(name, size) of a bundle's fields (an empty bundle has one field ``empty_``)."""
        return [(x, self.size[x]) for x in names] or [("empty_", 1)]


def _bundle(raw: np.ndarray, at: int, fields: list, copies: int = 1, lanes: int = 1):
    """Split ``copies`` consecutive bundles (each field ``size * lanes`` residues) at ``at``;
    returns ({name: array (copies, size, lanes)}, next offset)."""
    width = sum(s for _, s in fields) * lanes
    block = raw[at:at + copies * width]
    if block.size != copies * width:
        raise ValidationError("the driver wrote fewer values than the sources declare")
    block = block.reshape(copies, width)
    out, k = {}, 0
    for name, s in fields:
        out[name] = block[:, k:k + s * lanes].reshape(copies, s, lanes)
        k += s * lanes
    return out, at + copies * width


def _position(shape: tuple, e: int) -> str:
    return "".join(f"[{i}]" for i in np.unravel_index(e, shape)) if shape else f"[{e}]"


def _show(v: int) -> str:
    return "never written" if v >= field.P else str(v)


def compare(m: _Model, kind: str, raw: np.ndarray, want: list, n: int, lanes: int, fname: str,
            xs: list):
    """Raise ValidationError naming the first element of the driver's output ``raw`` that
    differs from the dump's values ``want`` (one dict per sample), or, in a group of lanes,
    from the inputs ``xs`` (one dict per sample) the gather put there."""
    M = m.name
    params, inputs = m.fields(m.stored), m.fields(m.inputs)
    values, grads = m.fields(m.chain), m.fields(m.grads)
    sizes = raw[:4].tolist()
    if sizes != [8 * sum(s for _, s in f) for f in (params, inputs, values, grads)]:
        raise ValidationError(f"{fname}: the bundles' layout is not the dump's "
                              f"(sizes {sizes} bytes)")
    at = 4
    order = [(b, "forward") for b in m.chain] + [(g, "backward") for g in m.grads]

    def fail(entry, kernel, name, sample, e, got, exp, lane=None):
        where = f"sample {sample}" + (f" (lane {lane})" if lane is not None else "")
        raise ValidationError(
            f"{fname}: {entry}: kernel {kernel}, binding {name}, {where}, element {e} "
            f"{_position(m.shape[name], e)}: {_show(got)}, the dump gives {exp} (mod p)")

    def check(entry, kernel_of, got, sample_of, lane_of=lambda c, l: None, names=order,
              of=want):
        """got: name -> array (copies, size, lanes)."""
        for name, what in names:
            g = got[name]
            exp = np.stack([np.stack([of[sample_of(c, l)][name] for l in range(g.shape[2])],
                                     axis=1) for c in range(g.shape[0])])
            bad = np.argwhere(g != exp)
            if bad.size:
                c, e, l = bad[0]
                fail(entry, kernel_of(name, what), name, sample_of(c, l), int(e),
                     int(g[c, e, l]), int(exp[c, e, l]), lane_of(c, l))

    # one sample at a time
    got: dict = {name: [] for name, _ in order}
    for s in range(n):
        v, at = _bundle(raw, at, values)
        g, at = _bundle(raw, at, grads)
        for name, _ in order:
            got[name].append((v if name in m.chain else g)[name][0])
    one = {name: np.stack(got[name]) for name, _ in order}
    entry1 = f"{M}_cuda_forward/{M}_cuda_backward" if kind == "cuda" else \
        f"{M}_forward/{M}_backward"
    check(entry1, lambda b, what: f"{M}_{what}_{b}", one, lambda c, l: c)
    if kind == "c":
        lorder = [(b, "forward") for b in m.lane_chain] + [(g, "backward") for g in m.lane_grads]
        for width, kset in ((lanes, lane_names(M, "v")["set"]),
                            (lanes // 2, lane_names(M, "h")["set"])):
            groups = list(range(0, n, width))
            got = {name: [] for name, _ in order}
            gathered = {name: [] for name in m.inputs}
            for i in groups:
                x, at = _bundle(raw, at, inputs, lanes=width)
                for name in m.inputs:
                    gathered[name].append(x[name][0])
                v, at = _bundle(raw, at, m.fields(m.lane_chain), lanes=width)
                g, at = _bundle(raw, at, m.fields(m.lane_grads), lanes=width)
                for name, _ in lorder:
                    got[name].append((v if name in m.chain else g)[name][0])
            # lanes past a short group's samples repeat its last sample
            sample_of = (lambda c, l, groups=groups: min(groups[c] + l, n - 1))
            check(f"{M}_gather_{kset} (samples into lanes)",
                  lambda b, what, kset=kset: f"{M}_gather_{kset}",
                  {name: np.stack(gathered[name]) for name in m.inputs}, sample_of,
                  lambda c, l: l, names=[(x, "gather") for x in m.inputs], of=xs)
            lane = {name: np.stack(got[name]) for name, _ in lorder}
            check(f"{M}_forward_{kset}/{M}_backward_{kset} (the batch entry points' kernels)",
                  lambda b, what, kset=kset: f"{M}_{what}_{b}_{kset}", lane,
                  sample_of, lambda c, l: l, names=lorder)
        runs, predictions = ([(nt, count or n) for nt, count in table]
                             for table in (C_GRADS, C_PREDICTIONS))
    else:
        v, at = _bundle(raw, at, values, copies=n)
        g, at = _bundle(raw, at, grads, copies=n)
        alln = {name: (v if name in m.chain else g)[name] for name, _ in order}
        check("forward_n/backward_n (all samples in one launch per kernel)",
              lambda b, what: f"{M}_{what}_{b}", alln, lambda c, l: c)
        runs, predictions = ((1, n), (3, n)), ((1, n), (2, n))
    prefix = f"{M}_cuda_" if kind == "cuda" else f"{M}_"
    for nt, count in runs:
        inv_n = np.uint64(field.inverse(count))
        batch = f"{prefix}batch_grad with {nt} thread(s)" + \
            (f" on the first {count} samples" if count != n else "")
        grad, at = _bundle(raw, at, params)
        loss = int(raw[at])
        at += 1
        for c in (c for c in m.stored if c not in m.params):
            bad = np.flatnonzero(grad[c][0, :, 0] != 0)
            if bad.size:
                e = int(bad[0])
                raise ValidationError(
                    f"{fname}: {batch}: the gradient's field of the const {c}, element {e} "
                    f"{_position(m.shape[c], e)}: {_show(int(grad[c][0, e, 0]))}, expected 0")
        for p in m.params:
            gname = m.param_grad[p]
            total = np.zeros(m.size[p], np.uint64)
            for s in range(count):
                total = field.add(total, want[s][gname])
            exp = field.mul(total, inv_n)
            bad = np.flatnonzero(grad[p][0, :, 0] != exp)
            if bad.size:
                e = int(bad[0])
                raise ValidationError(
                    f"{fname}: {batch}: the mean of {gname} "
                    f"(parameter {p}), element {e} {_position(m.shape[p], e)}: "
                    f"{_show(int(grad[p][0, e, 0]))}, the dump gives {int(exp[e])} (mod p)")
        if m.loss is not None:
            total = np.uint64(0)
            for s in range(count):
                total = field.add(total, field.sum_axis(want[s][m.loss], 0))
            exp = int(field.mul(total, inv_n))
            if loss != exp:
                raise ValidationError(f"{fname}: {batch}: the "
                                      f"mean loss {_show(loss)}, the dump gives {exp} (mod p)")
    size = m.size[m.prediction]
    for nt, count in predictions:
        pred = raw[at:at + count * size].reshape(count, size)
        at += count * size
        for s in range(count):
            bad = np.flatnonzero(pred[s] != want[s][m.prediction])
            if bad.size:
                e = int(bad[0])
                raise ValidationError(
                    f"{fname}: {prefix}batch_predict with {nt} thread(s): {m.prediction} of "
                    f"sample {s}, element {e}: {_show(int(pred[s, e]))}, the dump gives "
                    f"{int(want[s][m.prediction][e])} (mod p)")
    if at != raw.size:
        raise ValidationError(f"{fname}: the driver wrote {raw.size - at} values too many")


# ---------------------------------------------------------------------------------------------
# one model

@dataclass
class Report:
    model: str
    files: list              # the files checked
    elements: int            # output elements compared, all trials
    trials: int
    sz: field.Bound          # the Schwartz-Zippel bound of one trial (calls: the largest)
    seconds: float
    samples: int = 10        # per trial

    @property
    def degree(self) -> int:
        """D (see the module docstring)."""
        return self.sz.degree

    @property
    def bound(self) -> float:
        """Probability that one trial misses a wrong element (see the module docstring)."""
        return self.sz.probability

    def why(self) -> str:
        b = self.sz
        out = [f"degree {b.degree:,}"]
        for names, fns in (("logistic/exp", ("logistic", "exp")), ("log", ("log",)),
                           ("sqrt", ("sqrt",)), ("erf", ("erf",)), ("derf", ("derf",)),
                           ("recip", ("recip",)),
                           ("relu/step/max", ("relu", "step", "max"))):
            k = sum(b.calls.get(f, 0) for f in fns)
            if k:
                used = [f for f in fns if b.calls.get(f, 0)]
                n, d = max(b.args[f][0] for f in used), max(b.args[f][1] for f in used)
                out.append(f"{k:,} {names} applications, arguments of degree <= {n}"
                           + (f"/{d}" if d else ""))
        if b.branches:
            out.append("for the relu/step/max branches drawn")
        return "; ".join(out)

    def line(self) -> str:
        return (f"{self.model}: {', '.join(self.files)}: {self.elements:,} output elements "
                f"equal the dump's over F_p (p = 2^61 - 1), {self.trials} trial(s) of "
                f"{self.samples} samples, {self.seconds:.1f} s; Schwartz-Zippel: a wrong element "
                f"passes a trial with probability <= {self.bound:.2g} ({self.why()})"
                + (f", all {self.trials} trials <= {self.bound ** self.trials:.2g}"
                   if self.trials > 1 else ""))


def lane_arrays(c_text: str, m: _Model) -> tuple[list, list]:
    """The chain bindings and gradients in the lane kernels' structs (``M_values_lanes``,
    ``M_grads_lanes``): the dump's, in its order, but for those the lane kernels compute where
    they are read (extract/passes/inline.py), which no output holds and so nothing compares. The
    prediction, the loss and the parameter gradients must be there."""
    out = []
    for bundle, names in (("values", m.chain), ("grads", m.grads)):
        k = re.search(rf"typedef struct {{\n([^}}]*)\n}} {m.name}_{bundle}_lanes;", c_text)
        if k is None:
            raise ValidationError(f"{m.name}.c: no struct {m.name}_{bundle}_lanes")
        members = [x for x in re.findall(r"^\s*real (\w+)\[", k.group(1), re.M)
                   if x != "empty_"]
        if members != [x for x in names if x in members]:
            raise ValidationError(f"{m.name}.c: {m.name}_{bundle}_lanes holds "
                                  f"{', '.join(members)}: not the dump's arrays in its order")
        out.append(members)
    needed = {m.prediction, *([m.loss] if m.loss else []), *m.param_grad.values()}
    missing = needed - set(out[0]) - set(out[1])
    if missing:
        raise ValidationError(f"{m.name}.c: the lane structs lack {', '.join(sorted(missing))}")
    return out[0], out[1]


def validate_model(src: Sources, d: dict, *, trials: int = 1, seed: int = 0,
                   work: Path | None = None) -> Report:
    t0 = time.perf_counter()
    if d["model"] != src.model:
        raise ValidationError(f"the dump is of model {d['model']!r}, the sources of "
                              f"{src.model!r}")
    d = names.dump_to_c(d)      # the C's names (extract/ir/names.py), as the sources have them
    m = _Model(d)
    lanes = 8
    if src.c is not None:
        k = re.search(rf"^#define {m.name}_LANES (\d+)$", src.c.read_text(), re.M)
        if k is None:
            raise ValidationError(f"{src.c.name}: no #define {m.name}_LANES")
        lanes = int(k.group(1))
        m.lane_chain, m.lane_grads = lane_arrays(src.c.read_text(), m)
    n = samples_for(lanes)
    with tempfile.TemporaryDirectory(prefix="pk-validate-") as tmp:
        w = Path(work) if work is not None else Path(tmp)
        w.mkdir(parents=True, exist_ok=True)
        text = (src.c or src.cu).stat().st_size
        exes = build_drivers(src, w, m.prediction,
                             optimization(text, sum(m.size.values()), trials))
        rng = np.random.default_rng(seed)
        elements, calls = 0, {}
        for _ in range(trials):
            key = int(rng.integers(0, 1 << 63))
            wvals = {p: field.random_elements(rng, m.size[p]) for p in m.stored}
            xvals = [{x: field.random_elements(rng, m.size[x]) for x in m.inputs}
                     for _ in range(n)]
            stats: dict = {}
            want = [field.evaluate(d, {**wvals, **xvals[s]}, key, stats) for s in range(n)]
            calls = {f: max(calls.get(f, 0), k) for f, k in stats.items()}
            head = np.array([key, n], np.uint64)
            pbuf = np.concatenate([wvals[p] for p in m.stored]) if m.stored else \
                np.zeros(1, np.uint64)
            xbuf = np.concatenate([np.concatenate([xv[x] for x in m.inputs]) if m.inputs else
                                   np.zeros(1, np.uint64) for xv in xvals])
            (w / "in.bin").write_bytes(head.tobytes() + pbuf.tobytes() + xbuf.tobytes())
            for kind, exe in exes.items():
                fname = (src.c if kind == "c" else src.cu).name
                res = subprocess.run([str(exe), "in.bin", f"out_{kind}.bin"], cwd=w,
                                     capture_output=True, text=True)
                if res.returncode != 0:
                    how = (f"killed by {signal.Signals(-res.returncode).name} (a read or "
                           f"write outside the buffers?)" if res.returncode < 0 else
                           f"exit status {res.returncode}")
                    raise ValidationError(f"{fname}: the field build of the entry points "
                                          f"stopped: {how} {res.stderr.strip()[:200]}".strip())
                raw = np.frombuffer((w / f"out_{kind}.bin").read_bytes(), np.uint64)
                compare(m, kind, raw, want, n, lanes, fname, xvals)
                elements += raw.size - 4
    files = [p.name for p in (src.c, src.cu) if p is not None]
    return Report(src.model, files, elements, trials, field.schwartz_zippel(d, calls, n),
                  time.perf_counter() - t0, n)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m extract.check.validate",
                                 description="Check generated C and CUDA against their dump "
                                             "over a finite field (see the module docstring).")
    ap.add_argument("dir", type=Path, help="a directory written by python -m extract --out DIR")
    ap.add_argument("--dump", type=Path, help="the dump (default DIR/MODEL.dump.json)")
    ap.add_argument("--trials", type=int, default=1, help="independent random trials (default 1)")
    ap.add_argument("--seed", type=int, default=0, help="seed of the random inputs and logistic")
    ap.add_argument("--keep", type=Path, help="keep the field build in this directory")
    args = ap.parse_args(argv)
    try:
        if not args.dir.is_dir():
            raise ValidationError(f"{args.dir}: not a directory")
        sources = find_sources(args.dir)
        if args.dump is not None and len(sources) > 1:
            raise ValidationError(f"{args.dir}: sources of {len(sources)} models; --dump names "
                                  f"one dump")
        for src in sources:
            d = find_dump(src, args.dump)
            print(validate_model(src, d, trials=args.trials, seed=args.seed,
                                 work=args.keep).line())
    except ValidationError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
