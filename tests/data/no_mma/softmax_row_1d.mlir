// Triton's fused softmax (tutorial 02): one row per program, the row one 1-d tile of up to
// 1024 columns, the columns past N read as -inf (the load's padding) so they add nothing to
// the sum. The row's maximum and sum are scalars (tile.reduce of the 1-d tile), splat back.
tile.kernel @softmax_row(%x: !tile.tensor<?x?xbf16, ["M", "N"]>, %y: !tile.tensor<?x?xbf16, ["M", "N"]>) {
  %c0 = arith.constant 0 : index
  %row = tile.program_id x
  %xt = tile.load %x[%row, %c0] padding -inf : !tile.tensor<?x?xbf16, ["M", "N"]> -> tensor<1024xbf16>
  %xf = arith.extf %xt : tensor<1024xbf16> to tensor<1024xf32>
  %m = tile.reduce max %xf, 0 : tensor<1024xf32> -> f32
  %mb = tile.splat %m : f32 -> tensor<1024xf32>
  %sh = arith.subf %xf, %mb : tensor<1024xf32>
  %e = math.exp %sh : tensor<1024xf32>
  %s = tile.reduce sum %e, 0 : tensor<1024xf32> -> f32
  %sb = tile.splat %s : f32 -> tensor<1024xf32>
  %p = arith.divf %e, %sb : tensor<1024xf32>
  %p16 = arith.truncf %p : tensor<1024xf32> to tensor<1024xbf16>
  tile.store %p16, %y[%row, %c0] : tensor<1024xbf16> -> !tile.tensor<?x?xbf16, ["M", "N"]>
  tile.return
}
