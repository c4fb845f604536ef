// Layer norm backward in one launch: dx as examples/layernorm_bwd_rows.mlir computes it
// (each row read once, program p taking the row blocks p, p + P, ...), and the weight and
// bias gradients dw and db themselves, not partial sums for a second launch: each program
// writes its partial sums (part[p, 0] dw's, part[p, 1] db's, BLOCK_M rows each: one a row
// of the step; part is P x 2 x BLOCK_M x N f32) and arrives at the ticket (`tile.arrive`:
// its stores released first); the last of the P programs to arrive adds the P partials in
// program order (`tile.split_sum`: the same bits whichever program is last), adds the rows
// and stores dw and db. The ticket is one i32 of zeros the caller keeps (the last arrival
// sets it back to 0).
// For few rows (1-128 tokens), where the launch of examples/column_sum_pair.mlir costs as
// much as the row kernel: the last program's sums read P x 2 x BLOCK_M x N from L2 alone, so P is
// at most MAX_P (a launch check); past that, the two-launch form is the faster.
// Parameters: BLOCK_N columns (a power of two >= N, a launch check), BLOCK_M rows a step
// (1 by default; at 2 every tile has two rows and each row gets a consumer warp group, as
// in the one-read form), MAX_P the most programs.
tile.kernel @layernorm_bwd_fused(%x: !tile.tensor<?x?xbf16, ["M", "N"]>, %dy: !tile.tensor<?x?xbf16, ["M", "N"]>, %w: !tile.tensor<?xbf16, ["N"]>, %mean: !tile.tensor<?xf32, ["M"]>, %rstd: !tile.tensor<?xf32, ["M"]>, %dx: !tile.tensor<?x?xbf16, ["M", "N"]>, %dw: !tile.tensor<?xbf16, ["N"]>, %db: !tile.tensor<?xbf16, ["N"]>, %part: !tile.tensor<?x?x?x?xf32, ["P", "G", "R", "N"]>, %ticket: !tile.tensor<?xi32, ["T"]>) attributes {params = {BLOCK_M = 1, BLOCK_N = 4096, MAX_P = 16}, tawac.checks = [{arg = "x", dim = 1, at_most = {const = $BLOCK_N}}, {arg = "part", dim = 0, at_most = {const = $MAX_P}}, {arg = "part", dim = 1, equals = {const = 2}}, {arg = "part", dim = 2, equals = {const = $BLOCK_M}}]} {
  %c0 = arith.constant 0 : index
  %bm = arith.constant $BLOCK_M : index
  %pid = tile.program_id x
  %M = tile.dim %x[0] : !tile.tensor<?x?xbf16, ["M", "N"]>
  %N = tile.dim %x[1] : !tile.tensor<?x?xbf16, ["M", "N"]>
  %P = tile.dim %part[0] : !tile.tensor<?x?x?x?xf32, ["P", "G", "R", "N"]>
  %m0 = arith.muli %pid, %bm : index
  %stride = arith.muli %P, %bm : index
  %Ni = arith.index_cast %N : index to i32
  %Nf = arith.sitofp %Ni : i32 to f32
  %nv = tile.splat %Nf : f32 -> tensor<$BLOCK_Mxf32>
  %zero = arith.constant dense<0.000000e+00> : tensor<$BLOCK_Mx$BLOCK_Nxf32>
  %aw_end, %ab_end = scf.for %m = %m0 to %M step %stride iter_args(%aw = %zero, %ab = %zero) -> (tensor<$BLOCK_Mx$BLOCK_Nxf32>, tensor<$BLOCK_Mx$BLOCK_Nxf32>) {
    %wt = tile.load %w[%c0] : !tile.tensor<?xbf16, ["N"]> -> tensor<$BLOCK_Nxbf16>
    %wf = arith.extf %wt : tensor<$BLOCK_Nxbf16> to tensor<$BLOCK_Nxf32>
    %wb = tile.broadcast %wf, 1 : tensor<$BLOCK_Nxf32> -> tensor<$BLOCK_Mx$BLOCK_Nxf32>
    %mt = tile.load %mean[%m] : !tile.tensor<?xf32, ["M"]> -> tensor<$BLOCK_Mxf32>
    %rt = tile.load %rstd[%m] : !tile.tensor<?xf32, ["M"]> -> tensor<$BLOCK_Mxf32>
    %mb = tile.broadcast %mt, 0 : tensor<$BLOCK_Mxf32> -> tensor<$BLOCK_Mx$BLOCK_Nxf32>
    %rb = tile.broadcast %rt, 0 : tensor<$BLOCK_Mxf32> -> tensor<$BLOCK_Mx$BLOCK_Nxf32>
    %xt = tile.load %x[%m, %c0] : !tile.tensor<?x?xbf16, ["M", "N"]> -> tensor<$BLOCK_Mx$BLOCK_Nxbf16>
    %dyt = tile.load %dy[%m, %c0] : !tile.tensor<?x?xbf16, ["M", "N"]> -> tensor<$BLOCK_Mx$BLOCK_Nxbf16>
    %xf = arith.extf %xt : tensor<$BLOCK_Mx$BLOCK_Nxbf16> to tensor<$BLOCK_Mx$BLOCK_Nxf32>
    %dyf = arith.extf %dyt : tensor<$BLOCK_Mx$BLOCK_Nxbf16> to tensor<$BLOCK_Mx$BLOCK_Nxf32>
    %xc = arith.subf %xf, %mb : tensor<$BLOCK_Mx$BLOCK_Nxf32>
    %xhat = arith.mulf %xc, %rb : tensor<$BLOCK_Mx$BLOCK_Nxf32>
    %wdy = arith.mulf %wb, %dyf : tensor<$BLOCK_Mx$BLOCK_Nxf32>
    %p = arith.mulf %xhat, %wdy : tensor<$BLOCK_Mx$BLOCK_Nxf32>
    %s1 = tile.reduce sum %p, 1 : tensor<$BLOCK_Mx$BLOCK_Nxf32> -> tensor<$BLOCK_Mxf32>
    %s2 = tile.reduce sum %wdy, 1 : tensor<$BLOCK_Mx$BLOCK_Nxf32> -> tensor<$BLOCK_Mxf32>
    %c1 = arith.divf %s1, %nv fastmath<arcp> : tensor<$BLOCK_Mxf32>
    %c2 = arith.divf %s2, %nv fastmath<arcp> : tensor<$BLOCK_Mxf32>
    %c1b = tile.broadcast %c1, 0 : tensor<$BLOCK_Mxf32> -> tensor<$BLOCK_Mx$BLOCK_Nxf32>
    %c2b = tile.broadcast %c2, 0 : tensor<$BLOCK_Mxf32> -> tensor<$BLOCK_Mx$BLOCK_Nxf32>
    %t1 = arith.mulf %xhat, %c1b : tensor<$BLOCK_Mx$BLOCK_Nxf32>
    %t2 = arith.addf %t1, %c2b : tensor<$BLOCK_Mx$BLOCK_Nxf32>
    %t3 = arith.subf %wdy, %t2 : tensor<$BLOCK_Mx$BLOCK_Nxf32>
    %dxf = arith.mulf %t3, %rb : tensor<$BLOCK_Mx$BLOCK_Nxf32>
    %dx16 = arith.truncf %dxf : tensor<$BLOCK_Mx$BLOCK_Nxf32> to tensor<$BLOCK_Mx$BLOCK_Nxbf16>
    tile.store %dx16, %dx[%m, %c0] : tensor<$BLOCK_Mx$BLOCK_Nxbf16> -> !tile.tensor<?x?xbf16, ["M", "N"]>
    %g = arith.mulf %dyf, %xhat : tensor<$BLOCK_Mx$BLOCK_Nxf32>
    %aw_new = arith.addf %aw, %g : tensor<$BLOCK_Mx$BLOCK_Nxf32>
    %ab_new = arith.addf %ab, %dyf : tensor<$BLOCK_Mx$BLOCK_Nxf32>
    scf.yield %aw_new, %ab_new : tensor<$BLOCK_Mx$BLOCK_Nxf32>, tensor<$BLOCK_Mx$BLOCK_Nxf32>
  }
  %one = arith.constant 1 : index
  tile.store %aw_end, %part[%pid, %c0, %c0, %c0] : tensor<$BLOCK_Mx$BLOCK_Nxf32> -> !tile.tensor<?x?x?x?xf32, ["P", "G", "R", "N"]>
  tile.store %ab_end, %part[%pid, %one, %c0, %c0] : tensor<$BLOCK_Mx$BLOCK_Nxf32> -> !tile.tensor<?x?x?x?xf32, ["P", "G", "R", "N"]>
  %last = tile.arrive %ticket[%c0] count %P : !tile.tensor<?xi32, ["T"]>
  scf.if %last {
    %sw = tile.split_sum %part[%c0, %c0, %c0, %c0] count %P max $MAX_P : !tile.tensor<?x?x?x?xf32, ["P", "G", "R", "N"]> -> tensor<$BLOCK_Mx$BLOCK_Nxf32>
    %sb = tile.split_sum %part[%c0, %one, %c0, %c0] count %P max $MAX_P : !tile.tensor<?x?x?x?xf32, ["P", "G", "R", "N"]> -> tensor<$BLOCK_Mx$BLOCK_Nxf32>
    %sw1 = tile.reduce sum %sw, 0 : tensor<$BLOCK_Mx$BLOCK_Nxf32> -> tensor<$BLOCK_Nxf32>
    %sb1 = tile.reduce sum %sb, 0 : tensor<$BLOCK_Mx$BLOCK_Nxf32> -> tensor<$BLOCK_Nxf32>
    %dw16 = arith.truncf %sw1 : tensor<$BLOCK_Nxf32> to tensor<$BLOCK_Nxbf16>
    %db16 = arith.truncf %sb1 : tensor<$BLOCK_Nxf32> to tensor<$BLOCK_Nxbf16>
    tile.store %dw16, %dw[%c0] : tensor<$BLOCK_Nxbf16> -> !tile.tensor<?xbf16, ["N"]>
    tile.store %db16, %db[%c0] : tensor<$BLOCK_Nxbf16> -> !tile.tensor<?xbf16, ["N"]>
  }
  tile.return
}
