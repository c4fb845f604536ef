// fp8 GEMMs through the whole pipeline to PTX: both operands read from 128B-swizzled
// shared memory by `wgmma.mma_async ... k32` (PTX ISA 9.7.15.5), K-major, no transpose
// operands. A 128-byte swizzle row holds 128 fp8 elements: BLOCK_K = 128 is one TMA box
// per tile and four k32 steps of 32 bytes (descriptor start address + 2, 4, 6 in units
// of 16 bytes).
// RUN: tawac opt %s --split-input-file --emit ptx -p 'warp-specialize,plan{stages=3 consumer-warp-groups=2 persistent=false},pipeline,persistent,coarse-pipeline,cooperative-consumers,lower-aref,tma-store,convert-to-ptx' | filecheck %s

// e4m3 x e4m3, 128x256x128 tiles, two consumer warp groups of one m64 block each.
// CHECK-LABEL: .visible .entry fp8_e4m3(
// CHECK-DAG:     .param .align 64 .b8 a_tmap_128x128[128]
// CHECK-DAG:     .param .align 64 .b8 b_tmap_128x256[128]
//   One box of 128 fp8 columns per tile: 128x128 + 256x128 bytes per stage.
// CHECK:         mbarrier.arrive.expect_tx.shared::cta.b64 _, [%r{{[0-9]+}}], 49152;
// CHECK-COUNT-2: cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes
// CHECK-NOT:     cp.async.bulk.tensor.2d.shared::cluster
// CHECK:         mov.s64 [[TWO:%rd[0-9]+]], 2;
// CHECK-NEXT:    add.s64 {{%rd[0-9]+}}, {{%rd[0-9]+}}, [[TWO]];
// CHECK-NEXT:    add.s64 {{%rd[0-9]+}}, {{%rd[0-9]+}}, [[TWO]];
// CHECK-NEXT:    mov.s64 [[FOUR:%rd[0-9]+]], 4;
// CHECK:         mov.s64 [[SIX:%rd[0-9]+]], 6;
// CHECK:         wgmma.fence.sync.aligned;
// CHECK-COUNT-4: wgmma.mma_async.sync.aligned.m64n256k32.f32.e4m3.e4m3 {%f{{[0-9]+}}, {{.*}}, %f{{[0-9]+}}}, %rd{{[0-9]+}}, %rd{{[0-9]+}}, %p{{[0-9]+}}, 1, 1;
// CHECK-NEXT:    wgmma.commit_group.sync.aligned;
// CHECK-NOT:     wgmma.mma_async
// CHECK:         cvt.rn.bf16.f32
// CHECK:         cp.async.bulk.tensor.2d.global.shared::cta.bulk_group
tile.kernel @fp8_e4m3(%a: !tile.tensor<?x?xf8E4M3FN>, %b: !tile.tensor<?x?xf8E4M3FN>, %c: !tile.tensor<?x?xbf16>, %scale: f32) {
  %c0 = arith.constant 0 : index
  %bk = arith.constant 128 : index
  %bm = arith.constant 128 : index
  %bn = arith.constant 256 : index
  %pid_m = tile.program_id x
  %pid_n = tile.program_id y
  %m0 = arith.muli %pid_m, %bm : index
  %n0 = arith.muli %pid_n, %bn : index
  %K = tile.dim %a[1] : !tile.tensor<?x?xf8E4M3FN>
  %zero = arith.constant dense<0.000000e+00> : tensor<128x256xf32>
  %acc = scf.for %k = %c0 to %K step %bk iter_args(%acc_i = %zero) -> (tensor<128x256xf32>) {
    %x = tile.load %a[%m0, %k] : !tile.tensor<?x?xf8E4M3FN> -> tensor<128x128xf8E4M3FN>
    %y = tile.load %b[%n0, %k] : !tile.tensor<?x?xf8E4M3FN> -> tensor<256x128xf8E4M3FN>
    %d = tile.dot %x, %y, %acc_i transpose_rhs : tensor<128x128xf8E4M3FN>, tensor<256x128xf8E4M3FN> -> tensor<128x256xf32>
    scf.yield %d : tensor<128x256xf32>
  }
  %s = tile.splat %scale : f32 -> tensor<128x256xf32>
  %r = arith.mulf %acc, %s : tensor<128x256xf32>
  %o = arith.truncf %r : tensor<128x256xf32> to tensor<128x256xbf16>
  tile.store %o, %c[%m0, %n0] : tensor<128x256xbf16> -> !tile.tensor<?x?xbf16>
  tile.return
}

// -----

// e5m2 x e4m3 (mixed formats), 128x128x256 tiles: two 128-column chunks per tile, so
// eight k32 steps, the last four one chunk (128 rows x 128 bytes = 16384 bytes) further.
// CHECK-LABEL: .visible .entry fp8_mixed(
// CHECK:         mbarrier.arrive.expect_tx.shared::cta.b64 _, [%r{{[0-9]+}}], 65536;
// CHECK-COUNT-4: cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes
// CHECK-NOT:     cp.async.bulk.tensor.2d.shared::cluster
// CHECK:         mov.s64 {{%rd[0-9]+}}, 1024;
// CHECK:         wgmma.fence.sync.aligned;
// CHECK-COUNT-8: wgmma.mma_async.sync.aligned.m64n128k32.f32.e5m2.e4m3 {{.*}}, 1, 1;
// CHECK-NEXT:    wgmma.commit_group.sync.aligned;
// CHECK-NOT:     wgmma.mma_async
tile.kernel @fp8_mixed(%a: !tile.tensor<?x?xf8E5M2>, %b: !tile.tensor<?x?xf8E4M3FN>, %c: !tile.tensor<?x?xbf16>) {
  %c0 = arith.constant 0 : index
  %bk = arith.constant 256 : index
  %bm = arith.constant 128 : index
  %bn = arith.constant 128 : index
  %pid_m = tile.program_id x
  %pid_n = tile.program_id y
  %m0 = arith.muli %pid_m, %bm : index
  %n0 = arith.muli %pid_n, %bn : index
  %K = tile.dim %a[1] : !tile.tensor<?x?xf8E5M2>
  %zero = arith.constant dense<0.000000e+00> : tensor<128x128xf32>
  %acc = scf.for %k = %c0 to %K step %bk iter_args(%acc_i = %zero) -> (tensor<128x128xf32>) {
    %x = tile.load %a[%m0, %k] : !tile.tensor<?x?xf8E5M2> -> tensor<128x256xf8E5M2>
    %y = tile.load %b[%n0, %k] : !tile.tensor<?x?xf8E4M3FN> -> tensor<128x256xf8E4M3FN>
    %d = tile.dot %x, %y, %acc_i transpose_rhs : tensor<128x256xf8E5M2>, tensor<128x256xf8E4M3FN> -> tensor<128x128xf32>
    scf.yield %d : tensor<128x128xf32>
  }
  %o = arith.truncf %acc : tensor<128x128xf32> to tensor<128x128xbf16>
  tile.store %o, %c[%m0, %n0] : tensor<128x128xbf16> -> !tile.tensor<?x?xbf16>
  tile.return
}
