"""The cost of one tile-level op of a warp-specialized loop body, from the target model.

`op_cost(op, warp_groups)` prices the ops of a producer or consumer loop body at the aref
level (after `warp-specialize`, before `lower-aref`) in cycles, with the cost-table rows of
`tawac/target/hopper.py` (measured on an H100, docs/hopper-measured.md). The answer is an
`OpCost`: the unit the op runs on, how long the issuing warp group is busy issuing it, how
long the unit is busy, and when its result is usable. `tawac.schedule.simulate` runs a
loop's steps on these costs (`tawac.tools.timeline` draws the run as a Gantt chart).

The model, per op (W = `warp_groups` consumer warp groups; a tile's rows are split evenly
over them, so a warp group works on `rows / W` rows):

- `tile.dot` (tensor core): one warp group issues `ceil(rows_wg / 64) x (K / k)` wgmma
  m64nNk (k from the MMA atom, 16 for bf16/f16; N above 256 is split into equal chunks of at
  most 256). The tensor core takes one instruction every `N / 2` cycles (the table's
  throughput: 4096 flops/cycle/SM) and is shared by every warp group of the SM: occupancy is
  `instructions x interval`. Latency of the chain on one accumulator: the last instruction
  issues `(instructions - 1) x interval` after the first and completes the table's latency
  for its N later (linear interpolation / extrapolation between the measured N = 64, 128,
  256; it is exactly `54 + N / 2`). Issue: `ASYNC_ISSUE` cycles per instruction (wgmma is
  asynchronous; the warp group goes on).
- `math.exp2`, `math.exp` (MUFU, `ex2.approx`: 16 per cycle per SM; `math.exp` is a multiply
  by log2(e) and an ex2): the warp group issues its share itself, so issue = occupancy =
  `elements_wg / 16`; latency = that + 17. `math.erf` and `math.tanh` are priced as the
  sequences they lower to (`_MUFU_FMA`: an ex2 and an rcp on the MUFU, the rest on the
  FMA pipe; not measured as a whole).
- elementwise `arith` ops on tiles (`arith.addf`, `mulf`, `subf`, `truncf`, integer ops,
  ...), `tile.select`, `tile.cmpi`, `tile.iota`, `tile.splat` (FMA/ALU pipe at the fma row's
  128 per cycle per SM; `mul.f32` measures the same, and `cvt.rn.bf16x2.f32` 64
  instructions of two elements each; the integer rows are not measured, so they are
  assumed to run at the same rate): issue = occupancy = `elements_wg / 128`; latency =
  that + 4. `arith.maximumf` / `minimumf` (FMNMX) run at the `max.f32` row's 64 per cycle
  (measured: half the FMA rate). `arith.divf` is an rcp (MUFU) and a multiply: priced as
  the MUFU part plus the FMA part, on the MUFU.
- `tile.reduce` along the rows (FMA work, then 2 shuffle rounds): each thread first folds
  its elements of a row (`elements_wg / 128` cycles on the FMA pipe), then the 4 threads of a
  quad that share a row combine their partials with 2 `shfl.bfly` rounds. Per round every
  warp group shuffles `4 x rows_wg` lanes at 32 lanes per cycle and adds one FMA-pipe op.
  `parts` lists the two pieces (fma, then shfl); the aggregate is on the FMA pipe. A max
  reduction folds at the `max.f32` row's rate.
- `tile.broadcast` of a row vector: free (in the wgmma accumulator layout each thread
  already holds its rows' values: no instruction), unit "alu".
- a 1-d row vector (`tensor<128xf32>`) is held by the 4 threads of the quad that owns each
  row, so elementwise work on it counts `4 x rows_wg` thread-ops.
- `scf.if` with tensor results: the cost of its then-branch, its ops in order (`parts`);
  issue and occupancy add up, and the latency is that of the ops as a dependent chain (the sum
  of their latencies), on the unit with the most occupancy; `target.if_taken` of it (1.0:
  as if taken on every iteration; a ragged tail's mask is taken on one iteration at most,
  a causal diagonal's on a few per tile, but the fitted figures were fitted with 1.0).
- `aref.get` (wait on the full barrier): nothing to issue; the time it takes is the stall
  the schedule shows (the TMA's measured latency already ends when an mbarrier wait passes).
  A payload tile the consumer reads into registers (no `tile.dot` takes it as an operand:
  a score bias, an epilogue's matrix) adds its `ld.shared` words, on the MIO pipe that
  shuffles use too (32 lanes per cycle per SM; latency the `ld.shared.u32` row's).
- `aref.consumed` (arrive on the empty barrier): nothing to issue; the producer's wait passes
  one mbarrier handoff (72 cycles) later: latency 72.
- `aref.put` (TMA): payload bytes `B`; latency = the L2-hit figure (479 cycles for 16 KiB)
  scaled by `B / 16 KiB` (measured with one copy in flight). Copies pipeline in the TMA
  engine: the unit is busy while they are issued, `ASYNC_ISSUE` per tile (the
  engine's bandwidth with many copies in flight is not measured yet; taking the latency
  as occupancy made a GEMM, which runs tensor-bound at ~0.95-1.0x cuBLAS, look TMA-bound),
  plus, for the bytes of tiles no other program reads (`read_by_one_program`: they come
  from DRAM, not L2), those bytes at the SM's share of DRAM bandwidth (the `dram` row,
  11.5 B/cycle): a loop streaming an operand is bound by DRAM (measured on the corpus:
  `chained_gemm`, `row_softmax` at 3.0-3.2 TB/s, docs/perf.md). Where the grid has fewer
  programs than SMs at the problem's sizes, each gets SMs / programs times that share, up
  to the `bytes to one SM` row (31 B/cycle, measured: a decode step on 32 SMs). A tile
  whose coordinates come from memory (`tile.load_index`: an expert's weights, a page of a
  KV cache) is shared where the index tensor's entries outnumber what they index
  (`read_by_one_program`).
- `tile.load` in a producer loop feeds an `aref.put` (one TMA copy): its cost is in the put.
- `tile.store` in a consumer loop (a kernel without MMAs writing each column block, a
  residual sum written beside its use): its bytes at the SM's share of DRAM bandwidth,
  on the "tma" unit as an `aref.put`'s reads (reads and writes share the DRAM); issue
  `ASYNC_ISSUE` (the store's instructions are not modelled one by one); latency the same
  as the occupancy (nothing in the loop waits for it).
- `hopper.wgmma_wait`: a wait on the tensor core's result: nothing to issue (the schedule's
  dependence on the dot shows the time).
- scalar ops (index arithmetic, comparisons, constants, `scf.yield`): "alu", cost 0.

Everything is a float number of cycles and deterministic. Ops outside this list raise
`ValueError`.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, replace

from xdsl.dialects.builtin import TensorType
from xdsl.ir import Attribute, Operation

from tawac.analysis.grid import Problem
from tawac.analysis.mma import is_mma_operand
from tawac.analysis.program_ids import read_by_one_program
from tawac.dialects import hopper, tile
from tawac.target import HOPPER, Target

UNITS = HOPPER.units

# Cycles the issuing warp group spends on one asynchronous instruction (a wgmma, a TMA copy
# with its expect_tx) before it goes on: not measured, a nominal figure so that async ops
# show as thin bars in a timeline.
ASYNC_ISSUE = 2.0

# Threads of a quad that share one row in the wgmma accumulator layout (m64nNk16: a thread
# holds 2 rows of each 16-row slab, its quad covers the row's columns).
QUAD = 4

_WGMMA_ROW = re.compile(r"wgmma m64n(\d+)k16 bf16")


@dataclass(frozen=True)
class OpCost:
    """The cost of one op for one issuing warp group, in cycles.

    `issue`: cycles the warp group is busy issuing it; `occupancy`: cycles its unit is busy
    (units are per SM and shared by every warp group); `latency`: cycles from the start of
    issue until the result is usable; `source`: the cost-table rows behind the numbers.
    `parts`: for an op that spans units (`tile.reduce`, `scf.if`), its pieces in order."""

    unit: str
    issue: float
    occupancy: float
    latency: float
    source: str
    parts: tuple[OpCost, ...] = ()

    def __post_init__(self) -> None:
        if self.unit not in UNITS:
            raise ValueError(f"unknown unit {self.unit!r} (one of {', '.join(UNITS)})")


def _free(unit: str, source: str) -> OpCost:
    return OpCost(unit, 0.0, 0.0, 0.0, source)


def _tensor(t: Attribute) -> TensorType | None:
    return t if isinstance(t, TensorType) else None


def _shape_of(op: Operation) -> TensorType | None:
    """The tile an op works on: its first tensor result, else its first tensor operand."""
    for v in (*op.results, *op.operands):
        t = _tensor(v.type)
        if t is not None:
            return t
    return None


def thread_ops(t: TensorType, warp_groups: int) -> float:
    """Thread-level operations one warp group spends on elementwise work over tile `t`:
    its share of the elements (rows split over the warp groups); a 1-d row vector counts
    once per thread of the quad holding each row."""
    shape = t.get_shape()
    elements = math.prod(shape)
    if len(shape) == 1:
        elements *= QUAD
    return elements / warp_groups


def wgmma_timing(n: int, target: Target = HOPPER) -> tuple[float, float, str]:
    """(issue interval, latency, source) of one wgmma m64nNk16 bf16 on the tensor core:
    the table's rows, linearly interpolated in N (extrapolated outside 64..256)."""
    rows = []
    for c in target.costs:
        m = _WGMMA_ROW.fullmatch(c.op)
        if m and c.latency is not None and c.throughput:
            rows.append((int(m.group(1)), 1.0 / c.throughput, float(c.latency), c.op))
    rows.sort()
    if len(rows) < 2:
        raise ValueError(f"the {target.name} cost table has fewer than 2 wgmma rows")
    exact = next((r for r in rows if r[0] == n), None)
    if exact is not None:
        return exact[1], exact[2], f"'{exact[3]}'"
    lo, hi = (rows[0], rows[1]) if n < rows[0][0] else (rows[-2], rows[-1])
    for a, b in zip(rows, rows[1:], strict=False):
        if a[0] <= n <= b[0]:
            lo, hi = a, b
            break
    f = (n - lo[0]) / (hi[0] - lo[0])
    interval = lo[1] + f * (hi[1] - lo[1])
    latency = lo[2] + f * (hi[2] - lo[2])
    return interval, latency, f"'{lo[3]}' and '{hi[3]}', linear in N"


