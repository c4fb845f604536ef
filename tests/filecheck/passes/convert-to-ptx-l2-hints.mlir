// convert-to-ptx: L2 eviction hints on a row kernel whose row block is resident (the
// schedule's `resident l2`): the producer's first loop copies its tiles with an
// `evict_last` policy where the row is longer than the ring (a `selp` of it and the
// normal policy on the row-does-not-fit predicate), the second loop (which copies only where the row is longer than
// the ring) with `evict_first`, and the consumer's stores with `evict_first`: each a
// `createpolicy.fractional` register and the instruction's `.L2::cache_hint` operand.
// A linear tile (one row) inside its tensor is one bulk copy, else TMA boxes: both carry
// the hint. `--no-l2-hints` writes none.
// RUN: tawac compile %S/../../../examples/softmax.mlir -D BLOCK_M=1 -D BLOCK_N=8192 -o %t.ptx && filecheck %s < %t.ptx
// RUN: tawac compile %S/../../../examples/softmax.mlir -D BLOCK_M=1 -D BLOCK_N=8192 --no-l2-hints -o %t2.ptx && filecheck %s --check-prefix=OFF < %t2.ptx

// CHECK-LABEL: .visible .entry softmax(
// CHECK:       setmaxnreg.dec
// CHECK:       createpolicy.fractional.L2::evict_last.b64 [[KEEP:%rd[0-9]+]], 1.0;
// CHECK-NEXT:  createpolicy.fractional.L2::evict_normal.b64 [[NORMAL:%rd[0-9]+]], 1.0;
// CHECK-NEXT:  selp.b64 [[LAST:%rd[0-9]+]], [[KEEP]], [[NORMAL]], %p{{[0-9]+}};
// CHECK:       cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint [%r{{[0-9]+}}], [%rd{{[0-9]+}}], 16384, [%r{{[0-9]+}}], [[LAST]];
// CHECK:       cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.L2::cache_hint [%r{{[0-9]+}}], [%rd{{[0-9]+}}, {%r{{[0-9]+}}, %r{{[0-9]+}}}], [%r{{[0-9]+}}], [[LAST]];
// CHECK:       $L_loop_end
// CHECK:       createpolicy.fractional.L2::evict_first.b64 [[FIRST:%rd[0-9]+]], 1.0;
// CHECK:       cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint [%r{{[0-9]+}}], [%rd{{[0-9]+}}], 16384, [%r{{[0-9]+}}], [[FIRST]];
// CHECK:       setmaxnreg.inc
// CHECK:       createpolicy.fractional.L2::evict_first.b64 [[STORE:%rd[0-9]+]], 1.0;
// CHECK:       st.global.L2::cache_hint.v4.b32 [%rd{{[0-9]+}}], {%r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}}, [[STORE]];

// OFF-LABEL: .visible .entry softmax(
// OFF-NOT:   cache_hint
// OFF-NOT:   createpolicy
