// tile.atomic_add's verifier errors, each at its op: f32 only, one coordinate per
// tensor dimension, a tile of no higher rank than the tensor, a 1-d or 2-d tile.
// RUN: not tawac opt --split-input-file %s 2>&1 | filecheck %s

tile.kernel @bf16(%y: !tile.tensor<?x?xbf16>, %s: f32) {
  %c0 = arith.constant 0 : index
  %t = tile.splat %s : f32 -> tensor<64x64xf32>
  %h = arith.truncf %t : tensor<64x64xf32> to tensor<64x64xbf16>
  tile.atomic_add %h, %y[%c0, %c0] : tensor<64x64xbf16> -> !tile.tensor<?x?xbf16>
// CHECK: tile-atomic-invalid.mlir:[[# @LINE - 1]]:3: error: tile.atomic_add: only f32 tiles add to f32 tensors yet, got tensor<64x64xbf16> -> !tile.tensor<?x?xbf16>
  tile.return
}

// -----

tile.kernel @coordinates(%y: !tile.tensor<?x?xf32>, %s: f32) {
  %c0 = arith.constant 0 : index
  %t = tile.splat %s : f32 -> tensor<64x64xf32>
  tile.atomic_add %t, %y[%c0] : tensor<64x64xf32> -> !tile.tensor<?x?xf32>
// CHECK: tile-atomic-invalid.mlir:[[# @LINE - 1]]:3: error: tile.atomic_add: 1 coordinates given for !tile.tensor<?x?xf32> of rank 2
  tile.return
}

// -----

tile.kernel @rank(%y: !tile.tensor<?xf32>, %s: f32) {
  %c0 = arith.constant 0 : index
  %t = tile.splat %s : f32 -> tensor<64x64xf32>
  tile.atomic_add %t, %y[%c0] : tensor<64x64xf32> -> !tile.tensor<?xf32>
// CHECK: tile-atomic-invalid.mlir:[[# @LINE - 1]]:3: error: tile.atomic_add: tile tensor<64x64xf32> has rank 2 but !tile.tensor<?xf32> has rank 1
  tile.return
}
