// C = alpha * (A * B^T) + bias, bias broadcast over rows: a fused epilogue.
// A is MxK, B is NxK (bf16), bias has N f32 entries, C is MxN bf16; 128x128x64 tiles.
tile.kernel @gemm_bias(%a: !tile.tensor<?x?xbf16, ["M", "K"]>, %b: !tile.tensor<?x?xbf16, ["N", "K"]>, %bias: !tile.tensor<?xf32, ["N"]>, %c: !tile.tensor<?x?xbf16, ["M", "N"]>, %alpha: f32) {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %pid_m = tile.program_id x
  %pid_n = tile.program_id y
  %m0 = arith.muli %pid_m, %c128 : index
  %n0 = arith.muli %pid_n, %c128 : index
  %K = tile.dim %a[1] : !tile.tensor<?x?xbf16, ["M", "K"]>
  %zero = arith.constant dense<0.000000e+00> : tensor<128x128xf32>
  %acc = scf.for %k = %c0 to %K step %c64 iter_args(%acc_i = %zero) -> (tensor<128x128xf32>) {
    %x = tile.load %a[%m0, %k] : !tile.tensor<?x?xbf16, ["M", "K"]> -> tensor<128x64xbf16>
    %y = tile.load %b[%n0, %k] : !tile.tensor<?x?xbf16, ["N", "K"]> -> tensor<128x64xbf16>
    %d = tile.dot %x, %y, %acc_i transpose_rhs : tensor<128x64xbf16>, tensor<128x64xbf16> -> tensor<128x128xf32>
    scf.yield %d : tensor<128x128xf32>
  }
  %s = tile.splat %alpha : f32 -> tensor<128x128xf32>
  %scaled = arith.mulf %acc, %s : tensor<128x128xf32>
  %bv = tile.load %bias[%n0] : !tile.tensor<?xf32, ["N"]> -> tensor<128xf32>
  %bb = tile.broadcast %bv, 1 : tensor<128xf32> -> tensor<128x128xf32>
  %r = arith.addf %scaled, %bb : tensor<128x128xf32>
  %o = arith.truncf %r : tensor<128x128xf32> to tensor<128x128xbf16>
  tile.store %o, %c[%m0, %n0] : tensor<128x128xbf16> -> !tile.tensor<?x?xbf16, ["M", "N"]>
  tile.return
}
