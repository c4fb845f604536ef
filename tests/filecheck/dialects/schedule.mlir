// #tawac.schedule round-trips through tawac opt (errors: schedule-invalid.mlir).
// RUN: tawac opt %s | filecheck %s
// RUN: tawac opt %s | tawac opt - | filecheck %s

// CHECK: tile.kernel @empty(%a: !tile.tensor<?x?xbf16>) attributes {tawac.schedule = #tawac.schedule<>}
tile.kernel @empty(%a: !tile.tensor<?x?xbf16>) attributes {tawac.schedule = #tawac.schedule<>} {
  tile.return
}

// Every field; fields parse in any order and print in a fixed one; zero lags, stage 0
// and regs 0 (undecided) are not printed; names print bare where they are identifiers
// (quoted otherwise); a wait prints where it stands in the issue order.
// CHECK: tile.kernel @full(%a: !tile.tensor<?x?xbf16>) attributes {tawac.schedule = #tawac.schedule<planner = heuristic, roles = [producer wg 1 regs 24, consumer wg 2 regs 240], arefs = [q: depth 2, k_v: depth 3 lag 1], loops = [consumer 0: [0 aref.get, 1 tile.dot, 3 tile.dot stage 1, wait 1 pending 1, 2 aref.consumed stage 1, wait 3 pending 0], consumer 1 expanded: [0 tile.dot]], turns, tiles = grouped 8, stores = [c: whole, o.2: chunks 2, "2x": rings, y: registers], program_grid = [{cdiv = {arg = "c", dim = 0 : i64}, by = 128 : i64}, 1 : i64, 1 : i64], smem_bytes = 214016>}
tile.kernel @full(%a: !tile.tensor<?x?xbf16>) attributes {tawac.schedule = #tawac.schedule<smem_bytes = 214016, turns, stores = ["c": whole, "o.2": chunks 2, "2x": rings, y: registers], arefs = [q: depth 2 lag 0, "k_v": depth 3 lag 1], program_grid = [{cdiv = {arg = "c", dim = 0 : i64}, by = 128 : i64}, 1 : i64, 1 : i64], tiles = grouped 8, roles = [producer wg 1 regs 24, consumer wg 2 regs 240], loops = [consumer 0: [0 aref.get, 1 tile.dot stage 0, 3 tile.dot stage 1, wait 1 pending 1, 2 aref.consumed stage 1, wait 3 pending 0], consumer 1 expanded: [0 tile.dot]], planner = heuristic>} {
  tile.return
}

// CHECK: tile.kernel @causal(%a: !tile.tensor<?x?xbf16>) attributes {tawac.schedule = #tawac.schedule<roles = [producer wg 1, consumer wg 3 regs 160], tiles = longest_first up, program_grid = [1 : i64, 1 : i64, 1 : i64]>}
tile.kernel @causal(%a: !tile.tensor<?x?xbf16>) attributes {tawac.schedule = #tawac.schedule<roles = [producer wg 1 regs 0, consumer wg 3 regs 160], tiles = longest_first up, program_grid = [1 : i64, 1 : i64, 1 : i64]>} {
  tile.return
}

// Several CTAs a SM: printed where it is not 1.
// CHECK: tile.kernel @shared_sm(%a: !tile.tensor<?x?xbf16>) attributes {tawac.schedule = #tawac.schedule<roles = [producer wg 1 regs 24, consumer wg 1 regs 104], ctas_per_sm = 4>}
tile.kernel @shared_sm(%a: !tile.tensor<?x?xbf16>) attributes {tawac.schedule = #tawac.schedule<ctas_per_sm = 4, roles = [producer wg 1 regs 24, consumer wg 1 regs 104]>} {
  tile.return
}

// CHECK: tile.kernel @one_cta(%a: !tile.tensor<?x?xbf16>) attributes {tawac.schedule = #tawac.schedule<tiles = grouped 8, program_grid = [1 : i64, 1 : i64, 1 : i64]>}
tile.kernel @one_cta(%a: !tile.tensor<?x?xbf16>) attributes {tawac.schedule = #tawac.schedule<ctas_per_sm = 1, tiles = grouped 8, program_grid = [1 : i64, 1 : i64, 1 : i64]>} {
  tile.return
}

// A resident aref, and one with L2 eviction hints (`l2`, printed after `resident`).
// CHECK: tile.kernel @resident(%a: !tile.tensor<?x?xbf16>) attributes {tawac.schedule = #tawac.schedule<arefs = [x: depth 55 resident l2, w: depth 8 resident]>}
tile.kernel @resident(%a: !tile.tensor<?x?xbf16>) attributes {tawac.schedule = #tawac.schedule<arefs = [x: depth 55 resident l2, w: depth 8 resident]>} {
  tile.return
}

// Arefs the consumer reads again after a row reduction (`reread`, printed last).
// CHECK: tile.kernel @reread(%a: !tile.tensor<?x?xbf16>) attributes {tawac.schedule = #tawac.schedule<arefs = [x: depth 4 reread, w: depth 4]>}
tile.kernel @reread(%a: !tile.tensor<?x?xbf16>) attributes {tawac.schedule = #tawac.schedule<arefs = [x: depth 4 reread, w: depth 4]>} {
  tile.return
}
