// convert-to-ptx: a kernel without MMAs whose 2-d tiles are not whole m64 blocks per warp
// group (32-row column-sum blocks of bf16) holds them in the blocked layout: each thread
// reads a 16-byte run of a row from the ring slot (eight bf16, one ld.shared.v4.b32), the
// column reduction after the loop folds the thread's rows, then the warp's two rows
// (butterfly mask 16: 16 lanes across a row), then the warps through shared memory. The
// same kernel with 64-row blocks keeps the accumulator layout (a pair of bf16 per
// ld.shared.b32; masks 4, 8 and 16 across the lanes of equal lane % 4). A row softmax of
// 32-row tiles with an f32 store runs four f32 a thread (32 lanes across a row): its row
// reductions shuffle across all 32 lanes, its f32 tile leaves as 16-byte vectors.
// RUN: tawac compile %S/../../data/no_mma/blocked_column_sum.mlir -o %t.ptx && filecheck %s < %t.ptx
// RUN: tawac compile %S/../../data/no_mma/blocked_column_sum.mlir -D BLOCK_M=64 -o %t2.ptx && filecheck %s --check-prefix=ACC < %t2.ptx
// RUN: tawac compile %S/../../data/no_mma/blocked_rows.mlir -o %t3.ptx && filecheck %s --check-prefix=ROWS < %t3.ptx

// CHECK-LABEL: .visible .entry blocked_column_sum(
// CHECK-NOT:   wgmma
// CHECK:       ld.shared.v4.b32 {{{%r[0-9]+}}, {{%r[0-9]+}}, {{%r[0-9]+}}, {{%r[0-9]+}}}, [{{%r[0-9]+}}];
// CHECK-NOT:   ld.shared.b32
// CHECK:       bar.warp.sync -1;
// CHECK:       shfl.sync.bfly.b32 {{%f[0-9]+}}, {{%f[0-9]+}}, 16, 0x1f, 0xffffffff;
// CHECK-NOT:   shfl.sync.bfly.b32 {{%f[0-9]+}}, {{%f[0-9]+}}, {{4|8}}, 0x1f
// CHECK:       bar.sync 15, 128;
// CHECK:       st.shared.f32
// CHECK:       bar.sync 15, 128;
// CHECK:       ld.shared.f32
// CHECK:       st.global.b16

// ACC-LABEL: .visible .entry blocked_column_sum(
// ACC-NOT:   ld.shared.v4
// ACC:       ld.shared.b32
// ACC:       shfl.sync.bfly.b32 {{%f[0-9]+}}, {{%f[0-9]+}}, 4, 0x1f, 0xffffffff;
// ACC:       shfl.sync.bfly.b32 {{%f[0-9]+}}, {{%f[0-9]+}}, 8, 0x1f, 0xffffffff;
// ACC:       shfl.sync.bfly.b32 {{%f[0-9]+}}, {{%f[0-9]+}}, 16, 0x1f, 0xffffffff;

// ROWS-LABEL: .visible .entry blocked_rows(
// ROWS:       ld.shared.v2.b32
// ROWS:       max.f32
// ROWS:       shfl.sync.bfly.b32 [[S1:%f[0-9]+]], [[A1:%f[0-9]+]], 1, 0x1f, 0xffffffff;
// ROWS-NEXT:  max.f32 [[B1:%f[0-9]+]], [[A1]], [[S1]];
// ROWS-NEXT:  shfl.sync.bfly.b32 [[S2:%f[0-9]+]], [[B1]], 2, 0x1f, 0xffffffff;
// ROWS-NEXT:  max.f32 [[B2:%f[0-9]+]], [[B1]], [[S2]];
// ROWS-NEXT:  shfl.sync.bfly.b32 [[S4:%f[0-9]+]], [[B2]], 4, 0x1f, 0xffffffff;
// ROWS-NEXT:  max.f32 [[B4:%f[0-9]+]], [[B2]], [[S4]];
// ROWS-NEXT:  shfl.sync.bfly.b32 [[S8:%f[0-9]+]], [[B4]], 8, 0x1f, 0xffffffff;
// ROWS-NEXT:  max.f32 [[B8:%f[0-9]+]], [[B4]], [[S8]];
// ROWS-NEXT:  shfl.sync.bfly.b32 {{%f[0-9]+}}, [[B8]], 16, 0x1f, 0xffffffff;
// ROWS:       st.global.v2.f32
// ROWS:       st.global.v4.b32
