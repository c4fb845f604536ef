"""The `tawac` dialect: the schedule of a kernel, as one typed attribute.

    tile.kernel @attn(...) attributes {tawac.schedule = #tawac.schedule<
        roles = [producer wg 1 regs 24, consumer wg 2 regs 240],
        arefs = [q: depth 2, k: depth 2, v: depth 2],
        loops = [consumer 0: [0 aref.get, 1 tile.dot, wait 1 pending 0, 2 aref.consumed,
                              17 tile.broadcast stage 1, ...]],
        stores = [o: whole], tiles = grouped 8, program_grid = [...],
        smem_bytes = 181248>} { ... }

A planner (`tawac.schedule.planner`) decides every field at once, right after
`warp-specialize`; the passes after it apply the schedule (`tawac.schedule.of`), and
`tawac opt` prints and parses it, so FileCheck tests check a decision and a user (or a
solver) can write a schedule by hand. The fields:

- `roles`: per partition, in order, its role, warp groups and per-thread register budget
  (`setmaxnreg`);
- `arefs`: per aref, named by the identity its `aref.create` carries (`a_b: ...`; never
  by position), its ring depth and release lag (the slot of iteration i is released at
  iteration i + lag, after its MMA; `pipeline`), the payload tiles the CTAs of a
  cluster load together (`multicast [1]`), and `resident`: the loops of a program that
  read the same tiles one after the other (a norm's statistics, then its output) take
  them from the ring the first one filled, the producer loading them once, wherever a
  program's tiles fit in the ring (`reuse-slots`), and `l2` after it: L2 eviction hints
  on its copies and the kernel's stores, for row blocks longer than the ring, and
  `hold N` after those: where a row block is longer than the ring, its first N tiles
  keep their slots for the later loops and the others stream through the rest; `reread`:
  the consumer reads its slots again after a row reduction (`reread-slots`);
- `loops`: the software-pipeline schedule of a role's main loop (the i-th loop moving
  data through arefs in that partition): its scheduled ops (the body's top-level ops
  other than scalar index math, MMA waits and the yield, numbered in body order) listed
  in issue order, each with its stage (an op of stage s works on iteration j - s in
  iteration j), and the wait of each of its MMAs (`wait 1 pending 0`: the wgmma of
  scheduled op 1 is awaited right there in the issue order, leaving at most `pending`
  wgmma groups in flight). A loop not listed runs every op at stage 0 in body order;
  `expanded` says the loop has been rewritten into its pipelined form
  (`coarse-pipeline`); `chained` (before `expanded`) that this loop and the next of its
  partition are expanded as one pipeline across their boundary (`tawac.schedule.chain`);
- `turns`: the consumer warp groups take turns on the tensor core (`pingpong`);
- `overlap`: a persistent consumer runs each tile's epilogue under the next tile's first
  MMA (`overlap-epilogue`);
- `cluster`: the thread block cluster `[cx, cy]` over program ids (x, y): `[2, 1]` pairs
  the CTAs of program ids x = 2i and 2i + 1 (same y), which load the operand they share
  once for both (an aref's `multicast` payloads: each CTA copies its band of the tile's
  rows into every CTA of the cluster); absent for `[1, 1]`;
- `ctas_per_sm`: how many of the kernel's CTAs share one SM (absent for 1): each CTA's
  shared-memory plan fits the SM's share (`Target.smem_per_cta`), its registers a share
  of the register file (`.minnctapersm`, the `setmaxnreg` budgets), and a persistent
  launch runs that many CTAs per SM;
- `tiles` and `program_grid`: a persistent kernel's tile order (`grouped G`: groups of G
  rows of program id x, `grouped 0` the whole x axis; `longest_first up|down`: longest
  tiles first, for work that grows with x) over its grid of programs (the launch ABI's
  grid form); absent for a plain grid;
- `stores`: per consumer store, named by its `tawac.store` identity, how it leaves
  (`tma-store`): `whole` (registers -> one shared staging tile -> TMA bulk stores),
  `chunks N` (a ring of N buffers of one 64-column chunk each, the chunks of a tile
  taking turns, each waiting until the bulk store that last read its buffer is done, so
  that a deeper aref ring fits), `rings` (the staging tile reuses the aref rings once
  every consumer warp group has left its main loop) or `registers` (straight from
  registers, predicated global stores);
- `auto`: with the auto planner, whose schedule the kernel got and why (`AutoInfo`):
  `solver model margin 12.3 error 10.0` (the cost model prices it 12.3% cheaper, at
  least its 10% error), `heuristic preferred gemm faster solver margin 3.1 error 10.0`
  (a margin within the model's error: the target's preferred planner for the kind of
  loop), `heuristic kept margin 0.0 error 10.0` (the solver's not priced at least 2%
  cheaper: as the solver planner keeps the heuristic's), `heuristic only failed solver
  "..."` (the other planner proposed nothing);
- `solve`: with the solver planner, the main loop's initiation interval (cycles), whether
  it is proven optimal, the proven lower bound, and whose schedule was kept;
- `smem_bytes`: the CTA's dynamic shared memory, the end of the shared-memory plan
  (`tawac.schedule.smem`), recorded by the passes that lay it out.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from xdsl.dialects.builtin import (
    ArrayAttr,
    DictionaryAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    StringAttr,
)
from xdsl.ir import Attribute, Data, Dialect
from xdsl.irdl import irdl_attr_definition
from xdsl.parser import AttrParser
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException

from tawac.target import HOPPER

TILE_ORDERS = ("grouped", "longest_first")


@dataclass(frozen=True)
class RolePlan:
    """One partition: `role` run by `warp_groups` warp groups at `regs` registers per
    thread (0: not decided)."""

    role: str
    warp_groups: int
    regs: int = 0


@dataclass(frozen=True)
class ArefPlan:
    """The aref named `name` (its `aref.create`'s identity): a ring of `depth` slots; the
    slot of iteration i is released `lag` iterations later (0: right after its last use);
    the payload tiles numbered in `multicast` are loaded by the CTAs of the cluster
    together (each copies a band of rows into the same slot of every CTA:
    `hopper.tma_load_multicast`); `resident`: the loops that re-read the tiles of the
    first read them from the slots it filled (`reuse-slots`); `l2` (with `resident`):
    where a row block is longer than the ring and is read once per loop, the first
    loop's copies keep their lines in L2 (`evict_last`), the later loops' and the
    kernel's stores let theirs go first (`evict_first`), so that the second read finds
    the first's lines in L2 (printed `resident l2`); `hold` (with `resident`, 0 or
    1..depth - 1): where a row block is longer than the ring, the first `hold` tiles of a
    program keep their slots for its later loops, which read only the others from
    memory again, through the other slots (printed `hold N`); `reread`: the consumer
    reads its slots a second time after a row reduction rather than holding what it
    computed from them in registers across it, and releases them after the second read
    (`reread-slots`)."""

    name: str
    depth: int
    lag: int = 0
    multicast: tuple[int, ...] = ()
    resident: bool = False
    l2: bool = False
    reread: bool = False
    hold: int = 0


#: How a store leaves the CTA (`StorePlan.mode`).
STORE_MODES = ("whole", "chunks", "rings", "registers")


@dataclass(frozen=True)
class StorePlan:
    """The consumer store named `name` (its `tawac.store` identity) leaves as `mode` says
    (`STORE_MODES`, the module docstring); `buffers`: the chunk buffers of `chunks`."""

    name: str
    mode: str
    buffers: int = 0

    @property
    def staged(self) -> bool:
        """The store goes through shared memory and TMA."""
        return self.mode != "registers"


@dataclass(frozen=True)
class OpPlan:
    """A scheduled op of a loop body: its number among the body's scheduled ops, its op
    name (a check that the schedule fits the loop) and its stage."""

    index: int
    op: str
    stage: int = 0


@dataclass(frozen=True)
class WaitPlan:
    """The wait of the MMA that is scheduled op `dot`: placed after the first `at` ops of
    the loop's issue order (with the dot's stage), as `wgmma.wait_group pending` (PTX ISA
    9.7.15.7): at most `pending` wgmma groups stay in flight. In a body where fewer groups
    were issued after the dot (a prologue or epilogue body of a pipelined loop), the wait
    leaves only those in flight."""

    dot: int
    pending: int
    at: int


@dataclass(frozen=True)
class LoopPlan:
    """The schedule of main loop `loop` of partition `role`: its ops in issue order and
    the waits of its MMAs."""

    role: str
    loop: int
    ops: tuple[OpPlan, ...]
    expanded: bool = False
    waits: tuple[WaitPlan, ...] = ()
    chained: bool = False
    """This loop and the next main loop of its partition run as one pipeline across their
    boundary (`tawac.schedule.chain`; printed `chained`)."""

    @property
    def stages(self) -> int:
        return 1 + max((o.stage for o in self.ops), default=0)

    def order(self, index: int) -> int:
        """The issue position of scheduled op `index`."""
        return next(i for i, o in enumerate(self.ops) if o.index == index)

    @property
    def in_body_order(self) -> bool:
        """One stage, its ops in body order: the loop runs as written."""
        return self.stages == 1 and [o.index for o in self.ops] == list(range(len(self.ops)))

    def wait(self, dot: int) -> WaitPlan | None:
        """The wait of scheduled op `dot`, or None."""
        return next((w for w in self.waits if w.dot == dot), None)


@dataclass(frozen=True)
class SolveInfo:
    """What the solver planner found (`tawac.schedule.solver`): the initiation interval
    of the main loop in cycles, "optimal" or "feasible", the lower bound it proved on the
    interval."""

    interval: int
    status: str
    bound: int
    kept: str = "solver"
    """Whose loop schedule, rings and warp groups the kernel got: "solver", or
    "heuristic" when the heuristic's simulated at least as fast in the timeline model."""


