"""A hand-written C test double of the generated CNN API (docs/generated-api.md).

It lets the runtime's marshalling (zero-copy views, packing, workspace, threads, training loop)
be tested independently of ``extract``: ``double_kernels(precision)`` builds it with cffi into
a temporary directory and returns a ``runtime._kernels.Kernels`` over it. It is checked here
against PyTorch autograd, so a runtime test that passes on the double and fails on the
generated kernels points at the generator.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import numpy as np
import pytest

from runtime._kernels import Kernels

CDEF = """
typedef struct { real target[10]; real inp[784]; } model_cnn_inputs;
typedef struct { real k1[150]; real b1[6]; real k2[1800]; real b2[12];
                 real fc[1920]; real b[10]; } model_cnn_params;
typedef struct { real c1[3456]; real s1[864]; real c2[768]; real s2[192]; real r[10];
                 real loss[1]; } model_cnn_values;
size_t model_cnn_workspace_size(int nthreads);
void model_cnn_batch_grad(const model_cnn_params *w, const model_cnn_inputs *xs, int n, int nthreads, void *ws,
                    model_cnn_params *grad, real *loss);
void model_cnn_sgd_update(model_cnn_params *w, const model_cnn_params *grad, real lr);
void model_cnn_sgd_momentum_update(model_cnn_params *w, const model_cnn_params *grad, model_cnn_params *vel, real lr,
                             real mu);
void model_cnn_batch_predict(const model_cnn_params *w, const model_cnn_inputs *xs, int n, int nthreads,
                       void *ws, real *out);
"""

SOURCE = r"""
#include <math.h>
#include <string.h>
#include <omp.h>
#define NP ((int)(sizeof(model_cnn_params) / sizeof(real)))
typedef struct { model_cnn_values v; model_cnn_params acc; real loss; } slot;

static real sig(real x) { return 1 / (1 + exp(-x)); }

static void fwd(const model_cnn_params *w, const model_cnn_inputs *x, model_cnn_values *v) {
  for (int o = 0; o < 6; o++) for (int i = 0; i < 24; i++) for (int j = 0; j < 24; j++) {
    real s = 0;
    for (int a = 0; a < 5; a++) for (int b = 0; b < 5; b++)
      s += w->k1[(o*5+a)*5+b] * x->inp[(i+a)*28+j+b];
    v->c1[(o*24+i)*24+j] = sig(s + w->b1[o]);
  }
  for (int o = 0; o < 6; o++) for (int i = 0; i < 12; i++) for (int j = 0; j < 12; j++) {
    const real *c = &v->c1[(o*24+2*i)*24+2*j];
    v->s1[(o*12+i)*12+j] = (c[0] + c[1] + c[24] + c[25]) / 4;
  }
  for (int o = 0; o < 12; o++) for (int i = 0; i < 8; i++) for (int j = 0; j < 8; j++) {
    real s = 0;
    for (int c = 0; c < 6; c++) for (int a = 0; a < 5; a++) for (int b = 0; b < 5; b++)
      s += w->k2[((o*6+c)*5+a)*5+b] * v->s1[(c*12+i+a)*12+j+b];
    v->c2[(o*8+i)*8+j] = sig(s + w->b2[o]);
  }
  for (int o = 0; o < 12; o++) for (int i = 0; i < 4; i++) for (int j = 0; j < 4; j++) {
    const real *c = &v->c2[(o*8+2*i)*8+2*j];
    v->s2[(o*4+i)*4+j] = (c[0] + c[1] + c[8] + c[9]) / 4;
  }
  real l = 0;
  for (int o = 0; o < 10; o++) {
    real s = 0;
    for (int k = 0; k < 192; k++) s += w->fc[o*192+k] * v->s2[k];
    v->r[o] = sig(s + w->b[o]);
    l += (v->r[o] - x->target[o]) * (v->r[o] - x->target[o]);
  }
  v->loss[0] = l / 2;
}

