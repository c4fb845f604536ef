// The auto planner: the heuristic and the solver both propose, the timeline model prices
// each (the sum of the consumer main loops' steady-state intervals) and picks the
// cheaper where its margin is at least the target's model error for the kind of loop
// (10% uncalibrated; with a calibration, its measured error in comparing the two
// planners' schedules of such loops, else its median error); within it, the target's
// preferred planner for the kind of loop (the one its calibration measured faster: on
// the H100 the solver for gemm loops, attention on one warp group and attention with
// narrow heads, else the heuristic), where the solver's schedule is priced cheaper; the
// heuristic's is kept where it is not priced at least 2% cheaper.
// The decision is the schedule's `auto` field; the other planners print none.
// REQUIRES: ortools
// RUN: tawac opt %S/../../../examples/gemm.mlir -p 'warp-specialize,plan{schedule=auto}' | filecheck %s --check-prefix=GEMM
// RUN: tawac opt %S/../../../examples/gemm.mlir -p 'warp-specialize,plan' --schedule auto | filecheck %s --check-prefix=GEMM
// RUN: tawac opt %S/../../../examples/attention_causal_d64.mlir -p 'warp-specialize,plan{schedule=auto}' | filecheck %s --check-prefix=CAUSAL
// RUN: tawac opt %S/../../../examples/attention.mlir -D BLOCK_N=64 -p 'warp-specialize,plan{schedule=auto}' | filecheck %s --check-prefix=KEYS64
// RUN: tawac opt %S/../../../examples/attention_d64.mlir -D BLOCK_M=128 -D BLOCK_N=64 -p 'warp-specialize,plan{schedule=auto}' | filecheck %s --check-prefix=NARROW
// RUN: tawac opt %S/../../../examples/gemm.mlir -p 'warp-specialize,plan{schedule=heuristic}' | filecheck %s --check-prefix=HEURISTIC
// RUN: tawac opt %S/../../../examples/attention_d64.mlir -D BLOCK_M=128 -D BLOCK_N=64 -p 'warp-specialize,plan' | filecheck %s --check-prefix=NARROW

// For the GEMM the solver proposes the heuristic's schedule (a 3-slot ring, the K loop in
// body order): a margin of 0.0%, a tie: the heuristic's kept.
// GEMM: #tawac.schedule<planner = auto, auto = heuristic kept margin 0.0 error {{[0-9.]+}}, roles = [producer wg 1 regs 24, consumer wg 2 regs 240], arefs = [a_b: depth 3], loops = [consumer 0: [0 aref.get, 1 tile.dot, wait 1 pending 0, 2 aref.consumed]], tiles = grouped 8, stores = [c: whole]

// Causal attention at d64 (128x128 blocks): its key loop's trips vary from tile to tile,
// so each proposal is priced from both phases of its two warp groups (the H100
// calibration's `phase_leads`); the heuristic's simulates faster, by more than the
// model's error on such loops: the heuristic's, by the model.
// CAUSAL: #tawac.schedule<planner = auto, auto = heuristic model margin {{[0-9]+\.[0-9]}} error {{[0-9.]+}}, roles = [producer wg 1 regs 24, consumer wg 2 regs 240]

// d128 attention with 64-key blocks: the solver's schedule simulates faster, by less than
// the model's measured error on attention loops: the preferred planner's (without a
// calibration, and on the H100 for d128 heads, the heuristic).
// KEYS64: #tawac.schedule<planner = auto, auto = heuristic preferred attention faster solver margin {{[0-9]+\.[0-9]}} error {{[0-9.]+}}, roles = [producer wg 1 regs 24, consumer wg 2 regs 240]

// d64 attention with 64-key blocks (narrow heads): the solver's three-stage schedule
// simulates faster by more than the model's error on such loops; it keeps its `solve`.
// NARROW: #tawac.schedule<planner = auto, auto = solver model margin {{[0-9]+\.[0-9]}} error {{[0-9.]+}}, solve = interval {{[0-9]+}} optimal bound {{[0-9]+}}, roles = [producer wg 1 regs 24, consumer wg 2 regs 240]

// The default planner is auto (the last NARROW run: no planner named); the heuristic
// records no decision.
// HEURISTIC: #tawac.schedule<planner = heuristic, roles =
// HEURISTIC-NOT: auto =
