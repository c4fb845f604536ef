// D = (A * B^T) * sigmoid(G): a gated epilogue reading a bf16 MxN gate G (a GLU-style
// product), sigmoid(g) = 1 / (1 + exp(-g)). A is MxK, B is NxK, G and D are MxN bf16;
// 128x128x64 tiles.
tile.kernel @gemm_gated(%a: !tile.tensor<?x?xbf16, ["M", "K"]>, %b: !tile.tensor<?x?xbf16, ["N", "K"]>, %g: !tile.tensor<?x?xbf16, ["M", "N"]>, %d: !tile.tensor<?x?xbf16, ["M", "N"]>) {
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
    %p = tile.dot %x, %y, %acc_i transpose_rhs : tensor<128x64xbf16>, tensor<128x64xbf16> -> tensor<128x128xf32>
    scf.yield %p : tensor<128x128xf32>
  }
  %gt = tile.load %g[%m0, %n0] : !tile.tensor<?x?xbf16, ["M", "N"]> -> tensor<128x128xbf16>
  %gf = arith.extf %gt : tensor<128x128xbf16> to tensor<128x128xf32>
  %neg = arith.negf %gf : tensor<128x128xf32>
  %e = math.exp %neg : tensor<128x128xf32>
  %one = arith.constant dense<1.000000e+00> : tensor<128x128xf32>
  %den = arith.addf %one, %e : tensor<128x128xf32>
  %gate = arith.divf %acc, %den fastmath<arcp> : tensor<128x128xf32>
  %o = arith.truncf %gate : tensor<128x128xf32> to tensor<128x128xbf16>
  tile.store %o, %d[%m0, %n0] : tensor<128x128xbf16> -> !tile.tensor<?x?xbf16, ["M", "N"]>
  tile.return
}
