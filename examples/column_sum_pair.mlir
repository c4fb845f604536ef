// Two column sums in one launch, y1[n] = sum over rows of x1[m, n] and y2[n] = the same of
// x2 (f32 in, the element type of y1 and y2 out): the second step of layer norm's weight
// and bias gradients (examples/layernorm_bwd.mlir's dw_part and db_part), one kernel
// instead of column_sum.mlir twice. Without MMAs: BLOCK_N columns per program, a loop
// over BLOCK_M-row blocks; the rows past P read as 0.
// Parameters: BLOCK_M rows (a multiple of 8), BLOCK_N columns.
tile.kernel @column_sum_pair(%x1: !tile.tensor<?x?xf32, ["P", "N"]>, %x2: !tile.tensor<?x?xf32, ["P", "N"]>, %y1: !tile.tensor<?xbf16, ["N"]>, %y2: !tile.tensor<?xbf16, ["N"]>) attributes {params = {BLOCK_M = 64, BLOCK_N = 128}} {
  %c0 = arith.constant 0 : index
  %bm = arith.constant $BLOCK_M : index
  %bn = arith.constant $BLOCK_N : index
  %pid = tile.program_id x
  %n0 = arith.muli %pid, %bn : index
  %P = tile.dim %x1[0] : !tile.tensor<?x?xf32, ["P", "N"]>
  %zero = arith.constant dense<0.000000e+00> : tensor<$BLOCK_Nxf32>
  %s1, %s2 = scf.for %m = %c0 to %P step %bm iter_args(%a1 = %zero, %a2 = %zero) -> (tensor<$BLOCK_Nxf32>, tensor<$BLOCK_Nxf32>) {
    %t1 = tile.load %x1[%m, %n0] : !tile.tensor<?x?xf32, ["P", "N"]> -> tensor<$BLOCK_Mx$BLOCK_Nxf32>
    %t2 = tile.load %x2[%m, %n0] : !tile.tensor<?x?xf32, ["P", "N"]> -> tensor<$BLOCK_Mx$BLOCK_Nxf32>
    %c1 = tile.reduce sum %t1, 0 : tensor<$BLOCK_Mx$BLOCK_Nxf32> -> tensor<$BLOCK_Nxf32>
    %c2 = tile.reduce sum %t2, 0 : tensor<$BLOCK_Mx$BLOCK_Nxf32> -> tensor<$BLOCK_Nxf32>
    %n1 = arith.addf %a1, %c1 : tensor<$BLOCK_Nxf32>
    %n2 = arith.addf %a2, %c2 : tensor<$BLOCK_Nxf32>
    scf.yield %n1, %n2 : tensor<$BLOCK_Nxf32>, tensor<$BLOCK_Nxf32>
  }
  %h1 = arith.truncf %s1 : tensor<$BLOCK_Nxf32> to tensor<$BLOCK_Nxbf16>
  %h2 = arith.truncf %s2 : tensor<$BLOCK_Nxf32> to tensor<$BLOCK_Nxbf16>
  tile.store %h1, %y1[%n0] : tensor<$BLOCK_Nxbf16> -> !tile.tensor<?xbf16, ["N"]>
  tile.store %h2, %y2[%n0] : tensor<$BLOCK_Nxbf16> -> !tile.tensor<?xbf16, ["N"]>
  tile.return
}
