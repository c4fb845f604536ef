// Layer norm y = (x - mean) * rstd * w + b over the rows of x (M x N, any N), with
// rstd = rsqrt(var + eps), the mean and rstd of each row also written (f32, M each: what a
// backward pass reads). Without MMAs: BLOCK_M rows per program and three loops over
// BLOCK_N-column blocks: the sum, the sum of squared deviations from the mean (two passes,
// as Triton's tutorial does: no cancellation), then the normalized values. The columns past
// N read as 0 and are masked out of the deviations. w and b are 1-d of N elements.
// Parameters: BLOCK_M rows (64, 128 or 192: whole m64 blocks, one per consumer warp group;
// 8, 16 or 32: the blocked layout, docs/design/backend.md), BLOCK_N columns
// (tawac compile -D BLOCK_N=256).
tile.kernel @layernorm(%x: !tile.tensor<?x?xbf16, ["M", "N"]>, %w: !tile.tensor<?xbf16, ["N"]>, %b: !tile.tensor<?xbf16, ["N"]>, %y: !tile.tensor<?x?xbf16, ["M", "N"]>, %mean_out: !tile.tensor<?xf32, ["M"]>, %rstd_out: !tile.tensor<?xf32, ["M"]>, %eps: f32) attributes {params = {BLOCK_M = 64, BLOCK_N = 128}} {
  %c0 = arith.constant 0 : index
  %bm = arith.constant $BLOCK_M : index
  %bn = arith.constant $BLOCK_N : index
  %pid = tile.program_id x
  %m0 = arith.muli %pid, %bm : index
  %N = tile.dim %x[1] : !tile.tensor<?x?xbf16, ["M", "N"]>
  %zero = arith.constant dense<0.000000e+00> : tensor<$BLOCK_Mxf32>
  %zero2 = arith.constant dense<0.000000e+00> : tensor<$BLOCK_Mx$BLOCK_Nxf32>
  %lim = tile.splat %N : index -> tensor<$BLOCK_Mx$BLOCK_Nxi32>
  %Ni = arith.index_cast %N : index to i32
  %Nf = arith.sitofp %Ni : i32 to f32
  %nv = tile.splat %Nf : f32 -> tensor<$BLOCK_Mxf32>
  %sum = scf.for %n = %c0 to %N step %bn iter_args(%acc = %zero) -> (tensor<$BLOCK_Mxf32>) {
    %xt = tile.load %x[%m0, %n] : !tile.tensor<?x?xbf16, ["M", "N"]> -> tensor<$BLOCK_Mx$BLOCK_Nxbf16>
    %xf = arith.extf %xt : tensor<$BLOCK_Mx$BLOCK_Nxbf16> to tensor<$BLOCK_Mx$BLOCK_Nxf32>
    %s = tile.reduce sum %xf, 1 : tensor<$BLOCK_Mx$BLOCK_Nxf32> -> tensor<$BLOCK_Mxf32>
    %acc_new = arith.addf %acc, %s fastmath<reassoc> : tensor<$BLOCK_Mxf32>
    scf.yield %acc_new : tensor<$BLOCK_Mxf32>
  }
  %mean = arith.divf %sum, %nv fastmath<arcp> : tensor<$BLOCK_Mxf32>
  %mb = tile.broadcast %mean, 0 : tensor<$BLOCK_Mxf32> -> tensor<$BLOCK_Mx$BLOCK_Nxf32>
  %ssd = scf.for %n = %c0 to %N step %bn iter_args(%acc = %zero) -> (tensor<$BLOCK_Mxf32>) {
    %xt = tile.load %x[%m0, %n] : !tile.tensor<?x?xbf16, ["M", "N"]> -> tensor<$BLOCK_Mx$BLOCK_Nxbf16>
    %xf = arith.extf %xt : tensor<$BLOCK_Mx$BLOCK_Nxbf16> to tensor<$BLOCK_Mx$BLOCK_Nxf32>
    %cols = tile.iota 1, %n : tensor<$BLOCK_Mx$BLOCK_Nxi32>
    %in = tile.cmpi slt, %cols, %lim : tensor<$BLOCK_Mx$BLOCK_Nxi32>
    %d = arith.subf %xf, %mb : tensor<$BLOCK_Mx$BLOCK_Nxf32>
    %dm = tile.select %in, %d, %zero2 : tensor<$BLOCK_Mx$BLOCK_Nxi1>, tensor<$BLOCK_Mx$BLOCK_Nxf32>
    %sq = arith.mulf %dm, %dm : tensor<$BLOCK_Mx$BLOCK_Nxf32>
    %s = tile.reduce sum %sq, 1 : tensor<$BLOCK_Mx$BLOCK_Nxf32> -> tensor<$BLOCK_Mxf32>
    %acc_new = arith.addf %acc, %s fastmath<reassoc> : tensor<$BLOCK_Mxf32>
    scf.yield %acc_new : tensor<$BLOCK_Mxf32>
  }
  %var = arith.divf %ssd, %nv fastmath<arcp> : tensor<$BLOCK_Mxf32>
  %ev = tile.splat %eps : f32 -> tensor<$BLOCK_Mxf32>
  %var_eps = arith.addf %var, %ev : tensor<$BLOCK_Mxf32>
  %rstd = math.rsqrt %var_eps : tensor<$BLOCK_Mxf32>
  tile.store %mean, %mean_out[%m0] : tensor<$BLOCK_Mxf32> -> !tile.tensor<?xf32, ["M"]>
  tile.store %rstd, %rstd_out[%m0] : tensor<$BLOCK_Mxf32> -> !tile.tensor<?xf32, ["M"]>
  %rb = tile.broadcast %rstd, 0 : tensor<$BLOCK_Mxf32> -> tensor<$BLOCK_Mx$BLOCK_Nxf32>
  scf.for %n = %c0 to %N step %bn {
    %xt = tile.load %x[%m0, %n] : !tile.tensor<?x?xbf16, ["M", "N"]> -> tensor<$BLOCK_Mx$BLOCK_Nxbf16>
    %wt = tile.load %w[%n] : !tile.tensor<?xbf16, ["N"]> -> tensor<$BLOCK_Nxbf16>
    %bt = tile.load %b[%n] : !tile.tensor<?xbf16, ["N"]> -> tensor<$BLOCK_Nxbf16>
    %xf = arith.extf %xt : tensor<$BLOCK_Mx$BLOCK_Nxbf16> to tensor<$BLOCK_Mx$BLOCK_Nxf32>
    %wf = arith.extf %wt : tensor<$BLOCK_Nxbf16> to tensor<$BLOCK_Nxf32>
    %bf = arith.extf %bt : tensor<$BLOCK_Nxbf16> to tensor<$BLOCK_Nxf32>
    %wb = tile.broadcast %wf, 1 : tensor<$BLOCK_Nxf32> -> tensor<$BLOCK_Mx$BLOCK_Nxf32>
    %bb = tile.broadcast %bf, 1 : tensor<$BLOCK_Nxf32> -> tensor<$BLOCK_Mx$BLOCK_Nxf32>
    %d = arith.subf %xf, %mb : tensor<$BLOCK_Mx$BLOCK_Nxf32>
    %t = arith.mulf %d, %rb : tensor<$BLOCK_Mx$BLOCK_Nxf32>
    %tw = arith.mulf %t, %wb : tensor<$BLOCK_Mx$BLOCK_Nxf32>
    %o = arith.addf %tw, %bb : tensor<$BLOCK_Mx$BLOCK_Nxf32>
    %o16 = arith.truncf %o : tensor<$BLOCK_Mx$BLOCK_Nxf32> to tensor<$BLOCK_Mx$BLOCK_Nxbf16>
    tile.store %o16, %y[%m0, %n] : tensor<$BLOCK_Mx$BLOCK_Nxbf16> -> !tile.tensor<?x?xbf16, ["M", "N"]>
  }
  tile.return
}