#: Why the auto planner took a schedule (`AutoInfo.rule`).
AUTO_RULES = ("model", "preferred", "kept", "only")


@dataclass(frozen=True)
class AutoInfo:
    """How the auto planner chose (`tawac.schedule.auto`): the kernel got the schedule of
    planner `chosen` by `rule`: "model" (the cost model prices it cheaper by at least the
    model's error), "preferred" (the margin is within the model's error, or nothing was
    priced: the target's preferred planner for the `kind` of the consumer main loop,
    `tawac.analysis.kinds`), "kept" (the solver's not priced at least 2% cheaper: the
    heuristic's, as the solver planner keeps it), "only" (the planner `failed` proposed
    no schedule, for the reason `why`)."""

    chosen: str
    rule: str
    kind: str | None = None
    faster: str | None = None
    """The planner whose schedule the model prices cheaper (None: a tie, or unpriced)."""
    margin: float | None = None
    """By how much, in percent of the dearer schedule's price, to one decimal."""
    error: float | None = None
    """The model's error the margin was held against, in percent."""
    failed: str | None = None
    why: str | None = None


@dataclass(frozen=True)
class Schedule:
    """The decisions for one kernel (see the module docstring); empty fields are
    undecided."""

    roles: tuple[RolePlan, ...] = ()
    arefs: tuple[ArefPlan, ...] = ()
    loops: tuple[LoopPlan, ...] = ()
    turns: bool = False
    overlap: bool = False
    cluster: tuple[int, int] = (1, 1)
    ctas_per_sm: int = 1
    tiles: tuple[str, int | str] | None = None
    program_grid: Attribute | None = None
    stores: tuple[StorePlan, ...] = ()
    smem_bytes: int | None = None
    planner: str | None = field(default=None, compare=False)
    solve: SolveInfo | None = field(default=None, compare=False)
    auto: AutoInfo | None = field(default=None, compare=False)

    @property
    def persistent(self) -> bool:
        return self.tiles is not None

    @property
    def cluster_size(self) -> int:
        """CTAs per cluster."""
        return self.cluster[0] * self.cluster[1]

    @property
    def cluster_axis(self) -> int | None:
        """The program-id axis whose neighbours form a cluster (0: x, 1: y), or None."""
        if self.cluster_size == 1:
            return None
        return 0 if self.cluster[0] > 1 else 1

    def role(self, name: str) -> RolePlan | None:
        return next((r for r in self.roles if r.role == name), None)

    def loop(self, role: str, index: int) -> LoopPlan | None:
        return next((lp for lp in self.loops if (lp.role, lp.loop) == (role, index)), None)

    def aref(self, name: str | None) -> ArefPlan | None:
        """The plan of the aref named `name`, or None."""
        return next((a for a in self.arefs if a.name == name), None)

    def store(self, name: str | None) -> StorePlan | None:
        """The plan of the store named `name`, or None."""
        return next((st for st in self.stores if st.name == name), None)

    @property
    def stages(self) -> int | None:
        """The deepest ring (the pipeline depth of looped arefs)."""
        return max((a.depth for a in self.arefs), default=None)

    @property
    def mma_depth(self) -> int | None:
        """The largest release lag: MMA groups kept in flight."""
        return max((a.lag for a in self.arefs), default=None)


