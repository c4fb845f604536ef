// Every verifier and parser error of the tile dialect: exactly one diagnostic per chunk,
// with the file, line and column of the offending op (each CHECK sits under its line).
// Chunks are separated by the usual marker line; the CHECK-NEXT after each diagnostic
// matches that marker in the output, so no chunk may report twice.
// RUN: not tawac opt --split-input-file %s 2>&1 | filecheck %s

tile.kernel @dot_k_mismatch(%a: !tile.tensor<?x?xbf16>, %b: !tile.tensor<?x?xbf16>) {
  %c0 = arith.constant 0 : index
  %x = tile.load %a[%c0, %c0] : !tile.tensor<?x?xbf16> -> tensor<128x64xbf16>
  %y = tile.load %b[%c0, %c0] : !tile.tensor<?x?xbf16> -> tensor<128x32xbf16>
  %z = arith.constant dense<0.0> : tensor<128x128xf32>
  %d = tile.dot %x, %y, %z transpose_rhs : tensor<128x64xbf16>, tensor<128x32xbf16> -> tensor<128x128xf32>
// CHECK:      {{.*}}tile-invalid.mlir:[[# @LINE - 1]]:8: error: tile.dot: contraction sizes differ: lhs tensor<128x64xbf16> has K=64, rhs tensor<128x32xbf16> has K=32
// CHECK-NEXT: {{^//}} -----
  tile.return
}

// -----

// Without transpose_rhs the rhs is KxN: a 64x128 lhs needs a 128-row rhs.
tile.kernel @dot_k_mismatch_no_transpose(%a: !tile.tensor<?x?xbf16>) {
  %c0 = arith.constant 0 : index
  %x = tile.load %a[%c0, %c0] : !tile.tensor<?x?xbf16> -> tensor<64x128xbf16>
  %z = arith.constant dense<0.0> : tensor<64x64xf32>
  %d = tile.dot %x, %x, %z : tensor<64x128xbf16>, tensor<64x128xbf16> -> tensor<64x64xf32>
// CHECK:      {{.*}}tile-invalid.mlir:[[# @LINE - 1]]:8: error: tile.dot: contraction sizes differ: lhs tensor<64x128xbf16> has K=128, rhs tensor<64x128xbf16> has K=64
// CHECK-NEXT: {{^//}} -----
  tile.return
}

// -----

// transpose_lhs: the lhs is KxM (here K=128), the rhs KxN (here K=64).
tile.kernel @dot_transpose_lhs_mismatch(%a: !tile.tensor<?x?xbf16>) {
  %c0 = arith.constant 0 : index
  %x = tile.load %a[%c0, %c0] : !tile.tensor<?x?xbf16> -> tensor<128x64xbf16>
  %y = tile.load %a[%c0, %c0] : !tile.tensor<?x?xbf16> -> tensor<64x128xbf16>
  %z = arith.constant dense<0.0> : tensor<64x128xf32>
  %d = tile.dot %x, %y, %z transpose_lhs : tensor<128x64xbf16>, tensor<64x128xbf16> -> tensor<64x128xf32>
// CHECK:      {{.*}}tile-invalid.mlir:[[# @LINE - 1]]:8: error: tile.dot: contraction sizes differ: lhs tensor<128x64xbf16> has K=128, rhs tensor<64x128xbf16> has K=64
// CHECK-NEXT: {{^//}} -----
  tile.return
}

// -----

tile.kernel @dot_acc_shape(%a: !tile.tensor<?x?xbf16>, %b: !tile.tensor<?x?xbf16>) {
  %c0 = arith.constant 0 : index
  %x = tile.load %a[%c0, %c0] : !tile.tensor<?x?xbf16> -> tensor<128x64xbf16>
  %y = tile.load %b[%c0, %c0] : !tile.tensor<?x?xbf16> -> tensor<256x64xbf16>
  %z = arith.constant dense<0.0> : tensor<128x128xf32>
  %d = tile.dot %x, %y, %z transpose_rhs : tensor<128x64xbf16>, tensor<256x64xbf16> -> tensor<128x128xf32>
// CHECK:      {{.*}}tile-invalid.mlir:[[# @LINE - 1]]:8: error: tile.dot: accumulator tensor<128x128xf32> does not match the product shape 128x256 of tensor<128x64xbf16> and tensor<256x64xbf16>
// CHECK-NEXT: {{^//}} -----
  tile.return
}

// -----

