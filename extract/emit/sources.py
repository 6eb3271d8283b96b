"""The generated sources of a model: ``M.h``, ``M.c`` and ``M.cu``, and the cffi declarations.

All decisions are made here and in the passes; the Jinja templates in ``templates/`` beside this
module are skeletons (banner, includes, signatures, the batch loops) filled with the strings
computed below.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import jinja2

from .. import __version__, limits
from ..ir import ir, names
from ..ir.code import has_argmax
from ..passes.divide import divide_among_threads
from ..passes.inline import inline_bindings
from ..passes.lanes import widen_to_lanes
from ..passes.lower import ExtractError, Kernel, Options, lower_to_loops
from ..passes.peel import peel_bounds
from ..passes.registers import block_accumulators
from ..passes.winograd import winograd_rows
from ..paths import locate
from .cpu import cpuinfo, flags
from .fuse import fusable, fused_body
from . import printer
from .printer import C, CUDA, MATHS, Language, index_type, statements, thread_count

TEMPLATES = Path(locate("templates"))
# the C real type of a precision; its functions are the printer's (MATHS: expf, logf, sqrtf)
REALS = {"f32": "float", "f64": "double"}
# samples per group in the C batch entry points (extract/passes/lanes.py): 8 floats fill an AVX2
# register, 8 doubles an AVX-512 one or two AVX2 ones; 16 floats an AVX-512 register, the
# default on AMD's AVX-512 processors (see wide_lanes)
LANES = {"f32": 8, "f64": 8}
ENV_LANES = "PROVED_KERNELS_LANES"


def wide_lanes(info: dict) -> bool:
    """Whether 16 float lanes are the default on the processor described by ``info``
    (extract/emit/cpu.py), as far as measured: AVX-512 on an AMD processor of family 25 or later.
    Zen 5 (family 26) executes 512-bit FMAs at full width; Zen 4 (family 25) splits each in
    two, but 16 lanes still ran every zoo workload at batch 100 and 1000 faster than 8 there
    (half as many instructions; bench/PROFILE.md, 2026-11-25, Zen 4). Intel's AVX-512
    processors were not measured with these kernels."""
    family = info.get("cpu family", "")
    return ("avx512f" in flags(info)
            and info.get("vendor_id") == "AuthenticAMD"
            and family.isdigit() and int(family) >= 25)


def default_lanes(precision: str) -> int:
    """The lane count: ``$PROVED_KERNELS_LANES`` (8 or 16) if set; else 16 floats where
    :func:`wide_lanes` holds; else ``LANES`` (8).

    On an AMD Zen 5, 16 float lanes made the training steps of the CNN and LeNet-5 1.35x faster
    than 8 at batch 100 and 1000 (bench/PROFILE.md, 2026-11-24). At batch 10 over 2 threads
    they were 1.4x slower while a thread's 5 samples filled a third of a group; since a
    thread's last group of at most half the lanes runs through kernels of half the width
    (the C file has both), 16 lanes are no slower there (PROFILE.md, 2026-11-25). On an AMD
    Zen 4 they ran every zoo workload at batch 100 and 1000 as fast or faster (the CNN's
    training at 2 threads 0.092 -> 0.081 s per epoch at batch 100) and tied at batch 10
    (PROFILE.md, 2026-11-25, Zen 4)."""
    env = os.environ.get(ENV_LANES)
    if env:
        if env not in ("8", "16"):
            raise ExtractError(f"${ENV_LANES} must be 8 or 16, not {env!r}")
        return int(env)
    if precision == "f32" and wide_lanes(cpuinfo()):
        return 16
    return LANES[precision]


ENV_BLOCK = "PROVED_KERNELS_BLOCK"


def default_block() -> int:
    """The most outputs a lane kernel holds in registers (extract/passes/registers.py):
    ``$PROVED_KERNELS_BLOCK`` (8 or 16) if set; else 16 where the processor has 32 vector
    registers (AVX-512), so that a block spans two rows; else 8 (16 registers: 8 accumulators
    and the operands)."""
    env = os.environ.get(ENV_BLOCK)
    if env:
        if env not in ("8", "16"):
            raise ExtractError(f"${ENV_BLOCK} must be 8 or 16, not {env!r}")
        return int(env)
    return 16 if "avx512f" in flags(cpuinfo()) else 8


def transpose_program(width: int, shuf: str = "M_SHUF", vtype: str = "vreal") -> list[str]:
    """The statements of ``M_transpose`` (t[k][l] -> t[l][k]) for ``width`` lanes, a power of
    two: for b = 1, 2, ..., width/2 a round of shuffles that swaps, in every 2b x 2b block, the
    b x b block above the diagonal with the one below it; after the rounds every block has
    been transposed at every scale, i.e. the whole. ``SHUF(a, b, i...)`` takes element i of
    a, or i - width of b; ``shuf`` names it and ``vtype`` is the vector type (``M_SHUF`` and
    ``vreal``, or ``M_HSHUF`` and ``hreal`` for the kernels of half the width: lane_names).

        width 2:  r0_0 = SHUF(t[0], t[1], 0, 2);  r0_1 = SHUF(t[0], t[1], 1, 3);  t[0] = r0_0; …
    """
    assert width >= 2 and width & (width - 1) == 0, width
    src = [f"t[{i}]" for i in range(width)]
    lines, b, r = [], 1, 0
    while b < width:
        # the last round reads temporaries only, so it may write t in place (not if it is
        # also the first)
        last = 2 * b == width and r > 0
        dst = [f"t[{i}]" if last else f"r{r}_{i}" for i in range(width)]
        for i in range(width):
            if i & b:
                continue
            lo = [j if not j & b else width + j - b for j in range(width)]
            hi = [j + b if not j & b else width + j for j in range(width)]
            for d, idx in ((dst[i], lo), (dst[i + b], hi)):
                decl = "" if last else f"const {vtype} "
                lines.append(f"{decl}{d} = {shuf}({src[i]}, {src[i + b]}, "
                             f"{', '.join(map(str, idx))});")
        src, b, r = dst, 2 * b, r + 1
    if src[0] != "t[0]":
        lines += [f"t[{i}] = {src[i]};" for i in range(width)]
    return lines


@lru_cache(maxsize=None)
def _env() -> jinja2.Environment:
    """One environment per process: Jinja compiles each template once into it (a third of a
    second for the four templates, which every ``generate`` paid before) and checks the file's
    time at each use, so an edited template is compiled again."""
    return jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATES)),
                              undefined=jinja2.StrictUndefined, trim_blocks=True,
                              lstrip_blocks=True, keep_trailing_newline=True,
                              autoescape=False)


@dataclass(frozen=True)
class Generated:
    files: dict          # file name -> text
    cdef: str            # declarations for cffi
    kernels: tuple       # (forward kernels, backward kernels) of the C build
    # the C of M.c split into translation units for a parallel build (extract/emit/build.py): the
    # entry points first (M_main.c), then the parts of the kernels; empty for a small model,
    # built from M.c as it is
    parts: dict = field(default_factory=dict)


def _bundle(array: ir.Array) -> str:
    if array.kind == "context":
        return "x" if array.role == "input" else "w"
    return {"chain": "v", "grad": "g"}[array.kind]


def lane_names(M: str, p: str) -> dict:
    """The C names of a set of lane kernels, prefix ``p``: ``v`` for the batch width, ``h`` for
    half of it (the printer names the vector type and helpers ``vreal``, ``vload``, ... or
    ``hreal``, ``hload``, ... from the same prefix)."""
    h = "" if p == "v" else p
    return {"p": p, "set": f"{h}lanes", "LANES": f"{M}_{h.upper()}LANES",
            "transpose_fn": f"{M}_{h}transpose", "shuf": f"{M}_{h.upper()}SHUF"}


def _kernel_view(model: ir.Model, k: Kernel, lang: Language, index: int, total: int,
                 lanes=None, real: str = "float") -> dict:
    a = k.array
    restrict = lang.restrict
    params = [f"const real *{restrict} {r}" for r in k.reads]
    params.append(f"real *{restrict} {a.name}")
    if a.kind == "chain":
        what, function = f"forward: {a.name}, chain binding {index + 1} of {total}", \
            f"{model.name}_forward_{a.name}"
    else:
        what, function = f"backward: {a.name}, gradient with respect to {a.role}, entry " \
                         f"{index + 1} of {total}", f"{model.name}_backward_{a.name}"
    if lanes:
        what, function = f"{what}; {lanes[1]} samples", \
            f"{function}_{lane_names(model.name, lanes[2])['set']}"
    offsets = []
    stride = {"x": "STRIDE_INPUTS", "v": "STRIDE_VALUES", "g": "STRIDE_GRADS"}
    for name in (*k.reads, a.name):
        b = _bundle(model.arrays[name])
        if b in stride:
            offsets.append(f"{name} += (size_t)sample * {stride[b]};")
    threads = thread_count(k.body) if lang.threads else ir.size(a.shape)
    return {
        "section": f"{what}; shape {ir.show_shape(a.shape)}, {ir.size(a.shape)} elements, "
                   f"{k.strategy} loops",
        "function": function,
        "params": params,
        "body": statements(k.body, lang, 1, lanes, real),
        "threads": threads,
        # CUDA: the thread's element, of a grid of blocks of 256 threads
        **_thread_index(lang, threads + 255),
        "offsets": offsets,
        "args": [f"{_bundle(model.arrays[n])}->{n}" for n in (*k.reads, a.name)],
        "emit": "def",      # a static definition in M.c (split_sources: a part's, a prototype)
    }


def _thread_index(lang: Language, largest: int) -> dict:
    """A CUDA thread index (``idx``) that reaches ``largest``: its C type and expression (in
    ptrdiff_t past int's range: CUDA's indices are unsigned ints)."""
    t = index_type(largest)
    return {"index": t, "thread_index": lang.thread_index if t == "int" else
            f"({t}){lang.thread_index}"}


def _indices(arrays, scale: int = 1) -> dict:
    """name -> the C type of an index over the array's elements (times ``scale``: the lanes)."""
    return {a.name: index_type(ir.size(a.shape) * scale) for a in arrays}


