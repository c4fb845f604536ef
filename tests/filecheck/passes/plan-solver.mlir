// The solver planner (Twill) on the attention and GEMM examples: the schedule it
// records is the decision; FileCheck checks its structure, not every number.
// RUN: tawac opt %S/../../../examples/attention.mlir -p 'warp-specialize,plan{planner=solver}' | filecheck %s --check-prefix=ATTN
// RUN: tawac opt %S/../../../examples/attention.mlir -p 'warp-specialize,plan' --schedule solver | filecheck %s --check-prefix=ATTN
// RUN: tawac opt %S/../../../examples/gemm.mlir -p 'warp-specialize,plan{planner=solver}' | filecheck %s --check-prefix=GEMM

// For the attention, an optimal interval at the tensor core's bound (2048 cycles, rounded up to
// the solver's unit), the second consumer warp group half an interval behind the first
// (its softmax under the first one's MMAs), and two stages: the S MMA of iteration i
// (stage 0) and the P V MMA of iteration i - 1 (stage 1) in one body, V's get with it.
// ATTN: #tawac.schedule<planner = solver, solve = interval 20{{[4-9][0-9]}} optimal bound 20{{[4-9][0-9]}} phases [0, 10{{[0-9][0-9]}}], roles = [producer wg 1 regs 24, consumer wg 2 regs 240]
// ATTN-SAME: loops = [consumer 0: [
// ATTN-SAME: 19 aref.get stage 1
// ATTN-SAME: 1 tile.dot,
// ATTN-SAME: 20 tile.dot stage 1
// ATTN-SAME: 21 aref.consumed stage 1]]

// For the GEMM, a producer feeding a ring of three slots (as many 48 KiB slots as fit beside
// the epilogue's staging tile), the consumer loop left in body order (no `loops`).
// GEMM: #tawac.schedule<planner = solver, solve = interval 10{{[2-7][0-9]}} optimal bound 10{{[2-7][0-9]}} phases [0, 5{{[0-9][0-9]}}], roles = [producer wg 1 regs 24, consumer wg 2 regs 240], arefs = [depth 3], tiles = grouped 8