tile.kernel @dot_dtype_mismatch(%a: !tile.tensor<?x?xf16>, %b: !tile.tensor<?x?xbf16>) {
  %c0 = arith.constant 0 : index
  %x = tile.load %a[%c0, %c0] : !tile.tensor<?x?xf16> -> tensor<128x64xf16>
  %y = tile.load %b[%c0, %c0] : !tile.tensor<?x?xbf16> -> tensor<128x64xbf16>
  %z = arith.constant dense<0.0> : tensor<128x128xf32>
  %d = tile.dot %x, %y, %z transpose_rhs : tensor<128x64xf16>, tensor<128x64xbf16> -> tensor<128x128xf32>
// CHECK:      {{.*}}tile-invalid.mlir:[[# @LINE - 1]]:8: error: tile.dot: operand element types differ: tensor<128x64xf16> vs tensor<128x64xbf16>
// CHECK-NEXT: {{^//}} -----
  tile.return
}

// -----

tile.kernel @dot_f32_operands(%a: !tile.tensor<?x?xf32>) {
  %c0 = arith.constant 0 : index
  %x = tile.load %a[%c0, %c0] : !tile.tensor<?x?xf32> -> tensor<128x64xf32>
  %z = arith.constant dense<0.0> : tensor<128x128xf32>
  %d = tile.dot %x, %x, %z transpose_rhs : tensor<128x64xf32>, tensor<128x64xf32> -> tensor<128x128xf32>
// CHECK:      {{.*}}tile-invalid.mlir:[[# @LINE - 1]]:8: error: tile.dot: operand element type f32 is not supported (bf16, f16, f8E4M3FN or f8E5M2)
// CHECK-NEXT: {{^//}} -----
  tile.return
}

// -----

tile.kernel @dot_acc_not_f32(%a: !tile.tensor<?x?xbf16>) {
  %c0 = arith.constant 0 : index
  %x = tile.load %a[%c0, %c0] : !tile.tensor<?x?xbf16> -> tensor<128x64xbf16>
  %z = arith.constant dense<0.0> : tensor<128x128xf16>
  %d = tile.dot %x, %x, %z transpose_rhs : tensor<128x64xbf16>, tensor<128x64xbf16> -> tensor<128x128xf16>
// CHECK:      {{.*}}tile-invalid.mlir:[[# @LINE - 1]]:8: error: tile.dot: accumulator must be f32, got tensor<128x128xf16>
// CHECK-NEXT: {{^//}} -----
  tile.return
}

// -----

tile.kernel @dot_rank(%a: !tile.tensor<?xbf16>) {
  %c0 = arith.constant 0 : index
  %x = tile.load %a[%c0] : !tile.tensor<?xbf16> -> tensor<64xbf16>
  %z = arith.constant dense<0.0> : tensor<64x64xf32>
  %d = "tile.dot"(%x, %x, %z) : (tensor<64xbf16>, tensor<64xbf16>, tensor<64x64xf32>) -> tensor<64x64xf32>
// CHECK:      {{.*}}tile-invalid.mlir:[[# @LINE - 1]]:8: error: tile.dot: lhs must be 2-d, got tensor<64xbf16>
// CHECK-NEXT: {{^//}} -----
  tile.return
}

// -----

tile.kernel @load_rank(%a: !tile.tensor<?x?xbf16>) {
  %c0 = arith.constant 0 : index
  %x = tile.load %a[%c0, %c0] : !tile.tensor<?x?xbf16> -> tensor<2x128x64xbf16>
// CHECK:      {{.*}}tile-invalid.mlir:[[# @LINE - 1]]:8: error: tile.load: tile tensor<2x128x64xbf16> has rank 3 but !tile.tensor<?x?xbf16> has rank 2
// CHECK-NEXT: {{^//}} -----
  tile.return
}

// -----

tile.kernel @load_elem(%a: !tile.tensor<?x?xbf16, ["M", "K"]>) {
  %c0 = arith.constant 0 : index
  %x = tile.load %a[%c0, %c0] : !tile.tensor<?x?xbf16, ["M", "K"]> -> tensor<128x64xf16>
// CHECK:      {{.*}}tile-invalid.mlir:[[# @LINE - 1]]:8: error: tile.load: element type mismatch: tile tensor<128x64xf16> vs global !tile.tensor<?x?xbf16, ["M", "K"]>
// CHECK-NEXT: {{^//}} -----
  tile.return
}

// -----

