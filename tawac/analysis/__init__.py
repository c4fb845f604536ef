"""Analyses of the IR, in one place: what the planner, the passes, the backend and
`tawac explain` read about a kernel. Each module answers one kind of question and
decides nothing:

- `loops`: main loops, scheduled ops, index slices, what a two-stage split carries;
- `scalars`: the ops of scalar index math;
- `mma`: MMA operands and dots, accumulation chains, accumulator registers, row splits;
- `arefs`: arefs written in loops or once per tile, payloads read by consumer math;
- `program_ids`: what follows which program id (clusters, the persistent tile order);
- `grid`: the grid of programs the stores imply;
- `stores`: the stores that may be staged through shared memory for TMA;
- `args`: the kernel arguments read and written;
- `kinds`: what kind of work a consumer main loop does (gemm, attention, ...);
- `atomics`: which ops a program's scalar atomics (a lock's acquire) come before.

Analyses sit above the dialects and below the schedule (planners, cost model), the
passes and the backend (docs/design.md, "Layers").
"""