def _mma_kind(t) -> str:
    """The MMA atom name of an operand element type (bf16, f16, e4m3, e5m2)."""
    elem = type(t).__name__.lower()
    if "float8e4m3" in elem:
        return "e4m3"
    if "float8e5m2" in elem:
        return "e5m2"
    return "bf16" if "bfloat16" in elem else "f16"


def _dot(op: Operation, warp_groups: int, target: Target) -> OpCost:
    from tawac.dialects import tile

    assert isinstance(op, tile.DotOp)
    m, n, k = op.mnk()
    lt = _tensor(op.lhs.type)
    assert lt is not None
    rt = _tensor(op.rhs.type)
    assert rt is not None
    kind, rkind = _mma_kind(lt.element_type), _mma_kind(rt.element_type)
    atom = target.mma_atom(kind, rkind, "f32")
    atom_k = atom.k if atom is not None else 16
    rows_wg = m / warp_groups
    chunks = math.ceil(n / target.mma_max_n)
    n_inst = n / chunks
    count = math.ceil(rows_wg / target.mma_m) * chunks * math.ceil(k / atom_k)
    interval, latency, source = wgmma_timing(round(n_inst), target)
    group = target.mma_group_cycles
    if group:
        source += f"; + {group:g} per group (fitted: {target.calibration})"
    return OpCost(
        "tensor",
        issue=count * ASYNC_ISSUE,
        occupancy=count * interval + group,
        latency=(count - 1) * interval + latency + group,
        source=f"{count} x wgmma m64n{n_inst:g}k{atom_k}: {source}",
    )


