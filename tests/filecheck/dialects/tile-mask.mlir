// RUN: tawac opt %s | tawac opt - | filecheck %s

// CHECK-LABEL: tile.kernel @mask(
// CHECK: %r = tile.iota 0, %m0 : tensor<128x64xi32>
// CHECK: %c = tile.iota 1, %n0 : tensor<128x64xi32>
// CHECK: %keep = tile.cmpi sge, %r, %c : tensor<128x64xi32>
// CHECK: %s = tile.select %keep, %x, %y : tensor<128x64xi1>, tensor<128x64xf32>
tile.kernel @mask(%m0: index, %n0: index, %a: f32) {
  %r = tile.iota 0, %m0 : tensor<128x64xi32>
  %c = tile.iota 1, %n0 : tensor<128x64xi32>
  %keep = tile.cmpi sge, %r, %c : tensor<128x64xi32>
  %x = tile.splat %a : f32 -> tensor<128x64xf32>
  %y = tile.splat %a : f32 -> tensor<128x64xf32>
  %s = tile.select %keep, %x, %y : tensor<128x64xi1>, tensor<128x64xf32>
  tile.return
}

// CHECK-LABEL: tile.kernel @mask_1d(
// CHECK: %cols = tile.iota 0, %c0 : tensor<1024xi32>
// CHECK: %n = tile.splat %len : index -> tensor<1024xi32>
// CHECK: %keep = tile.cmpi slt, %cols, %n : tensor<1024xi32>
tile.kernel @mask_1d(%c0: index, %len: index) {
  %cols = tile.iota 0, %c0 : tensor<1024xi32>
  %n = tile.splat %len : index -> tensor<1024xi32>
  %keep = tile.cmpi slt, %cols, %n : tensor<1024xi32>
  tile.return
}
