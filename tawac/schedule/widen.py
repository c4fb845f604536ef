"""How many programs of grid axis x one tile takes (the `widen` pass applies it).

A tile of one m64 block of rows gets one consumer warp group, and a single warp group
issuing the MMAs leaves the tensor core idle whenever it waits (measured on the corpus:
64-row GEMM and attention tiles run 1.35-1.5x slower than the same program at 128 rows,
docs/perf.md).  Two neighbouring programs as one 128-row tile get two warp groups with
the same registers per thread each, and the operands they share (B, K, V) are loaded
once.  Wider tiles need more shared memory: the rule keeps the programs apart where the
widened tiles, loaded once each, would take more than half of it (room for a ring of two
slots). A kernel that streams 2-d tiles through loops without MMAs (a row softmax, a norm:
`tawac.analysis.kinds.streams_tiles`) is not widened: its warp groups gain nothing from
sharing a tile, and the halved program count leaves SMs idle at a few thousand rows
(measured on the H100, docs/perf/2026-12-06.md, "Row kernels: ring depth and widening").
"""

from __future__ import annotations

MAX_PROGRAMS = 4
M64 = 64  # wgmma's M: the rows one consumer warp group issues


def programs_per_tile(
    rows: int, widened_bytes: int, smem_budget: int, streams: bool = False
) -> int:
    """Programs of x per tile for a kernel whose tiles have `rows` rows and whose loads,
    with the rows doubled, take `widened_bytes` of shared memory (`streams`: it streams
    2-d tiles through loops without MMAs)."""
    if streams or rows != M64:
        return 1
    if 2 * widened_bytes > smem_budget:
        return 1
    return 2
