// Grouped GEMM (a mixture-of-experts layer): C = A * W[e]^T for each expert e's tokens.
// A is T x K (bf16, tokens sorted by expert, each expert's rows padded to a multiple of
// BLOCK_M: the routing step's layout), W is E x N x K (each expert's weights, K-major), C is
// T x N (bf16, the padding rows get zeros). ids[x] is the expert of row block x, -1 for a
// block of padding only (no work). One launch covers every expert's tiles; the expert id
// is read per tile (tile.load_index), by the producer for W's coordinates as well.
tile.kernel @gemm_grouped(%a: !tile.tensor<?x?xbf16, ["T", "K"]>, %w: !tile.tensor<?x?x?xbf16, ["E", "N", "K"]>, %ids: !tile.tensor<?xi32, ["BLOCKS"]>, %c: !tile.tensor<?x?xbf16, ["T", "N"]>) attributes {params = {BLOCK_M = 128, BLOCK_N = 256, BLOCK_K = 64}} {
  %c0 = arith.constant 0 : index
  %bk = arith.constant $BLOCK_K : index
  %bm = arith.constant $BLOCK_M : index
  %bn = arith.constant $BLOCK_N : index
  %pid_m = tile.program_id x
  %pid_n = tile.program_id y
  %m0 = arith.muli %pid_m, %bm : index
  %n0 = arith.muli %pid_n, %bn : index
  %e = tile.load_index %ids[%pid_m] : !tile.tensor<?xi32, ["BLOCKS"]>
  %valid = arith.cmpi sge, %e, %c0 : index
  %K = tile.dim %a[1] : !tile.tensor<?x?xbf16, ["T", "K"]>
  %steps = arith.select %valid, %K, %c0 : index
  %zero = arith.constant dense<0.000000e+00> : tensor<$BLOCK_Mx$BLOCK_Nxf32>
  %acc = scf.for %k = %c0 to %steps step %bk iter_args(%acc_i = %zero) -> (tensor<$BLOCK_Mx$BLOCK_Nxf32>) {
    %x = tile.load %a[%m0, %k] : !tile.tensor<?x?xbf16, ["T", "K"]> -> tensor<$BLOCK_Mx$BLOCK_Kxbf16>
    %y = tile.load %w[%e, %n0, %k] : !tile.tensor<?x?x?xbf16, ["E", "N", "K"]> -> tensor<$BLOCK_Nx$BLOCK_Kxbf16>
    %d = tile.dot %x, %y, %acc_i transpose_rhs : tensor<$BLOCK_Mx$BLOCK_Kxbf16>, tensor<$BLOCK_Nx$BLOCK_Kxbf16> -> tensor<$BLOCK_Mx$BLOCK_Nxf32>
    scf.yield %d : tensor<$BLOCK_Mx$BLOCK_Nxf32>
  }
  %o = arith.truncf %acc : tensor<$BLOCK_Mx$BLOCK_Nxf32> to tensor<$BLOCK_Mx$BLOCK_Nxbf16>
  tile.store %o, %c[%m0, %n0] : tensor<$BLOCK_Mx$BLOCK_Nxbf16> -> !tile.tensor<?x?xbf16, ["T", "N"]>
  tile.return
}
