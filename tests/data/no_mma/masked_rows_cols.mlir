// Index vectors in the slice layouts of a 2-d tile: w's columns at or past k are zeroed
// (`tile.iota 0` of the tile's columns, in the column slice of its broadcast), the rows'
// sums of x * w are kept only for rows at or past k (`tile.iota 0, %m0` of the rows, in
// the row slice of the reduction), y = x * w + those sums, one 128x64 tile per program.
// (A splat of one type used along both rows and columns would tie the row and column
// vectors into one class, which the backend refuses: the rows and columns differ here.)
tile.kernel @masked_rows_cols(%x: !tile.tensor<?x?xf32, ["M", "N"]>, %w: !tile.tensor<?xf32, ["N"]>, %y: !tile.tensor<?x?xf32, ["M", "N"]>, %k: index) {
  %c0 = arith.constant 0 : index
  %cbm = arith.constant 128 : index
  %pid = tile.program_id x
  %m0 = arith.muli %pid, %cbm : index
  %xt = tile.load %x[%m0, %c0] : !tile.tensor<?x?xf32, ["M", "N"]> -> tensor<128x64xf32>
  %wt = tile.load %w[%c0] : !tile.tensor<?xf32, ["N"]> -> tensor<64xf32>
  %zero = arith.constant 0.000000e+00 : f32
  %kc = tile.splat %k : index -> tensor<64xi32>
  %cols = tile.iota 0, %c0 : tensor<64xi32>
  %cin = tile.cmpi slt, %cols, %kc : tensor<64xi32>
  %zc = tile.splat %zero : f32 -> tensor<64xf32>
  %wm = tile.select %cin, %wt, %zc : tensor<64xi1>, tensor<64xf32>
  %wb = tile.broadcast %wm, 1 : tensor<64xf32> -> tensor<128x64xf32>
  %p = arith.mulf %xt, %wb : tensor<128x64xf32>
  %s = tile.reduce sum %p, 1 : tensor<128x64xf32> -> tensor<128xf32>
  %kr = tile.splat %k : index -> tensor<128xi32>
  %rows = tile.iota 0, %m0 : tensor<128xi32>
  %rin = tile.cmpi sge, %rows, %kr : tensor<128xi32>
  %zr = tile.splat %zero : f32 -> tensor<128xf32>
  %sm = tile.select %rin, %s, %zr : tensor<128xi1>, tensor<128xf32>
  %sb = tile.broadcast %sm, 0 : tensor<128xf32> -> tensor<128x64xf32>
  %o = arith.addf %p, %sb : tensor<128x64xf32>
  tile.store %o, %y[%m0, %c0] : tensor<128x64xf32> -> !tile.tensor<?x?xf32, ["M", "N"]>
  tile.return
}
