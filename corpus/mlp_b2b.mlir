// A back-to-back MLP: O = relu(X * W1^T) * W2, the hidden activations never leaving the
// chip. X is MxD (D = DIM input features), W1 is FxD (F hidden units), W2 is FxE
// (E = OUT output features, stored hidden-major: its rows are the hidden units), O is
// MxE; bf16 in and out, fp32 accumulation. Per BLOCK_M rows of X (loaded once) the
// loop walks the hidden units BLOCK_F at a time: H = relu(X W1_j^T) (the first dot),
// rounded to bf16 and multiplied into the output accumulator (the second dot, its left
// operand from registers): two chained dots per step, as attention's Q K^T and P V
// without the softmax. Hidden units past F read W1 and W2 rows as zeros (TMA), which
// add nothing: any F. Rows past M are not stored.
// Parameters: BLOCK_M rows and BLOCK_F hidden units per step, DIM and OUT (64 or 128).
tile.kernel @mlp_b2b(%x: !tile.tensor<?x?xbf16, ["M", "D"]>, %w1: !tile.tensor<?x?xbf16, ["F", "D"]>, %w2: !tile.tensor<?x?xbf16, ["F", "E"]>, %o: !tile.tensor<?x?xbf16, ["M", "E"]>) attributes {params = {BLOCK_M = 128, BLOCK_F = 128, DIM = 128, OUT = 128}} {
  %c0 = arith.constant 0 : index
  %bm = arith.constant $BLOCK_M : index
  %bf = arith.constant $BLOCK_F : index
  %pid_m = tile.program_id x
  %m0 = arith.muli %pid_m, %bm : index
  %F = tile.dim %w1[0] : !tile.tensor<?x?xbf16, ["F", "D"]>
  %xt = tile.load %x[%m0, %c0] : !tile.tensor<?x?xbf16, ["M", "D"]> -> tensor<$BLOCK_Mx$DIMxbf16>
  %o_init = arith.constant dense<0.000000e+00> : tensor<$BLOCK_Mx$OUTxf32>
  %s_zero = arith.constant dense<0.000000e+00> : tensor<$BLOCK_Mx$BLOCK_Fxf32>
  %acc = scf.for %f = %c0 to %F step %bf iter_args(%acc_j = %o_init) -> (tensor<$BLOCK_Mx$OUTxf32>) {
    %w1t = tile.load %w1[%f, %c0] : !tile.tensor<?x?xbf16, ["F", "D"]> -> tensor<$BLOCK_Fx$DIMxbf16>
    %w2t = tile.load %w2[%f, %c0] : !tile.tensor<?x?xbf16, ["F", "E"]> -> tensor<$BLOCK_Fx$OUTxbf16>
    %s = tile.dot %xt, %w1t, %s_zero transpose_rhs : tensor<$BLOCK_Mx$DIMxbf16>, tensor<$BLOCK_Fx$DIMxbf16> -> tensor<$BLOCK_Mx$BLOCK_Fxf32>
    %hid = arith.maximumf %s, %s_zero : tensor<$BLOCK_Mx$BLOCK_Fxf32>
    %h16 = arith.truncf %hid : tensor<$BLOCK_Mx$BLOCK_Fxf32> to tensor<$BLOCK_Mx$BLOCK_Fxbf16>
    %acc_new = tile.dot %h16, %w2t, %acc_j : tensor<$BLOCK_Mx$BLOCK_Fxbf16>, tensor<$BLOCK_Fx$OUTxbf16> -> tensor<$BLOCK_Mx$OUTxf32>
    scf.yield %acc_new : tensor<$BLOCK_Mx$OUTxf32>
  }
  %o16 = arith.truncf %acc : tensor<$BLOCK_Mx$OUTxf32> to tensor<$BLOCK_Mx$OUTxbf16>
  tile.store %o16, %o[%m0, %c0] : tensor<$BLOCK_Mx$OUTxbf16> -> !tile.tensor<?x?xbf16, ["M", "E"]>
  tile.return
}
