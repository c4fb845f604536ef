// Kernel parameters: $NAME substituted before parsing; the declaration records the values used.
// RUN: tawac opt %s -p warp-specialize | filecheck %s --check-prefix=DEFAULT
// RUN: tawac opt %s -p warp-specialize -D BLOCK_N=64 -D BLOCK_K=32 | filecheck %s --check-prefix=SET
// RUN: not tawac opt %s -D BLOCK_Q=1 2>&1 | filecheck %s --check-prefix=UNKNOWN
// RUN: not tawac opt %s -D BLOCK_N=x 2>&1 | filecheck %s --check-prefix=NOTINT

// DEFAULT: attributes {params = {BLOCK_N = 128 : i64, BLOCK_K = 64 : i64}}
// DEFAULT: tile.load {{.*}} -> tensor<128x64xbf16>
// SET: attributes {params = {BLOCK_N = 64 : i64, BLOCK_K = 32 : i64}}
// SET: tile.load {{.*}} -> tensor<128x32xbf16>
// SET: tile.load {{.*}} -> tensor<64x32xbf16>
// UNKNOWN: error: unknown parameter BLOCK_Q (the kernel declares BLOCK_N, BLOCK_K)
// NOTINT: error: parameter BLOCK_N: expected an integer, got 'x'
tile.kernel @k(%a: !tile.tensor<?x?xbf16>, %b: !tile.tensor<?x?xbf16>, %c: !tile.tensor<?x?xbf16>) attributes {params = {BLOCK_N = 128, BLOCK_K = 64}} {
  %c0 = arith.constant 0 : index
  %bk = arith.constant $BLOCK_K : index
  %c128 = arith.constant 128 : index
  %bn = arith.constant $BLOCK_N : index
  %pid_m = tile.program_id x
  %pid_n = tile.program_id y
  %m0 = arith.muli %pid_m, %c128 : index
  %n0 = arith.muli %pid_n, %bn : index
  %K = tile.dim %a[1] : !tile.tensor<?x?xbf16>
  %zero = arith.constant dense<0.0> : tensor<128x$BLOCK_Nxf32>
  %acc = scf.for %k = %c0 to %K step %bk iter_args(%acc_i = %zero) -> (tensor<128x$BLOCK_Nxf32>) {
    %x = tile.load %a[%m0, %k] : !tile.tensor<?x?xbf16> -> tensor<128x$BLOCK_Kxbf16>
    %y = tile.load %b[%n0, %k] : !tile.tensor<?x?xbf16> -> tensor<$BLOCK_Nx$BLOCK_Kxbf16>
    %d = tile.dot %x, %y, %acc_i transpose_rhs : tensor<128x$BLOCK_Kxbf16>, tensor<$BLOCK_Nx$BLOCK_Kxbf16> -> tensor<128x$BLOCK_Nxf32>
    scf.yield %d : tensor<128x$BLOCK_Nxf32>
  }
  %o = arith.truncf %acc : tensor<128x$BLOCK_Nxf32> to tensor<128x$BLOCK_Nxbf16>
  tile.store %o, %c[%m0, %n0] : tensor<128x$BLOCK_Nxbf16> -> !tile.tensor<?x?xbf16>
  tile.return
}
