// RMS norm without MMAs: y = x * rsqrt(mean(x^2) + eps) * w over rows of N = 128 columns,
// one 64-row tile per program; w (1-d) is read by the consumer.
tile.kernel @rmsnorm(%x: !tile.tensor<?x?xbf16, ["M", "N"]>, %w: !tile.tensor<?xbf16, ["N"]>, %y: !tile.tensor<?x?xbf16, ["M", "N"]>, %eps: f32) {
  %c0 = arith.constant 0 : index
  %cbm = arith.constant 64 : index
  %pid = tile.program_id x
  %m0 = arith.muli %pid, %cbm : index
  %xt = tile.load %x[%m0, %c0] : !tile.tensor<?x?xbf16, ["M", "N"]> -> tensor<64x128xbf16>
  %wt = tile.load %w[%c0] : !tile.tensor<?xbf16, ["N"]> -> tensor<128xbf16>
  %xf = arith.extf %xt : tensor<64x128xbf16> to tensor<64x128xf32>
  %wf = arith.extf %wt : tensor<128xbf16> to tensor<128xf32>
  %sq = arith.mulf %xf, %xf : tensor<64x128xf32>
  %ss = tile.reduce sum %sq, 1 : tensor<64x128xf32> -> tensor<64xf32>
  %inv_n = arith.constant dense<0.0078125> : tensor<64xf32>
  %ms = arith.mulf %ss, %inv_n : tensor<64xf32>
  %ev = tile.splat %eps : f32 -> tensor<64xf32>
  %ms2 = arith.addf %ms, %ev : tensor<64xf32>
  %r = math.rsqrt %ms2 : tensor<64xf32>
  %rb = tile.broadcast %r, 0 : tensor<64xf32> -> tensor<64x128xf32>
  %wb = tile.broadcast %wf, 1 : tensor<128xf32> -> tensor<64x128xf32>
  %t = arith.mulf %xf, %rb : tensor<64x128xf32>
  %o = arith.mulf %t, %wb : tensor<64x128xf32>
  %o16 = arith.truncf %o : tensor<64x128xf32> to tensor<64x128xbf16>
  tile.store %o16, %y[%m0, %c0] : tensor<64x128xbf16> -> !tile.tensor<?x?xbf16, ["M", "N"]>
  tile.return
}
