// convert-to-ptx: a 16-bit tile 152 columns wide (19 8-column blocks) stored from
// registers: the first 16 blocks leave as 16-byte vectors after the quad transpose, the
// 3 blocks past the last group of four as each lane's packed pair, one predicated
// st.global.b32 per block and row; no 2-byte stores. A tile 24 columns wide has no
// group of four: pairs only, no shuffles.
// RUN: tawac compile %S/../../../examples/gemm.mlir -D BLOCK_M=256 -D BLOCK_N=152 -o %t.ptx && filecheck %s < %t.ptx
// RUN: tawac compile %S/../../../examples/gemm.mlir -D BLOCK_N=24 -o %t2.ptx && filecheck %s --check-prefix=NARROW < %t2.ptx

// CHECK:      wgmma.mma_async.sync.aligned.m64n152k16.f32.bf16.bf16
// CHECK:      shfl.sync.bfly.b32 {{%r[0-9]+}}, {{%r[0-9]+}}, 2, 0x1f, 0xffffffff;
// CHECK:      @{{%p[0-9]+}} st.global.v4.b32 [{{%rd[0-9]+}}], {{{%r[0-9]+}}, {{%r[0-9]+}}, {{%r[0-9]+}}, {{%r[0-9]+}}};
// CHECK:      @{{%p[0-9]+}} st.global.b32 [{{%rd[0-9]+}}], {{%r[0-9]+}};
// CHECK-NOT:  st.global.b16

// NARROW-NOT: shfl.sync.bfly
// NARROW:     @{{%p[0-9]+}} st.global.b32 [{{%rd[0-9]+}}], {{%r[0-9]+}};
// NARROW-NOT: st.global.b16
