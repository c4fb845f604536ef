// Column sums y[n] = sum over rows of x[m, n] (f32 in, the element type of y out): the
// second step of a norm's weight gradient, adding up the partial sums one program per row
// block wrote (examples/layernorm_bwd.mlir). Without MMAs: BLOCK_N columns per program, a
// loop over BLOCK_M-row blocks; the rows past M read as 0.
// Parameters: BLOCK_M rows (a multiple of 64), BLOCK_N columns.
tile.kernel @column_sum(%x: !tile.tensor<?x?xf32, ["P", "N"]>, %y: !tile.tensor<?xbf16, ["N"]>) attributes {params = {BLOCK_M = 64, BLOCK_N = 128}} {
  %c0 = arith.constant 0 : index
  %bm = arith.constant $BLOCK_M : index
  %bn = arith.constant $BLOCK_N : index
  %pid = tile.program_id x
  %n0 = arith.muli %pid, %bn : index
  %P = tile.dim %x[0] : !tile.tensor<?x?xf32, ["P", "N"]>
  %zero = arith.constant dense<0.000000e+00> : tensor<$BLOCK_Nxf32>
  %s = scf.for %m = %c0 to %P step %bm iter_args(%acc = %zero) -> (tensor<$BLOCK_Nxf32>) {
    %xt = tile.load %x[%m, %n0] : !tile.tensor<?x?xf32, ["P", "N"]> -> tensor<$BLOCK_Mx$BLOCK_Nxf32>
    %cs = tile.reduce sum %xt, 0 : tensor<$BLOCK_Mx$BLOCK_Nxf32> -> tensor<$BLOCK_Nxf32>
    %acc_new = arith.addf %acc, %cs : tensor<$BLOCK_Nxf32>
    scf.yield %acc_new : tensor<$BLOCK_Nxf32>
  }
  %s16 = arith.truncf %s : tensor<$BLOCK_Nxf32> to tensor<$BLOCK_Nxbf16>
  tile.store %s16, %y[%n0] : tensor<$BLOCK_Nxbf16> -> !tile.tensor<?xbf16, ["N"]>
  tile.return
}
