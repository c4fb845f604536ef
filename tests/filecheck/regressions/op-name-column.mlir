// Regression (fixed, convention): the column of an op's diagnostic is the start of the statement
// (`%d` at column 3), not the op name (`tile.dot` at column 8) as in MLIR's own
// diagnostics and as the brief's example `invalid.mlir:5:8: error: tile.dot: ...`
// expects.  driver._LocatingParser records the position before the result list.
// Ops without results are unaffected.
// RUN: not tawac opt %s 2>&1 | filecheck %s

tile.kernel @k(%a: !tile.tensor<?x?xbf16>, %b: !tile.tensor<?x?xbf16>) {
  %c0 = arith.constant 0 : index
  %x = tile.load %a[%c0, %c0] : !tile.tensor<?x?xbf16> -> tensor<128x64xbf16>
  %y = tile.load %b[%c0, %c0] : !tile.tensor<?x?xbf16> -> tensor<128x32xbf16>
  %z = arith.constant dense<0.0> : tensor<128x128xf32>
  %d = tile.dot %x, %y, %z transpose_rhs : tensor<128x64xbf16>, tensor<128x32xbf16> -> tensor<128x128xf32>
// CHECK: {{.*}}op-name-column.mlir:[[# @LINE - 1]]:8: error: tile.dot: contraction sizes differ
  tile.return
}
