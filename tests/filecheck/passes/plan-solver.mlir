// The solver planner (Twill) on the attention and GEMM examples: the schedule it
// records is the decision; FileCheck checks its structure, not every number.
// REQUIRES: ortools
// RUN: tawac opt %S/../../../examples/attention_causal_d64.mlir -p 'warp-specialize,plan{schedule=solver}' | filecheck %s --check-prefix=CAUSAL
// RUN: tawac opt %S/../../../examples/attention_causal_d64.mlir -p 'warp-specialize,plan' --schedule solver | filecheck %s --check-prefix=CAUSAL
// RUN: tawac opt %S/../../../examples/attention.mlir -p 'warp-specialize,plan{schedule=solver}' | filecheck %s --check-prefix=ATTN
// RUN: tawac opt %S/../../../examples/gemm.mlir -p 'warp-specialize,plan{schedule=solver}' | filecheck %s --check-prefix=GEMM

// Causal attention at d64 (128-query blocks): the solver's schedule is kept (the
// timeline model simulates it faster than the heuristic's): an optimal interval, two
// consumer warp groups, deeper K and V rings than the heuristic's three slots, and two
// stages with the S MMA of iteration i at stage 0 and the P V MMA of iteration i - 1 at
// stage 1, V's get with it.
// CAUSAL: #tawac.schedule<planner = solver, solve = interval {{[0-9]+}} optimal bound {{[0-9]+}}, roles = [producer wg 1 regs 24, consumer wg 2 regs 240], arefs = [q: depth 2, k: depth {{[4-6]}}, v: depth {{[4-6]}}], loops = [consumer 0: [
// CAUSAL-SAME: 1 tile.dot,
// CAUSAL-SAME: 19 aref.get stage 1
// CAUSAL-SAME: 20 tile.dot stage 1

// d128 attention: the solver's interval is recorded; which schedule is kept depends on
// the model (the heuristic's under the table; its own two-stage loop under the H100
// calibration, TAWAC_TARGET_MODEL=shipped).
// ATTN: #tawac.schedule<planner = solver, solve = interval {{[0-9]+}} optimal bound {{[0-9]+}}{{( kept heuristic)?}}, roles = [producer wg 1 regs 24, consumer wg 2 regs 240], arefs = [q: depth 2, k: depth {{[2-6]}}, v: depth {{[2-6]}}]

// For the GEMM, the interval of two lockstep warp groups awaiting their MMAs in the body
// (its cycles depend on the model in force); the heuristic's 3-slot ring kept.
// GEMM: #tawac.schedule<planner = solver, solve = interval {{[0-9]+}} optimal bound {{[0-9]+}} kept heuristic, roles = [producer wg 1 regs 24, consumer wg 2 regs 240], arefs = [a_b: depth 3], loops = [consumer 0: [0 aref.get, 1 tile.dot, wait 1 pending 0, 2 aref.consumed]], tiles = grouped 8
