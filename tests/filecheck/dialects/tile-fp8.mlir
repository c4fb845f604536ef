// fp8 global tensors and tiles (f8E4M3FN, f8E5M2) parse, verify and print back, with a
// mixed-format tile.dot (e4m3 x e5m2) and the lowering's view of them: hopper rings of
// 1-byte elements and a hopper.wgmma reading both operands from shared memory.
// RUN: tawac opt %s | tawac opt - | filecheck %s
// RUN: tawac opt %s -p 'warp-specialize,plan{stages=2 consumer-warp-groups=1 persistent=false},pipeline,cooperative-consumers,lower-aref' | filecheck %s --check-prefix=LOWERED

// CHECK-LABEL: tile.kernel @fp8(%a: !tile.tensor<?x?xf8E4M3FN, ["M", "K"]>, %b: !tile.tensor<?x?xf8E5M2, ["N", "K"]>, %c: !tile.tensor<?x?xbf16>, %s: f32) {
// CHECK:         %x = tile.load %a[%m0, %k] : !tile.tensor<?x?xf8E4M3FN, ["M", "K"]> -> tensor<64x128xf8E4M3FN>
// CHECK-NEXT:    %y = tile.load %b[%n0, %k] : !tile.tensor<?x?xf8E5M2, ["N", "K"]> -> tensor<64x128xf8E5M2>
// CHECK-NEXT:    %d = tile.dot %x, %y, %acc_i transpose_rhs : tensor<64x128xf8E4M3FN>, tensor<64x128xf8E5M2> -> tensor<64x64xf32>

// LOWERED:       hopper.smem_alloc {{.*}} : !hopper.smem<2x64x128xf8E4M3FN, swizzle 128>
// LOWERED:       hopper.smem_alloc {{.*}} : !hopper.smem<2x64x128xf8E5M2, swizzle 128>
//   One 8 KiB box per 64x128 tile: 16384 bytes per stage.
// LOWERED:       hopper.mbarrier_arrive_expect_tx {{.*}} 16384
//   Both operands K-major (no transpose flag).
// LOWERED:       hopper.wgmma %x, %y, %acc_i : !hopper.smem_tile<64x128xf8E4M3FN, swizzle 128>, !hopper.smem_tile<64x128xf8E5M2, swizzle 128> -> tensor<64x64xf32>
tile.kernel @fp8(%a: !tile.tensor<?x?xf8E4M3FN, ["M", "K"]>, %b: !tile.tensor<?x?xf8E5M2, ["N", "K"]>, %c: !tile.tensor<?x?xbf16>, %s: f32) {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %pid_m = tile.program_id x
  %pid_n = tile.program_id y
  %m0 = arith.muli %pid_m, %c64 : index
  %n0 = arith.muli %pid_n, %c64 : index
  %K = tile.dim %a[1] : !tile.tensor<?x?xf8E4M3FN, ["M", "K"]>
  %zero = arith.constant dense<0.000000e+00> : tensor<64x64xf32>
  %acc = scf.for %k = %c0 to %K step %c128 iter_args(%acc_i = %zero) -> (tensor<64x64xf32>) {
    %x = tile.load %a[%m0, %k] : !tile.tensor<?x?xf8E4M3FN, ["M", "K"]> -> tensor<64x128xf8E4M3FN>
    %y = tile.load %b[%n0, %k] : !tile.tensor<?x?xf8E5M2, ["N", "K"]> -> tensor<64x128xf8E5M2>
    %d = tile.dot %x, %y, %acc_i transpose_rhs : tensor<64x128xf8E4M3FN>, tensor<64x128xf8E5M2> -> tensor<64x64xf32>
    scf.yield %d : tensor<64x64xf32>
  }
  %sp = tile.splat %s : f32 -> tensor<64x64xf32>
  %r = arith.mulf %acc, %sp : tensor<64x64xf32>
  %o = arith.truncf %r : tensor<64x64xf32> to tensor<64x64xbf16>
  tile.store %o, %c[%m0, %n0] : tensor<64x64xbf16> -> !tile.tensor<?x?xbf16>
  tile.return
}
