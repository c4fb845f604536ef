// A kernel without MMAs: its 2-d tile.load goes to the producer through an aref of its
// own (a TMA load into a ring slot), the consumer gets it, computes and stores; its 1-d
// load (the weight) streams through an aref of its own too.
// RUN: tawac opt -p warp-specialize %s | filecheck %s

// CHECK-LABEL: tile.kernel @rows
// CHECK:       %[[R:.*]] = aref.create "x" : !aref.aref<[tensor<64x128xbf16>], 1>
// CHECK:       %[[W:.*]] = aref.create "w" : !aref.aref<[tensor<128xbf16>], 1>
// CHECK:       aref.partition producer
// CHECK:         %[[T:.*]] = tile.load %x
// CHECK:         aref.put %[[R]]{{\[}}%{{.*}}], %[[T]]
// CHECK:         %[[WT:.*]] = tile.load %w
// CHECK:         aref.put %[[W]]{{\[}}%{{.*}}], %[[WT]]
// CHECK:       aref.partition consumer
// CHECK:         %[[G:.*]] = aref.get %[[R]]
// CHECK:         arith.extf %[[G]]
// CHECK:         aref.consumed %[[R]]
// CHECK:         %[[GW:.*]] = aref.get %[[W]]
// CHECK:         arith.extf %[[GW]]
// CHECK:         aref.consumed %[[W]]
// CHECK-NOT:     tile.load
// CHECK:         tile.reduce sum
// CHECK-NOT:     tile.dot
// CHECK:         tile.store
tile.kernel @rows(%x: !tile.tensor<?x?xbf16, ["M", "N"]>, %w: !tile.tensor<?xbf16, ["N"]>, %y: !tile.tensor<?x?xbf16, ["M", "N"]>) {
  %c0 = arith.constant 0 : index
  %cbm = arith.constant 64 : index
  %pid = tile.program_id x
  %m0 = arith.muli %pid, %cbm : index
  %xt = tile.load %x[%m0, %c0] : !tile.tensor<?x?xbf16, ["M", "N"]> -> tensor<64x128xbf16>
  %xf = arith.extf %xt : tensor<64x128xbf16> to tensor<64x128xf32>
  %wt = tile.load %w[%c0] : !tile.tensor<?xbf16, ["N"]> -> tensor<128xbf16>
  %wf = arith.extf %wt : tensor<128xbf16> to tensor<128xf32>
  %wb = tile.broadcast %wf, 1 : tensor<128xf32> -> tensor<64x128xf32>
  %p = arith.mulf %xf, %wb : tensor<64x128xf32>
  %s = tile.reduce sum %p, 1 : tensor<64x128xf32> -> tensor<64xf32>
  %sb = tile.broadcast %s, 0 : tensor<64xf32> -> tensor<64x128xf32>
  %o = arith.divf %p, %sb : tensor<64x128xf32>
  %o16 = arith.truncf %o : tensor<64x128xf32> to tensor<64x128xbf16>
  tile.store %o16, %y[%m0, %c0] : tensor<64x128xbf16> -> !tile.tensor<?x?xbf16, ["M", "N"]>
  tile.return
}
