// Print, re-parse, print again: the second print must equal the first, and both must
// keep every op's custom syntax.
// RUN: tawac opt %s | tawac opt - | filecheck %s
// RUN: tawac opt %s | filecheck %s

// CHECK-LABEL: tile.kernel @all_ops(%a: !tile.tensor<?x?xbf16, ["M", "K"]>, %b: !tile.tensor<?x64xbf16>, %v: !tile.tensor<?xf32, ["N"]>, %c: !tile.tensor<?x?xf32>, %alpha: f32, %n: index) {
// CHECK-NEXT:    %c0 = arith.constant 0 : index
// CHECK-NEXT:    %pid_x = tile.program_id x
// CHECK-NEXT:    %pid_y = tile.program_id y
// CHECK-NEXT:    %pid_z = tile.program_id z
// CHECK-NEXT:    %K = tile.dim %a[1] : !tile.tensor<?x?xbf16, ["M", "K"]>
// CHECK-NEXT:    %x = tile.load %a[%pid_x, %c0] : !tile.tensor<?x?xbf16, ["M", "K"]> -> tensor<128x64xbf16>
// CHECK-NEXT:    %xt = tile.load %a[%c0, %pid_x] : !tile.tensor<?x?xbf16, ["M", "K"]> -> tensor<64x128xbf16>
// CHECK-NEXT:    %y = tile.load %b[%pid_y, %c0] : !tile.tensor<?x64xbf16> -> tensor<128x64xbf16>
// CHECK-NEXT:    %yk = tile.load %b[%c0, %c0] : !tile.tensor<?x64xbf16> -> tensor<64x128xbf16>
// CHECK-NEXT:    %zero = arith.constant dense<0.000000e+00> : tensor<128x128xf32>
// CHECK-NEXT:    %d0 = tile.dot %x, %yk, %zero : tensor<128x64xbf16>, tensor<64x128xbf16> -> tensor<128x128xf32>
// CHECK-NEXT:    %d1 = tile.dot %x, %y, %d0 transpose_rhs : tensor<128x64xbf16>, tensor<128x64xbf16> -> tensor<128x128xf32>
// CHECK-NEXT:    %d2 = tile.dot %xt, %yk, %d1 transpose_lhs : tensor<64x128xbf16>, tensor<64x128xbf16> -> tensor<128x128xf32>
// CHECK-NEXT:    %d3 = tile.dot %xt, %y, %d2 transpose_lhs transpose_rhs {note = "both"} : tensor<64x128xbf16>, tensor<128x64xbf16> -> tensor<128x128xf32>
// CHECK-NEXT:    %s = tile.splat %alpha : f32 -> tensor<128x128xf32>
// CHECK-NEXT:    %vv = tile.load %v[%n] : !tile.tensor<?xf32, ["N"]> -> tensor<128xf32>
// CHECK-NEXT:    %b1 = tile.broadcast %vv, 1 : tensor<128xf32> -> tensor<128x128xf32>
// CHECK-NEXT:    %b0 = tile.broadcast %vv, 0 : tensor<128xf32> -> tensor<128x128xf32>
// CHECK-NEXT:    %e = arith.mulf %d3, %s : tensor<128x128xf32>
// CHECK-NEXT:    %f = arith.addf %e, %b1 : tensor<128x128xf32>
// CHECK-NEXT:    %g = arith.addf %f, %b0 : tensor<128x128xf32>
// CHECK-NEXT:    tile.store %g, %c[%pid_x, %pid_z] : tensor<128x128xf32> -> !tile.tensor<?x?xf32>
// CHECK-NEXT:    tile.return
// CHECK-NEXT:  }
tile.kernel @all_ops(%a: !tile.tensor<?x?xbf16, ["M", "K"]>, %b: !tile.tensor<?x64xbf16>, %v: !tile.tensor<?xf32, ["N"]>, %c: !tile.tensor<?x?xf32>, %alpha: f32, %n: index) {
  %c0 = arith.constant 0 : index
  %pid_x = tile.program_id x
  %pid_y = tile.program_id y
  %pid_z = tile.program_id z
  %K = tile.dim %a[1] : !tile.tensor<?x?xbf16, ["M", "K"]>
  %x = tile.load %a[%pid_x, %c0] : !tile.tensor<?x?xbf16, ["M", "K"]> -> tensor<128x64xbf16>
  %xt = tile.load %a[%c0, %pid_x] : !tile.tensor<?x?xbf16, ["M", "K"]> -> tensor<64x128xbf16>
  %y = tile.load %b[%pid_y, %c0] : !tile.tensor<?x64xbf16> -> tensor<128x64xbf16>
  %yk = tile.load %b[%c0, %c0] : !tile.tensor<?x64xbf16> -> tensor<64x128xbf16>
  %zero = arith.constant dense<0.0> : tensor<128x128xf32>
  %d0 = tile.dot %x, %yk, %zero : tensor<128x64xbf16>, tensor<64x128xbf16> -> tensor<128x128xf32>
  %d1 = tile.dot %x, %y, %d0 transpose_rhs : tensor<128x64xbf16>, tensor<128x64xbf16> -> tensor<128x128xf32>
  %d2 = tile.dot %xt, %yk, %d1 transpose_lhs : tensor<64x128xbf16>, tensor<64x128xbf16> -> tensor<128x128xf32>
  %d3 = tile.dot %xt, %y, %d2 transpose_lhs transpose_rhs {note = "both"} : tensor<64x128xbf16>, tensor<128x64xbf16> -> tensor<128x128xf32>
  %s = tile.splat %alpha : f32 -> tensor<128x128xf32>
  %vv = tile.load %v[%n] : !tile.tensor<?xf32, ["N"]> -> tensor<128xf32>
  %b1 = tile.broadcast %vv, 1 : tensor<128xf32> -> tensor<128x128xf32>
  %b0 = tile.broadcast %vv, 0 : tensor<128xf32> -> tensor<128x128xf32>
  %e = arith.mulf %d3, %s : tensor<128x128xf32>
  %f = arith.addf %e, %b1 : tensor<128x128xf32>
  %g = arith.addf %f, %b0 : tensor<128x128xf32>
  tile.store %g, %c[%pid_x, %pid_z] : tensor<128x128xf32> -> !tile.tensor<?x?xf32>
  tile.return
}

