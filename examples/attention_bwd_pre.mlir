// Attention backward, the preprocessing: per query row, delta = sum over the head
// dimension of O * dO (f32), which the backward subtracts from dP = dO V^T before
// multiplying by P (the softmax's Jacobian: dS = P * (dP - delta)). O and dO are
// [batch, heads, seq, HEAD_DIM] bf16, delta is [batch, heads, seq] f32; program
// (x, y, z) = (row block, head, batch). Without MMAs: BLOCK_M rows per program; rows past
// the end read as 0 and are not stored.
// Parameters: BLOCK_M rows (a multiple of 64), HEAD_DIM (64 or 128).
tile.kernel @attention_bwd_pre(%o: !tile.tensor<?x?x?x?xbf16, ["B", "H", "S", "D"]>, %do: !tile.tensor<?x?x?x?xbf16, ["B", "H", "S", "D"]>, %delta: !tile.tensor<?x?x?xf32, ["B", "H", "S"]>) attributes {params = {BLOCK_M = 64, HEAD_DIM = 128}} {
  %c0 = arith.constant 0 : index
  %bm = arith.constant $BLOCK_M : index
  %pid_m = tile.program_id x
  %h = tile.program_id y
  %b = tile.program_id z
  %m0 = arith.muli %pid_m, %bm : index
  %ot = tile.load %o[%b, %h, %m0, %c0] : !tile.tensor<?x?x?x?xbf16, ["B", "H", "S", "D"]> -> tensor<$BLOCK_Mx$HEAD_DIMxbf16>
  %dot = tile.load %do[%b, %h, %m0, %c0] : !tile.tensor<?x?x?x?xbf16, ["B", "H", "S", "D"]> -> tensor<$BLOCK_Mx$HEAD_DIMxbf16>
  %of = arith.extf %ot : tensor<$BLOCK_Mx$HEAD_DIMxbf16> to tensor<$BLOCK_Mx$HEAD_DIMxf32>
  %dof = arith.extf %dot : tensor<$BLOCK_Mx$HEAD_DIMxbf16> to tensor<$BLOCK_Mx$HEAD_DIMxf32>
  %prod = arith.mulf %of, %dof : tensor<$BLOCK_Mx$HEAD_DIMxf32>
  %d = tile.reduce sum %prod, 1 : tensor<$BLOCK_Mx$HEAD_DIMxf32> -> tensor<$BLOCK_Mxf32>
  tile.store %d, %delta[%b, %h, %m0] : tensor<$BLOCK_Mxf32> -> !tile.tensor<?x?x?xf32, ["B", "H", "S"]>
  tile.return
}
