// RMS norm after a residual add: h = x + r (bf16, written: the residual stream's next
// value) and y = h * rsqrt(mean(h^2) + eps) * w over the rows (M x N, any N), without MMAs:
// BLOCK_M rows per program, two loops over BLOCK_N-column blocks (h and its sum of squares,
// then the normalized and scaled values, h computed again from x and r); the columns past
// N read as 0. w is the 1-d weight of N elements; eps an f32 argument.
// Parameters: BLOCK_M rows (64, 128 or 192: whole m64 blocks, one per consumer warp group;
// 8, 16 or 32: the blocked layout, docs/design/backend.md), BLOCK_N columns
// (tawac compile -D BLOCK_N=256).
tile.kernel @rmsnorm_residual(%x: !tile.tensor<?x?xbf16, ["M", "N"]>, %r: !tile.tensor<?x?xbf16, ["M", "N"]>, %h: !tile.tensor<?x?xbf16, ["M", "N"]>, %w: !tile.tensor<?xbf16, ["N"]>, %y: !tile.tensor<?x?xbf16, ["M", "N"]>, %eps: f32) attributes {params = {BLOCK_M = 64, BLOCK_N = 128}} {
  %c0 = arith.constant 0 : index
  %bm = arith.constant $BLOCK_M : index
  %bn = arith.constant $BLOCK_N : index
  %pid = tile.program_id x
  %m0 = arith.muli %pid, %bm : index
  %N = tile.dim %x[1] : !tile.tensor<?x?xbf16, ["M", "N"]>
  %zero = arith.constant dense<0.000000e+00> : tensor<$BLOCK_Mxf32>
  %ss = scf.for %n = %c0 to %N step %bn iter_args(%acc = %zero) -> (tensor<$BLOCK_Mxf32>) {
    %xt = tile.load %x[%m0, %n] : !tile.tensor<?x?xbf16, ["M", "N"]> -> tensor<$BLOCK_Mx$BLOCK_Nxbf16>
    %rt = tile.load %r[%m0, %n] : !tile.tensor<?x?xbf16, ["M", "N"]> -> tensor<$BLOCK_Mx$BLOCK_Nxbf16>
    %x32 = arith.extf %xt : tensor<$BLOCK_Mx$BLOCK_Nxbf16> to tensor<$BLOCK_Mx$BLOCK_Nxf32>
    %r32 = arith.extf %rt : tensor<$BLOCK_Mx$BLOCK_Nxbf16> to tensor<$BLOCK_Mx$BLOCK_Nxf32>
    %h32 = arith.addf %x32, %r32 : tensor<$BLOCK_Mx$BLOCK_Nxf32>
    %h16 = arith.truncf %h32 : tensor<$BLOCK_Mx$BLOCK_Nxf32> to tensor<$BLOCK_Mx$BLOCK_Nxbf16>
    tile.store %h16, %h[%m0, %n] : tensor<$BLOCK_Mx$BLOCK_Nxbf16> -> !tile.tensor<?x?xbf16, ["M", "N"]>
    %xf = arith.extf %h16 : tensor<$BLOCK_Mx$BLOCK_Nxbf16> to tensor<$BLOCK_Mx$BLOCK_Nxf32>
    %sq = arith.mulf %xf, %xf : tensor<$BLOCK_Mx$BLOCK_Nxf32>
    %s = tile.reduce sum %sq, 1 : tensor<$BLOCK_Mx$BLOCK_Nxf32> -> tensor<$BLOCK_Mxf32>
    %acc_new = arith.addf %acc, %s fastmath<reassoc> : tensor<$BLOCK_Mxf32>
    scf.yield %acc_new : tensor<$BLOCK_Mxf32>
  }
  %Ni = arith.index_cast %N : index to i32
  %Nf = arith.sitofp %Ni : i32 to f32
  %nv = tile.splat %Nf : f32 -> tensor<$BLOCK_Mxf32>
  %ms = arith.divf %ss, %nv fastmath<arcp> : tensor<$BLOCK_Mxf32>
  %ev = tile.splat %eps : f32 -> tensor<$BLOCK_Mxf32>
  %ms_eps = arith.addf %ms, %ev : tensor<$BLOCK_Mxf32>
  %rs = math.rsqrt %ms_eps : tensor<$BLOCK_Mxf32>
  %rb = tile.broadcast %rs, 0 : tensor<$BLOCK_Mxf32> -> tensor<$BLOCK_Mx$BLOCK_Nxf32>
  scf.for %n = %c0 to %N step %bn {
    %xt = tile.load %x[%m0, %n] : !tile.tensor<?x?xbf16, ["M", "N"]> -> tensor<$BLOCK_Mx$BLOCK_Nxbf16>
    %rt = tile.load %r[%m0, %n] : !tile.tensor<?x?xbf16, ["M", "N"]> -> tensor<$BLOCK_Mx$BLOCK_Nxbf16>
    %wt = tile.load %w[%n] : !tile.tensor<?xbf16, ["N"]> -> tensor<$BLOCK_Nxbf16>
    %x32 = arith.extf %xt : tensor<$BLOCK_Mx$BLOCK_Nxbf16> to tensor<$BLOCK_Mx$BLOCK_Nxf32>
    %r32 = arith.extf %rt : tensor<$BLOCK_Mx$BLOCK_Nxbf16> to tensor<$BLOCK_Mx$BLOCK_Nxf32>
    %h32 = arith.addf %x32, %r32 : tensor<$BLOCK_Mx$BLOCK_Nxf32>
    %h16 = arith.truncf %h32 : tensor<$BLOCK_Mx$BLOCK_Nxf32> to tensor<$BLOCK_Mx$BLOCK_Nxbf16>
    %xf = arith.extf %h16 : tensor<$BLOCK_Mx$BLOCK_Nxbf16> to tensor<$BLOCK_Mx$BLOCK_Nxf32>
    %wf = arith.extf %wt : tensor<$BLOCK_Nxbf16> to tensor<$BLOCK_Nxf32>
    %wb = tile.broadcast %wf, 1 : tensor<$BLOCK_Nxf32> -> tensor<$BLOCK_Mx$BLOCK_Nxf32>
    %t = arith.mulf %xf, %rb : tensor<$BLOCK_Mx$BLOCK_Nxf32>
    %o = arith.mulf %t, %wb : tensor<$BLOCK_Mx$BLOCK_Nxf32>
    %o16 = arith.truncf %o : tensor<$BLOCK_Mx$BLOCK_Nxf32> to tensor<$BLOCK_Mx$BLOCK_Nxbf16>
    tile.store %o16, %y[%m0, %n] : tensor<$BLOCK_Mx$BLOCK_Nxbf16> -> !tile.tensor<?x?xbf16, ["M", "N"]>
  }
  tile.return
}
