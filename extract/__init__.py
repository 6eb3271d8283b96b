"""Extract allocation-free C11/OpenMP and CUDA from an expression dump (docs/dump-format.md).

Pipeline: ``dump.parse`` (check, build the IR of ``ir``) -> ``lower.lower_to_loops`` (loop IR
of ``code``) -> ``printer`` + ``templates/`` (``sources.generate``) -> ``build`` (gcc, cffi).
"""
__version__ = "0.1.0"