def _structs(model: ir.Model) -> list:
    def fields(arrays):
        fs = [{"name": a.name, "size": ir.size(a.shape)} for a in arrays]
        return fs or [{"name": "empty_", "size": 1}]
    return [
        {"name": "inputs", "doc": "role input", "fields": fields(model.inputs)},
        {"name": "params", "doc": "roles param and const; also the parameter gradients (a "
                                  "const's is 0)",
         "fields": fields(model.stored)},
        {"name": "values", "doc": "chain bindings", "fields": fields(model.chain)},
        {"name": "grads", "doc": "every gradient entry", "fields": fields(model.gradients)},
    ]


def generate(model: ir.Model, precision: str = "f32", options: Options = Options()) -> Generated:
    """The sources of ``model``, every user name in them mapped to its C name first
    (extract/ir/names.py: model ``mlp`` writes ``model_mlp.c`` and ``model_mlp_forward``)."""
    with limits.stage("lower"):
        try:
            return _generate(names.to_c(model), precision, options)
        except ExtractError as e:   # in the user's names
            raise ExtractError(names.user_text(str(e))) from None


def _generate(model: ir.Model, precision: str, options: Options) -> Generated:
    real = REALS[precision]
    maths = MATHS[real]
    env = _env()
    M = model.name
    fwd, bwd = lower_to_loops(model, options)
    # CUDA: one thread per output element, so every kernel uses the element strategy; there a
    # recomputed reduction is spread over threads, so the temporaries rule is not applied
    cfwd, cbwd = lower_to_loops(model, Options("element", recompute_limit=2 ** 62,
                                                threads=True))

    prediction = model.output("prediction") or model.chain[-1].name
    loss = model.output("loss")
    params = [{"name": p.name, "grad": model.param_gradient(p.name).name} for p in model.params]
    common = {
        "M": M, "model": names.user_model(M), "version": __version__, "generator": model.generator,
        "dump_hash": model.dump_hash, "real": real, "exp": maths["exp"], "log": maths["log"],
        "sqrt": maths["sqrt"],
        "precision": precision, "tape": options.tape,
        "params": params, "consts": [a.name for a in model.stored if a.role == "const"],
        "loss": loss, "prediction": prediction,
        "loss_size": ir.size(model.arrays[loss].shape) if loss else 1,
        # the C types of the indices over each array's elements, and over the largest (the
        # helpers that serve every array): int, or ptrdiff_t past its range (printer.INT_MAX)
        "ix": _indices(model.arrays.values()),
        "index": index_type(max((ir.size(a.shape) for a in model.arrays.values()), default=1)),
    }
    arrays = [{"name": a.name, "size": ir.size(a.shape)}
              for a in (*model.context, *model.chain, *model.gradients)]
    header = {**common, "arrays": arrays, "structs": _structs(model),
              "guard": f"{M}_H", "guard_restrict": f"{M}_RESTRICT"}

    def views(ks_f, ks_b, lang):
        out = [_kernel_view(model, k, lang, n, len(ks_f), None, real)
               for n, k in enumerate(ks_f)]
        out += [_kernel_view(model, k, lang, n, len(ks_b), None, real)
                for n, k in enumerate(ks_b)]
        return out

    ckernels = views(fwd, bwd, C)
    nf = len(fwd)
    width = options.lanes or default_lanes(precision)
    if width not in (8, 16):
        raise ExtractError(f"lanes must be 8 or 16, not {width}")
    block = options.block or default_block()
    if block not in (8, 16):
        raise ExtractError(f"a register block holds 8 or 16 outputs, not {block}")
    shared = {p.name for p in model.stored}
    taken = set(model.arrays) | {"real", "idx", "sample"}
    pgrads = {model.param_gradient(p.name).name: p.name for p in model.params}
    # the lane kernels compute an elementwise binding read once where it is read
    # (extract/passes/inline.py); the one-sample functions keep every binding (the C API's structs)
    lmodel, inlined = inline_bindings(model) if options.inline else (model, ())
    computes: dict = {}         # reader -> the bindings it computes, those inlined into them too
    for b, r in inlined:
        computes.setdefault(r, []).extend([*computes.pop(b, []), b])
    lfwd, lbwd = lower_to_loops(lmodel, options) if lmodel is not model else (fwd, bwd)
    lnf = len(lfwd)
    lused_f = {_bundle(lmodel.arrays[n]) for k in lfwd for n in (*k.reads, k.name)}
    lused_b = {_bundle(lmodel.arrays[n]) for k in lbwd for n in (*k.reads, k.name)}
    bnames = [k.name for k in lbwd]
    # Winograd's rows and register blocks do not depend on the width: computed once for both
    # sets; the kernel rows through G have no lane index (extract/passes/winograd.py)
    blocked = {}
    for k in (*lfwd, *lbwd):
        body = k.body
        if has_argmax(body):        # per lane (extract/passes/lanes.py): no blocks
            blocked[k.name] = body
            continue
        if options.winograd:
            body = winograd_rows(body, shared, taken)
        blocked[k.name] = block_accumulators(peel_bounds(body, taken), taken, block) \
            if options.blocks else body

    def lane_set(width: int, p: str, parts: bool = False) -> dict:
        """The lane kernels at ``width`` samples, named with prefix ``p`` (lane_names);
        ``parts``: each kernel takes ``part`` and ``nparts`` and does its share of a group
        the threads divide among them (extract/passes/divide.py)."""
        names = lane_names(M, p)
        fused = {}      # gradient name -> its `_acc` kernel view (extract/emit/fuse.py)
        extra = (["int part", "int nparts"], ["part", "nparts"]) if parts else ([], [])

        def with_parts(view: dict) -> dict:
            unused = [f"    (void){x};" for x in extra[1]
                      if not re.search(rf"\b{x}\b", view["body"])]
            params = view["params"]
            if "barrier(nparts);" in view["body"]:
                # other threads write these arrays between the kernel's own parts: restrict
                # would let the compiler keep a value read before the barrier
                params = [x.replace("*restrict ", "*") for x in params]
            return {**view, "params": params + extra[0], "args": view["args"] + extra[1],
                    "body": "\n".join([*unused, view["body"]])}

        def lane_view(k: Kernel, n: int, total: int) -> dict:
            body, lane = widen_to_lanes(blocked[k.name], shared, width, taken)
            divided = divide_among_threads(body, lane) if parts else body
            view = _kernel_view(lmodel, Kernel(k.array, k.reads, divided, k.strategy), C, n,
                                total, (lane, width, p), real)
            # the generated comments name the modules by their paths before issue #36 (the C
            # stays byte-identical; extract/passes/inline.py, extract/emit/fuse.py today)
            if k.name in computes:
                view["section"] += (f"; computes {', '.join(computes[k.name])} where it reads "
                                    "it (extract/inline.py)")
            form = fusable(body, lane, width, k.name) \
                if k.name in pgrads and options.fuse else None
            if form is not None and not ({"acc", "m"} & set(k.reads)):
                fused[k.name] = with_parts({
                    **view, "function": view["function"] + "_acc",
                    "section": view["section"] + "; added into the accumulator (extract/fuse.py)",
                    "params": view["params"][:-1] + ["real *restrict acc", "int m"],
                    "body": fused_body(form, lane, width, names["transpose_fn"], p=p,
                                       parts=parts),
                    "args": view["args"][:-1] + [f"acc->{pgrads[k.name]}", "m"],
                    "param": pgrads[k.name]})
            return with_parts(view)
        ks = [lane_view(k, n, len(lfwd)) for n, k in enumerate(lfwd)]
        ks += [lane_view(k, n, len(lbwd)) for n, k in enumerate(lbwd)]
        bodies = "\n".join(k["body"] for k in (*ks, *fused.values()))
        return {
            **names, "width": width, "kernels": ks, "parts": parts,
            "forward_unused": [b for b in ("w", "x", "v") if b not in lused_f],
            "backward_unused": [b for b in ("w", "x", "v", "g") if b not in lused_b],
            "uses": {**{f: re.search(rf"\b{p}{f}\(", bodies) is not None
                        for f in ("load", "store", "splat", "relu", "step", "fmax_", "exp",
                                  "logistic", "sqrt")},
                     "index": re.search(rf"\b{p}index\b", bodies) is not None},
            "transpose": transpose_program(width, names["shuf"], f"{p}real"),
            "transpose_rounds": width.bit_length() - 1,
            "forward_calls": [f"{k['function']}({', '.join(k['args'])})" for k in ks[:lnf]],
            "backward_calls": [f"{k['function']}({', '.join(k['args'])})" for k in ks[lnf:]],
            "acc_kernels": list(fused.values()),
            "backward_acc_calls": [
                f"{fused[n]['function']}({', '.join(fused[n]['args'])})" if n in fused else
                f"{k['function']}({', '.join(k['args'])})" for n, k in zip(bnames, ks[lnf:])],
            "fused_params": [f["param"] for f in fused.values()],
        }
    # the batch entry points run groups of `width` samples, and a last group of at most
    # width/2 samples at half the width (a 16-lane group holding 5 samples did the work of
    # 16), which the threads may share (extract/passes/divide.py)
    sets = [lane_set(width, "v"), lane_set(width // 2, "h", parts=True)]
    # helpers the kernels call: an unused static function is a warning under Clang
    bodies = "\n".join(k["body"] for k in ckernels)
    bodies += "\n" + "\n".join(k["body"] for s in sets for k in (*s["kernels"], *s["acc_kernels"]))
    uses = {f: re.search(rf"\b{f}\(", bodies) is not None
            for f in ("logistic", "relu", "step", "fmax_", "imax", "lmin", "derf")}
    uses["log"] = re.search(rf"\b{maths['log']}\(", bodies) is not None
    uses["lane_loop"] = re.search(r"^\s*LANE_LOOP$", bodies, re.M) is not None
    used_f = {_bundle(model.arrays[n]) for k in fwd for n in (*k.reads, k.name)}
    used_b = {_bundle(model.arrays[n]) for k in bwd for n in (*k.reads, k.name)}
    cfile = {
        **common, "file": f"{M}.c", "what": "C11 + OpenMP kernels", "kernels": ckernels,
        "forward_calls": [f"{k['function']}({', '.join(k['args'])})" for k in ckernels[:nf]],
        "backward_calls": [f"{k['function']}({', '.join(k['args'])})" for k in ckernels[nf:]],
        "forward_unused": [b for b in ("w", "x", "v") if b not in used_f],
        "backward_unused": [b for b in ("w", "x", "v", "g") if b not in used_b],
        "lanes": width, "sets": sets, "uses": uses,
        # a parameter whose gradient is not added in its kernel (extract/emit/fuse.py)
        "add_samples": any(p.name not in st["fused_params"] for st in sets for p in model.params),
        # a lane buffer past int's range is sized in size_t (M_LANES is an int)
        "lane_structs": [{**s, "fields": [{**f, "cast": "(size_t)" if index_type(
            f["size"] * width) != "int" else ""} for f in s["fields"]]}
            for s in _structs(lmodel) if s["name"] != "params"],
        "lx": _indices(model.arrays.values(), width),
        "inputs": [{"name": a.name, "size": ir.size(a.shape)} for a in model.inputs],
        "split": False, "entries": True, "hidden": HIDDEN,
    }
    gkernels = views(cfwd, cbwd, CUDA)
    cused_f = {_bundle(model.arrays[n]) for k in cfwd for n in (*k.reads, k.name)}
    cused_b = {_bundle(model.arrays[n]) for k in cbwd for n in (*k.reads, k.name)}

    def launch(k):
        return (f"{k['function']}<<<dim3(blocks({k['threads']}), m), BLOCK>>>"
                f"({', '.join(k['args'])})")
    cbodies = "\n".join(k["body"] for k in gkernels)
    cufile = {
        **common, "file": f"{M}.cu", "what": "CUDA kernels", "kernels": gkernels,
        "uses": {f: re.search(rf"\b{f}\(", cbodies) is not None
                 for f in ("relu", "step", "fmax_", "derf")},
        "forward_calls": [launch(k) for k in gkernels[:nf]],
        "backward_calls": [launch(k) for k in gkernels[nf:]],
        **_thread_index(CUDA, max((ir.size(a.shape) for a in model.arrays.values()),
                                  default=1) + 255),
        "sample_index": CUDA.sample_index,
        "forward_unused": [b for b in ("w", "x", "v") if b not in cused_f],
        "backward_unused": [b for b in ("w", "x", "v", "g") if b not in cused_b],
    }
    files = {
        f"{M}.h": env.get_template("c/model.h.j2").render(
            **header, file=f"{M}.h", what="C API", cdef=False,
            restrict=f"{M}_RESTRICT "),
        f"{M}.c": env.get_template("c/model.c.j2").render(**cfile),
        f"{M}.cu": env.get_template("cuda/model.cu.j2").render(**cufile),
    }
    cdef = env.get_template("c/model.h.j2").render(**header, file="", what="", cdef=True,
                                                     restrict="")
    parts = split_sources(env, cfile, M)
    return Generated(files, cdef, (fwd, bwd), parts)


HIDDEN = '__attribute__((visibility("hidden"))) '
# a model whose kernels' C is larger than this is built from parts (split_sources), each of
# about this much kernel text: gcc -O3 takes about 1 s per 10 KB of it (ResNet-50: 2.5 MB of
# C, 239 s in one file), and the parts compile in parallel
SPLIT_BYTES = 256 * 1024


def split_sources(env, cfile: dict, M: str, size: int | None = None) -> dict:
    """``M.c`` as translation units for a parallel build: ``M_main.c`` (the entry points, with
    the kernels' prototypes) and ``M_part1.c``, … (each a share of the kernels, about ``size``
    bytes of their text, with the helpers and types they use; hidden, so not exported from the
    module). Empty when the kernels are smaller than ``size``: such a model is built from
    ``M.c``, where ``__attribute__((flatten))`` inlines the kernels of a group run alone.

        M.c:       static void M_forward_c1(...) {...}  ...  void M_forward(...) { M_forward_c1(...); }
        M_main.c:  hidden void M_forward_c1(...);        ...  void M_forward(...) { M_forward_c1(...); }
        M_part1.c: hidden void M_forward_c1(...) {...}  ...
    """
    size = SPLIT_BYTES if size is None else size
    kernels = [*cfile["kernels"]]
    for st in cfile["sets"]:
        kernels += [*st["kernels"], *st["acc_kernels"]]
    total = sum(len(k["body"]) for k in kernels)
    if total <= size:
        return {}
    n = -(-total // size)
    # the largest first, each into the part with the least text so far (deterministic)
    load, where = [0] * n, {}
    for k in sorted(kernels, key=lambda k: (-len(k["body"]), k["function"])):
        j = min(range(n), key=lambda i: (load[i], i))
        load[j] += len(k["body"])
        where[k["function"]] = j

    def render(emit) -> str:
        def views(ks):
            return [{**k, "emit": emit(k)} for k in ks]
        sets = [{**st, "kernels": views(st["kernels"]), "acc_kernels": views(st["acc_kernels"])}
                for st in cfile["sets"]]
        return env.get_template("c/model.c.j2").render(
            **{**cfile, "kernels": views(cfile["kernels"]), "sets": sets, "split": True,
               "entries": emit is proto})

    def proto(k):
        return "proto"
    out = {f"{M}_main.c": render(proto)}
    for j in range(n):
        out[f"{M}_part{j + 1}.c"] = render(
            lambda k, j=j: "extern" if where[k["function"]] == j else "skip")
    return out