tile.kernel @load_coords(%a: !tile.tensor<?x?xbf16>) {
  %c0 = arith.constant 0 : index
  %x = tile.load %a[%c0] : !tile.tensor<?x?xbf16> -> tensor<128x64xbf16>
// CHECK:      {{.*}}tile-invalid.mlir:[[# @LINE - 1]]:8: error: tile.load: 1 coordinates given for !tile.tensor<?x?xbf16> of rank 2
// CHECK-NEXT: {{^//}} -----
  tile.return
}

// -----

tile.kernel @load_dynamic_tile(%a: !tile.tensor<?x?xbf16>) {
  %c0 = arith.constant 0 : index
  %x = tile.load %a[%c0, %c0] : !tile.tensor<?x?xbf16> -> tensor<?x64xbf16>
// CHECK:      {{.*}}tile-invalid.mlir:[[# @LINE - 1]]:8: error: tile.load: tile shape must be static, got tensor<?x64xbf16>
// CHECK-NEXT: {{^//}} -----
  tile.return
}

// -----

tile.kernel @store_coords(%a: !tile.tensor<?x?xbf16>) {
  %c0 = arith.constant 0 : index
  %t = arith.constant dense<0.0> : tensor<128x64xbf16>
  tile.store %t, %a[%c0, %c0, %c0] : tensor<128x64xbf16> -> !tile.tensor<?x?xbf16>
// CHECK:      {{.*}}tile-invalid.mlir:[[# @LINE - 1]]:3: error: tile.store: 3 coordinates given for !tile.tensor<?x?xbf16> of rank 2
// CHECK-NEXT: {{^//}} -----
  tile.return
}

// -----

tile.kernel @store_elem(%a: !tile.tensor<?x?xbf16>) {
  %c0 = arith.constant 0 : index
  %t = arith.constant dense<0.0> : tensor<128x64xf32>
  tile.store %t, %a[%c0, %c0] : tensor<128x64xf32> -> !tile.tensor<?x?xbf16>
// CHECK:      {{.*}}tile-invalid.mlir:[[# @LINE - 1]]:3: error: tile.store: element type mismatch: tile tensor<128x64xf32> vs global !tile.tensor<?x?xbf16>
// CHECK-NEXT: {{^//}} -----
  tile.return
}

// -----

tile.kernel @broadcast_size(%v: !tile.tensor<?xf32>) {
  %c0 = arith.constant 0 : index
  %x = tile.load %v[%c0] : !tile.tensor<?xf32> -> tensor<128xf32>
  %b = tile.broadcast %x, 1 : tensor<128xf32> -> tensor<64x256xf32>
// CHECK:      {{.*}}tile-invalid.mlir:[[# @LINE - 1]]:8: error: tile.broadcast: tensor<128xf32> cannot be broadcast along dimension 1 of tensor<64x256xf32>
// CHECK-NEXT: {{^//}} -----
  tile.return
}

// -----

tile.kernel @broadcast_dim(%v: !tile.tensor<?xf32>) {
  %c0 = arith.constant 0 : index
  %x = tile.load %v[%c0] : !tile.tensor<?xf32> -> tensor<128xf32>
  %b = tile.broadcast %x, 2 : tensor<128xf32> -> tensor<128x128xf32>
// CHECK:      {{.*}}tile-invalid.mlir:[[# @LINE - 1]]:8: error: tile.broadcast: dimension 2 out of range
// CHECK-NEXT: {{^//}} -----
  tile.return
}

// -----

tile.kernel @broadcast_rank(%v: !tile.tensor<?x?xf32>) {
  %c0 = arith.constant 0 : index
  %x = tile.load %v[%c0, %c0] : !tile.tensor<?x?xf32> -> tensor<128x1xf32>
  %b = tile.broadcast %x, 1 : tensor<128x1xf32> -> tensor<128x128xf32>
// CHECK:      {{.*}}tile-invalid.mlir:[[# @LINE - 1]]:8: error: tile.broadcast: expected 1-d to 2-d, got tensor<128x1xf32> -> tensor<128x128xf32>
// CHECK-NEXT: {{^//}} -----
  tile.return
}

// -----

tile.kernel @splat_type(%s: f32) {
  %t = tile.splat %s : f32 -> tensor<128x128xf16>
// CHECK:      {{.*}}tile-invalid.mlir:[[# @LINE - 1]]:8: error: tile.splat: tensor<128x128xf16> cannot hold f32 values (expected f32 elements)
// CHECK-NEXT: {{^//}} -----
  tile.return
}

