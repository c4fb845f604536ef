// Each pass records its decisions in the kernel's #tawac.schedule.
// RUN: tawac opt %s -p 'warp-specialize,pipeline{stages=3 mma-depth=1}' | filecheck %s --check-prefix=PIPE
// RUN: tawac opt %s -p 'warp-specialize,pipeline{stages=2 mma-depth=0},persistent' | filecheck %s --check-prefix=PERS
// RUN: tawac opt %s -p 'warp-specialize,pipeline{stages=3 mma-depth=0},cooperative-consumers,lower-aref' | filecheck %s --check-prefix=AREF
// RUN: tawac opt %s -p 'warp-specialize,pipeline{stages=3 mma-depth=0},cooperative-consumers,lower-aref,tma-store' | filecheck %s --check-prefix=STORE

// PIPE:  tile.kernel @gemm({{.*}}) attributes {tawac.schedule = #tawac.schedule<stages = 3, mma_depth = 1>}
// PERS:  tile.kernel @gemm({{.*}}) attributes {tawac.schedule = #tawac.schedule<stages = 2, mma_depth = 0, program_grid = [{cdiv = {arg = "c", dim = 0 : i64}, by = 128 : i64}, {cdiv = {arg = "c", dim = 1 : i64}, by = 256 : i64}, {const = 1 : i64}]>}
// Rings: 3 x (16 KiB + 32 KiB) + 48 bytes of mbarriers.
// AREF:  tile.kernel @gemm({{.*}}) attributes {tawac.schedule = #tawac.schedule<stages = 3, mma_depth = 0, smem_bytes = 147504>}
// The 128x256 bf16 staging tile (64 KiB) starts on the next KiB.
// STORE: tile.kernel @gemm({{.*}}) attributes {tawac.schedule = #tawac.schedule<stages = 3, mma_depth = 0, smem_bytes = 214016>}
tile.kernel @gemm(%a: !tile.tensor<?x?xbf16, ["M", "K"]>, %b: !tile.tensor<?x?xbf16, ["N", "K"]>, %c: !tile.tensor<?x?xbf16, ["M", "N"]>) {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %c256 = arith.constant 256 : index
  %pid_m = tile.program_id x
  %pid_n = tile.program_id y
  %m0 = arith.muli %pid_m, %c128 : index
  %n0 = arith.muli %pid_n, %c256 : index
  %K = tile.dim %a[1] : !tile.tensor<?x?xbf16, ["M", "K"]>
  %zero = arith.constant dense<0.000000e+00> : tensor<128x256xf32>
  %acc = scf.for %k = %c0 to %K step %c64 iter_args(%acc_i = %zero) -> (tensor<128x256xf32>) {
    %x = tile.load %a[%m0, %k] : !tile.tensor<?x?xbf16, ["M", "K"]> -> tensor<128x64xbf16>
    %y = tile.load %b[%n0, %k] : !tile.tensor<?x?xbf16, ["N", "K"]> -> tensor<256x64xbf16>
    %d = tile.dot %x, %y, %acc_i transpose_rhs : tensor<128x64xbf16>, tensor<256x64xbf16> -> tensor<128x256xf32>
    scf.yield %d : tensor<128x256xf32>
  }
  %o = arith.truncf %acc : tensor<128x256xf32> to tensor<128x256xbf16>
  tile.store %o, %c[%m0, %n0] : tensor<128x256xbf16> -> !tile.tensor<?x?xbf16, ["M", "N"]>
  tile.return
}
