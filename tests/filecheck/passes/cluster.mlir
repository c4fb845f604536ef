// Thread block clusters (issue 11): C = A B^T with 2x1 and 1x2 clusters. The planner
// records the cluster and the payload the paired CTAs share (B for 2x1: it does not
// depend on program id x; A for 1x2); lower-aref counts both CTAs' consumer warps on
// `empty` (4 + 4 with one consumer warp group), keeps `full`'s expected bytes at the
// whole payload (A + all of B land in each CTA), waits on `empty` (acquire.cta), loads
// B with a multicast per CTA (its band of rows), releases on its own and the peer's
// `empty`, and brackets the partitions with cluster barriers; persistent hands the two
// CTAs of a cluster the programs x = 2i, 2i + 1 of one cluster tile, in lockstep.
// RUN: tawac opt %s -p 'warp-specialize,plan{schedule=heuristic stages=2 consumer-warp-groups=1 cluster=2x1}' | filecheck %s --check-prefix=PLAN
// RUN: tawac opt %s -p 'warp-specialize,plan{schedule=heuristic stages=2 consumer-warp-groups=1 cluster=1x2}' | filecheck %s --check-prefix=PLAN12
// RUN: tawac opt %s -p 'warp-specialize,plan{schedule=heuristic stages=2 consumer-warp-groups=1}' | filecheck %s --check-prefix=PLAN11
// RUN: tawac opt %s -p 'warp-specialize,plan{schedule=heuristic stages=2 consumer-warp-groups=1 persistent=false cluster=2x1},pipeline,cooperative-consumers,lower-aref' | filecheck %s --check-prefix=AREF
// RUN: tawac opt %s -p 'warp-specialize,plan{schedule=heuristic stages=2 consumer-warp-groups=1 cluster=2x1},pipeline,persistent' | filecheck %s --check-prefix=PERS
// RUN: tawac opt %s -p 'warp-specialize,plan{schedule=heuristic stages=2 consumer-warp-groups=1 cluster=1x2},pipeline,persistent' | filecheck %s --check-prefix=PERS12
// RUN: tawac opt %s --emit ptx -p 'warp-specialize,plan{schedule=heuristic stages=2 consumer-warp-groups=1 persistent=false cluster=2x1},pipeline,cooperative-consumers,lower-aref,convert-to-ptx' | filecheck %s --check-prefix=PTX

// PLAN:   #tawac.schedule<planner = heuristic, roles = [producer wg 1 regs 24, consumer wg 1 regs 256], arefs = [a_b: depth 2 multicast [1]], loops = [consumer 0: [0 aref.get, 1 tile.dot, wait 1 pending 0, 2 aref.consumed]], cluster = [2, 1], tiles = grouped 8,
// PLAN12: #tawac.schedule<planner = heuristic, roles = [producer wg 1 regs 24, consumer wg 1 regs 256], arefs = [a_b: depth 2 multicast [0]], loops = [consumer 0: [0 aref.get, 1 tile.dot, wait 1 pending 0, 2 aref.consumed]], cluster = [1, 2], tiles = grouped 8,
// PLAN11: #tawac.schedule<planner = heuristic, roles = [producer wg 1 regs 24, consumer wg 1 regs 256], arefs = [a_b: depth 2], loops = [consumer 0: [0 aref.get, 1 tile.dot, wait 1 pending 0, 2 aref.consumed]], tiles = grouped 8,

