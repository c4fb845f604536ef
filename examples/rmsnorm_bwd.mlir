// RMS norm backward, the row part: from x, dy, w and the forward's rstd (f32, one per
// row), dx = rstd * (w dy - x rstd^2 c) with c = mean over the row of x w dy; and the
// program's partial sums of dw = sum over rows of dy x rstd, one row of dw_part per program
// (f32, cdiv(M, BLOCK_M) x N), which examples/column_sum.mlir adds up. Without MMAs:
// BLOCK_M rows per program, two loops over BLOCK_N-column blocks (c, then dx and the
// partial sums); the rows and columns past the tensor read as 0.
// Parameters: BLOCK_M rows (64: m64 blocks; 1-32: the blocked layout), BLOCK_N columns;
// the default 8 x 1024 ran faster than 64 x 128 at every size measured on the H100
// (docs/perf/2026-12-07.md); 1 x 4096 is faster still at 1-128 tokens.
tile.kernel @rmsnorm_bwd(%x: !tile.tensor<?x?xbf16, ["M", "N"]>, %dy: !tile.tensor<?x?xbf16, ["M", "N"]>, %w: !tile.tensor<?xbf16, ["N"]>, %rstd: !tile.tensor<?xf32, ["M"]>, %dx: !tile.tensor<?x?xbf16, ["M", "N"]>, %dw_part: !tile.tensor<?x?xf32, ["P", "N"]>) attributes {params = {BLOCK_M = 8, BLOCK_N = 1024}} {
  %c0 = arith.constant 0 : index
  %bm = arith.constant $BLOCK_M : index
  %bn = arith.constant $BLOCK_N : index
  %pid = tile.program_id x
  %m0 = arith.muli %pid, %bm : index
  %N = tile.dim %x[1] : !tile.tensor<?x?xbf16, ["M", "N"]>
  %zero = arith.constant dense<0.000000e+00> : tensor<$BLOCK_Mxf32>
  %rt = tile.load %rstd[%m0] : !tile.tensor<?xf32, ["M"]> -> tensor<$BLOCK_Mxf32>
  %rb = tile.broadcast %rt, 0 : tensor<$BLOCK_Mxf32> -> tensor<$BLOCK_Mx$BLOCK_Nxf32>
  %s = scf.for %n = %c0 to %N step %bn iter_args(%a = %zero) -> (tensor<$BLOCK_Mxf32>) {
    %xt = tile.load %x[%m0, %n] : !tile.tensor<?x?xbf16, ["M", "N"]> -> tensor<$BLOCK_Mx$BLOCK_Nxbf16>
    %dyt = tile.load %dy[%m0, %n] : !tile.tensor<?x?xbf16, ["M", "N"]> -> tensor<$BLOCK_Mx$BLOCK_Nxbf16>
    %wt = tile.load %w[%n] : !tile.tensor<?xbf16, ["N"]> -> tensor<$BLOCK_Nxbf16>
    %xf = arith.extf %xt : tensor<$BLOCK_Mx$BLOCK_Nxbf16> to tensor<$BLOCK_Mx$BLOCK_Nxf32>
    %dyf = arith.extf %dyt : tensor<$BLOCK_Mx$BLOCK_Nxbf16> to tensor<$BLOCK_Mx$BLOCK_Nxf32>
    %wf = arith.extf %wt : tensor<$BLOCK_Nxbf16> to tensor<$BLOCK_Nxf32>
    %wb = tile.broadcast %wf, 1 : tensor<$BLOCK_Nxf32> -> tensor<$BLOCK_Mx$BLOCK_Nxf32>
    %wdy = arith.mulf %wb, %dyf : tensor<$BLOCK_Mx$BLOCK_Nxf32>
    %p = arith.mulf %xf, %wdy : tensor<$BLOCK_Mx$BLOCK_Nxf32>
    %r = tile.reduce sum %p, 1 : tensor<$BLOCK_Mx$BLOCK_Nxf32> -> tensor<$BLOCK_Mxf32>
    %a_new = arith.addf %a, %r : tensor<$BLOCK_Mxf32>
    scf.yield %a_new : tensor<$BLOCK_Mxf32>
  }
  %Ni = arith.index_cast %N : index to i32
  %Nf = arith.sitofp %Ni : i32 to f32
  %nv = tile.splat %Nf : f32 -> tensor<$BLOCK_Mxf32>
  %c = arith.divf %s, %nv fastmath<arcp> : tensor<$BLOCK_Mxf32>
  %r2 = arith.mulf %rt, %rt : tensor<$BLOCK_Mxf32>
  %cr = arith.mulf %c, %r2 : tensor<$BLOCK_Mxf32>
  %crb = tile.broadcast %cr, 0 : tensor<$BLOCK_Mxf32> -> tensor<$BLOCK_Mx$BLOCK_Nxf32>
  scf.for %n = %c0 to %N step %bn {
    %xt = tile.load %x[%m0, %n] : !tile.tensor<?x?xbf16, ["M", "N"]> -> tensor<$BLOCK_Mx$BLOCK_Nxbf16>
    %dyt = tile.load %dy[%m0, %n] : !tile.tensor<?x?xbf16, ["M", "N"]> -> tensor<$BLOCK_Mx$BLOCK_Nxbf16>
    %wt = tile.load %w[%n] : !tile.tensor<?xbf16, ["N"]> -> tensor<$BLOCK_Nxbf16>
    %xf = arith.extf %xt : tensor<$BLOCK_Mx$BLOCK_Nxbf16> to tensor<$BLOCK_Mx$BLOCK_Nxf32>
    %dyf = arith.extf %dyt : tensor<$BLOCK_Mx$BLOCK_Nxbf16> to tensor<$BLOCK_Mx$BLOCK_Nxf32>
    %wf = arith.extf %wt : tensor<$BLOCK_Nxbf16> to tensor<$BLOCK_Nxf32>
    %wb = tile.broadcast %wf, 1 : tensor<$BLOCK_Nxf32> -> tensor<$BLOCK_Mx$BLOCK_Nxf32>
    %wdy = arith.mulf %wb, %dyf : tensor<$BLOCK_Mx$BLOCK_Nxf32>
    %t1 = arith.mulf %xf, %crb : tensor<$BLOCK_Mx$BLOCK_Nxf32>
    %t2 = arith.subf %wdy, %t1 : tensor<$BLOCK_Mx$BLOCK_Nxf32>
    %dxf = arith.mulf %t2, %rb : tensor<$BLOCK_Mx$BLOCK_Nxf32>
    %dx16 = arith.truncf %dxf : tensor<$BLOCK_Mx$BLOCK_Nxf32> to tensor<$BLOCK_Mx$BLOCK_Nxbf16>
    tile.store %dx16, %dx[%m0, %n] : tensor<$BLOCK_Mx$BLOCK_Nxbf16> -> !tile.tensor<?x?xbf16, ["M", "N"]>
    %xn = arith.mulf %xf, %rb : tensor<$BLOCK_Mx$BLOCK_Nxf32>
    %g = arith.mulf %dyf, %xn : tensor<$BLOCK_Mx$BLOCK_Nxf32>
    %dwp = tile.reduce sum %g, 0 : tensor<$BLOCK_Mx$BLOCK_Nxf32> -> tensor<$BLOCK_Nxf32>
    tile.store %dwp, %dw_part[%pid, %n] : tensor<$BLOCK_Nxf32> -> !tile.tensor<?x?xf32, ["P", "N"]>
  }
  tile.return
}
