"""The passes: the dump IR → the loop IR, then loop IR → loop IR, one pass per file.

In: an ``ir.Model`` (``extract/ir/ir.py``). Out: ``lower.Kernel`` s, one loop nest per array
writing a caller-owned buffer, scalar locals only (``extract/ir/code.py``). Each pass changes
the order of operations, never a value; each module's docstring shows a small before and
after. Order: ``share`` → ``inline`` (batch kernels) → ``lower`` (``bounds``, ``split``,
``interchange``, ``blocksum`` inside it) → ``winograd`` → ``peel`` → ``registers`` → ``lanes`` → ``divide``
(the batch kernels' passes are run by ``extract/emit/sources.py``). Imports ``extract.ir`` and
the bottom only.
"""
