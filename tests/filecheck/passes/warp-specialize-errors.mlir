// warp-specialize rejects kernels it cannot partition, with the op's location.
// RUN: not tawac opt --split-input-file -p warp-specialize %s 2>&1 | filecheck %s

// No tile.dot and no 2-d tile.load, but a 2-d tile: nothing for a producer to stream.
// (A kernel of 1-d tiles only has no producer work: its consumer reads its loads itself.)
tile.kernel @no_dot(%a: !tile.tensor<?x?xf32>, %c: !tile.tensor<?x?xf32>) {
// CHECK:      {{.*}}warp-specialize-errors.mlir:[[# @LINE - 1]]:1: error: warp-specialize: a kernel without MMAs needs a 2-d tile.load for the producer warp group to stream (or tiles that are all 1-d, which its consumer loads itself)
// CHECK-NEXT: {{^//}} -----
  %c0 = arith.constant 0 : index
  %x = arith.constant dense<1.0> : tensor<64x64xf32>
  tile.store %x, %c[%c0, %c0] : tensor<64x64xf32> -> !tile.tensor<?x?xf32>
  tile.return
}

// -----

// A tile.dot whose operands are not loads: a tile.select stands between the load and
// the MMA; the error says what A and B are, at the select.
tile.kernel @select_in_the_way(%a: !tile.tensor<?x?xbf16>, %c: !tile.tensor<?x?xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %x = tile.load %a[%c0, %c0] : !tile.tensor<?x?xbf16> -> tensor<64x64xbf16>
  %col = tile.iota 1, %c0 : tensor<64x64xi32>
  %bound = tile.splat %n : index -> tensor<64x64xi32>
  %in = tile.cmpi slt, %col, %bound : tensor<64x64xi32>
  %fill = arith.constant dense<1.0> : tensor<64x64xbf16>
  %m = tile.select %in, %x, %fill : tensor<64x64xi1>, tensor<64x64xbf16>
// CHECK:      {{.*}}warp-specialize-errors.mlir:[[# @LINE - 1]]:8: error: warp-specialize: the operands of the tile.dot at {{.*}}warp-specialize-errors.mlir:[[# @LINE + 3]]:8 are not tile.loads (A is a tile.select of a tile.load, B is a tile.select of a tile.load), so there is nothing for a producer warp group to do (an MMA operand must be a 2-d tile.load that only tile.dots read)
// CHECK-NEXT: {{^//}} -----
  %zero = arith.constant dense<0.0> : tensor<64x64xf32>
  %d = tile.dot %m, %m, %zero transpose_rhs : tensor<64x64xbf16>, tensor<64x64xbf16> -> tensor<64x64xf32>
  tile.store %d, %c[%c0, %c0] : tensor<64x64xf32> -> !tile.tensor<?x?xf32>
  tile.return
}

// -----

// A load coordinate computed from a loop-carried value.
tile.kernel @carried_coordinate(%a: !tile.tensor<?x?xbf16>, %c: !tile.tensor<?x?xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c64 = arith.constant 64 : index
  %zero = arith.constant dense<0.0> : tensor<64x64xf32>
  %r:2 = scf.for %i = %c0 to %c4 step %c1 iter_args(%acc = %zero, %off = %c0) -> (tensor<64x64xf32>, index) {
// CHECK:      {{.*}}warp-specialize-errors.mlir:[[# @LINE - 1]]:10: error: warp-specialize: the coordinates of an MMA operand load depend on a loop-carried value, which the producer warp group cannot compute
// CHECK-NEXT: {{^//}} -----
    %x = tile.load %a[%off, %c0] : !tile.tensor<?x?xbf16> -> tensor<64x64xbf16>
    %d = tile.dot %x, %x, %acc transpose_rhs : tensor<64x64xbf16>, tensor<64x64xbf16> -> tensor<64x64xf32>
    %next = arith.addi %off, %c64 : index
    scf.yield %d, %next : tensor<64x64xf32>, index
  }
  tile.store %r#0, %c[%c0, %c0] : tensor<64x64xf32> -> !tile.tensor<?x?xf32>
  tile.return
}

// -----

// A load coordinate computed by an op the producer does not duplicate.
tile.kernel @float_coordinate(%a: !tile.tensor<?x?xbf16>, %c: !tile.tensor<?x?xf32>, %s: f32) {
  %c0 = arith.constant 0 : index
  %i32 = arith.fptosi %s : f32 to i32
// CHECK:      {{.*}}warp-specialize-errors.mlir:[[# @LINE - 1]]:10: error: warp-specialize: the coordinates of an MMA operand load depend on 'arith.fptosi', which the producer warp group cannot compute
// CHECK-NEXT: {{^//}} -----
  %i = arith.index_cast %i32 : i32 to index
  %x = tile.load %a[%i, %c0] : !tile.tensor<?x?xbf16> -> tensor<64x64xbf16>
  %zero = arith.constant dense<0.0> : tensor<64x64xf32>
  %d = tile.dot %x, %x, %zero transpose_rhs : tensor<64x64xbf16>, tensor<64x64xbf16> -> tensor<64x64xf32>
  tile.store %d, %c[%c0, %c0] : tensor<64x64xf32> -> !tile.tensor<?x?xf32>
  tile.return
}

// -----

// Already partitioned.
tile.kernel @partitioned(%a: !tile.tensor<?x?xbf16>) {
// CHECK: {{.*}}warp-specialize-errors.mlir:[[# @LINE - 1]]:1: error: warp-specialize: kernel is already partitioned
  aref.partition producer warp_groups 1 regs 0 {
    %c0 = arith.constant 0 : index
  }
  tile.return
}

// -----

// aref ops written in a tile program (the fuzzer's retiled aref-invalid case: once the
// put's type matched, an internal error in lower-aref): the compiler places arefs.
tile.kernel @put_type(%a: !tile.tensor<?x?xbf16>) {
  %r = aref.create : !aref.aref<[tensor<192x64xbf16>], 2>
// CHECK: {{.*}}warp-specialize-errors.mlir:[[# @LINE - 1]]:8: error: warp-specialize: 'aref.create' in a kernel that is not partitioned: the compiler places the arefs when it partitions a tile program (write the loads and the math it reads)
  %c0 = arith.constant 0 : index
  %x = tile.load %a[%c0, %c0] : !tile.tensor<?x?xbf16> -> tensor<192x64xbf16>
  aref.put %r[%c0], %x : !aref.aref<[tensor<192x64xbf16>], 2>
  tile.return
}
