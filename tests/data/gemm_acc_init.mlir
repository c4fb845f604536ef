// D = A * B^T + C with the product accumulated onto C: the f32 C tile, brought by TMA
// through an aref and read into the accumulator's registers, is the K loop's initial
// accumulator (the first wgmma runs with scale-d true). A is MxK, B is NxK (bf16), C is
// MxN f32, D is MxN bf16; 128x128x64 tiles.
tile.kernel @gemm_acc_init(%a: !tile.tensor<?x?xbf16, ["M", "K"]>, %b: !tile.tensor<?x?xbf16, ["N", "K"]>, %c: !tile.tensor<?x?xf32, ["M", "N"]>, %d: !tile.tensor<?x?xbf16, ["M", "N"]>) {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %pid_m = tile.program_id x
  %pid_n = tile.program_id y
  %m0 = arith.muli %pid_m, %c128 : index
  %n0 = arith.muli %pid_n, %c128 : index
  %K = tile.dim %a[1] : !tile.tensor<?x?xbf16, ["M", "K"]>
  %c_init = tile.load %c[%m0, %n0] : !tile.tensor<?x?xf32, ["M", "N"]> -> tensor<128x128xf32>
  %acc = scf.for %k = %c0 to %K step %c64 iter_args(%acc_i = %c_init) -> (tensor<128x128xf32>) {
    %x = tile.load %a[%m0, %k] : !tile.tensor<?x?xbf16, ["M", "K"]> -> tensor<128x64xbf16>
    %y = tile.load %b[%n0, %k] : !tile.tensor<?x?xbf16, ["N", "K"]> -> tensor<128x64xbf16>
    %p = tile.dot %x, %y, %acc_i transpose_rhs : tensor<128x64xbf16>, tensor<128x64xbf16> -> tensor<128x128xf32>
    scf.yield %p : tensor<128x128xf32>
  }
  %o = arith.truncf %acc : tensor<128x128xf32> to tensor<128x128xbf16>
  tile.store %o, %d[%m0, %n0] : tensor<128x128xbf16> -> !tile.tensor<?x?xbf16, ["M", "N"]>
  tile.return
}
