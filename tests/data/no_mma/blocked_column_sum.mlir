// Column sums y[n] = sum over rows of x[m, n] in BLOCK_M-row tiles (32: not whole m64
// blocks, so the consumer holds its 2-d tiles in the blocked layout), as Triton's
// `_layer_norm_bwd_dwdb` computes them: a BLOCK_M x BLOCK_N f32 accumulator carried
// through a loop over the row blocks (the rows past P read as 0), summed along the rows
// once after it, the sums stored as bf16.
tile.kernel @blocked_column_sum(%x: !tile.tensor<?x?xbf16, ["P", "N"]>, %y: !tile.tensor<?xbf16, ["N"]>) attributes {params = {BLOCK_M = 32, BLOCK_N = 128}} {
  %c0 = arith.constant 0 : index
  %bm = arith.constant $BLOCK_M : index
  %bn = arith.constant $BLOCK_N : index
  %pid = tile.program_id x
  %n0 = arith.muli %pid, %bn : index
  %P = tile.dim %x[0] : !tile.tensor<?x?xbf16, ["P", "N"]>
  %zero = arith.constant dense<0.000000e+00> : tensor<$BLOCK_Mx$BLOCK_Nxf32>
  %acc = scf.for %m = %c0 to %P step %bm iter_args(%a = %zero) -> (tensor<$BLOCK_Mx$BLOCK_Nxf32>) {
    %xt = tile.load %x[%m, %n0] : !tile.tensor<?x?xbf16, ["P", "N"]> -> tensor<$BLOCK_Mx$BLOCK_Nxbf16>
    %xf = arith.extf %xt : tensor<$BLOCK_Mx$BLOCK_Nxbf16> to tensor<$BLOCK_Mx$BLOCK_Nxf32>
    %a2 = arith.addf %a, %xf : tensor<$BLOCK_Mx$BLOCK_Nxf32>
    scf.yield %a2 : tensor<$BLOCK_Mx$BLOCK_Nxf32>
  }
  %s = tile.reduce sum %acc, 0 : tensor<$BLOCK_Mx$BLOCK_Nxf32> -> tensor<$BLOCK_Nxf32>
  %s16 = arith.truncf %s : tensor<$BLOCK_Nxf32> to tensor<$BLOCK_Nxbf16>
  tile.store %s16, %y[%n0] : tensor<$BLOCK_Nxbf16> -> !tile.tensor<?xbf16, ["N"]>
  tile.return
}
