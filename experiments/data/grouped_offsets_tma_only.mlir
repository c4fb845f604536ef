// Grouped GEMM over torch._grouped_mm's layout: A is T x K (bf16) with tokens sorted by
// expert and no padding, W is E x N x K (K-major), C is T x N. Each row block x is one
// expert's: experts[x] its expert (-1: no work), starts[x] its first row, ends[x] the end
// of that expert's rows. A block reads BLOCK_M rows from its start (rows past the end are
// the next expert's tokens: computed, never stored). A block whole inside its expert's
// rows leaves through a TMA store; the last block of an expert stores only the rows
// below the end (tile.store bounds: from registers, since a TMA store clips only at the
// tensor's end).
// The routing step gives the three vectors (ceil(tokens / BLOCK_M) blocks per expert).
tile.kernel @gemm_grouped_offsets(%a: !tile.tensor<?x?xbf16, ["T", "K"]>, %w: !tile.tensor<?x?x?xbf16, ["E", "N", "K"]>, %experts: !tile.tensor<?xi32, ["BLOCKS"]>, %starts: !tile.tensor<?xi32, ["BLOCKS"]>, %ends: !tile.tensor<?xi32, ["BLOCKS"]>, %c: !tile.tensor<?x?xbf16, ["T", "N"]>) attributes {params = {BLOCK_M = 128, BLOCK_N = 256, BLOCK_K = 64}} {
  %c0 = arith.constant 0 : index
  %bk = arith.constant $BLOCK_K : index
  %bn = arith.constant $BLOCK_N : index
  %block = tile.program_id x
  %pid_n = tile.program_id y
  %n0 = arith.muli %pid_n, %bn : index
  %e = tile.load_index %experts[%block] : !tile.tensor<?xi32, ["BLOCKS"]>
  %m0 = tile.load_index %starts[%block] : !tile.tensor<?xi32, ["BLOCKS"]>
  %end = tile.load_index %ends[%block] : !tile.tensor<?xi32, ["BLOCKS"]>
  %valid = arith.cmpi sge, %e, %c0 : index
  %K = tile.dim %a[1] : !tile.tensor<?x?xbf16, ["T", "K"]>
  %N = tile.dim %c[1] : !tile.tensor<?x?xbf16, ["T", "N"]>
  %steps = arith.select %valid, %K, %c0 : index
  %zero = arith.constant dense<0.000000e+00> : tensor<$BLOCK_Mx$BLOCK_Nxf32>
  %acc = scf.for %k = %c0 to %steps step %bk iter_args(%acc_i = %zero) -> (tensor<$BLOCK_Mx$BLOCK_Nxf32>) {
    %x = tile.load %a[%m0, %k] : !tile.tensor<?x?xbf16, ["T", "K"]> -> tensor<$BLOCK_Mx$BLOCK_Kxbf16>
    %y = tile.load %w[%e, %n0, %k] : !tile.tensor<?x?x?xbf16, ["E", "N", "K"]> -> tensor<$BLOCK_Nx$BLOCK_Kxbf16>
    %d = tile.dot %x, %y, %acc_i transpose_rhs : tensor<$BLOCK_Mx$BLOCK_Kxbf16>, tensor<$BLOCK_Nx$BLOCK_Kxbf16> -> tensor<$BLOCK_Mx$BLOCK_Nxf32>
    scf.yield %d : tensor<$BLOCK_Mx$BLOCK_Nxf32>
  }
  %o = arith.truncf %acc : tensor<$BLOCK_Mx$BLOCK_Nxf32> to tensor<$BLOCK_Mx$BLOCK_Nxbf16>
  %bm = arith.constant $BLOCK_M : index
  %m1 = arith.addi %m0, %bm : index
  %whole = arith.cmpi sle, %m1, %end : index
  scf.if %whole {
    tile.store %o, %c[%m0, %n0] : tensor<$BLOCK_Mx$BLOCK_Nxbf16> -> !tile.tensor<?x?xbf16, ["T", "N"]>
  } else {
    tile.store %o, %c[%m0, %n0] : tensor<$BLOCK_Mx$BLOCK_Nxbf16> -> !tile.tensor<?x?xbf16, ["T", "N"]>
  }
  tile.return
}