// -----

tile.kernel @dim_range(%a: !tile.tensor<?x?xbf16>) {
  %d = tile.dim %a[2] : !tile.tensor<?x?xbf16>
// CHECK:      {{.*}}tile-invalid.mlir:[[# @LINE - 1]]:8: error: tile.dim: dimension 2 out of range for !tile.tensor<?x?xbf16> of rank 2
// CHECK-NEXT: {{^//}} -----
  tile.return
}

// -----

tile.kernel @program_id_axis() {
  %p = tile.program_id w
// CHECK:      {{.*}}tile-invalid.mlir:[[# @LINE - 1]]:24: error: expected axis x, y or z
// CHECK-NEXT: {{^//}} -----
  tile.return
}

// -----

tile.kernel @arg_type(%a: !tile.tensor<?x?xbf16>, %n: i32) {
// CHECK:      {{.*}}tile-invalid.mlir:[[# @LINE - 1]]:1: error: tile.kernel @arg_type: argument of type i32 is not supported (expected !tile.tensor, f32 or index)
// CHECK-NEXT: {{^//}} -----
  tile.return
}

// -----

tile.kernel @arg_builtin_tensor(%t: tensor<128x64xbf16>) {
// CHECK:      {{.*}}tile-invalid.mlir:[[# @LINE - 1]]:1: error: tile.kernel @arg_builtin_tensor: argument of type tensor<128x64xbf16> is not supported (expected !tile.tensor, f32 or index)
// CHECK-NEXT: {{^//}} -----
  tile.return
}

// -----

tile.kernel @no_return(%s: f32) {
// CHECK:      {{.*}}tile-invalid.mlir:[[# @LINE - 1]]:1: error: tile.kernel body must end with tile.return
// CHECK-NEXT: {{^//}} -----
  %c0 = arith.constant 0 : index
}

// -----

tile.kernel @unknown_op(%a: !tile.tensor<?x?xbf16>) {
  tile.frobnicate %a
// CHECK:      {{.*}}tile-invalid.mlir:[[# @LINE - 1]]:3: error: Operation tile.frobnicate is not registered
// CHECK-NEXT: {{^//}} -----
  tile.return
}

// -----

tile.kernel @malformed(%a: !tile.tensor<?x?xbf16>) {
  %c0 = arith.constant 0 : index
  %x = tile.load %a[%c0, %c0] !tile.tensor<?x?xbf16> -> tensor<128x64xbf16>
// CHECK:      {{.*}}tile-invalid.mlir:[[# @LINE - 1]]:31: error: Expected ':'
// CHECK-NEXT: {{^//}} -----
  tile.return
}

// -----

// Type verifiers: the message must name the problem (the location is checked in
// tests/filecheck/bugs/type-error-location.mlir).
tile.kernel @dim_names(%a: !tile.tensor<?x?xbf16, ["M"]>) {
  tile.return
}
// CHECK:      {{.*}}tile-invalid.mlir{{(:[0-9]+:[0-9]+)?}}: error: !tile.tensor has 2 dimensions but 1 dimension names
// CHECK-NEXT: {{^//}} -----

// -----

tile.kernel @int_elements(%a: !tile.tensor<?x?xi64>) {
  tile.return
}
// CHECK:      {{.*}}tile-invalid.mlir{{(:[0-9]+:[0-9]+)?}}: error: !tile.tensor element type must be a float type or i32, got i64
// CHECK-NEXT: {{^//}} -----

// -----

tile.kernel @undefined_value(%a: !tile.tensor<?x?xbf16>) {
  %x = tile.load %a[%nope, %nope] : !tile.tensor<?x?xbf16> -> tensor<128x64xbf16>
  tile.return
}
// Reported at the first use (xDSL reports it at the end of the chunk).
// CHECK:      {{.*}}tile-invalid.mlir:293:8: error: use of undefined value %nope

// -----

// 8-bit floats: f8E4M3FN and f8E5M2 only.
tile.kernel @fp8_variant(%a: !tile.tensor<?x?xf8E4M3>) {
  tile.return
}
// CHECK:      {{.*}}tile-invalid.mlir{{(:[0-9]+:[0-9]+)?}}: error: !tile.tensor element type f8E4M3 is not supported (the 8-bit float types are f8E4M3FN and f8E5M2)
// CHECK-NEXT: {{^//}} -----

