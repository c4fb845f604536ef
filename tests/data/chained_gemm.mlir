// O = bf16(A * B^T) * V over the first 128 rows of B and V: the second MMA takes its
// left operand (P) from registers, V once per program through its own aref.
// A is MxK, B is NxK (N >= 128 rows used), V is NxD (D = 128 columns used), O is MxD.
tile.kernel @chained(%a: !tile.tensor<?x?xbf16, ["M", "K"]>, %b: !tile.tensor<?x?xbf16, ["N", "K"]>, %v: !tile.tensor<?x?xbf16, ["N", "D"]>, %o: !tile.tensor<?x?xf32, ["M", "D"]>) {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %pid_m = tile.program_id x
  %m0 = arith.muli %pid_m, %c128 : index
  %K = tile.dim %a[1] : !tile.tensor<?x?xbf16, ["M", "K"]>
  %zero = arith.constant dense<0.000000e+00> : tensor<128x128xf32>
  %s = scf.for %k = %c0 to %K step %c64 iter_args(%acc_i = %zero) -> (tensor<128x128xf32>) {
    %x = tile.load %a[%m0, %k] : !tile.tensor<?x?xbf16, ["M", "K"]> -> tensor<128x64xbf16>
    %y = tile.load %b[%c0, %k] : !tile.tensor<?x?xbf16, ["N", "K"]> -> tensor<128x64xbf16>
    %d = tile.dot %x, %y, %acc_i transpose_rhs : tensor<128x64xbf16>, tensor<128x64xbf16> -> tensor<128x128xf32>
    scf.yield %d : tensor<128x128xf32>
  }
  %p = arith.truncf %s : tensor<128x128xf32> to tensor<128x128xbf16>
  %vt = tile.load %v[%c0, %c0] : !tile.tensor<?x?xbf16, ["N", "D"]> -> tensor<128x128xbf16>
  %zero2 = arith.constant dense<0.000000e+00> : tensor<128x128xf32>
  %out = tile.dot %p, %vt, %zero2 : tensor<128x128xbf16>, tensor<128x128xbf16> -> tensor<128x128xf32>
  tile.store %out, %o[%m0, %c0] : tensor<128x128xf32> -> !tile.tensor<?x?xf32, ["M", "D"]>
  tile.return
}
