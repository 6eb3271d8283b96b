"""An ONNX backend (``onnx.backend.base.Backend``) that runs a model through the whole pipeline.

    rep = runtime.onnx_backend.prepare(onnx_model)   # import, elaborate in Agda, ∇, opt, C
    (y,) = rep.run([x])                              # the generated kernels, one sample

``prepare`` translates the graph into the model language (``extract.front.onnx``, with the
whole tensor as one sample: ``batch=False``), compiles it to a dump with the Agda elaborator,
generates and builds the C kernels and loads them with the initializers as weights; ``run``
feeds the graph inputs (in the graph's order, or by name) and returns the graph's output with
its ONNX shape. ``onnx.backend.test.BackendTest(runtime.onnx_backend.Backend, __name__)`` runs
ONNX's backend tests on it (``tests/test_onnx.py``).
"""
from __future__ import annotations

import numpy as np

try:
    from onnx.backend.base import Backend as _Base
    from onnx.backend.base import BackendRep as _BaseRep
except ModuleNotFoundError:  # pragma: no cover - onnx is optional
    _Base = _BaseRep = object

__all__ = ["Backend", "BackendRep", "prepare", "run_model", "supports_device"]


_FLOAT = (1, 11)  # TensorProto.FLOAT, DOUBLE


# float operands that are parameters of the operator, not data: a Resize's roi and scales
_PARAMETERS = {"Resize": (1, 2)}


def _integer_inputs(model) -> list[str]:
    """The graph inputs specialised per value: the integer ones, and the float ones that only
    an operator's parameter reads (``_PARAMETERS``)."""
    init = {i.name for i in model.graph.initializer}
    readers: dict[str, list] = {}
    for node in model.graph.node:
        for k, name in enumerate(node.input):
            readers.setdefault(name, []).append((node.op_type, k))

    def parameter(name):
        uses = readers.get(name, [])
        return bool(uses) and all(k in _PARAMETERS.get(op, ()) for op, k in uses)
    # tensors only: a sequence or optional input is left to the importer, which names it
    return [vi.name for vi in model.graph.input
            if vi.name not in init and vi.type.HasField("tensor_type")
            and (vi.type.tensor_type.elem_type not in _FLOAT or parameter(vi.name))]


class _Specialising(_BaseRep):
    """A model with integer graph inputs (a Reshape's shape, a reduction's axes): the model
    language has static shapes, so each distinct value of those inputs is imported and
    compiled as a constant (an initializer), once."""

    def __init__(self, model, options):
        self.model, self.options = model, options
        self.ints = _integer_inputs(model)
        self.reps: dict = {}

    def run(self, inputs, **kwargs):
        import onnx
        from onnx import numpy_helper
        names = [vi.name for vi in self.model.graph.input
                 if vi.name not in {i.name for i in self.model.graph.initializer}]
        given = dict(inputs) if isinstance(inputs, dict) else dict(zip(names, inputs))
        key = tuple((n, np.asarray(given[n]).tobytes()) for n in self.ints)
        if key not in self.reps:
            m = onnx.ModelProto()
            m.CopyFrom(self.model)
            keep = [vi for vi in m.graph.input if vi.name not in self.ints]
            del m.graph.input[:]
            m.graph.input.extend(keep)
            for n in self.ints:
                m.graph.initializer.append(numpy_helper.from_array(np.asarray(given[n]), n))
            self.reps[key] = Backend.prepare(m, **self.options)
        rest = {n: a for n, a in given.items() if n not in self.ints}
        return self.reps[key].run(rest)


class BackendRep(_BaseRep):
    def __init__(self, imported, model, output_shape):
        self.imported = imported
        self.model = model
        self.output_shape = output_shape

    def run(self, inputs, **kwargs):
        imp = self.imported
        names = list(imp.inputs)
        if isinstance(inputs, dict):
            given = dict(inputs)
        else:
            if isinstance(inputs, np.ndarray):
                inputs = [inputs]
            if len(inputs) != len(names):
                raise ValueError(f"the model takes {len(names)} inputs ({', '.join(names)}), "
                                 f"got {len(inputs)}")
            given = dict(zip(names, inputs))
        feed = {}
        for onnx_name, a in given.items():
            if onnx_name not in imp.input_names:
                raise ValueError(f"unknown input {onnx_name!r} (inputs: {', '.join(names)})")
            a = np.asarray(a, dtype=self.model.dtype)
            shape = self.model.spec.input_shapes[imp.input_names[onnx_name]]
            per = a.reshape((len(a), *shape)) if imp.batch else a.reshape((1, *shape))
            feed[imp.input_names[onnx_name]] = per
        y = self.model.run(feed)
        if imp.batch:
            return (y.reshape((len(y), *self.output_shape[1:])),)
        return (y.reshape(self.output_shape),)


class Backend(_Base):
    @classmethod
    def is_compatible(cls, model, device="CPU", **kwargs):
        return device == "CPU"

    @classmethod
    def supports_device(cls, device):
        return device == "CPU"

    @classmethod
    def prepare(cls, model, device="CPU", batch=False, loss="sqerr", precision=None, **kwargs):
        from extract.front.onnx import import_onnx
        from .model import load
        from .spec import _compiled
        if hasattr(model, "graph") and _integer_inputs(model):
            return _Specialising(model, dict(batch=batch, loss=loss, precision=precision))
        imp = import_onnx(model, batch=batch, loss=loss)
        if precision is None:
            precision = "f32"
            for vi in model.graph.input if hasattr(model, "graph") else []:
                if vi.type.tensor_type.elem_type == 11:  # float64
                    precision = "f64"
        spec = _compiled(imp.text, f"<{imp.name}.model>")
        m = load(spec, weights=dict(imp.params), precision=precision)
        shape = imp.output_shape
        if hasattr(model, "graph"):
            t = model.graph.output[0].type.tensor_type
            dims = [d.dim_value for d in t.shape.dim] if t.HasField("shape") else None
            if dims is not None and all(dims) and np.prod(dims) == np.prod(shape):
                shape = tuple(dims)
        return BackendRep(imp, m, shape)

    @classmethod
    def run_model(cls, model, inputs, device="CPU", **kwargs):
        return cls.prepare(model, device, **kwargs).run(inputs)

    @classmethod
    def run_node(cls, node, inputs, device="CPU", outputs_info=None, **kwargs):
        raise NotImplementedError("run_node: use prepare on a model")


prepare = Backend.prepare
run_model = Backend.run_model
supports_device = Backend.supports_device
