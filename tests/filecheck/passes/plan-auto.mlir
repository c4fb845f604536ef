// The auto planner: the heuristic and the solver both propose, the timeline model prices
// each (the sum of the consumer main loops' steady-state intervals) and picks the
// cheaper where its margin is at least the target's model error for the kind of loop
// (10% uncalibrated; with a calibration, its measured error in comparing the two
// planners' schedules of such loops, else its median error); within it, the target's
// preferred planner for the kind of loop (the one its calibration measured faster: on
// the H100 the solver for gemm loops and attention on one warp group, else the heuristic).
// The decision is the schedule's `auto` field; the other planners print none.
// REQUIRES: ortools
// RUN: tawac opt %S/../../../examples/gemm.mlir -p 'warp-specialize,plan{schedule=auto}' | filecheck %s --check-prefix=GEMM
// RUN: tawac opt %S/../../../examples/gemm.mlir -p 'warp-specialize,plan' --schedule auto | filecheck %s --check-prefix=GEMM
// RUN: tawac opt %S/../../../examples/attention_causal_d64.mlir -p 'warp-specialize,plan{schedule=auto}' | filecheck %s --check-prefix=CAUSAL
// RUN: tawac opt %S/../../../examples/attention.mlir -D BLOCK_N=64 -p 'warp-specialize,plan{schedule=auto}' | filecheck %s --check-prefix=KEYS64
// RUN: tawac opt %S/../../../examples/gemm.mlir -p 'warp-specialize,plan' | filecheck %s --check-prefix=HEURISTIC

// For the GEMM the solver proposes the heuristic's schedule (a 3-slot ring, the K loop in
// body order): a margin of 0.0%, within the error; the preferred planner's for gemm.
// GEMM: #tawac.schedule<planner = auto, auto = {{heuristic|solver}} preferred gemm margin 0.0 error {{[0-9.]+}}, {{(solve = interval [0-9]+ optimal bound [0-9]+, )?}}roles = [producer wg 1 regs 24, consumer wg 2 regs 240], arefs = [a_b: depth 3], loops = [consumer 0: [0 aref.get, 1 tile.dot, wait 1 pending 0, 2 aref.consumed]], tiles = grouped 8, stores = [c: whole]

// Causal attention at d64: the solver's schedule simulates faster, but by less than the
// model's measured error on attention loops: the heuristic's (measured faster on the H100).
// CAUSAL: #tawac.schedule<planner = auto, auto = heuristic preferred attention faster solver margin {{[0-9]+\.[0-9]}} error {{[0-9.]+}}, roles = [producer wg 1 regs 24, consumer wg 2 regs 240]

// d128 attention with 64-key blocks: the solver's two-stage schedule simulates faster by
// more than that error; it keeps its `solve`.
// KEYS64: #tawac.schedule<planner = auto, auto = solver model margin {{[0-9]+\.[0-9]}} error {{[0-9.]+}}, solve = interval {{[0-9]+}} optimal bound {{[0-9]+}}, roles = [producer wg 1 regs 24, consumer wg 2 regs 240]

// The default planner records no decision.
// HEURISTIC: #tawac.schedule<planner = heuristic, roles =
// HEURISTIC-NOT: auto =
