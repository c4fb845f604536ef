// Malformed #tawac.schedule attributes: one located error each.
// RUN: not tawac opt --split-input-file %s 2>&1 | filecheck %s

tile.kernel @unknown(%a: !tile.tensor<?x?xbf16>) attributes {tawac.schedule = #tawac.schedule<smem_bytes = 3, depth = 2>} {
// CHECK: schedule-invalid.mlir:[[# @LINE - 1]]:{{[0-9]+}}: error: unknown or repeated schedule field 'depth'
  tile.return
}

// -----

tile.kernel @repeated(%a: !tile.tensor<?x?xbf16>) attributes {tawac.schedule = #tawac.schedule<smem_bytes = 3, smem_bytes = 2>} {
// CHECK: schedule-invalid.mlir:[[# @LINE - 1]]:{{[0-9]+}}: error: unknown or repeated schedule field 'smem_bytes'
  tile.return
}

// -----

tile.kernel @negative(%a: !tile.tensor<?x?xbf16>) attributes {tawac.schedule = #tawac.schedule<smem_bytes = -1>} {
// CHECK: schedule-invalid.mlir:[[# @LINE - 1]]:{{[0-9]+}}: error: Expected integer literal
  tile.return
}

// -----

tile.kernel @lag(%a: !tile.tensor<?x?xbf16>) attributes {tawac.schedule = #tawac.schedule<arefs = [a: depth 2 lag 2]>} {
// CHECK: error: #tawac.schedule: release lag 2 must be below the depth 2
  tile.return
}

// -----

tile.kernel @zero_depth(%a: !tile.tensor<?x?xbf16>) attributes {tawac.schedule = #tawac.schedule<arefs = [a: depth 0]>} {
// CHECK: error: #tawac.schedule: an aref's depth must be >= 1
  tile.return
}

// -----

tile.kernel @no_wg(%a: !tile.tensor<?x?xbf16>) attributes {tawac.schedule = #tawac.schedule<roles = [consumer wg 0]>} {
// CHECK: error: #tawac.schedule: role consumer needs >= 1 warp group
  tile.return
}

// -----

tile.kernel @twice(%a: !tile.tensor<?x?xbf16>) attributes {tawac.schedule = #tawac.schedule<loops = [consumer 0: [0 tile.dot, 0 tile.dot stage 1]]>} {
// CHECK: error: #tawac.schedule: loop consumer 0 lists an op twice
  tile.return
}

// -----

tile.kernel @order(%a: !tile.tensor<?x?xbf16>) attributes {tawac.schedule = #tawac.schedule<tiles = snake 3>} {
// CHECK: schedule-invalid.mlir:[[# @LINE - 1]]:{{[0-9]+}}: error: expected a tile order (grouped, longest_first)
  tile.return
}

// -----

tile.kernel @direction(%a: !tile.tensor<?x?xbf16>) attributes {tawac.schedule = #tawac.schedule<tiles = longest_first sideways>} {
// CHECK: schedule-invalid.mlir:[[# @LINE - 1]]:{{[0-9]+}}: error: expected 'up' or 'down'
  tile.return
}

// -----

tile.kernel @grid(%a: !tile.tensor<?x?xbf16>) attributes {tawac.schedule = #tawac.schedule<tiles = grouped 8>} {
// CHECK: error: #tawac.schedule: a tile order needs its program_grid
  tile.return
}

// -----

// Arefs are named by their identity, never by position.
tile.kernel @positional(%a: !tile.tensor<?x?xbf16>) attributes {tawac.schedule = #tawac.schedule<arefs = [depth 2]>} {
// CHECK: schedule-invalid.mlir:[[# @LINE - 1]]:{{[0-9]+}}: error: expected the aref's name (its aref.create's identity) and ':' before its fields (`a_b: depth 3`)
  tile.return
}

// -----

tile.kernel @aref_twice(%a: !tile.tensor<?x?xbf16>) attributes {tawac.schedule = #tawac.schedule<arefs = [a: depth 2, a: depth 3]>} {
// CHECK: error: #tawac.schedule: aref 'a' is listed twice
  tile.return
}

// -----

tile.kernel @store_mode(%a: !tile.tensor<?x?xbf16>) attributes {tawac.schedule = #tawac.schedule<stores = [c: somehow]>} {
// CHECK: schedule-invalid.mlir:[[# @LINE - 1]]:{{[0-9]+}}: error: expected one of whole, chunks, rings, registers
  tile.return
}

// -----

tile.kernel @no_buffers(%a: !tile.tensor<?x?xbf16>) attributes {tawac.schedule = #tawac.schedule<stores = [c: chunks 0]>} {
// CHECK: schedule-invalid.mlir:[[# @LINE - 1]]:{{[0-9]+}}: error: expected at least 1 chunk buffer
  tile.return
}

// -----

tile.kernel @store_twice(%a: !tile.tensor<?x?xbf16>) attributes {tawac.schedule = #tawac.schedule<stores = [c: whole, c: registers]>} {
// CHECK: error: #tawac.schedule: store 'c' is listed twice
  tile.return
}

// -----

tile.kernel @wait_twice(%a: !tile.tensor<?x?xbf16>) attributes {tawac.schedule = #tawac.schedule<loops = [consumer 0: [0 tile.dot, wait 0 pending 0, wait 0 pending 1]]>} {
// CHECK: error: #tawac.schedule: loop consumer 0 waits for an MMA twice
  tile.return
}

// -----

tile.kernel @no_ctas(%a: !tile.tensor<?x?xbf16>) attributes {tawac.schedule = #tawac.schedule<ctas_per_sm = 0>} {
// CHECK: error: #tawac.schedule: ctas_per_sm must be in 1..8, got 0
  tile.return
}

// -----

tile.kernel @too_many_ctas(%a: !tile.tensor<?x?xbf16>) attributes {tawac.schedule = #tawac.schedule<ctas_per_sm = 9>} {
// CHECK: error: #tawac.schedule: ctas_per_sm must be in 1..8, got 9
  tile.return
}
