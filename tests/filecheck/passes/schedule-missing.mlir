// The passes that apply a schedule refuse a kernel without one.
// RUN: not tawac opt %s -p 'warp-specialize,pipeline' 2>&1 | filecheck %s --check-prefix=PIPE
// RUN: not tawac opt %s -p 'warp-specialize,persistent' 2>&1 | filecheck %s --check-prefix=PERS
// RUN: not tawac opt %s -p 'warp-specialize,cooperative-consumers' 2>&1 | filecheck %s --check-prefix=COOP
// RUN: not tawac opt %s -p 'warp-specialize,lower-aref' 2>&1 | filecheck %s --check-prefix=AREF
// RUN: not tawac opt %s -p 'warp-specialize,plan{schedule=magic}' 2>&1 | filecheck %s --check-prefix=PLANNER

// PIPE: schedule-missing.mlir:[[# @LINE + 6]]:1: error: pipeline: the kernel has no #tawac.schedule; run the 'plan' pass first (or write the schedule on the kernel)
// PERS: schedule-missing.mlir:[[# @LINE + 5]]:1: error: persistent: the kernel has no #tawac.schedule
// COOP: schedule-missing.mlir:[[# @LINE + 4]]:1: error: cooperative-consumers: the kernel has no #tawac.schedule
// The register budgets are part of the schedule, applied with the roles.
// AREF: error: lower-aref: the producer partition has no register budget; apply the schedule's roles first (plan, cooperative-consumers)
// PLANNER: error: unknown planner 'magic' (known: heuristic, solver, auto)
tile.kernel @gemm(%a: !tile.tensor<?x?xbf16>, %b: !tile.tensor<?x?xbf16>, %c: !tile.tensor<?x?xbf16>) {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %pid_m = tile.program_id x
  %pid_n = tile.program_id y
  %m0 = arith.muli %pid_m, %c128 : index
  %n0 = arith.muli %pid_n, %c128 : index
  %K = tile.dim %a[1] : !tile.tensor<?x?xbf16>
  %zero = arith.constant dense<0.000000e+00> : tensor<128x128xf32>
  %acc = scf.for %k = %c0 to %K step %c64 iter_args(%acc_i = %zero) -> (tensor<128x128xf32>) {
    %x = tile.load %a[%m0, %k] : !tile.tensor<?x?xbf16> -> tensor<128x64xbf16>
    %y = tile.load %b[%n0, %k] : !tile.tensor<?x?xbf16> -> tensor<128x64xbf16>
    %d = tile.dot %x, %y, %acc_i transpose_rhs : tensor<128x64xbf16>, tensor<128x64xbf16> -> tensor<128x128xf32>
    scf.yield %d : tensor<128x128xf32>
  }
  %o = arith.truncf %acc : tensor<128x128xf32> to tensor<128x128xbf16>
  tile.store %o, %c[%m0, %n0] : tensor<128x128xbf16> -> !tile.tensor<?x?xbf16>
  tile.return
}
