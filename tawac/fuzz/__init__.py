"""A seeded, structure-aware mutation fuzzer for `tawac compile`.

`mutate` turns the project's example and test kernels into mutants, deterministically
from (seed, index); `harness` compiles each one in a forked child and checks the rule for
bad input: a clean exit 0 or 1, one diagnostic line, no traceback, no leftover output, an
answer in time, and PTX that `ptxas -arch=sm_90a` accepts.  Run `python -m tawac.fuzz`.
"""
