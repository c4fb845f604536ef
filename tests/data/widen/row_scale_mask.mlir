// C = select(rows < limit, (A * B^T) * scale[m] - rowmax, 0): 64-row tiles whose rows
// reach a 1-d row vector (scale, loaded at the rows' origin), a row-position mask
// (tile.iota along the rows at m0) and a row reduction; `widen` makes it one 128-row tile
// for two programs of x (tests/test_widen.py).
tile.kernel @row_scale_mask(%a: !tile.tensor<?x?xbf16, ["M", "K"]>, %b: !tile.tensor<?x?xbf16, ["N", "K"]>, %scale: !tile.tensor<?xf32, ["M"]>, %c: !tile.tensor<?x?xbf16, ["M", "N"]>, %limit: index) {
  %c0 = arith.constant 0 : index
  %bk = arith.constant 64 : index
  %bm = arith.constant 64 : index
  %bn = arith.constant 128 : index
  %pid_m = tile.program_id x
  %pid_n = tile.program_id y
  %m0 = arith.muli %pid_m, %bm : index
  %n0 = arith.muli %pid_n, %bn : index
  %K = tile.dim %a[1] : !tile.tensor<?x?xbf16, ["M", "K"]>
  %zero = arith.constant dense<0.000000e+00> : tensor<64x128xf32>
  %acc = scf.for %k = %c0 to %K step %bk iter_args(%acc_i = %zero) -> (tensor<64x128xf32>) {
    %x = tile.load %a[%m0, %k] : !tile.tensor<?x?xbf16, ["M", "K"]> -> tensor<64x64xbf16>
    %y = tile.load %b[%n0, %k] : !tile.tensor<?x?xbf16, ["N", "K"]> -> tensor<128x64xbf16>
    %d = tile.dot %x, %y, %acc_i transpose_rhs : tensor<64x64xbf16>, tensor<128x64xbf16> -> tensor<64x128xf32>
    scf.yield %d : tensor<64x128xf32>
  }
  %sv = tile.load %scale[%m0] : !tile.tensor<?xf32, ["M"]> -> tensor<64xf32>
  %sb = tile.broadcast %sv, 0 : tensor<64xf32> -> tensor<64x128xf32>
  %scaled = arith.mulf %acc, %sb : tensor<64x128xf32>
  %mx = tile.reduce max %scaled, 1 : tensor<64x128xf32> -> tensor<64xf32>
  %mb = tile.broadcast %mx, 0 : tensor<64xf32> -> tensor<64x128xf32>
  %shifted = arith.subf %scaled, %mb : tensor<64x128xf32>
  %rows = tile.iota 0, %m0 : tensor<64x128xi32>
  %lim = tile.splat %limit : index -> tensor<64x128xi32>
  %inside = tile.cmpi slt, %rows, %lim : tensor<64x128xi32>
  %out = tile.select %inside, %shifted, %zero : tensor<64x128xi1>, tensor<64x128xf32>
  %o = arith.truncf %out : tensor<64x128xf32> to tensor<64x128xbf16>
  tile.store %o, %c[%m0, %n0] : tensor<64x128xbf16> -> !tile.tensor<?x?xbf16, ["M", "N"]>
  tile.return
}
