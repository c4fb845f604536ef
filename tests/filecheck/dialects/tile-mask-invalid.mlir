// RUN: not tawac opt --split-input-file %s 2>&1 | filecheck %s

tile.kernel @iota_type(%m0: index) {
  %r = tile.iota 0, %m0 : tensor<128x64xf32>
// CHECK: tile-mask-invalid.mlir:[[# @LINE - 1]]:8: error: tile.iota: expected a 1-d or 2-d i32 tile, got tensor<128x64xf32>
  tile.return
}

// -----

tile.kernel @select_shape(%m0: index, %a: f32) {
  %r = tile.iota 0, %m0 : tensor<128x64xi32>
  %keep = tile.cmpi sge, %r, %r : tensor<128x64xi32>
  %x = tile.splat %a : f32 -> tensor<64x64xf32>
  %s = tile.select %keep, %x, %x : tensor<128x64xi1>, tensor<64x64xf32>
// CHECK: tile-mask-invalid.mlir:[[# @LINE - 1]]:8: error: tile.select: the condition tensor<128x64xi1> must be an i1 tile of the shape of tensor<64x64xf32>
  tile.return
}

// -----

tile.kernel @iota_dim_1d(%c0: index) {
  %r = tile.iota 1, %c0 : tensor<1024xi32>
// CHECK: tile-mask-invalid.mlir:[[# @LINE - 1]]:8: error: tile.iota: dimension 1 out of range for a 1-d tile
  tile.return
}