def _rate_op(unit: str, row: str, ops: float, target: Target, what: str) -> OpCost:
    """`ops` thread-level ops issued by the warp group on a pipe of the table's rate."""
    c = target.cost(row)
    assert c.throughput and c.latency is not None
    busy = ops / c.throughput
    issue = max(busy, ops / target.wg_issue_rate) if target.wg_issue_rate else busy
    source = f"{what}: '{row}' ({ops:g} ops)"
    if issue > busy:
        source += f", issued at {target.wg_issue_rate:g} per cycle (fitted)"
    return OpCost(unit, issue, busy, issue + c.latency, source)


class NoCostModel(ValueError):
    """An op on tiles the model has no price for (nor, then, the backend a lowering)."""


#: The math ops lowered to a sequence (`tawac.backend_ptx.lowering.scalar`): per element,
#: its ex2 and rcp (MUFU) and its FMA-pipe instructions (erf: |x|, the fma chain of its
#: polynomial, the sign; tanh: the scale, the add, the final fma).
_MUFU_FMA: dict[str, tuple[int, int, int]] = {
    "math.erf": (1, 1, 19),
    "math.tanh": (1, 1, 3),
}


def _fma(ops: float, target: Target, what: str) -> OpCost:
    return _rate_op("fma", "fma.rn.f32", ops, target, what)


