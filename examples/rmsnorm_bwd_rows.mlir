// RMS norm backward, one read of each row: from x, dy, w and the forward's rstd (f32, one
// per row), dx = rstd * (w dy - x rstd^2 c) with c = mean over the row of x w dy, as
// examples/rmsnorm_bwd.mlir computes it; and dw's partial sums, one row of dw_part per
// program, which examples/column_sum.mlir adds up.
// The program holds whole rows in one BLOCK_N block, so N <= BLOCK_N (a launch check:
// a longer row is refused, not computed from its first BLOCK_N columns; the columns
// past N read as 0). The caller picks the number of programs P by the rows of dw_part
// (P = the SM count measured fastest): program p takes the row blocks p, p + P, ... and
// carries its partial weight sums across them in registers, one row of sums per row of
// the step, added over the step's rows after the loop (no exchange between the rows in
// the loop). So x and dy are read once and the partials are P x N (the row-block form
// writes cdiv(M, BLOCK_M) x N of them and reads x and dy twice where a row block does
// not stay on chip). w is read from its slot for each step rather than held in
// registers across the loop (fewer registers: 1.16-1.23x faster at 8192 columns).
// Parameters: BLOCK_N columns (a power of two >= N), BLOCK_M rows a step: 2 by default
// (at 2 x 4096 the planner gives each row its own consumer warp group: 1.17-1.33x over
// one row a step on an H200), 1 at 8192 columns, where two rows ran 3-6x slower on an
// H200, not for their spills (docs/perf/2026-12-07.md; reread-slots removed most).
tile.kernel @rmsnorm_bwd_rows(%x: !tile.tensor<?x?xbf16, ["M", "N"]>, %dy: !tile.tensor<?x?xbf16, ["M", "N"]>, %w: !tile.tensor<?xbf16, ["N"]>, %rstd: !tile.tensor<?xf32, ["M"]>, %dx: !tile.tensor<?x?xbf16, ["M", "N"]>, %dw_part: !tile.tensor<?x?xf32, ["P", "N"]>) attributes {params = {BLOCK_M = 2, BLOCK_N = 4096}, tawac.checks = [{arg = "x", dim = 1, at_most = {const = $BLOCK_N}}]} {
  %c0 = arith.constant 0 : index
  %bm = arith.constant $BLOCK_M : index
  %pid = tile.program_id x
  %M = tile.dim %x[0] : !tile.tensor<?x?xbf16, ["M", "N"]>
  %N = tile.dim %x[1] : !tile.tensor<?x?xbf16, ["M", "N"]>
  %P = tile.dim %dw_part[0] : !tile.tensor<?x?xf32, ["P", "N"]>
  %m0 = arith.muli %pid, %bm : index
  %stride = arith.muli %P, %bm : index
  %Ni = arith.index_cast %N : index to i32
  %Nf = arith.sitofp %Ni : i32 to f32
  %nv = tile.splat %Nf : f32 -> tensor<$BLOCK_Mxf32>
  %zero = arith.constant dense<0.000000e+00> : tensor<$BLOCK_Mx$BLOCK_Nxf32>
  %acc = scf.for %m = %m0 to %M step %stride iter_args(%a = %zero) -> (tensor<$BLOCK_Mx$BLOCK_Nxf32>) {
    %wt = tile.load %w[%c0] : !tile.tensor<?xbf16, ["N"]> -> tensor<$BLOCK_Nxbf16>
    %wf = arith.extf %wt : tensor<$BLOCK_Nxbf16> to tensor<$BLOCK_Nxf32>
    %wb = tile.broadcast %wf, 1 : tensor<$BLOCK_Nxf32> -> tensor<$BLOCK_Mx$BLOCK_Nxf32>
    %rt = tile.load %rstd[%m] : !tile.tensor<?xf32, ["M"]> -> tensor<$BLOCK_Mxf32>
    %rb = tile.broadcast %rt, 0 : tensor<$BLOCK_Mxf32> -> tensor<$BLOCK_Mx$BLOCK_Nxf32>
    %xt = tile.load %x[%m, %c0] : !tile.tensor<?x?xbf16, ["M", "N"]> -> tensor<$BLOCK_Mx$BLOCK_Nxbf16>
    %dyt = tile.load %dy[%m, %c0] : !tile.tensor<?x?xbf16, ["M", "N"]> -> tensor<$BLOCK_Mx$BLOCK_Nxbf16>
    %xf = arith.extf %xt : tensor<$BLOCK_Mx$BLOCK_Nxbf16> to tensor<$BLOCK_Mx$BLOCK_Nxf32>
    %dyf = arith.extf %dyt : tensor<$BLOCK_Mx$BLOCK_Nxbf16> to tensor<$BLOCK_Mx$BLOCK_Nxf32>
    %wdy = arith.mulf %wb, %dyf : tensor<$BLOCK_Mx$BLOCK_Nxf32>
    %p = arith.mulf %xf, %wdy : tensor<$BLOCK_Mx$BLOCK_Nxf32>
    %s = tile.reduce sum %p, 1 : tensor<$BLOCK_Mx$BLOCK_Nxf32> -> tensor<$BLOCK_Mxf32>
    %c = arith.divf %s, %nv fastmath<arcp> : tensor<$BLOCK_Mxf32>
    %r2 = arith.mulf %rt, %rt : tensor<$BLOCK_Mxf32>
    %cr = arith.mulf %c, %r2 : tensor<$BLOCK_Mxf32>
    %crb = tile.broadcast %cr, 0 : tensor<$BLOCK_Mxf32> -> tensor<$BLOCK_Mx$BLOCK_Nxf32>
    %t1 = arith.mulf %xf, %crb : tensor<$BLOCK_Mx$BLOCK_Nxf32>
    %t2 = arith.subf %wdy, %t1 : tensor<$BLOCK_Mx$BLOCK_Nxf32>
    %dxf = arith.mulf %t2, %rb : tensor<$BLOCK_Mx$BLOCK_Nxf32>
    %dx16 = arith.truncf %dxf : tensor<$BLOCK_Mx$BLOCK_Nxf32> to tensor<$BLOCK_Mx$BLOCK_Nxbf16>
    tile.store %dx16, %dx[%m, %c0] : tensor<$BLOCK_Mx$BLOCK_Nxbf16> -> !tile.tensor<?x?xbf16, ["M", "N"]>
    %xn = arith.mulf %xf, %rb : tensor<$BLOCK_Mx$BLOCK_Nxf32>
    %g = arith.mulf %dyf, %xn : tensor<$BLOCK_Mx$BLOCK_Nxf32>
    %a_new = arith.addf %a, %g : tensor<$BLOCK_Mx$BLOCK_Nxf32>
    scf.yield %a_new : tensor<$BLOCK_Mx$BLOCK_Nxf32>
  }
  %acc1 = tile.reduce sum %acc, 0 : tensor<$BLOCK_Mx$BLOCK_Nxf32> -> tensor<$BLOCK_Nxf32>
  tile.store %acc1, %dw_part[%pid, %c0] : tensor<$BLOCK_Nxf32> -> !tile.tensor<?x?xf32, ["P", "N"]>
  tile.return
}
