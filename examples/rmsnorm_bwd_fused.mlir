// RMS norm backward in one launch: dx as examples/rmsnorm_bwd_rows.mlir computes it (each
// row read once, program p taking the row blocks p, p + P, ...), and the weight gradient
// dw itself, not partial sums for a second launch: each program writes its partial sums
// (BLOCK_M rows of part[p], P x BLOCK_M x N f32: one a row of the step) and arrives at the
// ticket (`tile.arrive`: its stores released first); the last of the P programs to arrive
// adds the P partials in program order (`tile.split_sum`: the same bits whichever program
// is last), adds the rows and stores dw. The ticket is one i32 of zeros the caller keeps
// (the last arrival sets it back to 0).
// For few rows (1-128 tokens), where the launch of examples/column_sum.mlir costs as
// much as the row kernel: the last program's sum reads P x BLOCK_M x N from L2 alone, so P is at
// most MAX_P (a launch check); past that, the two-launch form is the faster.
// Parameters: BLOCK_N columns (a power of two >= N, a launch check), BLOCK_M rows a step
// (1 by default; at 2 every tile has two rows and each row gets a consumer warp group, as
// in the one-read form), MAX_P the most programs.
tile.kernel @rmsnorm_bwd_fused(%x: !tile.tensor<?x?xbf16, ["M", "N"]>, %dy: !tile.tensor<?x?xbf16, ["M", "N"]>, %w: !tile.tensor<?xbf16, ["N"]>, %rstd: !tile.tensor<?xf32, ["M"]>, %dx: !tile.tensor<?x?xbf16, ["M", "N"]>, %dw: !tile.tensor<?xbf16, ["N"]>, %part: !tile.tensor<?x?x?xf32, ["P", "R", "N"]>, %ticket: !tile.tensor<?xi32, ["T"]>) attributes {params = {BLOCK_M = 1, BLOCK_N = 4096, MAX_P = 16}, tawac.checks = [{arg = "x", dim = 1, at_most = {const = $BLOCK_N}}, {arg = "part", dim = 0, at_most = {const = $MAX_P}}, {arg = "part", dim = 1, equals = {const = $BLOCK_M}}]} {
  %c0 = arith.constant 0 : index
  %bm = arith.constant $BLOCK_M : index
  %pid = tile.program_id x
  %M = tile.dim %x[0] : !tile.tensor<?x?xbf16, ["M", "N"]>
  %N = tile.dim %x[1] : !tile.tensor<?x?xbf16, ["M", "N"]>
  %P = tile.dim %part[0] : !tile.tensor<?x?x?xf32, ["P", "R", "N"]>
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
  tile.store %acc, %part[%pid, %c0, %c0] : tensor<$BLOCK_Mx$BLOCK_Nxf32> -> !tile.tensor<?x?x?xf32, ["P", "R", "N"]>
  %last = tile.arrive %ticket[%c0] count %P : !tile.tensor<?xi32, ["T"]>
  scf.if %last {
    %sum = tile.split_sum %part[%c0, %c0, %c0] count %P max $MAX_P : !tile.tensor<?x?x?xf32, ["P", "R", "N"]> -> tensor<$BLOCK_Mx$BLOCK_Nxf32>
    %sum1 = tile.reduce sum %sum, 0 : tensor<$BLOCK_Mx$BLOCK_Nxf32> -> tensor<$BLOCK_Nxf32>
    %dw16 = arith.truncf %sum1 : tensor<$BLOCK_Nxf32> to tensor<$BLOCK_Nxbf16>
    tile.store %dw16, %dw[%c0] : tensor<$BLOCK_Nxbf16> -> !tile.tensor<?xbf16, ["N"]>
  }
  tile.return
}