def _mufu(ops: float, target: Target, what: str, row: str = "ex2.approx.ftz.f32") -> OpCost:
    return _rate_op("mufu", row, ops, target, what)


def _combine(parts: list[OpCost], what: str) -> OpCost:
    """Ops one after another, each waiting for the previous result."""
    if not parts:
        return _free("alu", f"{what}: no work")
    occupancy: dict[str, float] = {}
    for p in parts:
        occupancy[p.unit] = occupancy.get(p.unit, 0.0) + p.occupancy
    unit = max(occupancy, key=lambda u: (occupancy[u], -UNITS.index(u)))
    return OpCost(
        unit,
        issue=sum(p.issue for p in parts),
        occupancy=occupancy[unit],
        latency=sum(p.latency for p in parts),
        source=f"{what}: " + "; ".join(p.source for p in parts),
        parts=tuple(parts),
    )


def _reduce(op: Operation, warp_groups: int, target: Target) -> OpCost:
    src = _tensor(op.operands[0].type)
    res = _tensor(op.results[0].type)
    assert src is not None and res is not None
    assert isinstance(op, tile.ReduceOp)
    row = _ROWS.get(op.kind.data, "fma.rn.f32")
    fold = _rate_op("fma", row, thread_ops(src, warp_groups), target, "fold in-thread")
    rows_wg = math.prod(res.get_shape()) / warp_groups
    shfl = target.cost("shfl.sync.bfly.b32")
    fma = target.cost("fma.rn.f32")
    assert shfl.throughput and shfl.latency is not None
    assert fma.throughput and fma.latency is not None
    rounds = 2  # log2(QUAD)
    lanes = QUAD * rows_wg
    per_round = lanes / shfl.throughput + lanes / fma.throughput
    shuffle = OpCost(
        "shfl",
        issue=rounds * per_round,
        occupancy=rounds * lanes / shfl.throughput,
        latency=rounds * (per_round + shfl.latency + fma.latency),
        source=f"{rounds} rounds of '{shfl.op}' + '{fma.op}' ({lanes:g} lanes each)",
    )
    whole = _combine([fold, shuffle], "tile.reduce")
    return OpCost("fma", whole.issue, fold.occupancy, whole.latency, whole.source, whole.parts)


def _get(op: Operation, warp_groups: int, target: Target) -> OpCost:
    """The wait on a full slot (fitted, else free: the schedule shows its stall), then the
    loads of the payload tiles the consumer reads into registers."""
    c = target.get_cycles
    what = f"a full slot's try_wait (fitted: {target.calibration})"
    wait = OpCost("sync", c, 0.0, c, what) if c else _free("sync", "aref.get: a wait")
    read = _read_payload(op, warp_groups, target)
    if read is None:
        return wait
    return _combine([wait, read] if c else [read], "aref.get")


