"""Names mapped, not trusted (extract/ir/names.py): a model whose names are C and C++ keywords,
libc and libm names and macros, or the generated code's own identifiers builds, trains and
predicts; the user's names stay in the Python API.

Two models carry every name (two C builds, one C++ build of the CUDA on the host), so the
test compiles little. Left out: the model language's own keywords (``for``, ``sum``, ``tile``)
and names beginning with an underscore (C's ``_Bool``, reserved by C and C++), which the front
end refuses in one line.
"""
from __future__ import annotations

import re
import shutil
import subprocess

import numpy as np
import pytest

from extract.ir import names

C_CXX_KEYWORDS = """
auto break case char const continue default do double else enum extern float for goto if inline
int long register restrict return short signed sizeof static struct switch typedef union unsigned
void volatile while bool true false alignas alignof constexpr nullptr static_assert thread_local
typeof typeof_unqual class new delete template this namespace operator private public protected
virtual friend typename using try catch throw and or not xor bitand bitor compl not_eq or_eq
xor_eq and_eq explicit mutable export consteval constinit decltype noexcept static_cast
const_cast dynamic_cast reinterpret_cast typeid wchar_t char8_t char16_t char32_t asm concept
requires co_await co_return co_yield final override import module atomic_cancel synchronized
""".split()

LIBC_AND_OURS = """
stdlib main errno NAN INFINITY M_PI M_E EOF alloca printf malloc free exit abort memcpy memset
size_t ptrdiff_t NULL int8_t uint32_t FILE stdin stdout stderr assert exp expf log logf sqrt sqrtf
fmax fmaxf HUGE_VAL RAND_MAX CHAR_BIT INT_MAX offsetof va_list setjmp signal raise errno_t
omp_get_thread_num omp_get_num_threads threadIdx blockIdx blockDim dim3 cudaMalloc Python
PyObject Py_None stddef math omp real idx sample w x v g m n ws lanes_ vreal vload hload
LANE_LOOP STRIDE_INPUTS empty_ pk_launch std cout unix linux i386 x86_64 DEBUG NDEBUG
""".split()


# the model language's own keywords: refused by its parser, in one line ("expected a binding's
# name, found 'for'")
MODEL_KEYWORDS = {"for", "sum", "tile"}


# the names: these are parameters (the dense layer's weights and bias)
PARAMS = {"stdlib": ("int", "errno"), "main": ("NAN", "printf")}


def _models() -> list[tuple[str, list[str]]]:
    """Two (model name, names) pairs covering every name once; ``PARAMS`` third and fourth
    (the dense layer's weights and bias)."""
    every = [n for n in C_CXX_KEYWORDS + LIBC_AND_OURS
             if n not in MODEL_KEYWORDS and n not in sum(PARAMS.values(), ())]
    half = len(every) // 2
    out = []
    for model, ns in (("stdlib", every[:half]), ("main", every[half:])):
        out.append((model, ns[:2] + list(PARAMS[model]) + ns[2:]))
    return out


def model_text(model: str, ns: list[str]) -> str:
    """input ns[0], target ns[1], a dense layer (ns[2], ns[3]), then a param and a binding
    that adds it, in turn, for the rest; the output and the loss last."""
    x, y, w, b, *rest = ns
    out, loss = rest[-2:]
    rest = rest[:-2]
    lines = [f"model {model}", f"input  {x} : 4", f"target {y} : 2", f"param  {w} : 2x4",
             f"param  {b} : 2"]
    body = []
    prev = None
    pairs = list(zip(rest[0::2], rest[1::2]))
    first = pairs[0][1]
    body.append(f"{first} = dense({w}, {x}, {b})")
    prev = first
    lines.append(f"param  {pairs[0][0]} : 2")
    for p, z in pairs[1:]:
        lines.append(f"param  {p} : 2")
        body.append(f"{z} = {prev} + {p}")
        prev = z
    body.append(f"output {out} = logistic({prev} + {pairs[0][0]})")
    body.append(f"loss {loss} = sqerr({out}, {y})")
    leftover = rest[2 * len(pairs):]
    assert not leftover or len(leftover) == 1
    if leftover:        # one name left: a const
        lines.append(f"const  {leftover[0]} : 2")
        body[-2] = f"output {out} = logistic({prev} + {pairs[0][0]} + {leftover[0]})"
    return "\n".join(lines + body) + "\n"


