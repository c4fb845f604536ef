// Regression (fixed): errors that custom parsers raise after reading the whole op
// (`parser.raise_error(msg)` without a span) point at the token *after* the op: the
// next line, or the end of the file, instead of the op itself.
// Here: aref.put with too few values reports the `tile.return` line below it, and a
// tile.kernel with a result type reports the end of the input.
// RUN: not tawac opt --split-input-file %s 2>&1 | filecheck %s

tile.kernel @put_count(%a: !tile.tensor<?x?xbf16>) {
  %r = aref.create : !aref.aref<[tensor<128x64xbf16>, tensor<256x64xbf16>], 2>
  %c0 = arith.constant 0 : index
  %x = tile.load %a[%c0, %c0] : !tile.tensor<?x?xbf16> -> tensor<128x64xbf16>
  aref.put %r[%c0], %x : !aref.aref<[tensor<128x64xbf16>, tensor<256x64xbf16>], 2>
// CHECK: {{.*}}parse-error-location.mlir:[[# @LINE - 1]]:{{[0-9]+}}: error: aref.put: 1 values do not match
  tile.return
}

// -----

tile.kernel @returns_value(%s: f32) -> f32 {
// CHECK: {{.*}}parse-error-location.mlir:[[# @LINE - 1]]:{{[0-9]+}}: error: tile.kernel does not return values
  tile.return
}
