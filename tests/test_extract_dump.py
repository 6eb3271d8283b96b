"""extract/ir/dump.py: reading and checking dumps; one clear error with the JSON path per problem,
and nothing written by the CLI when a dump is malformed."""
from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path

import pytest

import oracle as oracle_mod
from extract.ir import dump, ir

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data"
HAND = sorted(DATA.glob("*.json"))


def dot() -> dict:
    return json.loads((DATA / "dot_hand.json").read_text())


@pytest.mark.parametrize("path", HAND, ids=lambda p: p.stem)
def test_hand_dumps_parse(path):
    data = json.loads(path.read_text())
    m = dump.parse(data)
    assert m.name == data["model"]
    assert [a.name for a in m.chain] == [b["name"] for b in data["chain"]]
    assert [g.name for g in m.gradients] == [g["name"] for g in data["gradients"]]
    for a, b in zip(m.chain, data["chain"]):
        assert a.shape == ir.shape_from_json(b["shape"]) == a.expr.shape


def test_variables_resolved_by_name():
    m = dump.parse(dot())
    r = m.chain[0].expr
    assert isinstance(r, ir.Sum) and r.var == "t0"
    mul = r.body
    assert (mul.a.a.name, mul.a.a.kind) == ("a", "context")
    assert (mul.b.a.name, mul.b.a.kind) == ("b", "context")
    assert (mul.a.i.name, mul.a.i.kind) == ("t0", "index")
    d_a = m.gradients[1].expr               # imaps i0. d_r * b[i0]
    assert d_a.body.a.name == "d_r" and d_a.body.a.kind == "grad"
    assert d_a.body.b.a.name == "b"
    assert "sum t0<5>. a[t0] * b[t0]" == ir.show(r)


def _mutated(edit) -> dict:
    d = dot()
    edit(d)
    return d


R = "$.chain[0].expr"   # r = sum t0. sels a t0 * sels b t0


