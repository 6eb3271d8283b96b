"""The generated CUDA against the generated C, on a GPU (marker ``gpu``; skipped without one).

A small test driver (test code: it may allocate) copies one batch to the device, runs
``M_cuda_forward``/``M_cuda_backward`` on sample 0 and ``M_cuda_batch_grad`` on the batch, and
writes the results to a file; they must match the C entry points on the same data."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from extract.ir.names import c_array, c_model  # noqa: F401 (the C names)

import dumpgen
from conftest import array_view, rel_err
from extract.emit import build
from extract.ir import dump
from extract.emit.sources import generate

DATA = Path(__file__).resolve().parent / "data"


def _gpu_present() -> bool:
    if not build.nvcc_available() or shutil.which("nvidia-smi") is None:
        return False
    res = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True)
    return res.returncode == 0 and "GPU" in res.stdout


pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not _gpu_present(), reason="no CUDA GPU")]

DRIVER = r"""
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>
#include "{M}.h"
extern "C" {{
void {M}_cuda_forward(const {M}_params *w, const {M}_inputs *x, {M}_values *v);
void {M}_cuda_backward(const {M}_params *w, const {M}_inputs *x, const {M}_values *v, {M}_grads *g);
size_t {M}_cuda_workspace_size(int nthreads);
void {M}_cuda_batch_grad(const {M}_params *w, const {M}_inputs *xs, int n, int nthreads,
                         void *ws, {M}_params *grad, real *loss);
}}
int main(int argc, char **argv)
{{
    const int n = atoi(argv[3]), nt = atoi(argv[4]);
    {M}_params hw; {M}_inputs *hx = ({M}_inputs *)malloc(n * sizeof *hx);
    FILE *f = fopen(argv[1], "rb");
    if (fread(&hw, sizeof hw, 1, f) != 1 || fread(hx, sizeof *hx, n, f) != (size_t)n) return 2;
    fclose(f);
    {M}_params *w, *grad; {M}_inputs *x; {M}_values *v; {M}_grads *g; real *loss; void *ws;
    cudaMalloc(&w, sizeof *w); cudaMalloc(&grad, sizeof *grad); cudaMalloc(&x, n * sizeof *x);
    cudaMalloc(&v, sizeof *v); cudaMalloc(&g, sizeof *g); cudaMalloc(&loss, sizeof *loss);
    cudaMalloc(&ws, {M}_cuda_workspace_size(nt));
    cudaMemset(v, 0xff, sizeof *v); cudaMemset(g, 0xff, sizeof *g);   /* NaN-filled */
    cudaMemcpy(w, &hw, sizeof hw, cudaMemcpyHostToDevice);
    cudaMemcpy(x, hx, n * sizeof *hx, cudaMemcpyHostToDevice);
    {M}_cuda_forward(w, x, v);
    {M}_cuda_backward(w, x, v, g);
    {M}_cuda_batch_grad(w, x, n, nt, ws, grad, loss);
    {M}_values hv; {M}_grads hg; {M}_params hgrad; real hloss;
    cudaMemcpy(&hv, v, sizeof hv, cudaMemcpyDeviceToHost);
    cudaMemcpy(&hg, g, sizeof hg, cudaMemcpyDeviceToHost);
    cudaMemcpy(&hgrad, grad, sizeof hgrad, cudaMemcpyDeviceToHost);
    cudaMemcpy(&hloss, loss, sizeof hloss, cudaMemcpyDeviceToHost);
    if (cudaGetLastError() != cudaSuccess) return 3;
    f = fopen(argv[2], "wb");
    fwrite(&hv, sizeof hv, 1, f); fwrite(&hg, sizeof hg, 1, f);
    fwrite(&hgrad, sizeof hgrad, 1, f); fwrite(&hloss, sizeof hloss, 1, f);
    fclose(f);
    return 0;
}}
"""


@pytest.mark.parametrize("name", ["cnn_hand", "ops_slide", "ops_block"])
def test_cuda_matches_c(tmp_path, kernel_cache, name):
    precision, dtype, n, nt = "f64", np.float64, 5, 2
    d = __import__("json").loads((DATA / f"{name}.json").read_text())
    m = dump.parse(d)
    gen = generate(m, precision)
    for fname, text in gen.files.items():
        (tmp_path / fname).write_text(text)
    M = c_model(m.name)
    (tmp_path / "driver.cu").write_text(DRIVER.format(M=M))
    exe = tmp_path / "driver"
    subprocess.run(["nvcc", "-O2", "-o", str(exe), str(tmp_path / "driver.cu"),
                    str(tmp_path / f"{M}.cu")], check=True, cwd=tmp_path)
    ffi, lib = build.build(M, precision, gen.files, gen.cdef)
    w = ffi.new(f"{M}_params *")
    xs = ffi.new(f"{M}_inputs[{n}]")
    for s in range(n):
        vals = dumpgen.random_context_values(d, 70 + s)
        for a in m.context:
            if a.role == "input":
                array_view(ffi, getattr(xs[s], c_array(a.name)), dtype)[:] = vals[a.name].ravel()
            elif s == 0:
                array_view(ffi, getattr(w, c_array(a.name)), dtype)[:] = vals[a.name].ravel()
    (tmp_path / "in.bin").write_bytes(bytes(ffi.buffer(w)) + bytes(ffi.buffer(xs)))
    subprocess.run([str(exe), "in.bin", "out.bin", str(n), str(nt)], check=True, cwd=tmp_path)
    raw = (tmp_path / "out.bin").read_bytes()
    v, g = ffi.new(f"{M}_values *"), ffi.new(f"{M}_grads *")
    grad, loss = ffi.new(f"{M}_params *"), ffi.new("real *")
    lib_f = getattr(lib, f"{M}_forward")
    lib_f(w, xs, v)
    getattr(lib, f"{M}_backward")(w, xs, v, g)
    ws = ffi.new("char[]", getattr(lib, f"{M}_workspace_size")(1))
    getattr(lib, f"{M}_batch_grad")(w, xs, n, 1, ws, grad, loss)
    want = bytes(ffi.buffer(v)) + bytes(ffi.buffer(g)) + bytes(ffi.buffer(grad)) + \
        bytes(ffi.buffer(loss))
    got = np.frombuffer(raw, dtype)
    ref = np.frombuffer(want, dtype)
    assert got.shape == ref.shape
    assert np.all(np.isfinite(got))
    assert rel_err(got, ref) <= 1e-12