def _read_payload(op: Operation, warp_groups: int, target: Target) -> OpCost | None:
    """The consumer's loads of the payload tiles it reads into registers (a use that is
    no `tile.dot`'s A or B operand: an epilogue's second matrix, a score bias, as
    `tawac.analysis.arefs.read_by_math`): 32-bit `ld.shared` on the MIO pipe that
    shuffles use too (32 lanes per cycle per SM)."""
    words = sum(
        _tma_bytes(t) / warp_groups / 4
        for v in op.results
        if (t := _tensor(v.type)) is not None and any(not is_mma_operand(u) for u in v.uses)
    )
    if not words:
        return None
    shfl = target.cost("shfl.sync.bfly.b32")
    lds = target.cost("ld.shared.u32")
    assert shfl.throughput and lds.latency is not None
    busy = words / shfl.throughput
    return OpCost(
        "shfl", busy, busy, busy + lds.latency, f"ld.shared of {words:g} words, as shfl lanes"
    )


def _tma_bytes(t: TensorType) -> int:
    """The bytes a copy of tile `t` delivers, as lower-aref's expect_tx counts them."""
    return hopper.smem_ring_type(t, 1).tile_type.tma_bytes


def _streamed(v, problem: Problem | None) -> bool:
    """Whether the payload value comes from a `tile.load` no other program repeats (at
    the problem's sizes, where given)."""
    return isinstance(v.owner, tile.LoadOp) and read_by_one_program(v.owner, problem)


def _dram_share(target: Target, programs: int | None) -> tuple[float, str]:
    """The DRAM bytes per cycle one SM's copies get: its share of the `bytes` row, more
    where fewer programs than SMs run (the grid of `programs` at the problem's sizes),
    up to the `bytes to one SM` row."""
    dram = target.cost("bytes")
    assert dram.unit == "dram" and dram.throughput is not None
    rate, what = dram.throughput, f"at the SM's share, {dram.throughput:g} B/cycle"
    if programs is None or programs >= target.sm_count:
        return rate, what
    one = target.cost("bytes to one SM")
    assert one.throughput is not None
    rate = min(rate * target.sm_count / max(programs, 1), one.throughput)
    return rate, f"{programs} programs on {target.sm_count} SMs: {rate:.4g} B/cycle each"


def _put(op: Operation, target: Target, problem: Problem | None) -> OpCost:
    payload = [(v, t) for v in op.operands if (t := _tensor(v.type)) is not None]
    total = sum(_tma_bytes(t) for _, t in payload)
    streamed = sum(_tma_bytes(t) for v, t in payload if _streamed(v, problem))
    row = target.cost("cp.async.bulk.tensor 16 KiB from L2")
    assert row.latency is not None
    transfer = row.latency * total / 16384
    if target.tma_fixed_cycles or target.tma_bytes_per_cycle:
        per_byte = 1 / target.tma_bytes_per_cycle if target.tma_bytes_per_cycle else 0.0
        transfer = target.tma_fixed_cycles + total * per_byte
    tiles = f"{len(payload)} tile" + ("s" if len(payload) > 1 else "")
    issue = len(payload) * ASYNC_ISSUE
    source = f"'{row.op}' x {total} B / 16 KiB ({tiles}; copies pipeline"
    if not streamed:
        return OpCost("tma", issue, issue, transfer, source + ", L2 bandwidth not modelled)")
    rate, what = _dram_share(target, problem.programs if problem is not None else None)
    return OpCost(
        "tma",
        issue=issue,
        occupancy=issue + streamed / rate,
        latency=transfer,
        source=source + f"); {streamed} B read by this program only: from DRAM {what}",
    )


def _store(op: Operation, target: Target, problem: Problem | None) -> OpCost:
    """A tile written to global memory from a consumer loop (module docstring)."""
    t = _tensor(op.operands[0].type)
    if t is None:
        raise NoCostModel("no cost model for 'tile.store' of a scalar")
    nbytes = math.prod(t.get_shape()) * t.element_type.bitwidth // 8  # type: ignore[attr-defined]
    rate, what = _dram_share(target, problem.programs if problem is not None else None)
    busy = ASYNC_ISSUE + nbytes / rate
    return OpCost("tma", ASYNC_ISSUE, busy, busy, f"tile.store: {nbytes} B to DRAM {what}")


