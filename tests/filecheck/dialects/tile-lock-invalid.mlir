// tile.atomic_cas and tile.atomic_xchg's errors, each at its op: one element of an i32
// tensor (not f32), one coordinate per tensor dimension, a memory order of relaxed,
// acquire, release or acq_rel.
// RUN: not tawac opt --split-input-file %s 2>&1 | filecheck %s

tile.kernel @f32(%y: !tile.tensor<?xf32>) {
  %c0 = arith.constant 0 : index
  %old = tile.atomic_cas acquire %y[%c0], %c0, %c0 : !tile.tensor<?xf32>
// CHECK: tile-lock-invalid.mlir:[[# @LINE - 1]]:10: error: tile.atomic_cas: expected an i32 tensor, got f32
  tile.return
}

// -----

tile.kernel @coordinates(%l: !tile.tensor<?x?xi32>) {
  %c0 = arith.constant 0 : index
  %old = tile.atomic_xchg release %l[%c0], %c0 : !tile.tensor<?x?xi32>
// CHECK: tile-lock-invalid.mlir:[[# @LINE - 1]]:10: error: tile.atomic_xchg: 1 coordinates given for !tile.tensor<?x?xi32> of rank 2
  tile.return
}

// -----

tile.kernel @order(%l: !tile.tensor<?xi32>) {
  %c0 = arith.constant 0 : index
  %old = tile.atomic_xchg seq_cst %l[%c0], %c0 : !tile.tensor<?xi32>
// CHECK: tile-lock-invalid.mlir:[[# @LINE - 1]]:27: error: expected a memory order (relaxed, acquire, release, acq_rel)
  tile.return
}
