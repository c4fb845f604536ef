// A GEMM whose schedule is written on the kernel, every decision given: a 4-slot ring
// released one iteration late (its MMA awaited with one group in flight), the epilogue
// in 64-column chunks through two buffers. plan checks it and keeps it (the fuzz corpus
// mutates it too).
tile.kernel @gemm_scheduled(%a: !tile.tensor<?x?xbf16, ["M", "K"]>, %b: !tile.tensor<?x?xbf16, ["N", "K"]>, %c: !tile.tensor<?x?xbf16, ["M", "N"]>) attributes {tawac.schedule = #tawac.schedule<roles = [producer wg 1 regs 24, consumer wg 2 regs 240], arefs = [a_b: depth 4 lag 1], loops = [consumer 0: [0 aref.get, 1 tile.dot, wait 1 pending 1, 2 aref.consumed]], stores = [c: chunks 2]>} {
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
  %o = arith.truncf %acc : tensor<128x128xf32> to tensor<128x128xbf16>
  tile.store %o, %c[%m0, %n0] : tensor<128x128xbf16> -> !tile.tensor<?x?xbf16, ["M", "N"]>
  tile.return
}
