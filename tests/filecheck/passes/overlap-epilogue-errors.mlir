// A schedule that says `overlap` where overlap-epilogue cannot rotate the consumer's
// tile loop (written by hand or by a faulty planner; the heuristic planner never plans
// it there: `overlaps_epilogue`) is one located error, not a schedule silently dropped.
// RUN: not tawac opt --split-input-file %s -p 'warp-specialize,plan,pipeline,persistent,coarse-pipeline,overlap-epilogue' 2>&1 | filecheck %s

// A persistent GEMM: its first MMA is in its K loop, under no scf.if of the tile loop.
// CHECK: overlap-epilogue-errors.mlir:[[# @LINE + 1]]:1: error: overlap-epilogue: the schedule plans overlap but a tile's first MMA is neither at the top level of the consumer's tile loop nor in the `then` of a top-level scf.if (a GEMM's is in its K loop)
tile.kernel @gemm(%a: !tile.tensor<?x?xbf16>, %b: !tile.tensor<?x?xbf16>, %c: !tile.tensor<?x?xbf16>) attributes {tawac.schedule = #tawac.schedule<roles = [producer wg 1 regs 24, consumer wg 1 regs 200], arefs = [a_b: depth 4], tiles = longest_first down, overlap, program_grid = [{cdiv = {arg = "c", dim = 0 : i64}, by = 128 : i64}, {cdiv = {arg = "c", dim = 1 : i64}, by = 128 : i64}, {const = 1 : i64}]>} {
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

// -----

// Not persistent: no tile loop to rotate.
// CHECK: overlap-epilogue-errors.mlir:[[# @LINE + 1]]:1: error: overlap-epilogue: the schedule plans overlap but the consumer has no persistent tile loop (`tiles`)
tile.kernel @gemm(%a: !tile.tensor<?x?xbf16>, %b: !tile.tensor<?x?xbf16>, %c: !tile.tensor<?x?xbf16>) attributes {tawac.schedule = #tawac.schedule<roles = [producer wg 1 regs 24, consumer wg 1 regs 200], arefs = [a_b: depth 4], overlap>} {
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