// -----

// fp8 multiplies fp8 (either format), not a 16-bit type.
tile.kernel @dot_fp8_bf16(%a: !tile.tensor<?x?xf8E4M3FN>, %b: !tile.tensor<?x?xbf16>) {
  %c0 = arith.constant 0 : index
  %x = tile.load %a[%c0, %c0] : !tile.tensor<?x?xf8E4M3FN> -> tensor<128x64xf8E4M3FN>
  %y = tile.load %b[%c0, %c0] : !tile.tensor<?x?xbf16> -> tensor<128x64xbf16>
  %z = arith.constant dense<0.0> : tensor<128x128xf32>
  %d = tile.dot %x, %y, %z transpose_rhs : tensor<128x64xf8E4M3FN>, tensor<128x64xbf16> -> tensor<128x128xf32>
// CHECK:      {{.*}}tile-invalid.mlir:[[# @LINE - 1]]:8: error: tile.dot: operand element types differ: tensor<128x64xf8E4M3FN> vs tensor<128x64xbf16>
// CHECK-NEXT: {{^//}} -----
  tile.return
}

// -----

// The accumulator of an fp8 product is f32 too.
tile.kernel @dot_fp8_acc(%a: !tile.tensor<?x?xf8E5M2>) {
  %c0 = arith.constant 0 : index
  %x = tile.load %a[%c0, %c0] : !tile.tensor<?x?xf8E5M2> -> tensor<128x64xf8E5M2>
  %z = arith.constant dense<0.0> : tensor<128x128xf16>
  %d = tile.dot %x, %x, %z transpose_rhs : tensor<128x64xf8E5M2>, tensor<128x64xf8E5M2> -> tensor<128x128xf16>
// CHECK:      {{.*}}tile-invalid.mlir:[[# @LINE - 1]]:8: error: tile.dot: accumulator must be f32, got tensor<128x128xf16>
  tile.return
}

// -----

// An i32 tensor holds tile.arrive's counters; its tiles are not read yet.
tile.kernel @int_tile_load(%a: !tile.tensor<?x?xi32>) {
  %c0 = arith.constant 0 : index
  %x = tile.load %a[%c0, %c0] : !tile.tensor<?x?xi32> -> tensor<64x64xi32>
// CHECK:      {{.*}}tile-invalid.mlir:[[# @LINE - 1]]:8: error: tile.load: tiles of i32 tensors are not supported yet (an i32 tensor holds tile.arrive's counters)
  tile.return
}

// -----

tile.kernel @arrive_float_counters(%a: !tile.tensor<?x?xf32>) {
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %l = tile.arrive %a[%c0, %c0] count %c2 : !tile.tensor<?x?xf32>
// CHECK:      {{.*}}tile-invalid.mlir:[[# @LINE - 1]]:8: error: tile.arrive: counters must be i32, got f32
  tile.return
}

// -----

tile.kernel @split_sum_max(%a: !tile.tensor<?x?x?xf32>) {
  %c0 = arith.constant 0 : index
  %s = tile.split_sum %a[%c0, %c0, %c0] count %c0 max 0 : !tile.tensor<?x?x?xf32> -> tensor<64x64xf32>
// CHECK:      {{.*}}tile-invalid.mlir:[[# @LINE - 1]]:8: error: tile.split_sum: max must be at least 1, got 0
  tile.return
}

// -----

tile.kernel @split_sum_rank(%a: !tile.tensor<?x?xf32>) {
  %c0 = arith.constant 0 : index
  %s = tile.split_sum %a[%c0, %c0] count %c0 max 2 : !tile.tensor<?x?xf32> -> tensor<64x64xf32>
// CHECK:      {{.*}}tile-invalid.mlir:[[# @LINE - 1]]:8: error: tile.split_sum: the partials need a leading dimension beyond the tile's two, got !tile.tensor<?x?xf32> of rank 2
  tile.return
}

// -----

tile.kernel @split_sum_bf16(%a: !tile.tensor<?x?x?xbf16>) {
  %c0 = arith.constant 0 : index
  %s = tile.split_sum %a[%c0, %c0, %c0] count %c0 max 2 : !tile.tensor<?x?x?xbf16> -> tensor<64x64xbf16>
// CHECK:      {{.*}}tile-invalid.mlir:[[# @LINE - 1]]:8: error: tile.split_sum: expected a 2-d f32 tile, got tensor<64x64xbf16>
  tile.return
}