_FMA_TILE_OPS = ("tile.select", "tile.cmpi", "tile.iota", "tile.splat")
#: FMA-pipe ops (and `tile.reduce` kinds) priced by a cost-table row of their own: max
#: and min run at half the FMA rate (FMNMX, measured).
_ROWS = {
    "max": "max.f32",
    "min": "max.f32",
    "arith.maximumf": "max.f32",
    "arith.minimumf": "max.f32",
    "arith.maxnumf": "max.f32",
    "arith.minnumf": "max.f32",
}
_FREE_SYNC = ("hopper.wgmma_wait",)


def op_cost(
    op: Operation,
    warp_groups: int = 1,
    target: Target = HOPPER,
    problem: Problem | None = None,
) -> OpCost:
    """The cost of `op` for one of `warp_groups` warp groups that split its tile's rows
    (the module docstring gives the model, op by op), at the grid of `problem` where a
    problem's sizes are known (`tawac.analysis.grid.problem_at`)."""
    if warp_groups < 1:
        raise ValueError(f"warp_groups must be at least 1, got {warp_groups}")
    name = op.name
    t = _shape_of(op)
    if name == "tile.dot":
        return _dot(op, warp_groups, target)
    if name == "aref.put":
        return _put(op, target, problem)
    if name == "aref.consumed":
        c = target.cost("handoff between warps")
        assert c.latency is not None
        return OpCost("sync", 0.0, 0.0, float(c.latency), f"arrive: '{c.op}'")
    if name == "aref.get":
        return _get(op, warp_groups, target)
    if name in _FREE_SYNC:
        return _free("sync", f"{name}: a wait (the schedule shows its stall)")
    if name == "scf.yield":
        return _free("alu", "scf.yield: passes registers on")
    if name == "tile.load":
        return _free("alu", "tile.load: its TMA copy is priced in the aref.put it feeds")
    if name == "tile.store":
        return _store(op, target, problem)
    if name == "tile.broadcast":
        return _free("alu", "tile.broadcast: register reuse in the accumulator layout")
    if name == "tile.reduce":
        return _reduce(op, warp_groups, target)
    if name == "scf.if":
        if t is None or not any(_tensor(r.type) for r in op.results):
            return _free("alu", "scf.if without tile results")
        block = op.regions[0].block
        parts = [op_cost(o, warp_groups, target, problem) for o in block.ops]
        share = target.if_taken
        if share != 1.0:
            parts = [
                replace(
                    p, issue=p.issue * share, occupancy=p.occupancy * share,
                    latency=p.latency * share, parts=(),
                )
                for p in parts
            ]  # fmt: skip
        return _combine([p for p in parts if p.issue or p.latency], "scf.if then-branch")
    if t is None:
        return _free("alu", f"{name}: scalar")
    ops = thread_ops(t, warp_groups)
    if name == "math.log2":
        return _mufu(ops, target, name)
    if name in ("math.exp2", "math.exp"):
        cost = _mufu(ops, target, name)
        if name == "math.exp":
            return _combine([_fma(ops, target, "x log2(e)"), cost], name)
        return cost
    if name == "arith.divf":
        return _combine(
            [_mufu(ops, target, "rcp", "rcp.approx.ftz.f32"), _fma(ops, target, "mul")], name
        )
    if name in _MUFU_FMA:
        ex2, rcp, fma = _MUFU_FMA[name]
        return _combine(
            [
                _mufu(rcp * ops, target, "rcp", "rcp.approx.ftz.f32"),
                _fma(fma * ops, target, "its FMA-pipe instructions"),
                _mufu(ex2 * ops, target, "ex2"),
            ],
            name,
        )
    if name == "arith.constant":
        return _free("alu", "arith.constant: materialised before the loop")
    if name in _ROWS:
        return _rate_op("fma", _ROWS[name], ops, target, name)
    if name.startswith("arith.") or name in _FMA_TILE_OPS:
        return _fma(ops, target, name)
    raise NoCostModel(f"no cost model for '{name}' on tiles")