def _parse_list(parser: AttrParser, item):
    return parser.parse_comma_separated_list(parser.Delimiter.SQUARE, item)


def _int(parser: AttrParser) -> int:
    return parser.parse_integer(allow_boolean=False, allow_negative=False)


def _parse_role(parser: AttrParser) -> RolePlan:
    role = parser.parse_identifier(" (a role)")
    parser.parse_keyword("wg")
    wgs = _int(parser)
    regs = _int(parser) if parser.parse_optional_keyword("regs") is not None else 0
    return RolePlan(role, wgs, regs)


def _parse_name(parser: AttrParser, what: str, example: str) -> str:
    """`name:` (an identifier or a string literal) before an entry's fields."""
    pos = parser.pos
    name = parser.parse_optional_identifier()
    if name is None:
        name = parser.parse_optional_str_literal()
    if name is None or parser.parse_optional_punctuation(":") is None:
        parser.raise_error(f"expected {what} and ':' before its fields (`{example}`)", pos)
    return name


def _parse_aref(parser: AttrParser) -> ArefPlan:
    name = _parse_name(parser, "the aref's name (its aref.create's identity)", "a_b: depth 3")
    parser.parse_keyword("depth")
    depth = _int(parser)
    lag = _int(parser) if parser.parse_optional_keyword("lag") is not None else 0
    multicast: tuple[int, ...] = ()
    if parser.parse_optional_keyword("multicast") is not None:
        multicast = tuple(_parse_list(parser, lambda: _int(parser)))
    resident = parser.parse_optional_keyword("resident") is not None
    l2 = resident and parser.parse_optional_keyword("l2") is not None
    hold = 0
    if resident and parser.parse_optional_keyword("hold") is not None:
        hold = _int(parser)
    reread = parser.parse_optional_keyword("reread") is not None
    return ArefPlan(name, depth, lag, multicast, resident, l2, reread, hold)


