// A row softmax of rows of up to 128 columns without MMAs: one 64-row, 128-column tile per
// program, the columns past N read as -inf (`padding -inf`: pad-loads selects them after
// the zero-filled TMA load), so a short row's tail adds nothing to its sum.
tile.kernel @softmax_padded(%x: !tile.tensor<?x?xbf16, ["M", "N"]>, %y: !tile.tensor<?x?xbf16, ["M", "N"]>) {
  %c0 = arith.constant 0 : index
  %cbm = arith.constant 64 : index
  %pid = tile.program_id x
  %m0 = arith.muli %pid, %cbm : index
  %xt = tile.load %x[%m0, %c0] padding -inf : !tile.tensor<?x?xbf16, ["M", "N"]> -> tensor<64x128xbf16>
  %xf = arith.extf %xt : tensor<64x128xbf16> to tensor<64x128xf32>
  %mx = tile.reduce max %xf, 1 : tensor<64x128xf32> -> tensor<64xf32>
  %mb = tile.broadcast %mx, 0 : tensor<64xf32> -> tensor<64x128xf32>
  %sh = arith.subf %xf, %mb : tensor<64x128xf32>
  %e = math.exp %sh : tensor<64x128xf32>
  %s = tile.reduce sum %e, 1 : tensor<64x128xf32> -> tensor<64xf32>
  %sb = tile.broadcast %s, 0 : tensor<64xf32> -> tensor<64x128xf32>
  %p = arith.divf %e, %sb : tensor<64x128xf32>
  %p16 = arith.truncf %p : tensor<64x128xf32> to tensor<64x128xbf16>
  tile.store %p16, %y[%m0, %c0] : tensor<64x128xbf16> -> !tile.tensor<?x?xbf16, ["M", "N"]>
  tile.return
}
