"""Extract allocation-free C11/OpenMP and CUDA from an expression dump (docs/dump-format.md).

One subpackage per stage (extract/README.md), each importing only ``ir`` and the stages before it:
``front`` (model file -> dump) -> ``ir`` (``dump.parse``: the dump checked, its IR in ``ir``;
the loop IR in ``code``) -> ``passes`` (``lower.lower_to_loops`` and the rest: loop IR ->
loop IR) -> ``emit`` (``printer``, ``sources.generate`` filling ``emit/templates/``, ``build``:
gcc, cffi) -> ``check`` (the generated code over a finite field); ``render`` shows the dump
IR as mathematics, ``export`` writes its forward chain as an ONNX graph. ``paths`` and ``limits`` sit at the bottom, importable by all.
"""
__version__ = "0.1.0"