def _parse_cluster(parser: AttrParser) -> tuple[int, int]:
    pos = parser.pos
    dims = _parse_list(parser, lambda: _int(parser))
    if len(dims) != 2:
        parser.raise_error("expected a cluster shape [cx, cy]", pos, parser.pos)
    return (dims[0], dims[1])


def _parse_op(parser: AttrParser) -> OpPlan:
    index = _int(parser)
    name = parser.parse_identifier(" (an op name)")
    stage = _int(parser) if parser.parse_optional_keyword("stage") is not None else 0
    return OpPlan(index, name, stage)


def _parse_loop(parser: AttrParser) -> LoopPlan:
    role = parser.parse_identifier(" (a role)")
    index = _int(parser)
    chained = parser.parse_optional_keyword("chained") is not None
    expanded = parser.parse_optional_keyword("expanded") is not None
    parser.parse_punctuation(":")
    ops: list[OpPlan] = []
    waits: list[WaitPlan] = []

    def item() -> None:
        if parser.parse_optional_keyword("wait") is None:
            ops.append(_parse_op(parser))
            return
        dot = _int(parser)
        parser.parse_keyword("pending")
        waits.append(WaitPlan(dot, _int(parser), len(ops)))

    _parse_list(parser, item)
    return LoopPlan(role, index, tuple(ops), expanded, tuple(waits), chained)


