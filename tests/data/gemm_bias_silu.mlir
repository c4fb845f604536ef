// C = silu(A * B^T + bias) with a bf16 bias vector: x / (1 + exp(-x)).
tile.kernel @gemm_silu(%a: !tile.tensor<?x?xbf16, ["M", "K"]>, %b: !tile.tensor<?x?xbf16, ["N", "K"]>, %bias: !tile.tensor<?xbf16, ["N"]>, %c: !tile.tensor<?x?xbf16, ["M", "N"]>) {
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
  %bv = tile.load %bias[%n0] : !tile.tensor<?xbf16, ["N"]> -> tensor<128xbf16>
  %bf = arith.extf %bv : tensor<128xbf16> to tensor<128xf32>
  %bb = tile.broadcast %bf, 1 : tensor<128xf32> -> tensor<128x128xf32>
  %r = arith.addf %acc, %bb : tensor<128x128xf32>
  %neg = arith.negf %r : tensor<128x128xf32>
  %e = math.exp %neg : tensor<128x128xf32>
  %one = arith.constant dense<1.000000e+00> : tensor<128x128xf32>
  %den = arith.addf %one, %e : tensor<128x128xf32>
  %sig = arith.divf %r, %den : tensor<128x128xf32>
  %o = arith.truncf %sig : tensor<128x128xf32> to tensor<128x128xbf16>
  tile.store %o, %c[%m0, %n0] : tensor<128x128xbf16> -> !tile.tensor<?x?xbf16, ["M", "N"]>
  tile.return
}
