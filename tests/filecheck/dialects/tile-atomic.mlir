// tile.atomic_add: prints as written and parses back (round trip), and canonicalize
// keeps every add (it writes memory: two equal adds are two adds, none is dead).
// RUN: tawac opt %s | tawac opt - | filecheck %s
// RUN: tawac opt %s --passes canonicalize | filecheck %s --check-prefix=KEPT

// CHECK-LABEL: tile.kernel @adds(%x: !tile.tensor<?x?xf32, ["M", "N"]>, %y: !tile.tensor<?x?xf32, ["M", "N"]>, %v: !tile.tensor<?xf32, ["N"]>) {
// CHECK:         tile.atomic_add %t, %y[%m0, %c0] : tensor<64x128xf32> -> !tile.tensor<?x?xf32, ["M", "N"]>
// CHECK-NEXT:    tile.atomic_add %t, %y[%m0, %c0] : tensor<64x128xf32> -> !tile.tensor<?x?xf32, ["M", "N"]> {tawac.note}
// CHECK-NEXT:    tile.atomic_add %s, %v[%c0] : tensor<128xf32> -> !tile.tensor<?xf32, ["N"]>
// CHECK-NEXT:    tile.atomic_add %s, %y[%m0, %c0] : tensor<128xf32> -> !tile.tensor<?x?xf32, ["M", "N"]>
// KEPT-COUNT-4: tile.atomic_add
tile.kernel @adds(%x: !tile.tensor<?x?xf32, ["M", "N"]>, %y: !tile.tensor<?x?xf32, ["M", "N"]>, %v: !tile.tensor<?xf32, ["N"]>) {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %pid = tile.program_id x
  %m0 = arith.muli %pid, %c64 : index
  %t = tile.load %x[%m0, %c0] : !tile.tensor<?x?xf32, ["M", "N"]> -> tensor<64x128xf32>
  %s = tile.reduce sum %t, 0 : tensor<64x128xf32> -> tensor<128xf32>
  tile.atomic_add %t, %y[%m0, %c0] : tensor<64x128xf32> -> !tile.tensor<?x?xf32, ["M", "N"]>
  tile.atomic_add %t, %y[%m0, %c0] : tensor<64x128xf32> -> !tile.tensor<?x?xf32, ["M", "N"]> {tawac.note}
  tile.atomic_add %s, %v[%c0] : tensor<128xf32> -> !tile.tensor<?xf32, ["N"]>
  tile.atomic_add %s, %y[%m0, %c0] : tensor<128xf32> -> !tile.tensor<?x?xf32, ["M", "N"]>
  tile.return
}
