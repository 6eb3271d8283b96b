"""Run the generated CUDA on the CPU: the .cu compiled by g++ against a host emulation of CUDA's
execution model (extract/emit/templates/cuda_host/cuda_host.h), loaded with cffi.

No GPU is needed, and the CUDA that is run is the text ``python -m extract`` writes, with one
lexical change: each launch ``k<<<grid, block>>>(args)`` becomes ``pk_launch(k, grid,
block)(args)`` (``host_source``); the header defines ``__global__``, ``dim3``, ``threadIdx`` and
the rest, and runs a launch as a loop over its threads. What it checks: the kernels' index
arithmetic, thread-to-element maps, guards, sample strides and the entry points' launch
sequence, against the same oracle as the C (tests/test_cuda_host.py); what it cannot: timing,
memory transfers, the device compiler (``nvcc -c`` is tested separately when installed).

Before::

    M_cuda_sgd<<<blocks(M_SIZE_w), BLOCK>>>(w->w, grad->w, lr, M_SIZE_w);

After::

    pk_launch(M_cuda_sgd, blocks(M_SIZE_w), BLOCK)(w->w, grad->w, lr, M_SIZE_w);
"""
from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
from pathlib import Path

from ..emit import build

HEADER = "cuda_host/cuda_host.h"
CXX = "g++"
CXXFLAGS = ["-std=c++17", "-O1", "-fPIC", "-shared", "-Wall", "-Wextra", "-Werror"]
_LAUNCH = re.compile(r"\b([A-Za-z_]\w*)<<<")


def header() -> Path:
    return build.locate("templates") / HEADER


def host_source(cu: str) -> str:
    """The .cu with every ``k<<<g, b>>>(`` rewritten to ``pk_launch(k, g, b)(``."""
    n_open, n_close = len(_LAUNCH.findall(cu)), cu.count(">>>(")
    if n_open != n_close or cu.count("<<<") != n_open:
        raise ValueError(f"cannot rewrite the launches: {cu.count('<<<')} '<<<' and "
                         f"{n_close} '>>>('")
    return _LAUNCH.sub(r"pk_launch(\1, ", cu).replace(">>>(", ")(")


def entry_points(cu: str) -> str:
    """The declarations of the ``M_cuda_*`` entry points (the .cu's ``extern "C"`` block)."""
    m = re.search(r'extern "C" \{\n(.*?)\n\}\n', cu, re.S)
    if m is None:
        raise ValueError('no extern "C" block of entry points in the CUDA source')
    return m.group(1)


def compile_host(directory: Path, files: dict, *, flags: list | None = None,
                 include: list | None = None, name: str = "host") -> Path:
    """Write ``files`` (M.h, M.cu, ...) into ``directory`` and compile the .cu, rewritten by
    ``host_source``, into the shared library ``directory/lib<name>.so``. ``include``: further
    headers to force-include before the emulation's (extract/check/validate.py adds the field)."""
    if shutil.which(CXX) is None:
        raise RuntimeError(f"{CXX} not found: the CUDA host emulation compiles the .cu as C++ "
                           f"(apt-get install g++)")
    directory.mkdir(parents=True, exist_ok=True)
    for fname, text in files.items():
        build.write_if_changed(directory / fname, text)
    cu = next(f for f in files if f.endswith(".cu"))
    src = directory / f"{Path(cu).stem}.host.cpp"
    build.write_if_changed(src, host_source(files[cu]))
    so = directory / f"lib{name}.so"
    cmd = [CXX, *(flags if flags is not None else CXXFLAGS)]
    for h in [*(include or []), header()]:
        cmd += ["-include", str(h)]
    cmd += [str(src), "-o", str(so)]
    res = subprocess.run(cmd, capture_output=True, text=True, cwd=directory)
    if res.returncode != 0:
        raise RuntimeError(f"{CXX} failed ({' '.join(cmd)}):\n{res.stderr}")
    return so


def build_host(model_name: str, precision: str, files: dict, cdef: str) -> tuple:
    """(ffi, lib) of the model's CUDA run on the CPU: ``lib.M_cuda_forward`` and the other
    entry points of docs/generated-api.md over host pointers, and
    ``lib.pk_cuda_host_set_order(k)`` (the order of the threads of a launch). Cached like the C
    build (``build.cache_dir()``), keyed by the sources, the header, the flags and g++."""
    import cffi
    from filelock import FileLock
    h = hashlib.sha256()
    for part in [*(f"{n}\0{t}" for n, t in sorted(files.items())), header().read_text(),
                 " ".join(CXXFLAGS), build._tool_version(CXX)]:
        h.update(part.encode() + b"\0")
    from .. import cache
    root = build.cache_dir()
    final = root / f"_pk_cuda_host_{model_name}_{precision}_{h.hexdigest()[:20]}"
    reason = cache.damage(final) if final.exists() else ""
    if reason:      # verified before dlopen: a truncated library would SIGBUS the process
        cache.note(final, reason)
        shutil.rmtree(final, ignore_errors=True)
    if not (final / "ok").exists():
        with FileLock(str(final) + ".lock", mode=0o600):
            if not (final / "ok").exists():
                tmp = final.with_name(final.name + f".tmp{os.getpid()}")
                shutil.rmtree(tmp, ignore_errors=True)
                try:
                    compile_host(tmp, files)
                except BaseException:
                    shutil.rmtree(tmp, ignore_errors=True)  # no half-built library left behind
                    raise
                cache.seal(tmp, "")     # private files; the library's sha256 in ok
                shutil.rmtree(final, ignore_errors=True)
                os.rename(tmp, final)
    ffi = cffi.FFI()
    cu = next(t for f, t in files.items() if f.endswith(".cu"))
    ffi.cdef(cdef + "\n" + entry_points(cu) + "\nvoid pk_cuda_host_set_order(int order);\n")
    return ffi, ffi.dlopen(str(final / "libhost.so"))
