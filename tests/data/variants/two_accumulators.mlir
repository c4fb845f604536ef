// Two accumulators in one K loop with separate operands, f32 outputs: coarse-pipeline
// defers the first accumulating dot under the second (once; the loop it makes is not
// pipelined again).
tile.kernel @two_accumulators(%a: !tile.tensor<?x?xbf16, ["M", "K"]>, %b: !tile.tensor<?x?xbf16, ["N", "K"]>, %u: !tile.tensor<?x?xbf16, ["M", "K"]>, %d: !tile.tensor<?x?xbf16, ["N", "K"]>, %c: !tile.tensor<?x?xf32, ["M", "N"]>, %e: !tile.tensor<?x?xf32, ["M", "N"]>) {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %pid_m = tile.program_id x
  %pid_n = tile.program_id y
  %m0 = arith.muli %pid_m, %c128 : index
  %n0 = arith.muli %pid_n, %c128 : index
  %K = tile.dim %a[1] : !tile.tensor<?x?xbf16, ["M", "K"]>
  %zero = arith.constant dense<0.000000e+00> : tensor<128x128xf32>
  %r:2 = scf.for %k = %c0 to %K step %c64 iter_args(%acc1 = %zero, %acc2 = %zero) -> (tensor<128x128xf32>, tensor<128x128xf32>) {
    %x = tile.load %a[%m0, %k] : !tile.tensor<?x?xbf16, ["M", "K"]> -> tensor<128x64xbf16>
    %y = tile.load %b[%n0, %k] : !tile.tensor<?x?xbf16, ["N", "K"]> -> tensor<128x64xbf16>
    %w = tile.load %u[%m0, %k] : !tile.tensor<?x?xbf16, ["M", "K"]> -> tensor<128x64xbf16>
    %z = tile.load %d[%n0, %k] : !tile.tensor<?x?xbf16, ["N", "K"]> -> tensor<128x64xbf16>
    %n1 = tile.dot %x, %y, %acc1 transpose_rhs : tensor<128x64xbf16>, tensor<128x64xbf16> -> tensor<128x128xf32>
    %n2 = tile.dot %w, %z, %acc2 transpose_rhs : tensor<128x64xbf16>, tensor<128x64xbf16> -> tensor<128x128xf32>
    scf.yield %n1, %n2 : tensor<128x128xf32>, tensor<128x128xf32>
  }
  tile.store %r#0, %c[%m0, %n0] : tensor<128x128xf32> -> !tile.tensor<?x?xf32, ["M", "N"]>
  tile.store %r#1, %e[%m0, %n0] : tensor<128x128xf32> -> !tile.tensor<?x?xf32, ["M", "N"]>
  tile.return
}