// Static dimensions, f16 and f32 element types, a rank-3 tensor, kernel attributes, an
// scf.for carrying a tile, and a kernel with no arguments.
// CHECK-LABEL: tile.kernel @types(%s: !tile.tensor<128x64xf16>, %r3: !tile.tensor<?x4x?xf32, ["B", "H", "D"]>, %h: !tile.tensor<?x?xf16, ["M", "N"]>) attributes {tawac.note = "kept"} {
// CHECK-NEXT:    %c0 = arith.constant 0 : index
// CHECK-NEXT:    %t = tile.load %s[%c0, %c0] : !tile.tensor<128x64xf16> -> tensor<128x64xf16>
// CHECK-NEXT:    %u = tile.load %r3[%c0, %c0, %c0] : !tile.tensor<?x4x?xf32, ["B", "H", "D"]> -> tensor<1x4x64xf32>
// CHECK-NEXT:    %D = tile.dim %r3[2] : !tile.tensor<?x4x?xf32, ["B", "H", "D"]>
// CHECK-NEXT:    %w = scf.for %i = %c0 to %D step %D iter_args(%wi = %t) -> (tensor<128x64xf16>) {
// CHECK-NEXT:      scf.yield %wi : tensor<128x64xf16>
// CHECK-NEXT:    }
// CHECK-NEXT:    tile.store %w, %h[%c0, %c0] : tensor<128x64xf16> -> !tile.tensor<?x?xf16, ["M", "N"]>
// CHECK-NEXT:    tile.return
// CHECK-NEXT:  }
// CHECK-LABEL: tile.kernel @empty() {
// CHECK-NEXT:    tile.return
// CHECK-NEXT:  }
tile.kernel @types(%s: !tile.tensor<128x64xf16>, %r3: !tile.tensor<?x4x?xf32, ["B", "H", "D"]>, %h: !tile.tensor<?x?xf16, ["M", "N"]>) attributes {tawac.note = "kept"} {
  %c0 = arith.constant 0 : index
  %t = tile.load %s[%c0, %c0] : !tile.tensor<128x64xf16> -> tensor<128x64xf16>
  %u = tile.load %r3[%c0, %c0, %c0] : !tile.tensor<?x4x?xf32, ["B", "H", "D"]> -> tensor<1x4x64xf32>
  %D = tile.dim %r3[2] : !tile.tensor<?x4x?xf32, ["B", "H", "D"]>
  %w = scf.for %i = %c0 to %D step %D iter_args(%wi = %t) -> (tensor<128x64xf16>) {
    scf.yield %wi : tensor<128x64xf16>
  }
  tile.store %w, %h[%c0, %c0] : tensor<128x64xf16> -> !tile.tensor<?x?xf16, ["M", "N"]>
  tile.return
}
tile.kernel @empty() {
  tile.return
}
