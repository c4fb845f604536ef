// pad-loads: a load padded with a value other than zero becomes the zero-filled load,
// its widening to f32, and selects of the padding where a row or column is outside
// (below 0 or at the tensor's extent and beyond); loads it cannot rewrite keep their
// padding (warp-specialize refuses them).
// RUN: tawac opt -p pad-loads --split-input-file %s | filecheck %s

// CHECK-LABEL: tile.kernel @rows
// CHECK:       %[[Z:.*]] = tile.load %x[%m0, %c0] : {{.*}} -> tensor<64x128xbf16>
// CHECK-NEXT:  %[[W:.*]] = arith.extf %[[Z]] : tensor<64x128xbf16> to tensor<64x128xf32>
// CHECK-NEXT:  %[[P:.*]] = arith.constant dense<0xff800000> : tensor<64x128xf32>
// CHECK:       %[[R:.*]] = tile.iota 0, %m0
// CHECK:       %[[M:.*]] = tile.dim %x[0]
// CHECK:       %[[IN:.*]] = tile.cmpi slt, %[[R]]
// CHECK-NEXT:  %[[S1:.*]] = tile.select %[[IN]], %[[W]], %[[P]]
// CHECK:       %[[C:.*]] = tile.iota 1, %c0
// CHECK:       tile.dim %x[1]
// CHECK:       %[[XF:[a-z]+]] = tile.select {{.*}}, %[[P]]
// CHECK-NEXT:  tile.reduce max %[[XF]], 1
// CHECK-NOT:   padding
tile.kernel @rows(%x: !tile.tensor<?x?xbf16, ["M", "N"]>, %y: !tile.tensor<?xf32, ["M"]>) {
  %c0 = arith.constant 0 : index
  %cbm = arith.constant 64 : index
  %pid = tile.program_id x
  %m0 = arith.muli %pid, %cbm : index
  %xt = tile.load %x[%m0, %c0] padding -inf : !tile.tensor<?x?xbf16, ["M", "N"]> -> tensor<64x128xbf16>
  %xf = arith.extf %xt : tensor<64x128xbf16> to tensor<64x128xf32>
  %mx = tile.reduce max %xf, 1 : tensor<64x128xf32> -> tensor<64xf32>
  tile.store %mx, %y[%m0] : tensor<64xf32> -> !tile.tensor<?xf32, ["M"]>
  tile.return
}

// -----

// A bf16 tile read as bf16 (the backend selects f32 tiles) and a 1-d load keep their
// padding.
// CHECK-LABEL: tile.kernel @kept
// CHECK:       tile.load %x[%c0, %c0] padding 1.0 :
// CHECK:       tile.load %v[%c0] padding -inf :
tile.kernel @kept(%x: !tile.tensor<?x?xbf16, ["M", "N"]>, %v: !tile.tensor<?xf32, ["N"]>, %y: !tile.tensor<?x?xbf16, ["M", "N"]>) {
  %c0 = arith.constant 0 : index
  %t = tile.load %x[%c0, %c0] padding 1.0 : !tile.tensor<?x?xbf16, ["M", "N"]> -> tensor<64x128xbf16>
  %w = tile.load %v[%c0] padding -inf : !tile.tensor<?xf32, ["N"]> -> tensor<128xf32>
  tile.store %t, %y[%c0, %c0] : tensor<64x128xbf16> -> !tile.tensor<?x?xbf16, ["M", "N"]>
  tile.return
}
