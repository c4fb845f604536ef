"""The support layer: what every other layer may use and that uses nothing of the
compiler (no IR): located errors (`diagnostics`), source files (`files`), the pipeline's
options (`options`), `-D` parameters (`params`), time limits (`timelimit`), the ptxas
toolchain (`ptxas`) and the compile cache on disk (`cache`)."""