// AREF:      hopper.mbarrier_init %[[FULL:.*]] count 1 : !hopper.mbarriers<2>
// AREF-NEXT: hopper.mbarrier_init %[[EMPTY:.*]] count 8 : !hopper.mbarriers<2>
// AREF-NEXT: hopper.cta_sync
// AREF-NEXT: hopper.cluster_sync
// AREF-NEXT: %[[RANK:.*]] = hopper.cluster_ctarank
// AREF-NEXT: %[[TWO:.*]] = arith.constant 2 : index
// AREF-NEXT: %[[ONE:.*]] = arith.constant 1 : index
// AREF-NEXT: %[[NEXT:.*]] = arith.addi %[[RANK]], %[[ONE]] : index
// AREF-NEXT: %[[PEER:.*]] = arith.remui %[[NEXT]], %[[TWO]] : index
// AREF-NEXT: aref.partition producer
// AREF:        hopper.mbarrier_wait %[[EMPTY]][%[[SLOT:.*]]], %{{.*}} : !hopper.mbarriers<2>
// AREF-NEXT:   hopper.mbarrier_arrive_expect_tx %[[FULL]][%[[SLOT]]], 32768 : !hopper.mbarriers<2>
// AREF-NEXT:   hopper.tma_load %a[%m0, %k], %{{.*}}[%[[SLOT]]], %[[FULL]] :
// AREF-NEXT:   hopper.tma_load_multicast %b[%n0, %k], %{{.*}}[%[[SLOT]]], %[[FULL]], rank %[[RANK]] of 2 :
// AREF-NEXT: }
// AREF-NEXT: hopper.cluster_sync
// AREF-NEXT: }
// AREF-NEXT: aref.partition consumer
// AREF:        hopper.mbarrier_wait %[[FULL]][%{{.*}}], %{{.*}} : !hopper.mbarriers<2>
// AREF:        hopper.mbarrier_arrive %[[EMPTY]][%[[RSLOT:.*]]] : !hopper.mbarriers<2>
// AREF-NEXT:   hopper.mbarrier_arrive_remote %[[EMPTY]][%[[RSLOT]]], cta %[[PEER]] : !hopper.mbarriers<2>
// AREF:        tile.store
// AREF-NEXT:   hopper.cluster_sync
// AREF-NEXT: }

// The tile loop runs over cluster tiles: the x extent halved (rounded up), from the
// cluster id in steps of the cluster count, groups of 8 / 2 cluster tiles along x, and
// program id x = 2 x' + the CTA's rank (y for 1x2).
// PERS:      aref.partition producer
// PERS:        %[[GX:.*]] = arith.ceildivui %{{.*}}, %{{.*}} : index
// PERS:        %[[C2:.*]] = arith.constant 2 : index
// PERS-NEXT:   %[[HX:.*]] = arith.ceildivui %[[GX]], %[[C2]] : index
// PERS-NEXT:   %[[XY:.*]] = arith.muli %[[HX]], %[[GY:.*]] : index
// PERS-NEXT:   %[[TOTAL:.*]] = arith.muli %[[XY]], %{{.*}} : index
// PERS-NEXT:   %[[CID:.*]] = hopper.cluster_id
// PERS-NEXT:   %[[NCL:.*]] = hopper.num_clusters
// PERS:        scf.for %tile = %[[CID]] to %[[TOTAL]] step %[[NCL]]
// PERS:          %[[G4:.*]] = arith.constant 4 : index
// PERS:          %[[XP:.*]] = arith.addi
// PERS-NEXT:     %pid_y = arith.divui
// PERS-NEXT:     %[[R:.*]] = hopper.cluster_ctarank
// PERS-NEXT:     %[[K2:.*]] = arith.constant 2 : index
// PERS-NEXT:     %[[X2:.*]] = arith.muli %[[XP]], %[[K2]] : index
// PERS-NEXT:     %pid_x = arith.addi %[[X2]], %[[R]] : index
// PERS12:    aref.partition producer
// PERS12:      arith.ceildivui
// PERS12:      %[[GY:.*]] = arith.ceildivui %{{.*}}, %{{.*}} : index
// PERS12-NEXT: %{{.*}} = arith.constant 1 : index
// PERS12-NEXT: %[[C2:.*]] = arith.constant 2 : index
// PERS12-NEXT: %[[HY:.*]] = arith.ceildivui %[[GY]], %[[C2]] : index
// PERS12:        %[[G8:.*]] = arith.constant 8 : index
// PERS12:        %pid_x = arith.addi
// PERS12-NEXT:   %[[YP:.*]] = arith.divui
// PERS12-NEXT:   %[[R:.*]] = hopper.cluster_ctarank
// PERS12-NEXT:   %[[K2:.*]] = arith.constant 2 : index
// PERS12-NEXT:   %[[Y2:.*]] = arith.muli %[[YP]], %[[K2]] : index
// PERS12-NEXT:   %pid_y = arith.addi %[[Y2]], %[[R]] : index

