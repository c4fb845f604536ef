// Issue 22 experiment: split-K written as a tile program. Program z computes the partial
// product of the K chunk [z * KC, min((z + 1) * KC, K)) into W[z] (fp32, [S, M, N]); the
// caller sums W over z (torch) and casts. It measures what more CTAs streaming B would
// give decode GEMMs before split-K becomes a schedule decision (docs/design.md).
tile.kernel @gemm_splitk_partial(%a: !tile.tensor<?x?xbf16, ["M", "K"]>, %b: !tile.tensor<?x?xbf16, ["N", "K"]>, %w: !tile.tensor<?x?x?xf32, ["S", "M", "N"]>) attributes {params = {BLOCK_M = 64, BLOCK_N = 128, BLOCK_K = 128, KC = 2048}} {
  %c0 = arith.constant 0 : index
  %bk = arith.constant $BLOCK_K : index
  %bm = arith.constant $BLOCK_M : index
  %bn = arith.constant $BLOCK_N : index
  %kc = arith.constant $KC : index
  %pid_m = tile.program_id x
  %pid_n = tile.program_id y
  %pid_s = tile.program_id z
  %m0 = arith.muli %pid_m, %bm : index
  %n0 = arith.muli %pid_n, %bn : index
  %K = tile.dim %a[1] : !tile.tensor<?x?xbf16, ["M", "K"]>
  %k0 = arith.muli %pid_s, %kc : index
  %k1u = arith.addi %k0, %kc : index
  %k1 = arith.minsi %k1u, %K : index
  %zero = arith.constant dense<0.000000e+00> : tensor<$BLOCK_Mx$BLOCK_Nxf32>
  %acc = scf.for %k = %k0 to %k1 step %bk iter_args(%acc_i = %zero) -> (tensor<$BLOCK_Mx$BLOCK_Nxf32>) {
    %x = tile.load %a[%m0, %k] : !tile.tensor<?x?xbf16, ["M", "K"]> -> tensor<$BLOCK_Mx$BLOCK_Kxbf16>
    %y = tile.load %b[%n0, %k] : !tile.tensor<?x?xbf16, ["N", "K"]> -> tensor<$BLOCK_Nx$BLOCK_Kxbf16>
    %d = tile.dot %x, %y, %acc_i transpose_rhs : tensor<$BLOCK_Mx$BLOCK_Kxbf16>, tensor<$BLOCK_Nx$BLOCK_Kxbf16> -> tensor<$BLOCK_Mx$BLOCK_Nxf32>
    scf.yield %d : tensor<$BLOCK_Mx$BLOCK_Nxf32>
  }
  tile.store %acc, %w[%pid_s, %m0, %n0] : tensor<$BLOCK_Mx$BLOCK_Nxf32> -> !tile.tensor<?x?x?xf32, ["S", "M", "N"]>
  tile.return
}
