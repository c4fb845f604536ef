// coarse-pipeline on loops unlike attention's.
// RUN: tawac opt %S/../../data/variants/two_accumulators.mlir -p 'warp-specialize,plan{schedule=heuristic stages=2 mma-depth=0 persistent=false},pipeline,coarse-pipeline' | filecheck %s --check-prefix=TWO
// RUN: tawac opt %S/../../data/variants/two_accumulators_shared_a.mlir -p 'warp-specialize,plan{schedule=heuristic stages=2 mma-depth=0 persistent=false},pipeline,coarse-pipeline' | filecheck %s --check-prefix=SHARED
// RUN: tawac opt %S/../../../examples/attention.mlir -p 'warp-specialize,plan{schedule=heuristic stages=1 mma-depth=0 persistent=false},pipeline,coarse-pipeline' | filecheck %s --check-prefix=ONESLOT

// Two accumulators with separate operands: the first dot (acc1) is deferred under the
// second; the loop made is not pipelined again (one `pending 1`).
// TWO:      aref.partition consumer
// TWO:        scf.if
// TWO:          %[[W2:.*]] = tile.dot %w_1, %z_1, %zero
// TWO-NEXT:     hopper.wgmma_wait %[[W2]] pending 0
// TWO:          scf.for {{.*}} iter_args(%[[A1:.*]] = %zero, %[[A2:.*]] = %{{.*}})
// TWO:            %[[D2:.*]] = tile.dot %{{.*}}, %{{.*}}, %[[A2]]
// TWO:            %[[D1:.*]] = tile.dot %{{.*}}, %{{.*}}, %[[A1]]
// TWO-NEXT:       hopper.wgmma_wait %[[D2]] pending 1
// TWO-NOT:        pending 1
// TWO:            hopper.wgmma_wait %[[D1]] pending 0
// TWO:            scf.yield
// TWO-NOT:    pending 1

// Both dots read the same A slot: deferring one would let the other's release free the
// slot it still reads, so the loop stays as it is.
// SHARED:      aref.partition consumer
// SHARED-NOT:  scf.if
// SHARED-NOT:  pending 1

// One slot per ring: V's slot j-1 would be held while the producer must fill slot j
// (deadlock), so the loop stays as it is.
// ONESLOT:      aref.partition consumer
// ONESLOT-NOT:  pending 1
