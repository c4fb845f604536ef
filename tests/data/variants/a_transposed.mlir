// C = A^T * B^T with A stored KxM (M contiguous): an MN-major left operand.
tile.kernel @a_transposed(%a: !tile.tensor<?x?xf16, ["K", "M"]>, %b: !tile.tensor<?x?xf16, ["N", "K"]>, %c: !tile.tensor<?x?xf16, ["M", "N"]>) {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %pid_m = tile.program_id x
  %pid_n = tile.program_id y
  %m0 = arith.muli %pid_m, %c128 : index
  %n0 = arith.muli %pid_n, %c128 : index
  %K = tile.dim %a[0] : !tile.tensor<?x?xf16, ["K", "M"]>
  %zero = arith.constant dense<0.000000e+00> : tensor<128x128xf32>
  %acc = scf.for %k = %c0 to %K step %c64 iter_args(%acc_i = %zero) -> (tensor<128x128xf32>) {
    %x = tile.load %a[%k, %m0] : !tile.tensor<?x?xf16, ["K", "M"]> -> tensor<64x128xf16>
    %y = tile.load %b[%n0, %k] : !tile.tensor<?x?xf16, ["N", "K"]> -> tensor<128x64xf16>
    %d = tile.dot %x, %y, %acc_i transpose_lhs transpose_rhs : tensor<64x128xf16>, tensor<128x64xf16> -> tensor<128x128xf32>
    scf.yield %d : tensor<128x128xf32>
  }
  %o = arith.truncf %acc : tensor<128x128xf32> to tensor<128x128xf16>
  tile.store %o, %c[%m0, %n0] : tensor<128x128xf16> -> !tile.tensor<?x?xf16, ["M", "N"]>
  tile.return
}
