// tile.load_index: an i32 element read as an index. The grouped GEMM reads its expert id
// once per tile in each role: the producer needs it for W's coordinates and the loop
// bound, the consumer for the loop bound. Out of range reads -1.
// RUN: tawac opt %S/../../../examples/gemm_grouped.mlir -p 'warp-specialize' | filecheck %s
// RUN: tawac opt %S/../../../examples/gemm_grouped.mlir --emit ptx -p 'warp-specialize,plan,pipeline,persistent,coarse-pipeline,cooperative-consumers,lower-aref,pingpong,tma-store,convert-to-ptx' | filecheck %s --check-prefix=PTX
// RUN: tawac explain %S/../../../examples/gemm_grouped.mlir | filecheck %s --check-prefix=ORDER

// CHECK:      aref.partition producer
// CHECK:        %e = tile.load_index %ids[%pid_m] : !tile.tensor<?xi32, ["BLOCKS"]>
// CHECK:        %valid = arith.cmpi sge, %e, %c0 : index
// CHECK:        %steps = arith.select %valid, %K, %c0 : index
// CHECK:        scf.for %k = %c0 to %steps step %bk {
// CHECK:          tile.load %w[%e, %n0, %k]
// CHECK:      aref.partition consumer
// CHECK:        %e_1 = tile.load_index %ids[%pid_m_1]

// The read: bounds checked (0 <= i < size), -1 where outside.
// PTX:      mov.s32 [[V:%r[0-9]+]], -1;
// PTX-NEXT: @!{{%p[0-9]+}} bra
// PTX-NEXT: ld.global.s32 [[L:%r[0-9]+]], [{{%rd[0-9]+}}];
// PTX-NEXT: mov.s32 [[V]], [[L]];

// A loop bound read from memory has no order in program id x: the grouped tile order
// (consecutive tiles share W's column band in L2), not causal attention's longest-first.
// ORDER: tile order: grouped: 8 rows of program id x share a column band (L2)
