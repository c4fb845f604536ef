// Experiment (2026-12-07, eleventh session): examples/rmsnorm.mlir spelled as Triton's
// tutorials spell their loops: the first loop keeps a BLOCK_M x BLOCK_N tile of partial
// sums (elementwise adds, no reduction inside the loop) and reduces it once after the loop.
// Same result up to the order of the f32 additions. experiments/exp_rows_occupancy.py runs
// it with an `a` configuration suffix.
tile.kernel @rmsnorm(%x: !tile.tensor<?x?xbf16, ["M", "N"]>, %w: !tile.tensor<?xbf16, ["N"]>, %y: !tile.tensor<?x?xbf16, ["M", "N"]>, %eps: f32) attributes {params = {BLOCK_M = 64, BLOCK_N = 128}} {
  %c0 = arith.constant 0 : index
  %bm = arith.constant $BLOCK_M : index
  %bn = arith.constant $BLOCK_N : index
  %pid = tile.program_id x
  %m0 = arith.muli %pid, %bm : index
  %N = tile.dim %x[1] : !tile.tensor<?x?xbf16, ["M", "N"]>
  %zero2 = arith.constant dense<0.000000e+00> : tensor<$BLOCK_Mx$BLOCK_Nxf32>
  %acc2 = scf.for %n = %c0 to %N step %bn iter_args(%acc = %zero2) -> (tensor<$BLOCK_Mx$BLOCK_Nxf32>) {
    %xt = tile.load %x[%m0, %n] : !tile.tensor<?x?xbf16, ["M", "N"]> -> tensor<$BLOCK_Mx$BLOCK_Nxbf16>
    %xf = arith.extf %xt : tensor<$BLOCK_Mx$BLOCK_Nxbf16> to tensor<$BLOCK_Mx$BLOCK_Nxf32>
    %sq = arith.mulf %xf, %xf : tensor<$BLOCK_Mx$BLOCK_Nxf32>
    %acc_new = arith.addf %acc, %sq : tensor<$BLOCK_Mx$BLOCK_Nxf32>
    scf.yield %acc_new : tensor<$BLOCK_Mx$BLOCK_Nxf32>
  }
  %ss = tile.reduce sum %acc2, 1 : tensor<$BLOCK_Mx$BLOCK_Nxf32> -> tensor<$BLOCK_Mxf32>
  %Ni = arith.index_cast %N : index to i32
  %Nf = arith.sitofp %Ni : i32 to f32
  %nv = tile.splat %Nf : f32 -> tensor<$BLOCK_Mxf32>
  %ms = arith.divf %ss, %nv fastmath<arcp> : tensor<$BLOCK_Mxf32>
  %ev = tile.splat %eps : f32 -> tensor<$BLOCK_Mxf32>
  %ms_eps = arith.addf %ms, %ev : tensor<$BLOCK_Mxf32>
  %r = math.rsqrt %ms_eps : tensor<$BLOCK_Mxf32>
  %rb = tile.broadcast %r, 0 : tensor<$BLOCK_Mxf32> -> tensor<$BLOCK_Mx$BLOCK_Nxf32>
  scf.for %n = %c0 to %N step %bn {
    %xt = tile.load %x[%m0, %n] : !tile.tensor<?x?xbf16, ["M", "N"]> -> tensor<$BLOCK_Mx$BLOCK_Nxbf16>
    %wt = tile.load %w[%n] : !tile.tensor<?xbf16, ["N"]> -> tensor<$BLOCK_Nxbf16>
    %xf = arith.extf %xt : tensor<$BLOCK_Mx$BLOCK_Nxbf16> to tensor<$BLOCK_Mx$BLOCK_Nxf32>
    %wf = arith.extf %wt : tensor<$BLOCK_Nxbf16> to tensor<$BLOCK_Nxf32>
    %wb = tile.broadcast %wf, 1 : tensor<$BLOCK_Nxf32> -> tensor<$BLOCK_Mx$BLOCK_Nxf32>
    %t = arith.mulf %xf, %rb : tensor<$BLOCK_Mx$BLOCK_Nxf32>
    %o = arith.mulf %t, %wb : tensor<$BLOCK_Mx$BLOCK_Nxf32>
    %o16 = arith.truncf %o : tensor<$BLOCK_Mx$BLOCK_Nxf32> to tensor<$BLOCK_Mx$BLOCK_Nxbf16>
    tile.store %o16, %y[%m0, %n] : tensor<$BLOCK_Mx$BLOCK_Nxbf16> -> !tile.tensor<?x?xbf16, ["M", "N"]>
  }
  tile.return
}
