// Thread block clusters for attention (issue 11): the CTAs of a 2x1 cluster run query
// blocks x = 2i and 2i+1 of one head, so the K and V tiles they stream (coordinates
// [b, h, n, 0]: no x) are shared, one payload each, while Q (coordinates [b, h, m0, 0])
// and its per-tile aref stay private. lower-aref counts both CTAs' consumer warps on K's
// and V's empty barriers (2 x 8 with two consumer warp groups) and one CTA's on Q's,
// multicasts K and V (each CTA a 64-row band of the 128x128 tile: a 4-d box of
// [64, 64, 1, 1] per 64-column chunk) and releases K and V slots also on the peer's
// barrier, Q's only locally.
// The clusters run in the x-fastest order (`tiles = grouped 0`): the query blocks of one
// head together, since the streamed K and V do not depend on x.
// RUN: tawac opt %S/../../../examples/attention.mlir -p 'warp-specialize,plan{cluster=2x1}' | filecheck %s --check-prefix=PLAN
// RUN: tawac opt %S/../../../examples/attention.mlir -p 'warp-specialize,plan{cluster=2x1 persistent=false},pipeline,coarse-pipeline,cooperative-consumers,lower-aref' | filecheck %s --check-prefix=AREF
// RUN: tawac opt %S/../../../examples/attention.mlir --emit ptx -p 'warp-specialize,plan{cluster=2x1 persistent=false},pipeline,coarse-pipeline,cooperative-consumers,lower-aref,tma-store,convert-to-ptx' | filecheck %s --check-prefix=PTX
// RUN: tawac opt %s -p 'warp-specialize,plan{stages=2 consumer-warp-groups=1 cluster=2x1}' | filecheck %s --check-prefix=DOTS

// PLAN: arefs = [q: depth 2, k: depth 2 multicast [0], v: depth 2 multicast [0]], loops = [consumer 0: {{.*}}, cluster = [2, 1], tiles = grouped 0,

// AREF:      hopper.mbarrier_init %[[QFULL:.*]] count 1 : !hopper.mbarriers<1>
// AREF-NEXT: hopper.mbarrier_init %[[QEMPTY:.*]] count 8 : !hopper.mbarriers<1>
// AREF-NEXT: hopper.mbarrier_init %[[KFULL:.*]] count 1 : !hopper.mbarriers<2>
// AREF-NEXT: hopper.mbarrier_init %[[KEMPTY:.*]] count 16 : !hopper.mbarriers<2>
// AREF-NEXT: hopper.mbarrier_init %[[VFULL:.*]] count 1 : !hopper.mbarriers<2>
// AREF-NEXT: hopper.mbarrier_init %[[VEMPTY:.*]] count 16 : !hopper.mbarriers<2>
// AREF-NEXT: hopper.cta_sync
// AREF-NEXT: hopper.cluster_sync
// AREF-NEXT: %[[RANK:.*]] = hopper.cluster_ctarank
// AREF:      aref.partition producer
// AREF:        hopper.tma_load %q[%b, %h, %m0, %c0], %{{.*}}, %[[QFULL]] :
// AREF:        scf.for
// AREF:          hopper.mbarrier_arrive_expect_tx %[[KFULL]][%{{.*}}], 32768 :
// AREF-NEXT:     hopper.tma_load_multicast %k[%b, %h, %n, %c0], %{{.*}}, %[[KFULL]], rank %[[RANK]] of 2 :
// AREF:          hopper.mbarrier_arrive_expect_tx %[[VFULL]][%{{.*}}], 32768 :
// AREF-NEXT:     hopper.tma_load_multicast %v[%b, %h, %n, %c0], %{{.*}}, %[[VFULL]], rank %[[RANK]] of 2 :
// AREF:        hopper.cluster_sync
// AREF:      aref.partition consumer
// AREF:        hopper.mbarrier_arrive %[[KEMPTY]][%[[S:.*]]] :
// AREF-NEXT:   hopper.mbarrier_arrive_remote %[[KEMPTY]][%[[S]]], cta %{{.*}} :
// AREF:        hopper.mbarrier_arrive %[[VEMPTY]][%[[T:.*]]] :
// AREF-NEXT:   hopper.mbarrier_arrive_remote %[[VEMPTY]][%[[T]]], cta %{{.*}} :
// AREF:        hopper.mbarrier_arrive %[[QEMPTY]][%{{.*}}] :
// AREF-NOT:    hopper.mbarrier_arrive_remote %[[QEMPTY]]
// AREF:        hopper.cluster_sync

