"""Code generation targets, each a library behind one interface (base.Target):
`c` (serial C11), `openmp`, the vector targets `avx2`, `avx512` (instruction
calls and register memories, codegen/vector.py), each also with OpenMP
(`avx2-openmp`, `avx512-openmp`), and `gemmini` (gemmini.h, run on the
functional simulator).  registry.py holds the one list; import it (or
verisched.pipeline) to look targets up by name.

This package's `__init__` imports nothing, so that importing one target's
module (or the toolchain) does not load every other target.
"""
