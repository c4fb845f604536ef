// coarse-pipeline on two consecutive two-stage key loops, the second carrying on the
// first's results (Triton's tutorial causal attention: the blocks left of the diagonal,
// then the diagonal block). Where both run (T1 >= 1 and T2 >= 1), the boundary is one
// steady body: loop 2's S = Q K^T is issued first, then loop 1's last O * alpha and
// P V, then the wait for S leaves P V in flight (pending 1) while loop 2's masked
// softmax runs, then P V is awaited; loop 2's steady loop and epilogue follow. Else both
// loops are expanded alone. `plan` marks the first loop `chained` (the knob chain-loops);
// with chain-loops=false the two expansions follow each other.
// RUN: tawac opt %S/../../../examples/triton/attention_causal.ttir -p 'guard-masks,warp-specialize,plan{persistent=false},pipeline,coarse-pipeline' | filecheck %s
// RUN: tawac opt %S/../../../examples/triton/attention_causal.ttir -p 'guard-masks,warp-specialize,plan{persistent=false chain-loops=false},pipeline,coarse-pipeline' | filecheck %s --check-prefix=APART

// CHECK:       loops = [consumer 0 chained expanded: [{{.*}}], consumer 1 expanded: [
// CHECK-LABEL: aref.partition consumer
// CHECK:       %[[HAS1:[0-9]+]] = arith.cmpi sge
// CHECK:       %[[HAS2:[0-9]+]] = arith.cmpi sge
// CHECK-NEXT:  %[[BOTH:[0-9]+]] = arith.andi %[[HAS1]], %[[HAS2]] : i1
// CHECK-NEXT:  scf.if %[[BOTH]]
// CHECK:         %[[O1:[0-9]+]], %[[L1:[0-9]+]], %[[M1:[0-9]+]], %[[A1:[0-9]+]], %[[P1:[0-9]+]] = scf.for
// CHECK:         scf.yield
// CHECK-NEXT:    }
// CHECK:         aref.get %aref1
// CHECK-NEXT:    %[[S:[0-9]+]] = tile.dot
// CHECK-NEXT:    %[[AB:[0-9]+]] = tile.broadcast %[[A1]], 0
// CHECK-NEXT:    %[[ACC:.*]] = arith.mulf %[[O1]], %[[AB]]
// CHECK:         aref.get %aref2
// CHECK-NEXT:    %[[PV:[0-9]+]] = tile.dot %[[P1]], %{{[0-9]+}}, %[[ACC]]
// CHECK-NEXT:    hopper.wgmma_wait %[[S]] pending 1
// CHECK-NEXT:    aref.consumed %aref1
// CHECK:         scf.if
// CHECK:         arith.maxnumf %[[M1]]
// CHECK:         math.exp2
// CHECK:         %[[O2:[0-9]+]] = hopper.wgmma_wait %[[PV]] pending 0
// CHECK-NEXT:    aref.consumed %aref2
// CHECK-NEXT:    scf.for {{.*}} iter_args(%{{[0-9]+}} = %[[O2]],
// CHECK:       } else {
// CHECK:         scf.if
// CHECK:         scf.if
// CHECK:       }

// APART:       loops = [consumer 0 expanded: [{{.*}}], consumer 1 expanded: [
// APART-LABEL: aref.partition consumer
// APART-NOT:   arith.andi
// APART:       scf.if
// APART:       scf.for
// APART:       aref.consumed %aref2
// APART-NEXT:  scf.yield
// APART:       aref.consumed %aref2
// APART-NEXT:  scf.yield
// APART-NEXT:  } else {
// APART:       scf.if
// APART-NOT:   arith.andi
