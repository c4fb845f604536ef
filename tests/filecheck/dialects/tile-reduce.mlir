// RUN: tawac opt --split-input-file %s | filecheck %s
// RUN: not tawac opt --split-input-file %s --passes 'warp-specialize' 2>&1 | filecheck %s --check-prefix=NODOT

// CHECK-LABEL: tile.kernel @reduce
// CHECK: %m = tile.reduce max %s, 1 : tensor<128x64xf32> -> tensor<128xf32>
// CHECK: %l = tile.reduce sum %s, 0 : tensor<128x64xf32> -> tensor<64xf32>
// NODOT: error: warp-specialize: a kernel without MMAs needs a 2-d tile.load
tile.kernel @reduce(%x: f32) {
  %s = tile.splat %x : f32 -> tensor<128x64xf32>
  %m = tile.reduce max %s, 1 : tensor<128x64xf32> -> tensor<128xf32>
  %l = tile.reduce sum %s, 0 : tensor<128x64xf32> -> tensor<64xf32>
  tile.return
}
