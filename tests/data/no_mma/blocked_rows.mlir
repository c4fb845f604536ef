// Rows of up to 128 columns in BLOCK_M-row tiles (32 or 16: not whole m64 blocks, so the
// consumer holds its 2-d tiles in the blocked layout): with h = x + w (the columns past N
// read as -inf, w broadcast along the rows), p = softmax(h) per row (a reduction along the
// rows broadcast back), stored as bf16; d = h - the tile's column maxima (a reduction
// along the columns broadcast back), stored as f32; and the row maxima, stored as a row
// vector.
tile.kernel @blocked_rows(%x: !tile.tensor<?x?xbf16, ["M", "N"]>, %w: !tile.tensor<?xf32, ["N"]>, %y: !tile.tensor<?x?xbf16, ["M", "N"]>, %d: !tile.tensor<?x?xf32, ["M", "N"]>, %rmax: !tile.tensor<?xf32, ["M"]>) attributes {params = {BLOCK_M = 32}} {
  %c0 = arith.constant 0 : index
  %cbm = arith.constant $BLOCK_M : index
  %pid = tile.program_id x
  %m0 = arith.muli %pid, %cbm : index
  %xt = tile.load %x[%m0, %c0] padding -inf : !tile.tensor<?x?xbf16, ["M", "N"]> -> tensor<$BLOCK_Mx128xbf16>
  %wt = tile.load %w[%c0] : !tile.tensor<?xf32, ["N"]> -> tensor<128xf32>
  %xf = arith.extf %xt : tensor<$BLOCK_Mx128xbf16> to tensor<$BLOCK_Mx128xf32>
  %wb = tile.broadcast %wt, 1 : tensor<128xf32> -> tensor<$BLOCK_Mx128xf32>
  %h = arith.addf %xf, %wb : tensor<$BLOCK_Mx128xf32>
  %mx = tile.reduce max %h, 1 : tensor<$BLOCK_Mx128xf32> -> tensor<$BLOCK_Mxf32>
  %mb = tile.broadcast %mx, 0 : tensor<$BLOCK_Mxf32> -> tensor<$BLOCK_Mx128xf32>
  %sh = arith.subf %h, %mb : tensor<$BLOCK_Mx128xf32>
  %e = math.exp %sh : tensor<$BLOCK_Mx128xf32>
  %s = tile.reduce sum %e, 1 : tensor<$BLOCK_Mx128xf32> -> tensor<$BLOCK_Mxf32>
  %sb = tile.broadcast %s, 0 : tensor<$BLOCK_Mxf32> -> tensor<$BLOCK_Mx128xf32>
  %p = arith.divf %e, %sb : tensor<$BLOCK_Mx128xf32>
  %p16 = arith.truncf %p : tensor<$BLOCK_Mx128xf32> to tensor<$BLOCK_Mx128xbf16>
  tile.store %p16, %y[%m0, %c0] : tensor<$BLOCK_Mx128xbf16> -> !tile.tensor<?x?xbf16, ["M", "N"]>
  %cm = tile.reduce max %h, 0 : tensor<$BLOCK_Mx128xf32> -> tensor<128xf32>
  %cb = tile.broadcast %cm, 1 : tensor<128xf32> -> tensor<$BLOCK_Mx128xf32>
  %dc = arith.subf %h, %cb : tensor<$BLOCK_Mx128xf32>
  tile.store %dc, %d[%m0, %c0] : tensor<$BLOCK_Mx128xf32> -> !tile.tensor<?x?xf32, ["M", "N"]>
  tile.store %mx, %rmax[%m0] : tensor<$BLOCK_Mxf32> -> !tile.tensor<?xf32, ["M"]>
  tile.return
}
