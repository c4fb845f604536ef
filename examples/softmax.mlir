// Row softmax y = exp(x - max(x)) / sum(exp(x - max(x))) over the rows of x (M x N, any N),
// without MMAs: BLOCK_M rows per program and two loops over BLOCK_N-column blocks. The first
// keeps each row's running maximum and sum (online, as attention's softmax does: the sum is
// rescaled by exp(m_old - m_new) when the maximum grows); the columns past N read as -inf
// (the load's padding), so they change neither. The second writes the normalized values.
// The producer warp streams both loops' tiles through one ring in shared memory.
// Parameters: BLOCK_M rows (64, 128 or 192: whole m64 blocks, one per consumer warp group;
// 8, 16 or 32: the blocked layout, docs/design/backend.md), BLOCK_N columns
// (tawac compile -D BLOCK_N=256).
tile.kernel @softmax(%x: !tile.tensor<?x?xbf16, ["M", "N"]>, %y: !tile.tensor<?x?xbf16, ["M", "N"]>) attributes {params = {BLOCK_M = 64, BLOCK_N = 128}} {
  %c0 = arith.constant 0 : index
  %bm = arith.constant $BLOCK_M : index
  %bn = arith.constant $BLOCK_N : index
  %pid = tile.program_id x
  %m0 = arith.muli %pid, %bm : index
  %N = tile.dim %x[1] : !tile.tensor<?x?xbf16, ["M", "N"]>
  %m_init = arith.constant dense<0xFF800000> : tensor<$BLOCK_Mxf32>
  %l_init = arith.constant dense<0.000000e+00> : tensor<$BLOCK_Mxf32>
  %m, %l = scf.for %n = %c0 to %N step %bn iter_args(%m_j = %m_init, %l_j = %l_init) -> (tensor<$BLOCK_Mxf32>, tensor<$BLOCK_Mxf32>) {
    %xt = tile.load %x[%m0, %n] padding -inf : !tile.tensor<?x?xbf16, ["M", "N"]> -> tensor<$BLOCK_Mx$BLOCK_Nxbf16>
    %xf = arith.extf %xt : tensor<$BLOCK_Mx$BLOCK_Nxbf16> to tensor<$BLOCK_Mx$BLOCK_Nxf32>
    %mx = tile.reduce max %xf, 1 : tensor<$BLOCK_Mx$BLOCK_Nxf32> -> tensor<$BLOCK_Mxf32>
    %m_new = arith.maximumf %m_j, %mx : tensor<$BLOCK_Mxf32>
    %mb = tile.broadcast %m_new, 0 : tensor<$BLOCK_Mxf32> -> tensor<$BLOCK_Mx$BLOCK_Nxf32>
    %sh = arith.subf %xf, %mb : tensor<$BLOCK_Mx$BLOCK_Nxf32>
    %e = math.exp %sh : tensor<$BLOCK_Mx$BLOCK_Nxf32>
    %s = tile.reduce sum %e, 1 : tensor<$BLOCK_Mx$BLOCK_Nxf32> -> tensor<$BLOCK_Mxf32>
    %dm = arith.subf %m_j, %m_new : tensor<$BLOCK_Mxf32>
    %al = math.exp %dm : tensor<$BLOCK_Mxf32>
    %ls = arith.mulf %l_j, %al : tensor<$BLOCK_Mxf32>
    %l_new = arith.addf %ls, %s : tensor<$BLOCK_Mxf32>
    scf.yield %m_new, %l_new : tensor<$BLOCK_Mxf32>, tensor<$BLOCK_Mxf32>
  }
  %mb = tile.broadcast %m, 0 : tensor<$BLOCK_Mxf32> -> tensor<$BLOCK_Mx$BLOCK_Nxf32>
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
