// Regression (fixed): errors raised by type/attribute verifiers while parsing lose their position:
// tawac prints `type-error-location.mlir: error: ...` (file only) although the type has
// a line and column.  Every user-caused diagnostic should carry `file:line:col`.
// (driver.parse_text turns the VerifyException into a CompileError with the file name
// only.)
// RUN: not tawac opt --split-input-file %s 2>&1 | filecheck %s

tile.kernel @dim_names(%a: !tile.tensor<?x?xbf16, ["M"]>) {
// CHECK: {{.*}}type-error-location.mlir:[[# @LINE - 1]]:{{[0-9]+}}: error: !tile.tensor has 2 dimensions but 1 dimension names
  tile.return
}

// -----

tile.kernel @k(%a: !tile.tensor<?x?xbf16>) {
  %r = aref.create : !aref.aref<[tensor<128x64xbf16>], 0>
// CHECK: {{.*}}type-error-location.mlir:[[# @LINE - 1]]:{{[0-9]+}}: error: !aref.aref depth must be >= 1, got 0
  tile.return
}

// -----

tile.kernel @k(%a: !tile.tensor<?x?xbf16>) {
  %ra = hopper.smem_alloc offset 0 : !hopper.smem<2x128x64xbf16, swizzle 48>
// CHECK: {{.*}}type-error-location.mlir:[[# @LINE - 1]]:{{[0-9]+}}: error: swizzle must be 0, 32, 64 or 128 bytes, got {{.*}}48
  tile.return
}
