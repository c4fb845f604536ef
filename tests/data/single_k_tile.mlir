// One K tile, no loop: C = A[:, :64] * B[:, :64]^T (the aref is used once per program).
tile.kernel @single(%a: !tile.tensor<?x?xbf16, ["M", "K"]>, %b: !tile.tensor<?x?xbf16, ["N", "K"]>, %c: !tile.tensor<?x?xbf16, ["M", "N"]>) {
  %c0 = arith.constant 0 : index
  %c128 = arith.constant 128 : index
  %pid_m = tile.program_id x
  %pid_n = tile.program_id y
  %m0 = arith.muli %pid_m, %c128 : index
  %n0 = arith.muli %pid_n, %c128 : index
  %zero = arith.constant dense<0.000000e+00> : tensor<128x128xf32>
  %x = tile.load %a[%m0, %c0] : !tile.tensor<?x?xbf16, ["M", "K"]> -> tensor<128x64xbf16>
  %y = tile.load %b[%n0, %c0] : !tile.tensor<?x?xbf16, ["N", "K"]> -> tensor<128x64xbf16>
  %d = tile.dot %x, %y, %zero transpose_rhs : tensor<128x64xbf16>, tensor<128x64xbf16> -> tensor<128x128xf32>
  %o = arith.truncf %d : tensor<128x128xf32> to tensor<128x128xbf16>
  tile.store %o, %c[%m0, %n0] : tensor<128x128xbf16> -> !tile.tensor<?x?xbf16, ["M", "N"]>
  tile.return
}
