// convert-to-ptx: math.erf and math.tanh on a tile (PTX has neither as an instruction,
// tanh.approx.f32 is 2^-11 off): erf(x) = sign(x) (1 - t exp(-x^2 + P(t))) with t = 1 /
// (1 + |x| / 2) and a degree-9 P (rcp.rn, an fma chain, ex2.approx, selp on x < 0);
// tanh(x) = 1 - 2 / (2^(2x log2 e) + 1) (ex2.approx, rcp.rn, one fma). Each register once.
// RUN: tawac compile %s -o %t.ptx && filecheck %s < %t.ptx

// CHECK:      wgmma.mma_async
// CHECK:      max.f32 [[Z:%f[0-9]+]], [[X:%f[0-9]+]], {{%f[0-9]+}};
// CHECK-NEXT: mov.f32 [[HALF:%f[0-9]+]], 0f3F000000;
// CHECK-NEXT: mov.f32 [[ONE:%f[0-9]+]], 0f3F800000;
// CHECK-NEXT: fma.rn.f32 [[D:%f[0-9]+]], [[Z]], [[HALF]], [[ONE]];
// CHECK-NEXT: rcp.rn.f32 [[T:%f[0-9]+]], [[D]];
// CHECK-NEXT: mov.f32 [[C9:%f[0-9]+]], 0f3E2EF945;
// CHECK-NEXT: mov.f32 [[C8:%f[0-9]+]], 0fBF527892;
// CHECK-NEXT: fma.rn.f32 {{%f[0-9]+}}, [[C9]], [[T]], [[C8]];
// CHECK:      ex2.approx.ftz.f32
// CHECK:      setp.lt.f32 [[NEG:%p[0-9]+]], [[X]], {{%f[0-9]+}};
// CHECK-NEXT: neg.f32
// CHECK-NEXT: selp.f32 [[ERF:%f[0-9]+]], {{%f[0-9]+}}, {{%f[0-9]+}}, [[NEG]];
// CHECK:      mov.f32 [[TWOLOG:%f[0-9]+]], 0f4038AA3B;
// CHECK-NEXT: mul.rn.f32 [[Y:%f[0-9]+]], [[ERF]], [[TWOLOG]];
// CHECK-NEXT: ex2.approx.ftz.f32 [[E:%f[0-9]+]], [[Y]];
// CHECK-NEXT: add.rn.f32 [[S:%f[0-9]+]], [[E]], [[ONE]];
// CHECK-NEXT: rcp.rn.f32 [[I:%f[0-9]+]], [[S]];
// CHECK-NEXT: mov.f32 [[M2:%f[0-9]+]], 0fC0000000;
// CHECK-NEXT: fma.rn.f32 {{%f[0-9]+}}, [[I]], [[M2]], [[ONE]];
// CHECK-NOT:  tanh.approx
tile.kernel @gemm_erf_tanh(%a: !tile.tensor<?x?xbf16, ["M", "K"]>, %b: !tile.tensor<?x?xbf16, ["N", "K"]>, %c: !tile.tensor<?x?xbf16, ["M", "N"]>) {
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
  %e = math.erf %acc : tensor<128x128xf32>
  %t = math.tanh %e : tensor<128x128xf32>
  %o = arith.truncf %t : tensor<128x128xf32> to tensor<128x128xbf16>
  tile.store %o, %c[%m0, %n0] : tensor<128x128xbf16> -> !tile.tensor<?x?xbf16, ["M", "N"]>
  tile.return
}
