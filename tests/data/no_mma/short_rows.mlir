// Short 1-d tiles: a row of up to 64 f32 (the first 16 of the 128 consumer threads own a
// run of 4 each, the others nothing), x + 1 reduced to its sum and its maximum (the
// threads owning nothing add the reductions' identity, not their registers' 1), the row
// minus its maximum stored back, and the two scalars stored as one-element tiles (only the
// first thread stores).
tile.kernel @short_rows(%x: !tile.tensor<?x?xf32, ["M", "N"]>, %y: !tile.tensor<?x?xf32, ["M", "N"]>, %sums: !tile.tensor<?xf32, ["M"]>, %maxes: !tile.tensor<?xf32, ["M"]>) {
  %c0 = arith.constant 0 : index
  %one = arith.constant 1.0 : f32
  %row = tile.program_id x
  %xt = tile.load %x[%row, %c0] : !tile.tensor<?x?xf32, ["M", "N"]> -> tensor<64xf32>
  %ones = tile.splat %one : f32 -> tensor<64xf32>
  %x1 = arith.addf %xt, %ones : tensor<64xf32>
  %m = tile.reduce max %x1, 0 : tensor<64xf32> -> f32
  %s = tile.reduce sum %x1, 0 : tensor<64xf32> -> f32
  %mb = tile.splat %m : f32 -> tensor<64xf32>
  %d = arith.subf %x1, %mb : tensor<64xf32>
  tile.store %d, %y[%row, %c0] : tensor<64xf32> -> !tile.tensor<?x?xf32, ["M", "N"]>
  %st = tile.splat %s : f32 -> tensor<1xf32>
  tile.store %st, %sums[%row] : tensor<1xf32> -> !tile.tensor<?xf32, ["M"]>
  %mt = tile.splat %m : f32 -> tensor<1xf32>
  tile.store %mt, %maxes[%row] : tensor<1xf32> -> !tile.tensor<?xf32, ["M"]>
  tile.return
}