@pytest.mark.agda
@pytest.mark.parametrize("model,ns", _models(), ids=[m for m, _ in _models()])
def test_keywords_and_libc_names_train_and_predict(tmp_path, model, ns):
    from test_frontend_cli import MISSING
    if MISSING is not None:
        pytest.skip(str(MISSING))
    import runtime
    path = tmp_path / f"{model}.model"
    path.write_text(model_text(model, ns))
    spec_consts = [n for n in ns if f"const  {n} :" in path.read_text()]
    weights = {c: np.full(2, 0.1, np.float32) for c in spec_consts}
    m = runtime.load(str(path), weights=weights or None)
    params = m.get_params()
    assert set(ns) >= set(params) and set(PARAMS[model]) <= set(params)   # as written
    rng = np.random.default_rng(0)
    xs = rng.normal(size=(16, 4)).astype(np.float32)
    ys = rng.integers(0, 2, 16)
    before = m.mean_loss(xs, ys)
    m.train(xs, ys, epochs=1, batch_size=8, lr=0.5, progress=False)
    after = m.mean_loss(xs, ys)
    assert np.isfinite(after) and after != before
    pred = m.predict(xs)
    assert pred.shape == (16, 2) and np.isfinite(pred).all()
    # the CUDA, compiled as C++ (its keywords are the C++ ones) on the host
    if shutil.which("g++") is not None:
        from extract.check import cuda_host
        from extract.ir import dump
        from extract.emit import sources
        from extract.front.frontend import compile_model
        import json
        g = sources.generate(dump.parse(json.loads(compile_model(path.read_text()))), "f32")
        cuda_host.compile_host(tmp_path / "cuda", g.files)


def test_the_prefixes_are_free_in_every_header_the_build_includes(tmp_path):
    """No header the C build (with cffi's Python.h) or the CUDA host emulation includes
    declares or defines a name beginning ``model_`` or ``a<digits>_``."""
    import sysconfig
    src = tmp_path / "all.c"
    src.write_text("#include <stddef.h>\n#include <math.h>\n#include <omp.h>\n"
                   "#include <stdlib.h>\n#include <stdio.h>\n#include <string.h>\n"
                   "#include <Python.h>\n")
    inc = sysconfig.get_paths()["include"]
    pre = subprocess.run(["gcc", "-fopenmp", "-E", "-dD", f"-I{inc}", str(src)],
                         capture_output=True, text=True)
    assert pre.returncode == 0, pre.stderr[:2000]
    text = pre.stdout
    if shutil.which("g++") is not None:     # the CUDA run on the host: C++ and its headers
        from extract.check import cuda_host
        cpp = tmp_path / "host.cpp"
        cpp.write_text(f'#include "{cuda_host.header()}"\n')
        pre = subprocess.run(["g++", "-std=c++17", "-fopenmp", "-E", "-dD", str(cpp)],
                             capture_output=True, text=True)
        assert pre.returncode == 0, pre.stderr[:2000]
        text += pre.stdout
    tokens = set(re.findall(r"\b[A-Za-z_]\w*\b", text))
    bad = sorted(t for t in tokens if t.startswith(names.MODEL_PREFIX) or re.match(r"a\d+_", t))
    assert not bad, bad[:20]


def test_the_mapping_is_injective_and_inverse():
    ns = ["z1", "z1_lanes", "a1_x", "x", "int", "m_x", "a", "a_"]
    cs = [names.c_array(n) for n in ns]
    assert len(set(cs)) == len(cs)
    assert [names.user_array(c) for c in cs] == ns
    # a kernel of binding z1 at a lane width is not binding z1_lanes's kernel
    assert f"F_{names.c_array('z1')}_lanes" != f"F_{names.c_array('z1_lanes')}"
    assert names.user_array("empty_") is None
