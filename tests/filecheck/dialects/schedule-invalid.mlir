// Malformed #tawac.schedule attributes: one located error each.
// RUN: not tawac opt --split-input-file %s 2>&1 | filecheck %s

tile.kernel @unknown(%a: !tile.tensor<?x?xbf16>) attributes {tawac.schedule = #tawac.schedule<stages = 3, depth = 2>} {
// CHECK: schedule-invalid.mlir:[[# @LINE - 1]]:{{[0-9]+}}: error: unknown or repeated schedule field 'depth'
  tile.return
}

// -----

tile.kernel @repeated(%a: !tile.tensor<?x?xbf16>) attributes {tawac.schedule = #tawac.schedule<stages = 3, stages = 2>} {
// CHECK: schedule-invalid.mlir:[[# @LINE - 1]]:{{[0-9]+}}: error: unknown or repeated schedule field 'stages'
  tile.return
}

// -----

tile.kernel @negative(%a: !tile.tensor<?x?xbf16>) attributes {tawac.schedule = #tawac.schedule<stages = -1>} {
// CHECK: schedule-invalid.mlir:[[# @LINE - 1]]:{{[0-9]+}}: error: Expected integer literal
  tile.return
}
