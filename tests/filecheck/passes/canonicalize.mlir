// canonicalize: one spelling of the scalar index math. A shift is a multiply, constants
// are folded and go to the right of commutative ops, products and sums of constants are
// reassociated, x + 0 and x * 1 are x, and identical pure ops are merged, so a grid
// along x (a store at program_id x * 128) is found however the product was written.
// RUN: tawac opt %s -p canonicalize --split-input-file | filecheck %s

// CHECK-LABEL: tile.kernel @spellings
// CHECK:       %[[X:.*]] = tile.program_id x
// CHECK-DAG:   %[[C128:.*]] = arith.constant 128 : index
// CHECK:       %[[M0:.*]] = arith.muli %[[X]], %[[C128]] : index
// CHECK-NOT:   arith.shli
// CHECK-NOT:   arith.addi
// CHECK:       tile.load %a[%[[M0]], %[[M0]]]
// CHECK:       tile.store %{{.*}}, %c[%[[M0]], %{{.*}}]
tile.kernel @spellings(%a: !tile.tensor<?x?xbf16, ["M", "M"]>, %c: !tile.tensor<?x?xbf16, ["M", "M"]>) {
  %x = tile.program_id x
  %c7 = arith.constant 7 : index
  %r0 = arith.shli %x, %c7 : index
  %c64 = arith.constant 64 : index
  %c2 = arith.constant 2 : index
  %t = arith.muli %c64, %x : index
  %r1 = arith.muli %t, %c2 : index
  %c120 = arith.constant 120 : index
  %c8 = arith.constant 8 : index
  %c128 = arith.addi %c120, %c8 : index
  %r2 = arith.muli %x, %c128 : index
  %c0 = arith.constant 0 : index
  %r3 = arith.addi %r2, %c0 : index
  %tile = tile.load %a[%r0, %r1] : !tile.tensor<?x?xbf16, ["M", "M"]> -> tensor<128x128xbf16>
  tile.store %tile, %c[%r3, %c0] : tensor<128x128xbf16> -> !tile.tensor<?x?xbf16, ["M", "M"]>
  tile.return
}

// -----

// Floating-point math and tiles are left as written.
// CHECK-LABEL: tile.kernel @floats
// CHECK:       arith.addf %{{.*}}, %{{.*}} : f32
// CHECK:       arith.mulf %{{.*}}, %{{.*}} : f32
tile.kernel @floats(%s: f32, %c: !tile.tensor<?x?xf32, ["M", "N"]>) {
  %x = tile.program_id x
  %c128 = arith.constant 128 : index
  %m0 = arith.muli %x, %c128 : index
  %c0 = arith.constant 0 : index
  %z = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %a = arith.addf %s, %z : f32
  %b = arith.mulf %a, %one : f32
  %t = tile.splat %b : f32 -> tensor<128x128xf32>
  tile.store %t, %c[%m0, %c0] : tensor<128x128xf32> -> !tile.tensor<?x?xf32, ["M", "N"]>
  tile.return
}