CASES = {
    "missing key": (lambda d: d["chain"][0]["expr"]["body"].pop("fn"),
                    f"{R}.body", "missing key 'fn'"),
    "missing top-level key": (lambda d: d.pop("seed"), "$", "missing key 'seed'"),
    "unknown node": (lambda d: d["chain"][0]["expr"]["body"]["a"].update(op="conv"),
                     f"{R}.body.a.op", "unknown node 'conv'"),
    "ill-shaped child": (lambda d: d["chain"][0]["expr"]["body"].update(
        b={"op": "zero", "sort": "ar", "shape": 2}), f"{R}.body.b",
        "array of shape 2 where 1 is expected"),
    "wrong declared shape": (lambda d: d["chain"][0]["expr"]["body"]["a"].update(shape=3),
                             f"{R}.body.a.shape", "has shape 1, declared 3"),
    "index of wrong shape": (lambda d: d["chain"][0]["expr"]["body"]["a"]["i"].update(
        shape=[5, 1]), f"{R}.body.a.i.shape", "declared [5, 1]"),
    "variable out of scope": (lambda d: d["chain"][0]["expr"]["body"]["b"]["a"].update(idx=7),
                              f"{R}.body.b.a.idx", "variable 7 out of scope"),
    "unsupported version": (lambda d: d.update(version=7), "$.version",
                            "unsupported dump version 7"),
    "const before version 3": (lambda d: (d.update(version=2), d["context"][1].update(role="const")),
                               "$.context[1].role", "(const is in version 3)"),
    "unknown role": (lambda d: (d.update(version=3), d["context"][1].update(role="constant")),
                     "$.context[1].role", "role must be 'input', 'param' or 'const', got 'constant'"),
    "sort mismatch": (lambda d: d["chain"][0]["expr"]["body"]["a"]["i"].update(sort="ar"),
                      f"{R}.body.a.i.sort", "sort 'ix', declared 'ar'"),
    "bad bin fn": (lambda d: d["chain"][0]["expr"]["body"].update(fn="pow"), f"{R}.body.fn",
                   "'plus', 'mul' or 'max'"),
    "duplicate name": (lambda d: d["chain"][0].update(name="a"), "$.chain[0].name",
                       "already used"),
    "underscore name": (lambda d: d["context"][1].update(name="_float"), "$.context[1].name",
                        "underscore"),
    "gradient order": (lambda d: d["gradients"].reverse(), "$.gradients[0].wrt",
                       "expected the gradient with respect to 'r'"),
    "forward uses placeholder": (lambda d: d["chain"].append(
        {"name": "q", "shape": 1, "expr": {"op": "var", "sort": "ar", "shape": 1, "idx": 1}}),
        "$.chain[1].expr", "derivative placeholder"),
    "seed of unknown binding": (lambda d: d["seed"].update(of="zz"), "$.seed.of",
                                "not a chain binding"),
    "bad shape leaf": (lambda d: d["context"][1].update(shape=-1), "$.context[1].shape",
                       "natural number"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_malformed_dump_one_clear_error(case):
    edit, path, text = CASES[case]
    with pytest.raises(dump.DumpError) as info:
        dump.parse(_mutated(edit))
    assert info.value.path == path, str(info.value)
    assert text in info.value.message
    assert str(info.value).startswith(path + ": ")
    assert "\n" not in str(info.value)


def test_relation_structure_checked():
    # slide with s and p of different tree structure
    d = json.loads((DATA / "ops_slide.json").read_text())
    found = []

    def walk(x, path):
        if isinstance(x, dict):
            if x.get("op") == "slide" and not found:
                found.append(path)
                x["p"] = [x["p"], 1] if not isinstance(x["p"], list) else 3
            for k, v in x.items():
                walk(v, f"{path}.{k}")
        elif isinstance(x, list):
            for n, v in enumerate(x):
                walk(v, f"{path}[{n}]")
    walk(d, "$")
    assert found
    with pytest.raises(dump.DumpError) as info:
        dump.parse(d)
    assert info.value.path == found[0]
    assert "tree structure" in info.value.message


def test_constant_positions_parse():
    m = dump.parse(json.loads((DATA / "pad_const.json").read_text()))
    p = m.chain[0].expr                       # p = backslide (ix_const [3, 3] [1, 1]) x
    assert isinstance(p, ir.Backslide) and p.shape == (5, 6)
    assert p.i == ir.IxConst((3, 3), (1, 1))
    assert ir.show(p) == "backslide([1, 1], x)"
    assert ir.dump_tree(p.i) == "IxConst ix [3, 3] (pos=[1, 1])"


def test_elementwise_functions_parse():
    m = dump.parse(json.loads((DATA / "unary.json").read_text()))
    fns = {b.name: b.expr.fn for b in m.chain if isinstance(b.expr, ir.Un)}
    assert fns == {"r": "relu", "sg": "logistic", "e": "exp", "rc": "recip"}
    assert ir.show(m.chain[1].expr) == "relu(a)"
    assert ir.dump_tree(m.chain[1].expr).splitlines()[0] == "Un ar [2, 3] (fn=relu)"


def test_sqrt_parses_in_a_version_4_dump():
    d = json.loads((DATA / "sqrt.json").read_text())
    assert d["version"] == 4
    m = dump.parse(d)
    r, q = m.chain[1].expr, m.chain[2].expr
    assert isinstance(r, ir.Un) and r.fn == "sqrt" and r.shape == (2, 3)
    assert ir.show(r) == "sqrt(one + (a * a))"
    assert ir.dump_tree(q.body).splitlines()[0] == "Un ar 1 (fn=sqrt)"
    # its gradient as the spec writes it: the seed times recip(sqrt u + sqrt u)
    assert "recip(sqrt(one + (a * a)) + sqrt(one + (a * a)))" in ir.show(m.gradients[3].expr)


def assert_newer_node_refused(d: dict, version: int, path: str, op: str, since: int) -> None:
    """Dump ``d`` said to be of ``version`` is refused at ``path``: its node ``op`` is newer."""
    d["version"] = version
    with pytest.raises(dump.DumpError) as info:
        dump.parse(d)
    assert info.value.path == path, str(info.value)
    assert info.value.message == (f"node '{op}' is in version {since}, but the dump says "
                                  f"version {version}")


@pytest.mark.parametrize("version", [1, 2, 3])
def test_sqrt_before_version_4_is_one_clear_error_naming_where(version):
    """§7: sqrt is in version 4; a dump that says an earlier version and holds one is refused
    at the node, as a const in a version 1 or 2 dump is at its role."""
    d = json.loads((DATA / "sqrt.json").read_text())
    assert_newer_node_refused(d, version, "$.chain[1].expr.op", "sqrt", 4)
    # in a gradient too (the forward chain's sqrt made a relu)
    d["chain"][1]["expr"]["op"] = "relu"
    d["chain"][2]["expr"]["body"]["op"] = "exp"
    with pytest.raises(dump.DumpError) as info:
        dump.parse(d)
    assert info.value.path.startswith("$.gradients[3].expr.") and \
        info.value.path.endswith(".op"), str(info.value)
    d["version"] = 4
    dump.parse(d)


def test_argmax_and_detach_parse_in_a_version_5_dump():
    d = json.loads((DATA / "lse_detach.json").read_text())
    assert d["version"] == 5
    m = dump.parse(d)
    mx = m.chain[1].expr                    # detach(a[argmax a0<10>. a[a0]])
    assert isinstance(mx, ir.Un) and mx.fn == "detach"
    am = mx.a.i
    assert isinstance(am, ir.ArgMax) and am.sort == "ix" and am.shape == 10 == am.s
    assert ir.show(mx) == "detach(a[argmax a0<10>. a[a0]])"
    p = dump.parse(json.loads((DATA / "maxpool.json").read_text()))
    assert "argmax a2<[4, 4]>." in ir.show(p.chain[0].expr)


def test_erf_and_derf_parse_in_a_version_6_dump():
    m = dump.parse(json.loads((DATA / "erf.json").read_text()))
    assert m.version == 6
    assert ir.show(m.chain[2].expr) == "derf(v)"
    assert "erf(" in ir.show(m.chain[1].expr)


@pytest.mark.parametrize("version", [3, 4, 5])     # (a const needs version 3)
def test_erf_and_derf_before_version_6_are_one_clear_error_naming_where(version):
    """§7: erf and derf are in version 6; an earlier dump holding one is refused at the node."""
    d = json.loads((DATA / "erf.json").read_text())
    assert_newer_node_refused(d, version, "$.chain[1].expr.a.b.b.op", "erf", 6)
    d["chain"][1]["expr"]["a"]["b"]["b"]["op"] = "exp"
    assert_newer_node_refused(d, version, "$.chain[2].expr.op", "derf", 6)


def _argmax_dump() -> dict:
    return json.loads((DATA / "maxall.json").read_text())      # m = x[argmax a0<1000>. x[a0]]


@pytest.mark.parametrize("version", [1, 2, 3, 4])
def test_argmax_and_detach_before_version_5_are_one_clear_error_naming_where(version):
    """§7: argmax and detach are in version 5; an earlier dump holding one is refused at the
    node, as sqrt is before version 4."""
    assert_newer_node_refused(_argmax_dump(), version, "$.chain[0].expr.i.op", "argmax", 5)
    assert_newer_node_refused(json.loads((DATA / "lse_detach.json").read_text()), version,
                              "$.chain[1].expr.op", "detach", 5)


@pytest.mark.parametrize("case, edit, path, text", [
    ("body not of shape 1",
     lambda e: e.update(body={"op": "var", "sort": "ar", "shape": 1000, "idx": 1}),
     "$.chain[0].expr.i.body", "array of shape 1000 where 1 is expected"),
    ("a leaf 0", lambda e: e.update(s=0, shape=0),
     "$.chain[0].expr.i.s", "argmax over shape 0: a shape with a leaf 0 has no position"),
    ("a product with a leaf 0", lambda e: e.update(s=[3, 0], shape=[3, 0]),
     "$.chain[0].expr.i.s", "a shape with a leaf 0 has no position"),
    ("declared ar", lambda e: e.update(sort="ar"), "$.chain[0].expr.i.sort",
     "node 'argmax' has sort 'ix', declared 'ar'"),
])
def test_malformed_argmax_is_one_clear_error(case, edit, path, text):
    d = _argmax_dump()
    edit(d["chain"][0]["expr"]["i"])
    with pytest.raises(dump.DumpError) as info:
        dump.parse(d)
    assert info.value.path == path and text in info.value.message, str(info.value)
    with pytest.raises(oracle_mod.DumpError):        # the oracle refuses it too
        oracle_mod.check_shapes(d)


@pytest.mark.parametrize("op", ["tanh", "Exp", "un"])
def test_unknown_function_is_one_clear_error_naming_it_and_where(op):
    d = json.loads((DATA / "unary.json").read_text())
    assert d["chain"][1]["expr"]["op"] == "relu"
    d["chain"][1]["expr"]["op"] = op
    with pytest.raises(dump.DumpError) as info:
        dump.parse(d)
    assert info.value.path == "$.chain[1].expr.op"
    assert f"unknown node {op!r}" in info.value.message


def _rename(d: dict, where: str, name: str) -> None:
    """The first of ``d[where]`` renamed ``name``, with what names it (a gradient's wrt, the
    outputs, the data)."""
    old = d[where][0]["name"]
    d[where][0]["name"] = name
    for g in d["gradients"]:
        if g.get("wrt") == old:
            g["wrt"] = name
        if g["name"] == f"d_{old}":
            g["name"] = f"d_{name}"
    for key in ("outputs", "data"):
        for k, v in (d.get(key) or {}).items():
            if v == old:
                d[key][k] = name
    if d.get("seed", {}).get("of") == old:
        d["seed"]["of"] = name


@pytest.mark.parametrize("name", ["exp", "log", "logf", "recip", "relu", "step", "sqrt", "sqrtf",
                                  "vsqrt", "hsqrt_at", "vsqrt_x",
                                  # what the lane kernels, the shared group and CUDA use
                                  "memcpy", "vreal", "hreal", "vload", "hsplat", "vstore_v",
                                  "part", "nparts", "BLOCK", "STRIDE_GRADS", "blockIdx",
                                  # C++'s (the CUDA compiles as C++)
                                  "nullptr", "and", "constexpr", "PK_CUDA_HOST_H"])
@pytest.mark.parametrize("where", ["chain", "context"])
def test_names_of_the_functions_are_accepted(name, where):
    """No name reaches C as written (extract/ir/names.py): the generated code's own names, C's
    and C++'s keywords are a model's names like any other."""
    d = json.loads((DATA / "unary.json").read_text())
    _rename(d, where, name)
    assert name in dump.parse(d).arrays


@pytest.mark.parametrize("shape", [[10 ** 9, 10 ** 9], [2 ** 28, 2 ** 28]])  # 2^56 > MAX
def test_arrays_past_what_the_structs_hold_are_refused(shape):
    """The lane structs hold 16 samples' worth of an array, in double at most, and a C object
    stops at PTRDIFF_MAX bytes: (2^63 − 1) / 128 elements. The error is at the array's name,
    with its shape and size."""
    d = dot()
    d["context"][1]["shape"] = shape
    n = shape[0] * shape[1]
    with pytest.raises(dump.DumpError, match=rf"param 'a' of shape {shape[0]}×{shape[1]} holds "
                                             rf"{n:,} elements, more than the generated "
                                             r"C's structs hold \(72,057,594,037,927,935: "
                                             r"9,223,372,036,854,775,807 bytes over 16 lanes "
                                             r"of doubles\)$") as info:
        dump.parse(d)
    assert info.value.path == "$.context[1].name"


def test_a_group_past_what_the_structs_hold_names_its_largest_array():
    d = dot()
    d["context"][1]["shape"] = [2 ** 28, 2 ** 27]           # 2^55 + (2^55 + 2^28) > 2^56 - 1
    d["context"][2]["shape"] = [2 ** 28, 2 ** 27 + 1]
    with pytest.raises(dump.DumpError, match=r"the parameters hold 72,057,594,306,363,392 "
                                             r"elements, more than the generated C's structs "
                                             r"hold \(72,057,594,037,927,935: .*\); the largest "
                                             r"is param 'b' of shape 268435456×134217729 "
                                             r"\(36,028,797,287,399,424 elements\)$") as info:
        dump.parse(d)
    assert info.value.path == "$.context[2].name"


def test_buffers_past_the_memory_budget_are_refused(monkeypatch):
    """One lane group's buffers (a parameter and its gradient, 16 samples' inputs, bindings and
    their gradients, in float) beyond $PROVED_KERNELS_MEMORY: refused at the array that needs
    most, with its shape and size; within it, parsed."""
    d = json.loads((DATA / "unary.json").read_text())
    m = dump.parse(d)
    need = 4 * (sum(2 * ir.size(a.shape) for a in m.params)
                + sum(16 * ir.size(a.shape) for a in m.inputs)
                + sum(32 * ir.size(a.shape) for a in m.chain)
                + sum(ir.size(a.shape) for a in m.context if a.role == "const"))
    monkeypatch.setenv(dump.ENV_MEMORY, str(need))
    dump.parse(d)
    monkeypatch.setenv(dump.ENV_MEMORY, str(need - 1))
    with pytest.raises(dump.DumpError, match=r"the kernels' buffers for 16 samples need .* "
                                             r"in float, more than the memory budget of .* "
                                             r"\(\$PROVED_KERNELS_MEMORY, else this machine's "
                                             r"memory\); the largest is binding '\w+' of "
                                             r"shape [\d×]+ \(\d+ elements\)$") as info:
        dump.parse(d)
    assert info.value.path.startswith("$.chain[")
    monkeypatch.setenv(dump.ENV_MEMORY, "2G")
    assert dump.memory_budget() == 2 * 2 ** 30
    monkeypatch.setenv(dump.ENV_MEMORY, "lots")
    with pytest.raises(dump.DumpError, match="must be a number of bytes"):
        dump.parse(d)


def test_arrays_past_int_indices_pass_the_size_check():
    """Past int's range the generated C indexes in ptrdiff_t (extract/emit/printer.py): an
    array of 2.5 G elements, and a group of them, are not refused by size (the memory budget,
    checked after the bindings, may refuse them)."""
    d = dot()
    d["context"][1]["shape"] = [50000, 50000]
    d["context"][2]["shape"] = [50000, 50000]
    with pytest.raises(dump.DumpError) as info:               # the expressions' shapes differ
        dump.parse(d)
    assert "structs hold" not in str(info.value) and "int indices" not in str(info.value)


@pytest.mark.parametrize("name", ["_x", "_X", "a__b", "x__"])
def test_names_c_reserves_are_refused(name):
    d = json.loads((DATA / "unary.json").read_text())
    d["context"][0]["name"] = name
    with pytest.raises(dump.DumpError, match="underscore.*reserved by C"):
        dump.parse(d)


@pytest.mark.parametrize("name", ["lanes", "hlanes", "c_lanes", "b_hlanes_acc", "lanes_x"])
@pytest.mark.parametrize("where", ["chain", "context"])
def test_names_with_the_word_lanes_are_accepted(name, where):
    """Binding c's lane kernel is M_forward_a1_c_lanes, binding c_lanes's M_forward_a7_c_lanes
    (extract/ir/names.py): they cannot clash."""
    d = json.loads((DATA / "unary.json").read_text())
    _rename(d, where, name)
    assert name in dump.parse(d).arrays


@pytest.mark.parametrize("pos,where,text", [
    ([1, 3], ".pos[1]", "position leaf 3 is out of range for a dimension of 3"),
    ([3, 0], ".pos[0]", "position leaf 3 is out of range for a dimension of 3"),
    ([1, -1], ".pos[1]", "position leaf -1 is out of range"),
    ([1, 1.0], ".pos[1]", "must be an integer"),
    ([1, True], ".pos[1]", "must be an integer"),
    (1, ".pos", "a position of shape [3, 3] is a two-element array"),
    ([1, 1, 1], ".pos", "two-element array"),
    ([1, [0, 0]], ".pos[1]", "must be an integer"),
])
def test_constant_outside_its_shape_is_rejected_with_its_path(pos, where, text):
    d = json.loads((DATA / "pad_const.json").read_text())
    i = d["chain"][0]["expr"]["i"]
    assert i["op"] == "ix_const"
    i["pos"] = pos
    with pytest.raises(dump.DumpError) as info:
        dump.parse(d)
    assert info.value.path == "$.chain[0].expr.i" + where, str(info.value)
    assert text in info.value.message


def test_schema_backstop_reports_path():
    d = dot()
    d["chain"][0]["comment"] = "not allowed"
    with pytest.raises(dump.DumpError) as info:
        dump.parse(d)
    assert info.value.path == "$.chain[0]"


def test_not_json(tmp_path):
    p = tmp_path / "bad.json"
    p.write_text("{nope")
    with pytest.raises(dump.DumpError, match=r"^\$: not JSON"):
        dump.load(p)


@pytest.mark.parametrize("case", ["unknown node", "variable out of scope",
                                  "unsupported version", "ill-shaped child"])
def test_cli_malformed_exits_1_and_writes_nothing(tmp_path, case):
    edit, path, text = CASES[case]
    src = tmp_path / "dot.json"
    src.write_text(json.dumps(_mutated(edit)))
    out = tmp_path / "out"
    res = subprocess.run([sys.executable, "-m", "extract", "dot", "--dump", str(src),
                          "--out", str(out), "--no-build"], cwd=ROOT, capture_output=True,
                         text=True)
    assert res.returncode == 1
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and path in lines[0] and text in lines[0], res.stderr
    assert not out.exists()


def test_ir_debug_printer():
    m = dump.parse(dot())
    tree = ir.dump_tree(m.chain[0].expr)
    assert tree.splitlines()[0] == "Sum ar 1 (var=t0, s=5)"
    assert "Var ar 5 (name=a, kind=context)" in tree
    d = copy.deepcopy(m)
    assert d.chain == m.chain and hash(m.chain[0].expr) == hash(d.chain[0].expr)


@pytest.mark.parametrize("where", ["op", "seed", "output"])
def test_a_list_where_a_name_belongs_is_a_dump_error(where):
    """Non-string values in name positions are reported like any other malformed input, not as
    a TypeError from hashing a list."""
    d = json.loads((Path(__file__).parent / "data" / "dot_hand.json").read_text())
    if where == "op":
        d["chain"][0]["expr"]["op"] = ["sum"]
        path = "$.chain[0].expr.op"
    elif where == "seed":
        d["seed"]["of"] = ["r"]
        path = "$.seed.of"
    else:
        d["outputs"] = {"prediction": ["r"]}
        path = "$.outputs.prediction"
    with pytest.raises(dump.DumpError) as e:
        dump.parse(d)
    assert path in str(e.value)


@pytest.mark.parametrize("raw,name", [
    ("/conv1/Conv_output_0", "conv1_Conv_output_0"),    # no leading or double underscore
    ("onnx::MatMul_12", "onnx_MatMul_12"),
    ("x_lanes", "x_lanes0"), ("hlanes", "hlanes0"),      # kernel names end in _lanes
    ("memcpy", "memcpy"), ("float", "float"), ("7up", "t7up"), ("d_x", "vd_x"),
])
def test_onnx_names_are_names_the_c_can_take(raw, name):
    from extract.front.onnx.core import _Importer
    got = _Importer._ident(None, raw, set())
    assert got == name and dump.name_problem(got) is None


def test_the_schema_is_checked_once_per_dump(monkeypatch):
    """The schema backstop costs seconds on a large dump: a dump that passed is remembered in
    the cache, and loading it again skips it; another dump is checked."""
    validator, schema_hash = dump._validator()
    calls = []

    class Counting:
        def iter_errors(self, data):
            calls.append(data["generator"])
            return validator.iter_errors(data)

    monkeypatch.setattr(dump, "_validator", lambda: (Counting(), schema_hash))
    d = dot()
    d["generator"] = f"test {id(calls)}"  # a dump no other test has checked
    dump.parse(d)
    dump.parse(copy.deepcopy(d))
    assert calls == [d["generator"]]
    d["generator"] += " again"
    dump.parse(d)
    assert calls == [f"test {id(calls)}", d["generator"]]


# ------------------------------------------------------------------------------------------
# depth: recursion on a term's depth is bounded, with one error naming the limit


def deep_dump_text(n: int, fn: str = "relu") -> str:
    """A dump whose one binding is ``fn`` applied ``n`` times to a parameter (n + 1 nodes),
    written as text (json.dumps recurses too)."""
    e = ('{"op":"%s","sort":"ar","shape":3,"a":' % fn) * n + \
        '{"op":"var","sort":"ar","shape":3,"idx":0}' + "}" * n
    one = '{"op":"one","sort":"ar","shape":3}'
    return ('{"format":"ad-expression-dump","version":5,"model":"deep","generator":"test",'
            '"context":[{"name":"x","shape":3,"role":"param"}],'
            '"chain":[{"name":"r","shape":3,"expr":' + e + '}],'
            '"seed":{"of":"r","expr":' + one + '},'
            '"gradients":[{"name":"d_r","wrt":"r","shape":3,"expr":' + one + '},'
            '{"name":"d_x","wrt":"x","shape":3,"expr":' + one + '}]}')


def test_depth_limit_parses_up_to_it_and_refuses_past_it(tmp_path):
    """An expression of MAX_DEPTH nodes parses and lowers; one node more is a DumpError at the
    binding's expression naming the limit; JSON nested 5,000 deep is refused before decoding,
    naming its depth (it crashed the interpreter at the raised recursion limit)."""
    from extract.emit.sources import generate
    m = dump.parse(dump.loads(deep_dump_text(dump.MAX_DEPTH - 1)))
    generate(m, "f32")
    with pytest.raises(dump.DumpError, match=r"nested more than 1000 nodes deep") as e:
        dump.parse(dump.loads(deep_dump_text(dump.MAX_DEPTH)))
    assert e.value.path == "$.chain[0].expr"
    path = tmp_path / "deep.json"
    path.write_text(deep_dump_text(5000))
    with pytest.raises(dump.DumpError, match=r"nests 5,00\d levels deep, more than the 2,100"):
        dump.load(path)
    assert dump.json_depth('{"a": ["[[[{", [1, {"b": "]]"}]]}') == 4


def test_json_recursion_is_a_dump_error(monkeypatch):
    """json.loads recurses: past the recursion limit it raises RecursionError, reported as a
    DumpError naming the limit (here with the depth pre-check switched off)."""
    monkeypatch.setattr(dump, "json_depth", lambda text: 0)
    with pytest.raises(dump.DumpError, match="nests too deeply to decode"):
        dump.loads("[" * 200_000 + "]" * 200_000)


def test_cli_on_a_dump_nested_5000_deep_is_one_line(tmp_path):
    path = tmp_path / "deep.json"
    path.write_text(deep_dump_text(5000))
    res = subprocess.run([sys.executable, "-m", "extract", str(path), "--no-build", "--out",
                          str(tmp_path / "out")], capture_output=True, text=True, cwd=ROOT,
                         timeout=300)
    assert res.returncode == 1, res.stderr[-2000:]
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: $: the JSON nests 5,00"), lines
    assert not (tmp_path / "out").exists()


def test_oracle_refuses_past_its_depth_and_evaluates_up_to_it():
    import numpy as np
    with pytest.raises(oracle_mod.DumpError, match="nested 5,001 nodes deep, more than the 1,000"):
        oracle_mod.load(deep_dump_text(5000))
    with pytest.raises(oracle_mod.DumpError, match="too deeply to decode"):
        oracle_mod.load(deep_dump_text(200_000))
    out = oracle_mod.evaluate(deep_dump_text(oracle_mod.MAX_DEPTH - 1), {"x": [-1.0, 0.5, 2.0]})
    np.testing.assert_array_equal(out["r"], [0.0, 0.5, 2.0])


def test_lowering_refuses_an_ir_deeper_than_its_limit(monkeypatch):
    """The passes' own limit (an IR can be deeper than a dump's 1,000 nodes when a binding is
    computed where it is read): at MAX_IR_DEPTH the kernels generate, past it one
    ExtractError naming the binding and the depth. ir.depth is iterative and measures a
    shared subterm once (AD's x * x at every level is not 2^n)."""
    from extract.passes import lower
    from extract.emit.sources import generate
    monkeypatch.setattr(dump, "MAX_DEPTH", 10_000)
    monkeypatch.setattr(dump, "MAX_JSON_DEPTH", 30_000)
    generate(dump.parse(dump.loads(deep_dump_text(lower.MAX_IR_DEPTH - 1))), "f32")
    with pytest.raises(lower.ExtractError, match=r"^r: the expression is 2,001 nodes deep .* "
                                                  r"more than the 2,000 the passes walk"):
        generate(dump.parse(dump.loads(deep_dump_text(lower.MAX_IR_DEPTH))), "f32")
    x = ir.Var(3, "x", "context")
    e = x
    for _ in range(60):
        e = ir.Bin(3, "mul", e, e)
    assert ir.depth(e) == 61 and ir.depth(ir.Un(3, "relu", e)) == 62
