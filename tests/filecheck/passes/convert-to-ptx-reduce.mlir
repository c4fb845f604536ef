// convert-to-ptx: row reductions on the accumulator fragment. Each thread holds two rows
// per m64 block (r and r+8): it folds its registers of a row, then exchanges with the
// other three lanes of its quad (butterfly masks 1 and 2); the row vector stays in
// registers and is broadcast back for free. exp2 becomes ex2.approx.
// RUN: tawac opt %S/../../data/row_softmax.mlir --emit ptx -p 'warp-specialize,plan{stages=2 mma-depth=0 consumer-warp-groups=2 persistent=false coarse-pipeline=false},pipeline,cooperative-consumers,lower-aref,convert-to-ptx' | filecheck %s

// CHECK-LABEL: .visible .entry row_softmax(
// CHECK: max.f32 [[M0:%f[0-9]+]], %f{{[0-9]+}}, %f{{[0-9]+}};
// CHECK: shfl.sync.bfly.b32 [[S1:%f[0-9]+]], [[A1:%f[0-9]+]], 1, 0x1f, 0xffffffff;
// CHECK-NEXT: max.f32 [[B1:%f[0-9]+]], [[A1]], [[S1]];
// CHECK-NEXT: shfl.sync.bfly.b32 [[S2:%f[0-9]+]], [[B1]], 2, 0x1f, 0xffffffff;
// CHECK-NEXT: max.f32 {{%f[0-9]+}}, [[B1]], [[S2]];
// CHECK: ex2.approx.ftz.f32
// CHECK: shfl.sync.bfly.b32 {{%f[0-9]+}}, {{%f[0-9]+}}, 1, 0x1f, 0xffffffff;
// CHECK: add.f32
// CHECK: div.rn.f32
// CHECK-NOT: shfl.sync.bfly.b32 {{.*}}, 4, 0x1f