/* adds this sample's gradient into g */
static void bwd(const model_cnn_params *w, const model_cnn_inputs *x, const model_cnn_values *v, model_cnn_params *g) {
  real dr1[10], ds2[192], dc21[768], ds1[864], dc11[3456];
  for (int o = 0; o < 10; o++) {
    dr1[o] = (v->r[o] - x->target[o]) * v->r[o] * (1 - v->r[o]);
    g->b[o] += dr1[o];
    for (int k = 0; k < 192; k++) g->fc[o*192+k] += dr1[o] * v->s2[k];
  }
  for (int k = 0; k < 192; k++) {
    real s = 0;
    for (int o = 0; o < 10; o++) s += dr1[o] * w->fc[o*192+k];
    ds2[k] = s;
  }
  for (int o = 0; o < 12; o++) for (int i = 0; i < 8; i++) for (int j = 0; j < 8; j++) {
    real c = v->c2[(o*8+i)*8+j];
    dc21[(o*8+i)*8+j] = ds2[(o*4+i/2)*4+j/2] / 4 * c * (1 - c);
  }
  memset(ds1, 0, sizeof ds1);
  for (int o = 0; o < 12; o++) for (int i = 0; i < 8; i++) for (int j = 0; j < 8; j++) {
    real d = dc21[(o*8+i)*8+j];
    g->b2[o] += d;
    for (int c = 0; c < 6; c++) for (int a = 0; a < 5; a++) for (int b = 0; b < 5; b++) {
      g->k2[((o*6+c)*5+a)*5+b] += d * v->s1[(c*12+i+a)*12+j+b];
      ds1[(c*12+i+a)*12+j+b] += d * w->k2[((o*6+c)*5+a)*5+b];
    }
  }
  for (int o = 0; o < 6; o++) for (int i = 0; i < 24; i++) for (int j = 0; j < 24; j++) {
    real c = v->c1[(o*24+i)*24+j];
    dc11[(o*24+i)*24+j] = ds1[(o*12+i/2)*12+j/2] / 4 * c * (1 - c);
  }
  for (int o = 0; o < 6; o++) for (int i = 0; i < 24; i++) for (int j = 0; j < 24; j++) {
    real d = dc11[(o*24+i)*24+j];
    g->b1[o] += d;
    for (int a = 0; a < 5; a++) for (int b = 0; b < 5; b++)
      g->k1[(o*5+a)*5+b] += d * x->inp[(i+a)*28+j+b];
  }
}

size_t model_cnn_workspace_size(int nthreads) { return (size_t)nthreads * sizeof(slot); }

void model_cnn_batch_grad(const model_cnn_params *w, const model_cnn_inputs *xs, int n, int nthreads, void *ws,
                    model_cnn_params *grad, real *loss) {
  slot *sl = ws;
  #pragma omp parallel num_threads(nthreads)
  {
    int nt = omp_get_num_threads();
    for (int t = omp_get_thread_num(); t < nthreads; t += nt) {
      memset(&sl[t].acc, 0, sizeof(model_cnn_params));
      sl[t].loss = 0;
      for (int s = (int)((long)t*n/nthreads); s < (int)((long)(t+1)*n/nthreads); s++) {
        fwd(w, &xs[s], &sl[t].v);
        bwd(w, &xs[s], &sl[t].v, &sl[t].acc);
        sl[t].loss += sl[t].v.loss[0];
      }
    }
  }
  real *gr = (real *)grad, l = 0;
  memset(grad, 0, sizeof *grad);
  for (int t = 0; t < nthreads; t++) {
    const real *a = (const real *)&sl[t].acc;
    for (int k = 0; k < NP; k++) gr[k] += a[k];
    l += sl[t].loss;
  }
  for (int k = 0; k < NP; k++) gr[k] /= n;
  *loss = l / n;
}

void model_cnn_sgd_update(model_cnn_params *w, const model_cnn_params *grad, real lr) {
  real *p = (real *)w; const real *g = (const real *)grad;
  for (int k = 0; k < NP; k++) p[k] -= lr * g[k];
}

void model_cnn_sgd_momentum_update(model_cnn_params *w, const model_cnn_params *grad, model_cnn_params *vel, real lr,
                             real mu) {
  real *p = (real *)w, *v = (real *)vel; const real *g = (const real *)grad;
  for (int k = 0; k < NP; k++) { v[k] = mu * v[k] + g[k]; p[k] -= lr * v[k]; }
}