// PTX:      .param .align 64 .b8 q_tmap_64x128x1x1[128]
// PTX:      .param .align 64 .b8 k_tmap_64x64x1x1[128]
// PTX:      .param .align 64 .b8 v_tmap_64x64x1x1[128]
// PTX:      barrier.cluster.arrive.release;
// PTX-NEXT: barrier.cluster.wait.acquire;
// PTX-NEXT: mov.u32 %[[RANK:r[0-9]+]], %cluster_ctarank;
// PTX:      cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [
// PTX:      mov.s32 %[[BAND:r[0-9]+]], 8192;
// PTX:      mad.lo.s32 %{{.*}}, %[[RANK]], %[[BAND]], %{{.*}};
// PTX:      mad.lo.s32 %[[ROW:r[0-9]+]], %[[RANK]], %{{.*}}, %{{.*}};
// PTX-NEXT: cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster [%{{.*}}], [%{{.*}}, {%{{.*}}, %[[ROW]], %{{.*}}, %{{.*}}}], [%{{.*}}], %{{.*}};
// PTX:      cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster
// PTX:      cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster
// PTX:      cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster
// PTX-NOT:  cp.async.bulk.tensor.4d.shared::cluster
// PTX:      $L_producer_done_{{[0-9]+}}:
// PTX-NEXT: barrier.cluster.arrive.release;
// PTX-NEXT: barrier.cluster.wait.acquire;
// PTX:      mapa.shared::cluster.u32 %[[REMOTE:r[0-9]+]], %{{.*}}, %{{.*}};
// PTX-NEXT: @%{{p[0-9]+}} mbarrier.arrive.shared::cluster.b64 _, [%[[REMOTE]]];
// PTX:      cp.async.bulk.tensor.4d.global.shared::cta.bulk_group
// PTX:      barrier.cluster.arrive.release;
// PTX-NEXT: barrier.cluster.wait.acquire;

// Two dots reading the slots of one aref (a chained or gated GEMM): the plan follows the
// loads, so B is shared as in a GEMM.
// DOTS: arefs = [{{[a-z_]+}}: depth 2 multicast [1]], loops = [{{.*}}], cluster = [2, 1],
tile.kernel @two_dots(%a: !tile.tensor<?x?xbf16>, %b: !tile.tensor<?x?xbf16>, %c: !tile.tensor<?x?xbf16>) {
  %c0 = arith.constant 0 : index
  %bk = arith.constant 64 : index
  %bm = arith.constant 128 : index
  %pid_m = tile.program_id x
  %pid_n = tile.program_id y
  %m0 = arith.muli %pid_m, %bm : index
  %n0 = arith.muli %pid_n, %bm : index
  %K = tile.dim %a[1] : !tile.tensor<?x?xbf16>
  %zero = arith.constant dense<0.000000e+00> : tensor<128x128xf32>
  %acc:2 = scf.for %k = %c0 to %K step %bk iter_args(%p = %zero, %q = %zero) -> (tensor<128x128xf32>, tensor<128x128xf32>) {
    %x = tile.load %a[%m0, %k] : !tile.tensor<?x?xbf16> -> tensor<128x64xbf16>
    %y = tile.load %b[%n0, %k] : !tile.tensor<?x?xbf16> -> tensor<128x64xbf16>
    %d = tile.dot %x, %y, %p transpose_rhs : tensor<128x64xbf16>, tensor<128x64xbf16> -> tensor<128x128xf32>
    %e = tile.dot %x, %y, %q transpose_rhs : tensor<128x64xbf16>, tensor<128x64xbf16> -> tensor<128x128xf32>
    scf.yield %d, %e : tensor<128x128xf32>, tensor<128x128xf32>
  }
  %s = arith.addf %acc#0, %acc#1 : tensor<128x128xf32>
  %o = arith.truncf %s : tensor<128x128xf32> to tensor<128x128xbf16>
  tile.store %o, %c[%m0, %n0] : tensor<128x128xbf16> -> !tile.tensor<?x?xbf16>
  tile.return
}
