"""Check: the generated C and CUDA against the dump, over the prime field GF(2^61 - 1).

In: a directory of generated sources (``M.h``, ``M.c``, ``M.cu``) and the dump they came from.
Out: a report (``python -m extract.check.validate DIR``; exit status 1 on any difference).
Modules: ``validate.py`` (compile over the field, run, compare), ``field.py`` (an evaluator of
the dump over the field, independent of the extractor), ``cuda_host.py`` (the ``.cu`` compiled
for the CPU against ``extract/emit/templates/cuda_host/cuda_host.h``). Imports ``extract.emit``,
the IRs and the bottom.
"""
