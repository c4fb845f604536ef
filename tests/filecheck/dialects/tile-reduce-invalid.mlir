// RUN: not tawac opt --split-input-file %s 2>&1 | filecheck %s

tile.kernel @wrong_extent(%x: f32) {
  %s = tile.splat %x : f32 -> tensor<128x64xf32>
  %m = tile.reduce max %s, 1 : tensor<128x64xf32> -> tensor<64xf32>
// CHECK: tile-reduce-invalid.mlir:[[# @LINE - 1]]:8: error: tile.reduce: reducing tensor<128x64xf32> along dimension 1 gives tensor<128xf32>, not tensor<64xf32>
  tile.return
}

// -----

tile.kernel @bad_kind(%x: f32) {
  %s = tile.splat %x : f32 -> tensor<128x64xf32>
  %m = tile.reduce prod %s, 1 : tensor<128x64xf32> -> tensor<128xf32>
// CHECK: tile-reduce-invalid.mlir:[[# @LINE - 1]]:20: error: expected a reduction (max, min, sum)
  tile.return
}
