// pipeline{mma-depth=1} on attention: O = O * alpha + P V is carried, but the iter arg is
// read by the rescale, not only by the MMA, so the MMA must complete within its
// iteration (pending 0; a copy or multiply of an accumulator in flight reads garbage)
// and V's release is not deferred; persistent then drains nothing. The K loop of GEMM
// (the accumulator feeds only its MMA) stays deferred and drained.
// RUN: tawac opt %S/../../../examples/attention.mlir -p 'warp-specialize,plan{stages=2 mma-depth=1 coarse-pipeline=false},pipeline,persistent' | filecheck %s
// RUN: tawac opt %S/../../../examples/gemm.mlir -p 'warp-specialize,plan{stages=3 mma-depth=1 coarse-pipeline=false},pipeline,persistent' | filecheck %s --check-prefix=GEMM

// CHECK:      aref.partition consumer
// CHECK:        %acc_new = tile.dot %p16, %vt_1, %acc_scaled
// CHECK-NEXT:   hopper.wgmma_wait %acc_new pending 0
// CHECK-NOT:    deferred
// CHECK:        aref.consumed %aref0
// CHECK-NOT:    aref.consumed

// GEMM:      aref.partition consumer
// GEMM:        %d = tile.dot %x_1, %y_1, %acc_i
// GEMM-NEXT:   hopper.wgmma_wait %d pending 1
// GEMM:        aref.consumed %aref0[{{.*}}] deferred :
// GEMM:        scf.for
// GEMM-NEXT:     arith.addi
// GEMM-NEXT:     aref.consumed %aref0
