// Experiment (2026-12-07, eleventh session): examples/softmax.mlir without the online
// update: three loops, each without a reduction inside. The first keeps a BLOCK_M x
// BLOCK_N tile of running maxima and reduces it after the loop; the second a tile of
// partial sums of exp(x - max), reduced after the loop; the third writes the output. Three
// reads of x (reuse-slots keeps the row block on chip where it fits), the same
// exponentials as the online form, no shuffle chain per block.
tile.kernel @softmax(%x: !tile.tensor<?x?xbf16, ["M", "N"]>, %y: !tile.tensor<?x?xbf16, ["M", "N"]>) attributes {params = {BLOCK_M = 64, BLOCK_N = 128}} {
  %c0 = arith.constant 0 : index
  %bm = arith.constant $BLOCK_M : index
  %bn = arith.constant $BLOCK_N : index
  %pid = tile.program_id x
  %m0 = arith.muli %pid, %bm : index
  %N = tile.dim %x[1] : !tile.tensor<?x?xbf16, ["M", "N"]>
  %ninf2 = arith.constant dense<0xFF800000> : tensor<$BLOCK_Mx$BLOCK_Nxf32>
  %zero2 = arith.constant dense<0.000000e+00> : tensor<$BLOCK_Mx$BLOCK_Nxf32>
  %mt = scf.for %n = %c0 to %N step %bn iter_args(%acc = %ninf2) -> (tensor<$BLOCK_Mx$BLOCK_Nxf32>) {
    %xt = tile.load %x[%m0, %n] padding -inf : !tile.tensor<?x?xbf16, ["M", "N"]> -> tensor<$BLOCK_Mx$BLOCK_Nxbf16>
    %xf = arith.extf %xt : tensor<$BLOCK_Mx$BLOCK_Nxbf16> to tensor<$BLOCK_Mx$BLOCK_Nxf32>
    %acc_new = arith.maximumf %acc, %xf : tensor<$BLOCK_Mx$BLOCK_Nxf32>
    scf.yield %acc_new : tensor<$BLOCK_Mx$BLOCK_Nxf32>
  }
  %m = tile.reduce max %mt, 1 : tensor<$BLOCK_Mx$BLOCK_Nxf32> -> tensor<$BLOCK_Mxf32>
  %mb = tile.broadcast %m, 0 : tensor<$BLOCK_Mxf32> -> tensor<$BLOCK_Mx$BLOCK_Nxf32>
  %lt = scf.for %n = %c0 to %N step %bn iter_args(%acc = %zero2) -> (tensor<$BLOCK_Mx$BLOCK_Nxf32>) {
    %xt = tile.load %x[%m0, %n] padding -inf : !tile.tensor<?x?xbf16, ["M", "N"]> -> tensor<$BLOCK_Mx$BLOCK_Nxbf16>
    %xf = arith.extf %xt : tensor<$BLOCK_Mx$BLOCK_Nxbf16> to tensor<$BLOCK_Mx$BLOCK_Nxf32>
    %sh = arith.subf %xf, %mb : tensor<$BLOCK_Mx$BLOCK_Nxf32>
    %e = math.exp %sh : tensor<$BLOCK_Mx$BLOCK_Nxf32>
    %acc_new = arith.addf %acc, %e : tensor<$BLOCK_Mx$BLOCK_Nxf32>
    scf.yield %acc_new : tensor<$BLOCK_Mx$BLOCK_Nxf32>
  }
  %l = tile.reduce sum %lt, 1 : tensor<$BLOCK_Mx$BLOCK_Nxf32> -> tensor<$BLOCK_Mxf32>
  %lb = tile.broadcast %l, 0 : tensor<$BLOCK_Mxf32> -> tensor<$BLOCK_Mx$BLOCK_Nxf32>
  scf.for %n = %c0 to %N step %bn {
    %xt = tile.load %x[%m0, %n] : !tile.tensor<?x?xbf16, ["M", "N"]> -> tensor<$BLOCK_Mx$BLOCK_Nxbf16>
    %xf = arith.extf %xt : tensor<$BLOCK_Mx$BLOCK_Nxbf16> to tensor<$BLOCK_Mx$BLOCK_Nxf32>
    %sh = arith.subf %xf, %mb : tensor<$BLOCK_Mx$BLOCK_Nxf32>
    %e = math.exp %sh : tensor<$BLOCK_Mx$BLOCK_Nxf32>
    %p = arith.divf %e, %lb fastmath<arcp> : tensor<$BLOCK_Mx$BLOCK_Nxf32>
    %p16 = arith.truncf %p : tensor<$BLOCK_Mx$BLOCK_Nxf32> to tensor<$BLOCK_Mx$BLOCK_Nxbf16>
    tile.store %p16, %y[%m0, %n] : tensor<$BLOCK_Mx$BLOCK_Nxbf16> -> !tile.tensor<?x?xbf16, ["M", "N"]>
  }
  tile.return
}
