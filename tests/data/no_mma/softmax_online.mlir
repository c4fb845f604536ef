// A row softmax of rows of any length N without MMAs: one 64-row block per program, two
// loops over 128-column blocks (the running maximum and sum, online as attention's
// softmax; then the normalized values), the columns past N masked to -1e30 in the first.
// The producer streams both loops' tiles through one ring.
tile.kernel @softmax(%x: !tile.tensor<?x?xbf16, ["M", "N"]>, %y: !tile.tensor<?x?xbf16, ["M", "N"]>) {
  %c0 = arith.constant 0 : index
  %cbm = arith.constant 64 : index
  %cbn = arith.constant 128 : index
  %pid = tile.program_id x
  %m0 = arith.muli %pid, %cbm : index
  %N = tile.dim %x[1] : !tile.tensor<?x?xbf16, ["M", "N"]>
  %m_init = arith.constant dense<-1.000000e+30> : tensor<64xf32>
  %l_init = arith.constant dense<0.000000e+00> : tensor<64xf32>
  %neg = arith.constant dense<-1.000000e+30> : tensor<64x128xf32>
  %lim = tile.splat %N : index -> tensor<64x128xi32>
  %mi, %li = scf.for %n = %c0 to %N step %cbn iter_args(%m_j = %m_init, %l_j = %l_init) -> (tensor<64xf32>, tensor<64xf32>) {
    %xt = tile.load %x[%m0, %n] : !tile.tensor<?x?xbf16, ["M", "N"]> -> tensor<64x128xbf16>
    %xr = arith.extf %xt : tensor<64x128xbf16> to tensor<64x128xf32>
    %cols = tile.iota 1, %n : tensor<64x128xi32>
    %in = tile.cmpi slt, %cols, %lim : tensor<64x128xi32>
    %xf = tile.select %in, %xr, %neg : tensor<64x128xi1>, tensor<64x128xf32>
    %mx = tile.reduce max %xf, 1 : tensor<64x128xf32> -> tensor<64xf32>
    %m_new = arith.maximumf %m_j, %mx : tensor<64xf32>
    %mb = tile.broadcast %m_new, 0 : tensor<64xf32> -> tensor<64x128xf32>
    %sh = arith.subf %xf, %mb : tensor<64x128xf32>
    %e = math.exp %sh : tensor<64x128xf32>
    %s = tile.reduce sum %e, 1 : tensor<64x128xf32> -> tensor<64xf32>
    %dm = arith.subf %m_j, %m_new : tensor<64xf32>
    %al = math.exp %dm : tensor<64xf32>
    %ls = arith.mulf %l_j, %al : tensor<64xf32>
    %l_new = arith.addf %ls, %s : tensor<64xf32>
    scf.yield %m_new, %l_new : tensor<64xf32>, tensor<64xf32>
  }
  scf.for %n = %c0 to %N step %cbn {
    %xt = tile.load %x[%m0, %n] : !tile.tensor<?x?xbf16, ["M", "N"]> -> tensor<64x128xbf16>
    %xf = arith.extf %xt : tensor<64x128xbf16> to tensor<64x128xf32>
    %mb = tile.broadcast %mi, 0 : tensor<64xf32> -> tensor<64x128xf32>
    %lb = tile.broadcast %li, 0 : tensor<64xf32> -> tensor<64x128xf32>
    %sh = arith.subf %xf, %mb : tensor<64x128xf32>
    %e = math.exp %sh : tensor<64x128xf32>
    %p = arith.divf %e, %lb : tensor<64x128xf32>
    %p16 = arith.truncf %p : tensor<64x128xf32> to tensor<64x128xbf16>
    tile.store %p16, %y[%m0, %n] : tensor<64x128xbf16> -> !tile.tensor<?x?xbf16, ["M", "N"]>
  }
  tile.return
}
