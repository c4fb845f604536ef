// convert-to-ptx: the whole pipeline on a 128x256x64 bf16 GEMM, printed as PTX.
// Structure: thread 0 initialises the barriers (3 full with 1 arrival, 3 empty with 8),
// bar.sync 0, then warp group 0 is the producer (setmaxnreg.dec 24, one thread issues
// the TMA copies) and warp groups 1-2 the consumers (setmaxnreg.inc 240, wgmma).
// RUN: tawac opt %s --emit ptx -p 'warp-specialize,plan{stages=3 mma-depth=1 consumer-warp-groups=2 persistent=false coarse-pipeline=false},pipeline,cooperative-consumers,lower-aref,convert-to-ptx' | filecheck %s
// RUN: tawac opt %s --emit ptx -p 'warp-specialize,plan{stages=3 mma-depth=0 consumer-warp-groups=2 persistent=false coarse-pipeline=false},pipeline,cooperative-consumers,lower-aref,convert-to-ptx' | filecheck %s --check-prefix=DEPTH0
// RUN: tawac opt %s --emit ptx -p 'warp-specialize,plan{stages=3 mma-depth=1 consumer-warp-groups=2 persistent=false coarse-pipeline=false},pipeline,cooperative-consumers,lower-aref,tma-store,convert-to-ptx' | filecheck %s --check-prefix=TMA-STORE

// CHECK:      .version 8.0
// CHECK-NEXT: .target sm_90a
// CHECK-NEXT: .address_size 64
// CHECK:      .extern .shared .align 1024 .b8 tawac_smem[];
// CHECK:      .visible .entry gemm(
// CHECK-DAG:    .param .align 64 .b8 a_tmap_64x128[128]
// CHECK-DAG:    .param .align 64 .b8 b_tmap_64x256[128]
// CHECK-DAG:    .param .u64 c_ptr
// CHECK-DAG:    .param .s64 c_stride0
// CHECK:      )
// CHECK-NEXT: .maxntid 384, 1, 1
// CHECK-COUNT-3: mbarrier.init.shared::cta.b64 [%r{{[0-9]+}}], 1;
// CHECK-COUNT-3: mbarrier.init.shared::cta.b64 [%r{{[0-9]+}}], 8;
// CHECK:      fence.mbarrier_init.release.cluster;
// CHECK-NEXT: bar.sync 0;
//   Branches on warp-uniform values (the warp group, loop bounds) are bra.uni; the
//   producer's one-thread branch and the mbarrier polling loops are not.
// CHECK:      bra.uni $L_part
//   The producer.
// CHECK:      setmaxnreg.dec.sync.aligned.u32 24;
// CHECK:      and.b32
// CHECK-NEXT: setp.eq.u32
// CHECK-NEXT: @!%p{{[0-9]+}} bra $L_producer_done
// CHECK:      bra.uni $L_loop_end
// CHECK-NOT:  wgmma
// CHECK:      mbarrier.try_wait.parity.shared::cta.b64 %p{{[0-9]+}}, [%r{{[0-9]+}}], %r{{[0-9]+}};
// CHECK-NEXT: @!%p{{[0-9]+}} bra $L_wait
// CHECK:      mbarrier.arrive.expect_tx.shared::cta.b64 _, [%r{{[0-9]+}}], 49152;
// CHECK-COUNT-2: cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%r{{[0-9]+}}], [%rd{{[0-9]+}}, {%r{{[0-9]+}}, %r{{[0-9]+}}}], [%r{{[0-9]+}}];
// CHECK-NOT:  wgmma
// CHECK:      exit;
//   The consumers: 4 k16 steps of one m64n256 block per warp group.
// CHECK:      setmaxnreg.inc.sync.aligned.u32 240;
// CHECK-NOT:  cp.async.bulk
// CHECK:      mbarrier.try_wait.parity.shared::cta.b64
// CHECK:      wgmma.fence.sync.aligned;
// CHECK-COUNT-4: wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 {%f{{[0-9]+}}, {{.*}}, %f{{[0-9]+}}}, %rd{{[0-9]+}}, %rd{{[0-9]+}}, %p{{[0-9]+}}, 1, 1, 0, 0;
// CHECK-NEXT: wgmma.commit_group.sync.aligned;
// CHECK-NEXT: wgmma.wait_group.sync.aligned 1;
//   The slot of the previous iteration is released (one arrival per warp, lane 0).
// CHECK:      mbarrier.arrive.shared::cta.b64 _, [%r{{[0-9]+}}];
// CHECK:      wgmma.wait_group.sync.aligned 0;
//   Without tma-store, the tile leaves from registers: 16-byte vectors after a quad
//   transpose (the pointer marked aligned, docs/abi.md).
// CHECK:      st.global.v4.b32
// CHECK:      exit;
// CHECK-NOT:  wgmma.mma_async

// DEPTH0:      wgmma.commit_group.sync.aligned;
// DEPTH0-NEXT: wgmma.wait_group.sync.aligned 0;
// DEPTH0-NOT:  wgmma.wait_group.sync.aligned 1;

// The warp group's leader waits for the reads of its previous bulk store right before
// the staging tile is written again (not after issuing it), and once more before exit.
// TMA-STORE:     setmaxnreg.inc.sync.aligned.u32 240;
// TMA-STORE:     wgmma.wait_group.sync.aligned 0;
// TMA-STORE-NOT: st.global
// TMA-STORE:     cp.async.bulk.wait_group.read 0;
// TMA-STORE:     bar.sync %r{{[0-9]+}}, 128;
// TMA-STORE-NOT: cp.async.bulk
// TMA-STORE:     st.shared
// TMA-STORE:     fence.proxy.async.shared::cta;
// TMA-STORE-COUNT-4: cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%rd{{[0-9]+}}, {%r{{[0-9]+}}, %r{{[0-9]+}}}], [%r{{[0-9]+}}];
// TMA-STORE-NEXT: cp.async.bulk.commit_group;
// TMA-STORE-NOT:  cp.async.bulk.wait_group.read
// TMA-STORE:      $L_skip
// TMA-STORE:      cp.async.bulk.wait_group.read 0;
// TMA-STORE:      exit;
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
  %zero = arith.constant dense<0.0> : tensor<128x256xf32>
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
