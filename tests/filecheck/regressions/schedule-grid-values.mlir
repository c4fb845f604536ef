// A hand-written schedule whose program_grid holds a value that is not grid data (a
// float, from the fuzzer's retyping of every i64): one located error from the schedule
// attribute's verifier, not a TypeError in `persistent` (fuzz finding, 2026-11-26).
// RUN: not tawac compile %s -o %t.ptx 2>&1 | filecheck %s
// RUN: test ! -e %t.ptx

// CHECK: schedule-grid-values.mlir:[[# @LINE + 2]]:{{[0-9]+}}: error: #tawac.schedule: program_grid holds 1.000000e+00 : f16: expected a list of entries of integers and names
// CHECK-NOT: Traceback
tile.kernel @gemm(%a: !tile.tensor<?x?xbf16>, %b: !tile.tensor<?x?xbf16>, %c: !tile.tensor<?x?xbf16>) attributes {tawac.schedule = #tawac.schedule<roles = [producer wg 1 regs 24, consumer wg 1 regs 200], arefs = [a_b: depth 4 lag 2], tiles = longest_first down, program_grid = [{cdiv = {arg = "c", dim = 0 : i64}, by = 128 : i64}, {cdiv = {arg = "c", dim = 1 : i64}, by = 128 : i64}, {const = 1.0 : f16}]>} {
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
