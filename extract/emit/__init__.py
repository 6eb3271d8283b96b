"""Emit: the loop IR → C11/OpenMP and CUDA sources → a compiled cffi module.

In: ``lower.Kernel`` s (``extract/passes``) and the ``ir.Model``. Out: ``sources.Generated``
(``M.h``, ``M.c``, ``M.cu``, the cffi declarations), then ``build.load`` / ``build.build``:
``(ffi, lib)``. Modules: ``printer.py`` (the one printer for C and CUDA), ``fuse.py`` (the
parameter gradients' accumulating lane kernels, printed), ``sources.py`` (fills the Jinja
skeletons in ``templates/``), ``build.py`` (gcc, cffi, the kernel cache), ``cpu.py`` (the
processor's vector features). Imports the passes, the IRs and the bottom.
"""