def _parse_store(parser: AttrParser) -> StorePlan:
    name = _parse_name(parser, "the store's name (its tawac.store identity)", "c: whole")
    pos = parser.pos
    mode = parser.parse_identifier(f" (one of {', '.join(STORE_MODES)})")
    if mode not in STORE_MODES:
        parser.raise_error(f"expected one of {', '.join(STORE_MODES)}", pos, parser.pos)
    if mode != "chunks":
        return StorePlan(name, mode)
    pos = parser.pos
    n = _int(parser)
    if n < 1:
        parser.raise_error("expected at least 1 chunk buffer", pos, parser.pos)
    return StorePlan(name, mode, n)


def _parse_solve(parser: AttrParser) -> SolveInfo:
    parser.parse_keyword("interval")
    interval = _int(parser)
    pos = parser.pos
    status = parser.parse_identifier(" (optimal or feasible)")
    if status not in ("optimal", "feasible"):
        parser.raise_error("expected 'optimal' or 'feasible'", pos, parser.pos)
    parser.parse_keyword("bound")
    bound = _int(parser)
    kept = "solver"
    if parser.parse_optional_keyword("kept") is not None:
        pos = parser.pos
        kept = parser.parse_identifier(" (solver or heuristic)")
        if kept not in ("solver", "heuristic"):
            parser.raise_error("expected 'solver' or 'heuristic'", pos, parser.pos)
    return SolveInfo(interval, status, bound, kept)


def _parse_auto(parser: AttrParser) -> AutoInfo:
    chosen = parser.parse_identifier(" (a planner)")
    pos = parser.pos
    rule = parser.parse_identifier(f" ({', '.join(AUTO_RULES)})")
    if rule not in AUTO_RULES:
        parser.raise_error(f"expected one of {', '.join(AUTO_RULES)}", pos, parser.pos)
    kind = parser.parse_identifier(" (a kind of loop)") if rule == "preferred" else None
    faster = chosen if rule == "model" else None
    if parser.parse_optional_keyword("faster") is not None:
        faster = parser.parse_identifier(" (a planner)")
    margin = error = None
    if parser.parse_optional_keyword("margin") is not None:
        margin = parser.parse_float()
    if parser.parse_optional_keyword("error") is not None:
        error = parser.parse_float()
    failed = why = None
    if parser.parse_optional_keyword("failed") is not None:
        failed = parser.parse_identifier(" (a planner)")
        why = parser.parse_str_literal(" (why it proposed nothing)")
    return AutoInfo(chosen, rule, kind, faster, margin, error, failed, why)


def _parse_tiles(parser: AttrParser) -> tuple[str, int | str]:
    pos = parser.pos
    kind = parser.parse_identifier(" (a tile order)")
    if kind == "grouped":
        return (kind, _int(parser))
    if kind == "longest_first":
        direction = parser.parse_identifier(" (up or down)")
        if direction not in ("up", "down"):
            parser.raise_error("expected 'up' or 'down'", pos, parser.pos)
        return (kind, direction)
    parser.raise_error(f"expected a tile order ({', '.join(TILE_ORDERS)})", pos, parser.pos)


_FIELDS = {
    "roles": lambda p: tuple(_parse_list(p, lambda: _parse_role(p))),
    "arefs": lambda p: tuple(_parse_list(p, lambda: _parse_aref(p))),
    "loops": lambda p: tuple(_parse_list(p, lambda: _parse_loop(p))),
    "cluster": _parse_cluster,
    "ctas_per_sm": _int,
    "tiles": _parse_tiles,
    "program_grid": lambda p: p.parse_attribute(),
    "stores": lambda p: tuple(_parse_list(p, lambda: _parse_store(p))),
    "smem_bytes": _int,
    "planner": lambda p: p.parse_identifier(" (a planner)"),
    "solve": _parse_solve,
    "auto": _parse_auto,
}


def _role_text(r: RolePlan) -> str:
    return f"{r.role} wg {r.warp_groups}" + (f" regs {r.regs}" if r.regs else "")


