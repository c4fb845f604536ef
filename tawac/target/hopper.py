"""NVIDIA Hopper (sm_90a) as data: the facts every pass reads instead of a literal.

Sources: the PTX ISA 8.x/9.x (sections cited per field), the CUDA C Programming Guide's
compute-capability 9.0 table, and measurements on the lent H100
(`docs/hopper-measured.md`, made by `scripts/microbench_hopper.py`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from tawac.support.diagnostics import CompileError
from tawac.target.calibration import calibrated


@dataclass(frozen=True)
class MmaAtom:
    """One `wgmma.mma_async` family, m64nNkK (PTX ISA 9.7.15.5): A and B element types,
    the accumulator type, K per instruction, the step of N (8..256) and whether shared
    operands may be MN-major (the transpose flags exist for 16-bit types only; fp8 and
    tf32 operands must be K-major)."""

    a: str
    b: str
    acc: str
    k: int
    n_step: int = 8
    mn_major: bool = False

    def shape(self, n: int) -> str:
        return f"m64n{n}k{self.k}"


def _fp8_atoms() -> tuple[MmaAtom, ...]:
    kinds = ("e4m3", "e5m2")
    return tuple(MmaAtom(a, b, acc, 32) for a in kinds for b in kinds for acc in ("f32", "f16"))


MMA_ATOMS: tuple[MmaAtom, ...] = (
    MmaAtom("bf16", "bf16", "f32", 16, mn_major=True),
    MmaAtom("f16", "f16", "f32", 16, mn_major=True),
    MmaAtom("f16", "f16", "f16", 16, mn_major=True),
    MmaAtom("tf32", "tf32", "f32", 8),
    *_fp8_atoms(),
)


@dataclass(frozen=True)
class Cost:
    """Latency (cycles) and throughput (per cycle per SM) of one op on one unit, with
    where the number comes from."""

    unit: str
    op: str
    latency: float | None
    throughput: float | None
    source: str


# The cost model's table: latency in cycles, throughput per cycle per SM. "measured" rows
# come from scripts/microbench_hopper.py on the lent H100 SXM, 2026-11-23
# (docs/hopper-measured.md: loop overhead included, SM clock 1.74-1.98 GHz).
_MEASURED = "measured, H100 (docs/hopper-measured.md)"
COSTS: tuple[Cost, ...] = (
    Cost("tensor", "wgmma m64n256k16 bf16", 182, 1 / 128, _MEASURED),
    Cost("tensor", "wgmma m64n128k16 bf16", 118, 1 / 64, _MEASURED),
    Cost("tensor", "wgmma m64n64k16 bf16", 86, 1 / 32, _MEASURED),
    Cost("mufu", "ex2.approx.ftz.f32", 17, 16, _MEASURED),
    Cost("mufu", "rcp.approx.ftz.f32", 19, 16, _MEASURED + "; throughput: CUDA guide, cc 9.0"),
    Cost("fma", "fma.rn.f32", 4, 128, _MEASURED + " (4.09, 125 with loop overhead)"),
    Cost("fma", "max.f32", 4, 64, _MEASURED + " (63.4: half the FMA rate, 2026-11-26)"),
    Cost("shfl", "shfl.sync.bfly.b32", 24, 32, _MEASURED + " (lanes per cycle)"),
    Cost("smem", "ld.shared.u32", 23, None, _MEASURED),
    Cost("mbarrier", "arrive + try_wait", 70, None, _MEASURED),
    Cost("mbarrier", "handoff between warps", 72, None, _MEASURED + " (144 per round trip)"),
    Cost("tma", "cp.async.bulk.tensor 16 KiB from DRAM", 1290, None, _MEASURED),
    Cost("tma", "cp.async.bulk.tensor 16 KiB from L2", 479, None, _MEASURED),
    Cost("dram", "bytes", None, 11.5, _MEASURED + ": 3.0 TB/s copy, 132 SMs, 1.98 GHz"),
    Cost(
        "dram",
        "bytes to one SM",
        None,
        31.0,
        "measured, H100: the most one SM's TMA stream reads (decode attention on 32 of 132 "
        "SMs: 64 KiB per 2109-cycle iteration, docs/perf.md 2026-11-26)",
    ),
)


@dataclass(frozen=True)
class Target:
    """One GPU target's facts."""

    name: str = "sm_90a"
    ptx_version: str = "8.0"
    #: The PTX ISA version `red.global.add`'s vector forms (`.v2.f32`, `.v4.f32`) need.
    vector_red_ptx_version: str = "8.1"
    sm_count: int = 132  # H100 SXM and H200 (the runtime asks the device at launch)
    smem_per_block: int = 232448  # opt-in dynamic shared memory of one CTA: 227 KiB
    smem_per_sm: int = 233472  # shared memory of one SM: 228 KiB
    smem_reserved_per_cta: int = 1024  # what the system takes of it for each CTA
    max_ctas_per_sm: int = 8  # the most CTAs of 256 threads (2048 threads a SM)
    register_file: int = 65536  # 32-bit registers per SM
    max_registers_per_thread: int = 255
    warp_size: int = 32
    warp_group_size: int = 128  # 4 warps: the unit of wgmma and setmaxnreg
    max_threads_per_block: int = 1024
    named_barriers: int = 16  # bar.sync ids 0..15; 0 is the CTA barrier (PTX ISA 9.7.13.1)
    max_cluster_size: int = 8  # portable cluster size
    setmaxnreg_min: int = 24  # setmaxnreg: 24..256, a multiple of 8 (PTX ISA 9.7.17.1)
    setmaxnreg_max: int = 256
    setmaxnreg_step: int = 8
    max_consumer_warp_groups: int = 3  # with one producer: 4 x 128 threads
    mma_m: int = 64  # rows of one wgmma (m64)
    mma_max_n: int = 256
    mma_max_pending: int = 7  # wgmma.wait_group N: N in 0..7
    swizzle_bytes: int = 128  # TMA's widest swizzle: rows of 128 bytes
    swizzle_alignment: int = 1024  # a 128B-swizzled tile starts on 1024 bytes
    tma_max_box: int = 256  # elements per box dimension
    #: The unit of L2 <-> SM traffic: a 32-byte sector (a power of two).
    l2_sector_bytes: int = 32
    #: The L2 promotion of a tensor map (cuTensorMapEncodeTiled's l2Promotion, the
    #: `CU_TENSOR_MAP_L2_PROMOTION_*` name) whose address and row strides are whole
    #: sectors, and of one whose are not (rows of 16 but not 32 bytes, such as K = 3000
    #: in bf16). Measured (docs/perf.md, "L2 promotion", H100, through the tuning table):
    #: misaligned rows, 256B / 128B / none: 5000^3 497 / 515 / 471 us, 3000^3 123 / 113 /
    #: 115, 4000x6000x3000 246 / 230 / 233, 4096x6144x3000 245 / 252 / 251; aligned rows
    #: run the same under 256B and 128B (4096^3 197 / 199, none 206; decode GEMMs and
    #: prefill attention within the noise).
    l2_promotion_aligned: str = "L2_256B"
    l2_promotion_misaligned: str = "NONE"
    mma_atoms: tuple[MmaAtom, ...] = MMA_ATOMS
    costs: tuple[Cost, ...] = COSTS
    #: Thread block clusters over program ids (x, y) the passes apply: one CTA, or two
    #: neighbours along x or y (PTX ISA 9.7.9.25's multicast to both).
    cluster_shapes: tuple[tuple[int, int], ...] = ((1, 1), (2, 1), (1, 2))
    #: The units of an SM the cost model prices ops on and the simulator shares between
    #: warp groups (`contended`: one op at a time per SM; the others: per warp group).
    contended_units: tuple[str, ...] = ("tensor", "tma", "mufu", "fma", "shfl")
    units: tuple[str, ...] = ("tensor", "tma", "mufu", "fma", "shfl", "sync", "alu")
    #: The cost model's measured median error, relative: the median over the corpus's
    #: main loops of |predicted / measured - 1| of the timeline model's steady-state
    #: interval (`benchmarks/bench_corpus.py`). A margin the model predicts between two
    #: schedules below it is within its noise: the `auto` planner then goes by
    #: `planner_preference`. 0.10 until the calibration (docs/design/schedule.md) sets it.
    model_error: float = 0.10
    #: Per kind of consumer main loop, the model's measured error in comparing the two
    #: planners' schedules of one loop: the median over the corpus's programs of that kind
    #: of |(predicted solver / heuristic) / (measured solver / heuristic) - 1|
    #: (`tawac.tools.calibrate.planner_errors`). Where a kind has one, the `auto` planner needs
    #: a margin above it, not `model_error`, before the model decides (`model_error_for`).
    planner_errors: tuple[tuple[str, float], ...] = ()
    #: Per kind of consumer main loop (`tawac.analysis.kinds.KINDS`), the planner whose
    #: schedules measured faster: what the `auto` planner picks when the model's margin is
    #: within `model_error`. Every kind the heuristic's until the corpus is measured under
    #: both planners.
    planner_preference: tuple[tuple[str, str], ...] = (
        ("gemm", "heuristic"),
        ("attention", "heuristic"),
        ("attention-1wg", "heuristic"),
        ("attention-narrow", "heuristic"),
        ("chained", "heuristic"),
        ("elementwise", "heuristic"),
        ("other", "heuristic"),
    )
    #: Figures fitted by `tawac calibrate` to loops traced on a GPU (`calibrated()`;
    #: docs/design/schedule.md, "Calibration"); 0 in the uncalibrated table model.
    #: Tensor-core cycles each warp group's group of wgmmas (one `tile.dot`) costs on
    #: top of its instructions' intervals: the fence, the commit and the hand-over of the
    #: tensor core between warp groups.
    mma_group_cycles: float = 0.0
    #: Cycles a warp group spends in an `aref.get` whose slot is already full (the
    #: mbarrier try_wait and the phase bookkeeping).
    get_cycles: float = 0.0
    #: Thread-level elementwise ops (FMA pipe, MUFU) one warp group issues per cycle: its
    #: own instruction stream's rate, below the pipes' throughput (dependent
    #: instructions, the other warp groups' turns at the issue slots); 0: the pipe's.
    wg_issue_rate: float = 0.0
    #: A TMA copy's arrival under load, `tma_fixed_cycles + bytes / tma_bytes_per_cycle`
    #: cycles after its issue (the queues of a busy memory system, then the SM's share of
    #: L2 bandwidth); 0 and 0: the table's one-copy L2-hit latency scaled by the bytes.
    tma_fixed_cycles: float = 0.0
    tma_bytes_per_cycle: float = 0.0
    #: The share of the issue time of a consumer's MUFU work that ptxas moves between
    #: the wgmma instructions of the MMA issued before it (work that does not need the
    #: MMA's result) during which the tensor core stays with that MMA
    #: (`tawac.schedule.model`). 0: off (an uncalibrated target). The shipped H100
    #: calibration sets 0.3 (its `model` section). Replayed on the H100 corpus, shares
    #: from 0.15 to 0.5 keep every loop within 20% and `auto` at 0.98 of the faster
    #: build on every program; 0.1 leaves the bias attention's solver loop at -20.2%,
    #: and 0.6 or more price that program's two builds closer than the attention
    #: kind's planner error, so `auto` takes the slower (docs/perf.md, 2026-11-27,
    #: third part).
    mma_mufu_hold: float = 0.0
    #: Starts the model gives the consumer warp groups of a main loop whose trip count
    #: changes from tile to tile (`tawac.schedule.model.trips_vary`: a causal key loop),
    #: in iterations of its in-phase interval by which the first warp group enters late:
    #: such a loop with several consumer warp groups is priced at the mean of its
    #: steady-state intervals from these starts. The machine keeps two warp groups in
    #: whatever steady state a loop starts in; the causal kernels' tile boundaries put
    #: them out of phase, what else does is not modelled. (0.0,): in phase only.
    #: The shipped H100 calibration sets (0.0, 1.0): the causal d64 128x64 heuristic
    #: loop, +22% in phase, is then priced within 9% (docs/perf.md, 2026-11-27).
    phase_leads: tuple[float, ...] = (0.0,)
    #: The share of an `scf.if`'s then-branch (a ragged or causal mask) the steady state
    #: is charged per iteration: 1.0 prices it as taken on every iteration.
    if_taken: float = 1.0
    #: The device and date the fitted figures come from ("" when uncalibrated).
    calibration: str = ""

    @property
    def model_key(self) -> str:
        """The cost model's figures as text: part of a compiled kernel's cache key (a
        recalibrated model plans anew)."""
        rows = ",".join(f"{c.op}={c.latency}/{c.throughput}" for c in self.costs)
        key = f"{rows};{self.mma_group_cycles};{self.get_cycles};{self.wg_issue_rate}"
        if self.mma_mufu_hold:
            key += f";hold={self.mma_mufu_hold}"
        if self.phase_leads != (0.0,):
            key += f";leads={self.phase_leads}"
        if self.if_taken != 1.0:
            key += f";if={self.if_taken}"
        if self.tma_fixed_cycles or self.tma_bytes_per_cycle:
            key += f";{self.tma_fixed_cycles};{self.tma_bytes_per_cycle}"
        if self.planner_errors:  # what the auto planner trusts
            key += f";{self.model_error};{self.planner_errors}"
        if self.planner_preference != Target.planner_preference:
            key += f";{self.planner_preference}"
        return key

    @property
    def arch(self) -> str:
        """ptxas's `-arch` flag for this target."""
        return f"-arch={self.name}"

    def mma_atom(self, a: str, b: str, acc: str) -> MmaAtom | None:
        """The wgmma family for these element types, or None."""
        return next((m for m in self.mma_atoms if (m.a, m.b, m.acc) == (a, b, acc)), None)

    def cost(self, op: str) -> Cost:
        """The cost-table row of `op` (e.g. "wgmma m64n256k16 bf16")."""
        found = next((c for c in self.costs if c.op == op), None)
        if found is None:
            raise KeyError(f"no cost for '{op}' in the {self.name} target model")
        return found

    def model_error_for(self, kind: str) -> float:
        """The error a margin between the two planners' schedules of a `kind` loop must
        exceed: the kind's `planner_errors` figure, else `model_error`."""
        return next((e for k, e in self.planner_errors if k == kind), self.model_error)

    def preferred_planner(self, kind: str) -> str:
        """The planner `planner_preference` names for consumer main loops of `kind`."""
        found = next((p for k, p in self.planner_preference if k == kind), None)
        if found is None:
            raise KeyError(f"no planner preference for '{kind}' loops in the {self.name} model")
        return found

    def on_sectors(self, *byte_counts: int) -> bool:
        """Every count (an address, row strides, a row's bytes) is a whole number of L2
        sectors: rows that start on sectors (the L2 promotion's and the tuning tables'
        row-alignment rule)."""
        bits = 0
        for b in byte_counts:
            bits |= b
        return not bits & (self.l2_sector_bytes - 1)

    def smem_per_cta(self, ctas: int = 1) -> int:
        """The dynamic shared memory one CTA may have when `ctas` CTAs share an SM."""
        if ctas <= 1:
            return self.smem_per_block
        return min(self.smem_per_block, self.smem_per_sm // ctas - self.smem_reserved_per_cta)

    def register_cap(self, warp_groups: int, ctas: int = 1) -> int:
        """Registers per thread when `warp_groups` warp groups share the register file
        (`ctas` CTAs of them on one SM), rounded down to setmaxnreg's step."""
        share = self.register_file // (self.warp_group_size * warp_groups * ctas)
        return (
            min(self.max_registers_per_thread, share)
            // self.setmaxnreg_step
            * (self.setmaxnreg_step)
        )


#: The target every pass reads: the table above, with the fitted figures of the
#: calibration file `$TAWAC_TARGET_MODEL` names (tawac/target/calibration.py).
HOPPER = calibrated(Target())


@contextlib.contextmanager
def overridden(fields: Mapping[str, Any]) -> Iterator[Target]:
    """`HOPPER` with `fields` (`Target` field values) for the block, then as it was: the
    planners and the cost model read that shared target by default (a replay of other
    model figures, a test that plans under a given model)."""
    kept = {k: getattr(HOPPER, k) for k in fields}
    for k, v in fields.items():
        object.__setattr__(HOPPER, k, v)
    try:
        yield HOPPER
    finally:
        for k, v in kept.items():
            object.__setattr__(HOPPER, k, v)


@dataclass
class NamedBarriers:
    """The named barriers (`bar.sync id, threads`) of one kernel, by purpose: each
    purpose gets a range of ids once, at its preferred place when free; two purposes
    never share an id and id 0 (the CTA barrier) is never handed out."""

    target: Target = HOPPER
    assigned: dict[str, range] = field(default_factory=dict)

    def get(self, purpose: str, count: int = 1, preferred: int | None = None) -> int:
        """The first id of `purpose`'s `count` barriers."""
        have = self.assigned.get(purpose)
        if have is not None:
            if len(have) < count:
                raise CompileError(f"named barriers of '{purpose}' asked with two sizes")
            return have.start
        starts = [preferred] if preferred is not None else []
        starts += list(range(1, self.target.named_barriers - count + 1))
        for start in starts:
            ids = range(start, start + count)
            if self._free(ids):
                self.assigned[purpose] = ids
                return start
        raise CompileError(
            f"out of named barriers: '{purpose}' needs {count}, "
            f"{len(self._used())} of {self.target.named_barriers - 1} are taken"
        )

    def _used(self) -> set[int]:
        return {i for r in self.assigned.values() for i in r}

    def _free(self, ids: range) -> bool:
        used = self._used()
        return ids.start >= 1 and ids.stop <= self.target.named_barriers and not used & set(ids)
