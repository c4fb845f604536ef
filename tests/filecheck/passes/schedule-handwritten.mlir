// A schedule written on the kernel (by hand, or by another planner) is kept by plan and
// applied by the passes: a 4-slot ring (named by its identity, `a_b`) released two
// iterations late, one consumer warp group at 200 registers, a persistent grid
// longest-first. plan checks it, marks it `planner = given` and derives what it leaves
// out by the planner's rules: the loop's MMA wait (pending 2: the lag) and the store's
// staging.
// RUN: tawac opt --split-input-file %s -p 'warp-specialize,plan,pipeline,persistent,coarse-pipeline,cooperative-consumers' | filecheck %s

// CHECK:       tile.kernel @gemm({{.*}}) attributes {tawac.schedule = #tawac.schedule<planner = given, roles = [producer wg 1 regs 24, consumer wg 1 regs 200], arefs = [a_b: depth 4 lag 2], loops = [consumer 0 expanded: [0 aref.get, 1 tile.dot, wait 1 pending 2, 2 aref.consumed]], tiles = longest_first down, stores = [c: whole], program_grid = [{cdiv = {arg = "c", dim = 0 : i64}, by = 128 : i64}, {cdiv = {arg = "c", dim = 1 : i64}, by = 128 : i64}, {const = 1 : i64}]>}
// CHECK:         aref.create "{{[a-z0-9_]+}}" : !aref.aref<[tensor<128x64xbf16>, tensor<128x64xbf16>], 4>
// CHECK:         aref.partition producer warp_groups 1 regs 24
// CHECK:           hopper.num_ctas
// CHECK:         aref.partition consumer warp_groups 1 regs 200
// CHECK:             hopper.wgmma_wait %{{.*}} pending 2
// CHECK:             aref.consumed %{{.*}}[%{{.*}}] deferred
tile.kernel @gemm(%a: !tile.tensor<?x?xbf16>, %b: !tile.tensor<?x?xbf16>, %c: !tile.tensor<?x?xbf16>) attributes {tawac.schedule = #tawac.schedule<roles = [producer wg 1 regs 24, consumer wg 1 regs 200], arefs = [a_b: depth 4 lag 2], tiles = longest_first down, program_grid = [{cdiv = {arg = "c", dim = 0 : i64}, by = 128 : i64}, {cdiv = {arg = "c", dim = 1 : i64}, by = 128 : i64}, {const = 1 : i64}]>} {
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

// Waits and store staging written by hand are kept as written: the MMA awaited right
// after it, the store straight from registers.
// CHECK-LABEL: tile.kernel @given
// CHECK-SAME:    loops = [consumer 0 expanded: [0 aref.get, 1 tile.dot, wait 1 pending 0, 2 aref.consumed]], stores = [c: registers]
// CHECK:         hopper.wgmma_wait %{{.*}} pending 0
// CHECK:         tile.store %{{.*}}, %c
tile.kernel @given(%a: !tile.tensor<?x?xbf16>, %b: !tile.tensor<?x?xbf16>, %c: !tile.tensor<?x?xbf16>) attributes {tawac.schedule = #tawac.schedule<roles = [producer wg 1 regs 24, consumer wg 1 regs 200], arefs = [a_b: depth 2], loops = [consumer 0: [0 aref.get, 1 tile.dot, wait 1 pending 0, 2 aref.consumed]], stores = [c: registers]>} {
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