def _quoted(text: str) -> str:
    """`text` as a string literal."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _name_text(name: str) -> str:
    """A name as the schedule prints it: bare where it is an identifier, else quoted."""
    bare = name[:1].isalpha() or name[:1] == "_"
    if bare and all(c.isalnum() or c in "_$." for c in name):
        return name
    return _quoted(name)


def _aref_text(a: ArefPlan) -> str:
    text = f"{_name_text(a.name)}: depth {a.depth}" + (f" lag {a.lag}" if a.lag else "")
    if a.multicast:
        text += " multicast [" + ", ".join(map(str, a.multicast)) + "]"
    text += (" resident" if a.resident else "") + (" l2" if a.resident and a.l2 else "")
    text += f" hold {a.hold}" if a.resident and a.hold else ""
    return text + (" reread" if a.reread else "")


def _loop_text(lp: LoopPlan) -> str:
    items: list[str] = []
    for n in range(len(lp.ops) + 1):
        items += [f"wait {w.dot} pending {w.pending}" for w in lp.waits if w.at == n]
        if n < len(lp.ops):
            o = lp.ops[n]
            items.append(f"{o.index} {o.op}" + (f" stage {o.stage}" if o.stage else ""))
    ops = ", ".join(items)
    marks = (" chained" if lp.chained else "") + (" expanded" if lp.expanded else "")
    return f"{lp.role} {lp.loop}{marks}: [{ops}]"


def _auto_text(a: AutoInfo) -> str:
    text = f"{a.chosen} {a.rule}" + (f" {a.kind}" if a.rule == "preferred" else "")
    if a.faster is not None and a.rule != "model":
        text += f" faster {a.faster}"
    if a.margin is not None:
        text += f" margin {a.margin:.1f}"
    if a.error is not None:
        text += f" error {a.error:.1f}"
    if a.failed is not None:
        text += f" failed {a.failed} {_quoted(a.why or '')}"
    return text


def _store_text(st: StorePlan) -> str:
    return f"{_name_text(st.name)}: {st.mode}" + (f" {st.buffers}" if st.mode == "chunks" else "")


@irdl_attr_definition
class ScheduleAttr(Data[Schedule]):
    """`#tawac.schedule<...>`: a kernel's `Schedule` (the module docstring gives the
    syntax); fields print in a fixed order and parse in any, each at most once."""

    name = "tawac.schedule"

    @classmethod
    def parse_parameter(cls, parser: AttrParser) -> Schedule:
        values: dict[str, object] = {}
        with parser.in_angle_brackets():
            key = parser.parse_optional_identifier()
            while key is not None:
                if key in ("turns", "overlap"):
                    if key in values:
                        parser.raise_error(f"repeated schedule field '{key}'")
                    values[key] = True
                else:
                    if key not in _FIELDS or key in values:
                        parser.raise_error(f"unknown or repeated schedule field '{key}'")
                    parser.parse_punctuation("=")
                    values[key] = _FIELDS[key](parser)
                if parser.parse_optional_punctuation(",") is None:
                    break
                key = parser.parse_identifier(" (a schedule field)")
        return Schedule(**values)  # type: ignore[arg-type]

    def print_parameter(self, printer: Printer) -> None:
        s = self.data
        parts: list[str] = []
        if s.planner is not None:
            parts.append(f"planner = {s.planner}")
        if s.auto is not None:
            parts.append(f"auto = {_auto_text(s.auto)}")
        if s.solve is not None:
            v = s.solve
            text = f"solve = interval {v.interval} {v.status} bound {v.bound}"
            if v.kept != "solver":
                text += f" kept {v.kept}"
            parts.append(text)
        if s.roles:
            parts.append("roles = [" + ", ".join(map(_role_text, s.roles)) + "]")
        if s.arefs:
            parts.append("arefs = [" + ", ".join(map(_aref_text, s.arefs)) + "]")
        if s.loops:
            parts.append("loops = [" + ", ".join(map(_loop_text, s.loops)) + "]")
        if s.turns:
            parts.append("turns")
        if s.overlap:
            parts.append("overlap")
        if s.cluster != (1, 1):
            parts.append(f"cluster = [{s.cluster[0]}, {s.cluster[1]}]")
        if s.ctas_per_sm != 1:
            parts.append(f"ctas_per_sm = {s.ctas_per_sm}")
        if s.tiles is not None:
            parts.append(f"tiles = {s.tiles[0]} {s.tiles[1]}")
        if s.stores:
            parts.append("stores = [" + ", ".join(map(_store_text, s.stores)) + "]")
        printer.print_string("<" + ", ".join(parts))
        if s.program_grid is not None:
            printer.print_string(", " if parts else "")
            printer.print_string("program_grid = ")
            printer.print_attribute(s.program_grid)
        if s.smem_bytes is not None:
            printer.print_string(", " if parts or s.program_grid is not None else "")
            printer.print_string(f"smem_bytes = {s.smem_bytes}")
        printer.print_string(">")

    def verify(self) -> None:
        s = self.data
        for r in s.roles:
            if r.warp_groups < 1:
                raise VerifyException(f"#tawac.schedule: role {r.role} needs >= 1 warp group")
        for what, names in (
            ("aref", [a.name for a in s.arefs]),
            ("store", [x.name for x in s.stores]),
        ):
            repeated = sorted({n for n in names if names.count(n) > 1})
            if repeated:
                raise VerifyException(f"#tawac.schedule: {what} '{repeated[0]}' is listed twice")
        for a in s.arefs:
            if a.depth < 1:
                raise VerifyException("#tawac.schedule: an aref's depth must be >= 1")
            if a.lag >= a.depth:
                raise VerifyException(
                    f"#tawac.schedule: release lag {a.lag} must be below the depth {a.depth} "
                    "(the producer would wait for a slot the consumer cannot release yet)"
                )
        for lp in s.loops:
            indices = [o.index for o in lp.ops]
            if len(set(indices)) != len(indices):
                raise VerifyException(
                    f"#tawac.schedule: loop {lp.role} {lp.loop} lists an op twice"
                )
            dots = [w.dot for w in lp.waits]
            if len(set(dots)) != len(dots):
                raise VerifyException(
                    f"#tawac.schedule: loop {lp.role} {lp.loop} waits for an MMA twice"
                )
        if not 1 <= s.ctas_per_sm <= HOPPER.max_ctas_per_sm:
            raise VerifyException(
                f"#tawac.schedule: ctas_per_sm must be in 1..{HOPPER.max_ctas_per_sm}, "
                f"got {s.ctas_per_sm}"
            )
        if s.tiles is not None and s.program_grid is None:
            raise VerifyException("#tawac.schedule: a tile order needs its program_grid")
        if s.program_grid is not None:
            bad = _not_grid_data(s.program_grid)
            if bad is not None:
                raise VerifyException(
                    f"#tawac.schedule: program_grid holds {bad}: expected a list of "
                    "entries of integers and names (docs/abi.md's grid form)"
                )
        if s.cluster not in HOPPER.cluster_shapes:
            shapes = ", ".join(f"[{x}, {y}]" for x, y in HOPPER.cluster_shapes)
            raise VerifyException(
                f"#tawac.schedule: cluster [{s.cluster[0]}, {s.cluster[1]}] is not one of {shapes}"
            )
        if s.cluster == (1, 1) and any(a.multicast for a in s.arefs):
            raise VerifyException(
                "#tawac.schedule: a multicast payload needs a cluster of more than one CTA"
            )


def _not_grid_data(a: Attribute) -> Attribute | None:
    """The first part of a `program_grid` that is not plain grid data (integers, names,
    lists and dictionaries of them); None where all of it is."""
    if isinstance(a, IntegerAttr) and isinstance(a.type, IntegerType | IndexType):
        return None
    if isinstance(a, StringAttr):
        return None
    parts = a.data if isinstance(a, ArrayAttr) else None
    if isinstance(a, DictionaryAttr):
        parts = tuple(a.data.values())
    if parts is None:
        return a
    return next((b for b in (_not_grid_data(p) for p in parts) if b is not None), None)


TawacDialect = Dialect("tawac", [], [ScheduleAttr])
