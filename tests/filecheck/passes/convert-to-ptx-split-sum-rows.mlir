// convert-to-ptx: a row kernel's own split sum (examples/rmsnorm_bwd_fused.mlir: each
// program stores its partial sums, arrives at a ticket, and the last adds the P partials).
// The ticket: a fence, one atomic add by the partition's first thread, the answer handed
// to every thread. The sum of a 1 x 4096 tile in the blocked layout is one loop over the
// slices (run while the slice is below min(count, 16)) whose body reads each of the
// thread's eight runs of four f32 with one predicated 16-byte load (no branch around it)
// and adds it to the running sums; after the loop the elements past the row's end are
// set to zero, then dw leaves as bf16.
// RUN: tawac compile %S/../../../examples/rmsnorm_bwd_fused.mlir -o %t.ptx && filecheck %s < %t.ptx

// CHECK-LABEL: .visible .entry rmsnorm_bwd_fused(
// CHECK:       fence.acq_rel.gpu;
// CHECK-NEXT:  atom.acq_rel.gpu.global.add.u32
// CHECK:       bar.red.or.pred [[LAST:%p[0-9]+]], 15, 128,
// CHECK-NEXT:  @![[LAST]] bra.uni
// CHECK:       min.s32
// CHECK:       @[[DONE:%p[0-9]+]] bra.uni [[END:\$L_slices_end_[0-9]+]];
// CHECK-NEXT:  [[TOP:\$L_slices_[0-9]+]]:
// CHECK-COUNT-8: @%p{{[0-9]+}} ld.global.cg.v4.f32 {{{%f[0-9]+}}, {{%f[0-9]+}}, {{%f[0-9]+}}, {{%f[0-9]+}}}, [{{%rd[0-9]+}}];
// CHECK-NOT:   ld.global
// CHECK:       bra.uni [[TOP]];
// CHECK-NEXT:  [[END]]:
// CHECK:       selp.f32
// CHECK:       st.global