// In the PTX, the empty barriers count 8 arrivals; the peer's barriers exist before any copy
// (cluster barrier after the inits); the producer's one thread waits (acquire.cta)
// and multicasts its 64-row band of B (box 64x64, 8192 bytes into the slot); each
// consumer warp arrives locally and on the peer's barrier; both partitions end at a
// cluster barrier executed by all their threads (the producer's after producer_done).
// PTX:      .param .align 64 .b8 b_tmap_64x64[128]
// PTX:      mbarrier.init.shared::cta.b64 [%{{.*}}], 1;
// PTX:      mbarrier.init.shared::cta.b64 [%{{.*}}], 8;
// PTX:      mbarrier.init.shared::cta.b64 [%{{.*}}], 8;
// PTX-NEXT: $L_skip_{{[0-9]+}}:
// PTX-NEXT: fence.mbarrier_init.release.cluster;
// PTX-NEXT: bar.sync 0;
// PTX-NEXT: barrier.cluster.arrive.release;
// PTX-NEXT: barrier.cluster.wait.acquire;
// PTX-NEXT: mov.u32 %[[RANK:r[0-9]+]], %cluster_ctarank;
// PTX:      mbarrier.try_wait.parity.shared::cta.b64
// PTX:      mbarrier.arrive.expect_tx.shared::cta.b64 _, [%{{.*}}], 32768;
// PTX:      cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [
// PTX:      mov.b16 %[[MASK:h[0-9]+]], 3;
// PTX:      mov.s32 %[[BAND:r[0-9]+]], 8192;
// PTX:      mad.lo.s32 %[[DST:r[0-9]+]], %[[RANK]], %[[BAND]], %{{.*}};
// PTX:      mad.lo.s32 %[[ROW:r[0-9]+]], %[[RANK]], %{{.*}}, %{{.*}};
// PTX-NEXT: cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster [%[[DST]]], [%{{.*}}, {%{{.*}}, %[[ROW]]}], [%{{.*}}], %[[MASK]];
// PTX:      $L_producer_done_{{[0-9]+}}:
// PTX-NEXT: barrier.cluster.arrive.release;
// PTX-NEXT: barrier.cluster.wait.acquire;
// PTX-NEXT: exit;
// PTX:      mbarrier.try_wait.parity.shared::cta.b64
// PTX:      @%[[LANE0:p[0-9]+]] mbarrier.arrive.shared::cta.b64 _, [%{{.*}}];
// PTX:      mapa.shared::cluster.u32 %[[REMOTE:r[0-9]+]], %{{.*}}, %{{.*}};
// PTX-NEXT: @%[[LANE0]] mbarrier.arrive.shared::cluster.b64 _, [%[[REMOTE]]];
// PTX:      barrier.cluster.arrive.release;
// PTX-NEXT: barrier.cluster.wait.acquire;
// PTX-NEXT: exit;
tile.kernel @gemm(%a: !tile.tensor<?x?xbf16, ["M", "K"]>, %b: !tile.tensor<?x?xbf16, ["N", "K"]>, %c: !tile.tensor<?x?xbf16, ["M", "N"]>) {
  %c0 = arith.constant 0 : index
  %bk = arith.constant 64 : index
  %bm = arith.constant 128 : index
  %bn = arith.constant 128 : index
  %pid_m = tile.program_id x
  %pid_n = tile.program_id y
  %m0 = arith.muli %pid_m, %bm : index
  %n0 = arith.muli %pid_n, %bn : index
  %K = tile.dim %a[1] : !tile.tensor<?x?xbf16, ["M", "K"]>
  %zero = arith.constant dense<0.000000e+00> : tensor<128x128xf32>
  %acc = scf.for %k = %c0 to %K step %bk iter_args(%acc_i = %zero) -> (tensor<128x128xf32>) {
    %x = tile.load %a[%m0, %k] : !tile.tensor<?x?xbf16, ["M", "K"]> -> tensor<128x64xbf16>
    %y = tile.load %b[%n0, %k] : !tile.tensor<?x?xbf16, ["N", "K"]> -> tensor<128x64xbf16>
    %d = tile.dot %x, %y, %acc_i transpose_rhs : tensor<128x64xbf16>, tensor<128x64xbf16> -> tensor<128x128xf32>
    scf.yield %d : tensor<128x128xf32>
  }
  %o = arith.truncf %acc : tensor<128x128xf32> to tensor<128x128xbf16>
  tile.store %o, %c[%m0, %n0] : tensor<128x128xbf16> -> !tile.tensor<?x?xbf16, ["M", "N"]>
  tile.return
}
