"""The lane kernels' inline exp and logistic (``vexp``, ``vlogistic`` and their half-width
``h`` versions, extract/emit/templates/c/model.c.j2) against a correctly rounded ``expf`` and the
scalar ``logistic``'s formula on it, over a sweep of [-110, 95] and the special values: at most a
few units in the last place, expf's 0 and inf beyond its range, NaN kept, at 8 and 16 lanes (so
vectors of 4, 8 and 16 floats), each by the path the compiler targets (the clamp by SSE's, AVX's
or AVX-512's min and max, AVX-512's vscalefps at 16) and by the portable one
(``PK_PORTABLE_EXP``)."""
from __future__ import annotations

import json
import shutil
import subprocess
import sysconfig
from pathlib import Path

import numpy as np
import pytest

from extract.emit import build
from extract.ir import dump
from extract.passes.lower import Options
from extract.emit.sources import generate

DATA = Path(__file__).resolve().parent / "data"

DRIVER = r"""
#include "model_unary.c"
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    FILE *f = fopen(argv[1], "rb");
    fseek(f, 0, SEEK_END);
    const long n = ftell(f) / sizeof(real);
    rewind(f);
    real *x = malloc(n * sizeof(real)), *out = malloc(4 * n * sizeof(real));
    if (fread(x, sizeof(real), n, f) != (size_t)n) return 2;
    for (long i = 0; i + model_unary_LANES <= n; i += model_unary_LANES) {
        vreal v;
        memcpy(&v, &x[i], sizeof v);
        const vreal e = vexp(v), s = vlogistic(v);
        memcpy(&out[i], &e, sizeof e);
        memcpy(&out[n + i], &s, sizeof s);
    }
    for (long i = 0; i + model_unary_HLANES <= n; i += model_unary_HLANES) {
        hreal v;
        memcpy(&v, &x[i], sizeof v);
        const hreal e = hexp(v), s = hlogistic(v);
        memcpy(&out[2 * n + i], &e, sizeof e);
        memcpy(&out[3 * n + i], &s, sizeof s);
    }
    fwrite(out, sizeof(real), 4 * n, stdout);
#if defined(VEXP_AVX512)
    fputs("v:avx512", stderr);
#elif defined(VEXP_MINMAX)
    fputs("v:minmax", stderr);
#else
    fputs("v:portable", stderr);
#endif
#if defined(HEXP_MINMAX)
    fputs(" h:minmax", stderr);
#else
    fputs(" h:portable", stderr);
#endif
    return 0;
}
"""

SPECIAL = [0.0, -0.0, 1e-30, -1e-30, 1.0, -1.0, 88.72, 88.7228, 88.73, 89.0, 89.5, 1e4, 1e30,
           3.4e38, -87.33, -87.34, -100.0, -103.97, -103.98, -104.0, -104.5, -1e4, -1e30, -3.4e38,
           np.inf, -np.inf, np.nan]


def _values() -> np.ndarray:
    sweep = np.arange(-110.0, 95.0, 0.00123, dtype=np.float64)
    x = np.concatenate([np.array(SPECIAL), sweep]).astype(np.float32)
    return x[:len(x) // 16 * 16]


def _ulps(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    """|got - want| in units of the last place of want (float32), 0 where both agree exactly
    (infinities, zeros)."""
    same = (got == want) | (np.isnan(got) & np.isnan(want))
    ulp = np.spacing(np.abs(want).astype(np.float32)).astype(np.float64)
    with np.errstate(invalid="ignore"):
        err = np.abs(got.astype(np.float64) - want.astype(np.float64)) / ulp
    return np.where(same, 0.0, err)


@pytest.fixture(scope="module", params=[16, 8], ids=["lanes16", "lanes8"])
def sources(tmp_path_factory, request):
    d = tmp_path_factory.mktemp("exp")
    g = generate(dump.parse(json.loads((DATA / "unary.json").read_text())), "f32",
                 Options(lanes=request.param))
    for name, text in g.files.items():
        (d / name).write_text(text)
    (d / "driver.c").write_text(DRIVER)
    x = _values()
    x.tofile(d / "x.bin")
    return d, x, request.param


def _path(width: int, macros: str, portable: bool) -> str:
    """The exp the template picks for a vector of ``width`` floats under these predefined
    macros."""
    if portable:
        return "portable"
    if width == 16 and "__AVX512F__ " in macros:
        return "avx512"
    need = {4: "__SSE__ ", 8: "__AVX__ ", 16: "__AVX512F__ "}[width]
    return "minmax" if need in macros else "portable"


@pytest.mark.parametrize("portable", [False, True])
def test_inline_exp_and_logistic_match_the_c_library(sources, portable):
    d, x, lanes = sources
    exe = d / ("portable" if portable else "default")
    if shutil.which("gcc") is None:
        pytest.skip("no gcc")
    cflags = (sysconfig.get_config_var("CFLAGS") or "").split() + build.CFLAGS
    subprocess.run(["gcc", *cflags, *(["-DPK_PORTABLE_EXP"] if portable else []),
                    "-I", str(d), str(d / "driver.c"), "-o", str(exe), *build.LDFLAGS, "-lm"],
                   check=True, capture_output=True, text=True)
    res = subprocess.run([str(exe), str(d / "x.bin")], check=True, capture_output=True)
    out = np.frombuffer(res.stdout, np.float32)
    macros = subprocess.run(["gcc", *cflags, "-dM", "-E", "-x", "c", "/dev/null"], check=True,
                            capture_output=True, text=True).stdout
    assert res.stderr.decode() == (f"v:{_path(lanes, macros, portable)} "
                                   f"h:{_path(lanes // 2, macros, portable)}")
    n = len(x)
    with np.errstate(over="ignore", invalid="ignore"):
        want_exp = np.exp(x.astype(np.float64)).astype(np.float32)
        # the scalar helper's formula in float, on a correctly rounded expf
        e = np.exp(-x.astype(np.float64)).astype(np.float32)
        want_sig = np.float32(1) / (np.float32(1) + e)
    for k, (what, want) in enumerate((("vexp", want_exp), ("vlogistic", want_sig),
                                      ("hexp", want_exp), ("hlogistic", want_sig))):
        got = out[k * n:(k + 1) * n]
        assert np.array_equal(np.isnan(got), np.isnan(x)), what      # NaN in, NaN out only
        assert np.array_equal(np.isinf(got), np.isinf(want)), what   # inf exactly where expf's
        bad = _ulps(got, want)
        worst = int(np.argmax(bad))
        assert bad[worst] <= (3 if what.endswith("exp") else 4), \
            f"{what}({x[worst]!r}) = {got[worst]!r}, want {want[worst]!r}"
        assert bad.mean() < 0.3, what                                 # 0.18 and 0.09 measured