void model_cnn_batch_predict(const model_cnn_params *w, const model_cnn_inputs *xs, int n, int nthreads,
                       void *ws, real *out) {
  slot *sl = ws;
  #pragma omp parallel num_threads(nthreads)
  {
    int nt = omp_get_num_threads();
    for (int t = omp_get_thread_num(); t < nthreads; t += nt)
      for (int s = (int)((long)t*n/nthreads); s < (int)((long)(t+1)*n/nthreads); s++) {
        fwd(w, &xs[s], &sl[t].v);
        memcpy(&out[s*10], sl[t].v.r, sizeof sl[t].v.r);
      }
  }
}
"""

_BUILT: dict[str, Kernels] = {}


def double_kernels(precision: str = "f32") -> Kernels:
    """Build (once per process) the C double and wrap it as ``Kernels``."""
    if precision in _BUILT:
        return _BUILT[precision]
    import importlib.util

    from cffi import FFI

    real = "float" if precision == "f32" else "double"
    ffi = FFI()
    ffi.cdef(f"typedef {real} real;\n" + CDEF)
    name = f"_cnn_double_{precision}"
    ffi.set_source(
        name,
        f"typedef {real} real;\n" + CDEF + SOURCE,
        extra_compile_args=["-O2", "-fopenmp", "-std=c11"],
        extra_link_args=["-fopenmp"],
    )
    tmp = tempfile.mkdtemp(prefix="cnn_double_")
    try:
        lib_path = ffi.compile(tmpdir=tmp, verbose=False)
        spec = importlib.util.spec_from_file_location(name, lib_path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)  # the loaded .so stays mapped
    _BUILT[precision] = Kernels("cnn", precision, mod.ffi, mod.lib)
    return _BUILT[precision]


@pytest.fixture
def use_double(monkeypatch):
    """Make ``runtime.load`` use the C double (both precisions)."""
    for p in ("f32", "f64"):
        monkeypatch.setitem(Kernels._cache, ("cnn", p), double_kernels(p))


def _batch(rng, n):
    return rng.random((n, 28, 28), dtype=np.float32), rng.integers(0, 10, n)


@pytest.mark.torch
def test_double_matches_torch_autograd(use_double):
    pytest.importorskip("torch")
    import runtime
    from runtime import torch_reference as tr

    rng = np.random.default_rng(5)
    m = runtime.load("cnn", init="random", seed=3, precision="f64")
    x, y = _batch(rng, 7)
    loss, grads = m.loss_and_gradients(x, y, threads=2)
    t_loss, t_grads = tr.loss_and_gradients(m.params, x, y, precision="f64")
    assert loss == pytest.approx(t_loss, rel=1e-12)
    for n in grads:
        np.testing.assert_allclose(grads[n], t_grads[n], rtol=1e-10, atol=1e-14)


HAND_DUMP = Path(__file__).resolve().parent / "data" / "cnn_hand.json"


def generated_dump():
    """The dump the generated kernels come from: the Agda one (``build/dump/cnn.json``) when it
    has been built, else the hand-written ``tests/data/cnn_hand.json`` (committed)."""
    from extract.emit.build import dump_path

    agda = dump_path("cnn", make=False)
    if agda.exists():
        return agda
    return HAND_DUMP


def use_backend(name: str, monkeypatch):
    """Route ``runtime.load`` to the C double (``"double"``) or to the generated kernels
    (``"generated"``; a missing or broken extractor fails the test). Returns the dump path used
    (None for the double)."""
    if name == "double":
        for p in ("f32", "f64"):
            monkeypatch.setitem(Kernels._cache, ("cnn", p), double_kernels(p))
        return None
    dump = generated_dump()
    for p in ("f32", "f64"):
        monkeypatch.setitem(Kernels._cache, ("cnn", p), Kernels.open("cnn", p, dump))
    return dump


def generated_dump_of(model: str) -> Path:
    """The dump of a built-in model: the Agda one when built, else
    ``tests/data/<model>_hand.json``."""
    from extract.emit.build import dump_path

    agda = dump_path(model, make=False)
    return agda if agda.exists() else HAND_DUMP.with_name(f"{model}_hand.json")


def use_double_for_any_dump(monkeypatch, names=("cnn",)):
    """Route every ``Kernels.open(name, ...)`` of a model in ``names`` (dumps of the CNN,
    possibly renamed) to the C double, whatever dump it names (a ``.json`` path, a model file's
    cached dump, the built-in one)."""
    real_open = Kernels.open.__func__

    def open_(cls, model, precision, dump=None):
        if model in names:
            return double_kernels(precision)
        return real_open(cls, model, precision, dump)

    monkeypatch.setattr(Kernels, "open", classmethod(open_))


def cnn_dump_variant(tmp_path, new_keys: bool, name: str | None = None, **change) -> Path:
    """A copy of the CNN dump the tests use, written to ``tmp_path``: with ``new_keys`` it has
    the optional ``fan_in`` (k1 25, b1 25, k2 150, b2 150, fc 192, b 192) and ``data``
    (features inp, target target) of the Agda change, without them it has neither.
    ``change``: top-level keys to replace (None: delete)."""
    import json

    data = json.loads(generated_dump().read_text())
    data.pop("data", None)
    for c in data["context"]:
        c.pop("fan_in", None)
    if new_keys:
        fan_in = {"k1": 25, "b1": 25, "k2": 150, "b2": 150, "fc": 192, "b": 192}
        for c in data["context"]:
            if c["role"] == "param":
                c["fan_in"] = fan_in[c["name"]]
        data["data"] = {"features": "inp", "target": "target"}
    for key, value in change.items():
        if value is None:
            data.pop(key, None)
        else:
            data[key] = value
    path = tmp_path / (name or f"cnn_{'new' if new_keys else 'old'}.json")
    path.write_text(json.dumps(data))
    return path
