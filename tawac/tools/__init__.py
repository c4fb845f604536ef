"""The tools on top of the compiler: the command line (`cli`), `explain` and its
`timeline`, the machine model's `calibrate`, and the tuners (`tune`, and
`tune_triton` for Triton kernels)."""
