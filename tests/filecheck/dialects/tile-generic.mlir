// The generic form of every tile op parses and prints in custom form.
// RUN: tawac opt %s | filecheck %s
// RUN: tawac opt %s | tawac opt - | filecheck %s

// CHECK:      tile.kernel @g(%a: !tile.tensor<?x?xf16>, %v: !tile.tensor<?xf32>, %s: f32) attributes {tawac.note = 1 : i64} {
// CHECK-NEXT:   %0 = tile.program_id y
// CHECK-NEXT:   %1 = tile.dim %a[0] : !tile.tensor<?x?xf16>
// CHECK-NEXT:   %2 = tile.load %a[%0, %1] : !tile.tensor<?x?xf16> -> tensor<64x64xf16>
// CHECK-NEXT:   %3 = tile.load %a[%0, %1] : !tile.tensor<?x?xf16> -> tensor<64x64xf16>
// CHECK-NEXT:   %4 = arith.constant dense<0.000000e+00> : tensor<64x64xf32>
// CHECK-NEXT:   %5 = tile.dot %2, %3, %4 transpose_rhs : tensor<64x64xf16>, tensor<64x64xf16> -> tensor<64x64xf32>
// CHECK-NEXT:   %6 = tile.splat %s : f32 -> tensor<64x64xf32>
// CHECK-NEXT:   %7 = tile.load %v[%1] : !tile.tensor<?xf32> -> tensor<64xf32>
// CHECK-NEXT:   %8 = tile.broadcast %7, 0 : tensor<64xf32> -> tensor<64x64xf32>
// CHECK-NEXT:   tile.store %2, %a[%1, %0] : tensor<64x64xf16> -> !tile.tensor<?x?xf16>
// CHECK-NEXT:   tile.return
// CHECK-NEXT: }
"tile.kernel"() <{sym_name = "g", function_type = (!tile.tensor<?x?xf16>, !tile.tensor<?xf32>, f32) -> ()}> ({
^bb0(%a: !tile.tensor<?x?xf16>, %v: !tile.tensor<?xf32>, %s: f32):
  %0 = "tile.program_id"() <{axis = #builtin.int<1>}> : () -> index
  %1 = "tile.dim"(%a) <{dim = #builtin.int<0>}> : (!tile.tensor<?x?xf16>) -> index
  %2 = "tile.load"(%a, %0, %1) : (!tile.tensor<?x?xf16>, index, index) -> tensor<64x64xf16>
  %3 = "tile.load"(%a, %0, %1) : (!tile.tensor<?x?xf16>, index, index) -> tensor<64x64xf16>
  %4 = "arith.constant"() <{value = dense<0.0> : tensor<64x64xf32>}> : () -> tensor<64x64xf32>
  %5 = "tile.dot"(%2, %3, %4) <{transpose_rhs}> : (tensor<64x64xf16>, tensor<64x64xf16>, tensor<64x64xf32>) -> tensor<64x64xf32>
  %6 = "tile.splat"(%s) : (f32) -> tensor<64x64xf32>
  %7 = "tile.load"(%v, %1) : (!tile.tensor<?xf32>, index) -> tensor<64xf32>
  %8 = "tile.broadcast"(%7) <{dim = #builtin.int<0>}> : (tensor<64xf32>) -> tensor<64x64xf32>
  "tile.store"(%2, %a, %1, %0) : (tensor<64x64xf16>, !tile.tensor<?x?xf16>, index, index) -> ()
  "tile.return"() : () -> ()
}) {tawac.note = 1 : i64} : () -> ()
