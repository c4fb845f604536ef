// #tawac.schedule round-trips through tawac opt (errors: schedule-invalid.mlir).
// RUN: tawac opt %s | filecheck %s
// RUN: tawac opt %s | tawac opt - | filecheck %s

// CHECK: tile.kernel @empty(%a: !tile.tensor<?x?xbf16>) attributes {tawac.schedule = #tawac.schedule<>}
tile.kernel @empty(%a: !tile.tensor<?x?xbf16>) attributes {tawac.schedule = #tawac.schedule<>} {
  tile.return
}

// CHECK: tile.kernel @full(%a: !tile.tensor<?x?xbf16>) attributes {tawac.schedule = #tawac.schedule<stages = 3, mma_depth = 1, smem_bytes = 214016, program_grid = [{cdiv = {arg = "c", dim = 0 : i64}, by = 128 : i64}, 1 : i64, 1 : i64]>}
tile.kernel @full(%a: !tile.tensor<?x?xbf16>) attributes {tawac.schedule = #tawac.schedule<mma_depth = 1, stages = 3, program_grid = [{cdiv = {arg = "c", dim = 0 : i64}, by = 128 : i64}, 1 : i64, 1 : i64], smem_bytes = 214016>} {
  tile.return
}
