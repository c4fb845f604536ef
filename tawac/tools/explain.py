"""`tawac explain`: what the compiler decided for a kernel, as tables or JSON.

Runs the default pipeline up to the PTX lowering and reads the decisions where they are
recorded as data: the kernel's `#tawac.schedule` as the planner left it (roles, warp
groups, register budgets, per aref its depth and release lag, the loop schedules, the
tile order and grid), the IR it refers to (aref payloads, the ops of each main loop),
and the shared-memory allocations after lowering (the plan of `tawac.schedule.smem`).
With `timeline`, also the steady state of the main loops: `tawac.schedule.model` turns the
schedule and the target model's costs into the simulator's lanes
(`tawac.schedule.simulate`), drawn by `tawac.tools.timeline`.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from xdsl.dialects import scf
from xdsl.dialects.builtin import ModuleOp, StringAttr
from xdsl.ir import Operation

from tawac import schedule
from tawac.analysis.arefs import Rereads, rereads
from tawac.analysis.grid import decomposition_of, dim_size, from_attr, workspace_of
from tawac.analysis.identity import argument_name
from tawac.analysis.loops import main_loops, scheduled_ops
from tawac.analysis.scalars import constant_int
from tawac.compiler import run_pipeline
from tawac.dialects import aref, hopper, tile
from tawac.dialects.schedule import Schedule
from tawac.passes.group_heads import GROUP_ATTR, KEPT_ATTR
from tawac.passes.sink_reductions import SINK_ATTR
from tawac.passes.widen import WIDEN_ATTR
from tawac.runtime.trace import Measured, measured_window
from tawac.schedule import loop_plan
from tawac.schedule.model import TIMELINE_ITERATIONS, aref_name, loop_lanes
from tawac.schedule.simulate import Dep, Lane, Step, simulate
from tawac.schedule.smem import reduction_scratch_bytes, scratch_region
from tawac.support.diagnostics import CompileError
from tawac.support.options import PipelineOptions
from tawac.target import HOPPER
from tawac.tools.timeline import render_svg


def _kernel(module: ModuleOp) -> tile.KernelOp:
    kernels = [op for op in module.body.block.ops if isinstance(op, tile.KernelOp)]
    if len(kernels) != 1:
        raise CompileError(f"expected exactly one tile.kernel, found {len(kernels)}")
    return kernels[0]


def _resident_tiles(chain: Rereads, sizes: Mapping[str, int] | None) -> int | None:
    """The column blocks a program of a resident aref moves at `sizes` (the trip count of
    its chain's loops: `reuse-slots` keeps them where they fit the ring), None where the
    bounds are not a constant start and step and a tensor dimension given in `sizes`."""
    loop = chain.producer_loops[0]
    lb, step = constant_int(loop.lb), constant_int(loop.step)
    ub = loop.ub.owner
    if lb is None or not step or not isinstance(ub, tile.DimOp):
        return None
    n = dim_size(ub.source, ub.dim.data, sizes)
    return None if n is None else max(0, -(-(n - lb) // step))


def _arefs(
    kernel: tile.KernelOp, plan: Schedule, sizes: Mapping[str, int] | None = None
) -> list[dict[str, Any]]:
    """Each aref: its payload (from the IR) and its depth and release lag (planned)."""
    out = []
    creates = [o for o in kernel.walk() if isinstance(o, aref.CreateOp)]
    for i, create in enumerate(creates):
        a = plan.aref(create.ident)
        assert a is not None  # `plan` checked every aref has an entry
        t = create.aref_type
        slot = sum(hopper.smem_ring_type(p, 1).tile_type.nbytes for p in t.payload)
        entry = {
            "name": create.ident or f"aref{i}",
            "payload": [str(p) for p in t.payload],
            "slot_bytes": slot,
            "depth": a.depth,
            "release_lag": a.lag,
        }
        chain = rereads(create) if a.resident else None
        if isinstance(chain, Rereads):
            # its later loops read the first loop's slots where a program's tiles fit
            entry["resident"] = True
            entry["resident_loops"] = len(chain.puts)
            entry["l2_hints"] = a.l2
            # where the row block is longer than the ring, its first `hold` tiles keep
            # their slots for the later loops (the others are loaded again)
            entry["held_tiles"] = a.hold
            tiles = _resident_tiles(chain, sizes)
            if tiles is not None:
                entry["resident_tiles"] = tiles
        if a.reread:
            # the consumer reads the slot again after a row reduction (`reread-slots`)
            entry["reread"] = True
        if a.multicast:
            # payload numbers, and the tensors they are loaded from
            entry["multicast"] = list(a.multicast)
            entry["multicast_tensors"] = _load_sources(create, a.multicast)
        registers = _read_into_registers(create)
        if registers:
            # payload numbers that consumer math reads (loaded into registers, not wgmma)
            entry["registers"] = registers
        out.append(entry)
    return out


def _read_into_registers(create: aref.CreateOp) -> list[int]:
    """The payloads of the aref that the consumers read into registers: tiles no
    `tile.dot` reads as an A or B operand (an epilogue's second matrix)."""
    out: set[int] = set()
    for use in create.result.uses:
        get = use.operation
        if not isinstance(get, aref.GetOp):
            continue
        for k, v in enumerate(get.values):
            uses = list(v.uses)
            if uses and not any(
                isinstance(u.operation, tile.DotOp) and u.index in (0, 1) for u in uses
            ):
                out.add(k)
    return sorted(out)


def op_label(op: Operation) -> str:
    """`%s = tile.dot`, `aref.consumed k`: an op as a reader finds it in the IR (an aref
    by its identity)."""
    names = [f"%{r.name_hint}" for r in op.results if r.name_hint]
    if names:
        return f"{', '.join(names)} = {op.name}"
    refs = [aref_name(v) for v in op.operands if isinstance(v.type, aref.ArefType)]
    return " ".join([op.name, *refs[:1]])


def _loops(kernel: tile.KernelOp, plan: Schedule) -> list[dict[str, Any]]:
    """Every main loop's schedule: op -> role, stage, issue order (a loop the schedule
    does not list runs its ops at stage 0 in body order), and its MMAs' waits (after
    the first `after` ops of the issue order, `pending` wgmma groups left in flight)."""
    out = []
    for part in [p for p in kernel.body.block.ops if isinstance(p, aref.PartitionOp)]:
        role = part.role.data
        for k, loop in enumerate(main_loops(part)):
            ops = scheduled_ops(loop.body.block)
            lp = loop_plan(plan, role, k, loop)
            out.append(
                {
                    "role": role,
                    "loop": k,
                    "stages": lp.stages,
                    "chained": lp.chained,
                    "ops": [
                        {
                            "op": op_label(ops[o.index]),
                            "index": o.index,
                            "stage": o.stage,
                            "order": n,
                        }
                        for n, o in enumerate(lp.ops)
                    ],
                    "waits": [
                        {
                            "op": op_label(ops[w.dot]),
                            "index": w.dot,
                            "pending": w.pending,
                            "after": w.at,
                        }
                        for w in lp.waits
                    ],
                }
            )
    return out


def _tile_order(plan: Schedule) -> str | None:
    if plan.tiles is None:
        return None
    kind, arg = plan.tiles
    if kind == "grouped" and arg == 0:
        return "along x: the programs of one (y, z) run together (they stream the same data: L2)"
    if kind == "grouped":
        return f"grouped: {arg} rows of program id x share a column band (L2)"
    return f"longest first ({'x descending' if arg == 'up' else 'x ascending'}), snake over rounds"


def _load_sources(create: aref.CreateOp, payloads: tuple[int, ...]) -> list[str]:
    """The tensor arguments the aref's payloads `payloads` are loaded from."""
    puts = [u.operation for u in create.result.uses if isinstance(u.operation, aref.PutOp)]
    out = []
    for k in payloads:
        ld = puts[0].values[k].owner if puts else None
        src = ld.source if isinstance(ld, tile.LoadOp) else None
        out.append(f"%{src.name_hint}" if src is not None and src.name_hint else f"payload {k}")
    return out


def _cluster(plan: Schedule) -> dict[str, Any] | None:
    """The thread block cluster: its shape over program ids and how the CTAs pair."""
    axis = plan.cluster_axis
    if axis is None:
        return None
    name = "xy"[axis]
    ctas = plan.cluster_size
    return {
        "shape": list(plan.cluster),
        "ctas": ctas,
        "axis": name,
        "pairs": f"program ids {name} = {ctas}i .. {ctas}i+{ctas - 1} (same "
        f"{'y' if axis == 0 else 'x'} and z) run as one cluster",
    }


def _smem(
    kernel: tile.KernelOp, plan: Schedule, arefs: list[dict[str, Any]], planned: int
) -> dict[str, Any]:
    """The CTA's dynamic shared memory: the planned regions, then the scratch the planner
    reserves for the reductions across warps, which the backend places after them
    (16-byte aligned; the launch takes what its reductions use, at most that)."""
    regions = _smem_map(kernel, arefs)
    consumer = plan.role("consumer")
    scratch = reduction_scratch_bytes(kernel, consumer.warp_groups if consumer else 1)
    total = planned
    if scratch:
        region = scratch_region(planned, scratch)
        what = "reductions' scratch (reserved)"
        regions.append({"offset": region.offset, "bytes": scratch, "what": what})
        total = region.end
    return {"bytes": total, "limit": HOPPER.smem_per_cta(plan.ctas_per_sm), "regions": regions}


def _smem_map(kernel: tile.KernelOp, arefs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The shared-memory allocations in offset order, named after what they hold."""
    rings = [(a["name"], p) for a in arefs for p in a["payload"]]
    regions: list[dict[str, Any]] = []
    barriers = iter(a["name"] for a in arefs for _ in (0, 1))
    for op in kernel.walk():
        if isinstance(op, hopper.SmemAllocOp):
            t = op.result.type
            assert isinstance(t, hopper.SmemRingType)
            hint = op.result.name_hint
            if hint == "staging":
                what = "staging tile"
            elif hint == "staging_chunks":
                tt = t.tile_type
                what = (
                    f"staging ring of {t.depth} column chunk(s) "
                    f"{tt.rows}x{tt.cols}x{tt.element_type}"
                )
            else:
                what = "ring of {} {}".format(*rings.pop(0))
            size = hopper.ring_bytes(t)
            regions.append({"offset": op.offset.value.data, "bytes": size, "what": what})
        elif isinstance(op, hopper.MbarrierAllocOp):
            count = op.result.type.count.data
            what = f"{next(barriers)} {op.result.name_hint or 'barriers'} mbarriers"
            regions.append({"offset": op.offset.value.data, "bytes": 8 * count, "what": what})
    return sorted(regions, key=lambda r: r["offset"])


def _lane_data(lane: Lane) -> dict[str, Any]:
    return {
        "name": lane.name,
        "role": lane.role,
        "steps": [
            {
                "label": s.label,
                "unit": s.unit,
                "stage": s.stage,
                "issue": s.issue,
                "occupancy": s.occupancy,
                "latency": s.latency,
                "deps": [
                    {"lane": d.lane, "step": d.step, "distance": d.distance, "label": d.label}
                    for d in s.deps
                ],
            }
            for s in lane.steps
        ],
    }


def timeline_lanes(info: dict[str, Any]) -> list[Lane]:
    """The simulator's lanes back from `explain_module(..., timeline=True)`'s data."""
    return [
        Lane(
            ln["name"],
            ln["role"],
            tuple(
                Step(
                    s["label"],
                    s["unit"],
                    s["issue"],
                    s["occupancy"],
                    s["latency"],
                    tuple(Dep(**d) for d in s["deps"]),
                    s["stage"],
                )
                for s in ln["steps"]
            ),
        )
        for ln in info["timeline"]["lanes"]
    ]


def _timeline(
    kernel: tile.KernelOp, plan: Schedule, sizes: Mapping[str, int] | None = None
) -> dict[str, Any]:
    """The steady state of the main loops (`tawac.schedule.model`), simulated at `sizes`
    where given."""
    lanes = loop_lanes(kernel, plan, sizes=sizes)
    tl = simulate(lanes, TIMELINE_ITERATIONS)
    return {
        "ii": tl.ii,
        "lane_ii": tl.lane_ii,
        "utilisation": tl.utilisation,
        "stalled": tl.stalled,
        "lanes": [_lane_data(ln) for ln in lanes],
    }


def planner_text(info: dict[str, Any]) -> str:
    """The planner, and with the auto planner whose schedule it took and why:
    `auto -> solver (model: 21.7% faster; its error 10.0%)`."""
    auto = info.get("auto")
    if auto is None:
        return info["planner"]
    if auto["rule"] == "only":
        why = f"{auto['failed']} proposed nothing: {auto['why']}"
    elif auto["rule"] == "model":
        why = f"model: {auto['margin']:.1f}% faster; its error {auto['error']:.1f}%"
    elif auto["rule"] == "kept" and auto["faster"] is None:
        why = "kept: the model prices both alike"
    elif auto["rule"] == "kept":
        why = (
            f"kept: the model prices the {auto['faster']}'s {auto['margin']:.1f}% faster, "
            f"within its error {auto['error']:.1f}%"
        )
    elif auto["margin"] is None:
        why = f"preferred for {auto['kind']} loops; model: no loop priced"
    elif auto["faster"] is None:
        why = f"preferred for {auto['kind']} loops; model: a tie"
    else:
        why = (
            f"preferred for {auto['kind']} loops; model: {auto['faster']} {auto['margin']:.1f}% "
            f"faster, within its error {auto['error']:.1f}%"
        )
    return f"{info['planner']} -> {auto['chosen']} ({why})"


def measured_info(info: dict[str, Any], path: str) -> Measured:
    """The measured steady state in the Chrome trace at `path`
    (`tawac.runtime.trace.measured_window`) of the kernel `info` explains
    (`explain_module(..., timeline=True)`), recorded in `info["measured"]` with the model's
    error on it; a `CompileError` when the file is not such a trace or is another
    kernel's."""
    try:
        doc = json.loads(Path(path).read_text())
    except (OSError, ValueError) as err:
        raise CompileError(f"--measured {path}: not a readable trace ({err})") from None
    if not isinstance(doc, dict) or "traceEvents" not in doc:
        raise CompileError(f"--measured {path}: not a Chrome trace of tawac run --trace-out")
    kernel = doc.get("otherData", {}).get("kernel")
    if kernel is not None and kernel != info["kernel"]:
        raise CompileError(
            f"--measured {path}: a trace of kernel @{kernel}, not of @{info['kernel']}"
        )
    try:
        window = measured_window(doc)
    except ValueError as err:
        raise CompileError(f"--measured {path}: {err}") from None
    model = info["timeline"]["ii"]
    info["measured"] = {
        "trace": str(path),
        "sm": window.sm,
        "cta": window.cta,
        "loop": window.loop,
        "ghz": round(window.ghz, 4),
        "ii": window.ii,
        "iterations": window.iterations,
        "model_ii": model,
        "error": model / window.ii - 1,
    }
    return window


def timeline_svg(info: dict[str, Any], measured: Measured | None = None) -> str:
    """The picture of `explain_module(..., timeline=True)`'s timeline (SVG text), with a
    measured window (`measured_info`) under the model's lanes when given."""
    tl = simulate(timeline_lanes(info), TIMELINE_ITERATIONS)
    solved = info.get("solve")
    found = (
        f"; solver: II {solved['interval']:,} cycles, {solved['status']}"
        + (", heuristic's schedule kept" if solved.get("kept") == "heuristic" else "")
        if solved is not None
        else ""
    )
    title = (
        f"@{info['kernel']}: steady state of the main loops "
        f"(planner {planner_text(info)}, simulated II {tl.ii:,.0f} cycles{found})"
    )
    return render_svg(tl, title=title, measured=measured)


def explain_module(
    module: ModuleOp,
    options: PipelineOptions,
    timeline: bool = False,
    sizes: Mapping[str, int] | None = None,
) -> dict[str, Any]:
    """The decisions of the default pipeline for the module's kernel, as plain data;
    with `timeline`, also the simulated steady state of its main loops ("timeline": its
    initiation interval, units' utilisation, the lanes' stalls and steps), priced at the
    dimension sizes `sizes` where given (`tawac.schedule.model.loop_lanes`)."""
    kernel = _kernel(module)
    run_pipeline(module, options.pipeline(stop="pipeline"))
    plan = schedule.of(kernel)
    arefs = _arefs(kernel, plan, sizes)
    loops = _loops(kernel, plan)
    steady = _timeline(kernel, plan, sizes) if timeline else None
    grid = schedule.launch_grid(kernel)
    run_pipeline(module, options.pipeline(start="pipeline", stop="convert-to-ptx"))
    smem_bytes = schedule.of(kernel).smem_bytes
    roles = [
        {
            "role": r.role,
            "warp_groups": r.warp_groups,
            "threads": HOPPER.warp_group_size * r.warp_groups,
            "registers": r.regs,
        }
        for r in plan.roles
    ]
    info = {
        "kernel": kernel.sym_name.data,
        "target": HOPPER.name,
        "planner": plan.planner,
        "solve": dataclasses.asdict(plan.solve) if plan.solve is not None else None,
        "threads": sum(r["threads"] for r in roles),
        "persistent": plan.persistent,
        "ctas_per_sm": plan.ctas_per_sm,
        "grid": grid,
        "tile_order": _tile_order(plan),
        "stages": plan.stages,
        "mma_depth": plan.mma_depth,
        "turns": plan.turns,
        "overlap": plan.overlap,
        "roles": roles,
        "arefs": arefs,
        "loops": loops,
        "smem": _smem(kernel, plan, arefs, smem_bytes or 0),
    }
    info["decomposition"] = decomposition_of(kernel)
    grouped = kernel.attributes.get(GROUP_ATTR)
    if grouped is not None:
        info["group_heads"] = from_attr(grouped)
    kept = kernel.attributes.get(KEPT_ATTR)
    if isinstance(kept, StringAttr):
        info["group_heads_kept"] = kept.data
    widened = kernel.attributes.get(WIDEN_ATTR)
    if widened is not None:
        info["widen"] = from_attr(widened)
    sunk = kernel.attributes.get(SINK_ATTR)
    if sunk is not None:
        info["sink_reductions"] = from_attr(sunk)
    blocked = _blocked_tiles(kernel)
    if blocked:
        info["blocked_tiles"] = blocked
    tickets = _tickets(kernel)
    if tickets:
        info["tickets"] = tickets
    if plan.auto is not None:
        info["auto"] = dataclasses.asdict(plan.auto)
    if plan.cluster_axis is not None:
        info["cluster"] = _cluster(plan)
    if plan.stores:
        info["stores"] = [
            {"name": st.name, "staging": st.mode, **({"buffers": st.buffers} if st.buffers else {})}
            for st in plan.stores
        ]
    if steady is not None:
        info["timeline"] = steady
    return info


def _blocked_tiles(kernel: tile.KernelOp) -> list[dict[str, int]]:
    """The 2-d tiles of each consumer partition held in the blocked layout (a kernel
    without MMAs whose tiles are not whole m64 blocks a warp group): their shape, runs,
    lanes across a row and warps side by side (`BlockedTileLayout`); none otherwise."""
    from xdsl.dialects.builtin import TensorType, f32

    from tawac.analysis.tile_layouts import tile_shapes
    from tawac.backend_ptx.vector_layouts import TileLayouts
    from tawac.target.blocked_tiles import BlockedTileLayout

    out: list[dict[str, int]] = []
    for part in kernel.walk():
        if not isinstance(part, aref.PartitionOp) or part.role.data != "consumer":
            continue
        layouts = TileLayouts(part, part.warp_groups.data, kernel)
        if layouts.blocked_bytes is None:
            continue
        for m, n in sorted(tile_shapes(part)):
            try:
                layout = layouts.of(TensorType(f32, [m, n]), part)
            except CompileError:
                continue
            assert isinstance(layout, BlockedTileLayout)
            out.append(
                {
                    "rows": m,
                    "cols": n,
                    "vec": layout.vec,
                    "col_lanes": layout.col_lanes,
                    "col_warps": layout.col_warps,
                    "warp_groups": layout.warp_groups,
                }
            )
    return out


def blocked_text(tiles: list[dict[str, int]]) -> str:
    """The line of the blocked layout's tiles."""
    parts = []
    for t in tiles:
        text = f"{t['rows']}x{t['cols']} in runs of {t['vec']}, {t['col_lanes']} lanes a row"
        spans = t["col_warps"] > 4  # a warp group's 4 warps: more span the warp groups
        if spans:
            text += f", each row spread over the {t['warp_groups']} warp groups"
        elif t.get("warp_groups", 1) > 1:
            rows = t["rows"] // t["warp_groups"]
            text += f", {rows} row{'s' if rows > 1 else ''} a warp group"
        if t["col_warps"] > 1:
            text += (
                f", {t['col_warps']} warps side by side along each row (its reductions meet "
                "in shared memory)"
            )
        parts.append(text)
    return "registers: blocked layout (no MMA): " + "; ".join(parts)


def sink_text(sunk: dict) -> str:
    """The line of `sink-reductions`' decision."""
    n = sunk["sunk"]
    text = (
        f"reductions in loops: {n} accumulated elementwise in a tile, reduced once after the loop"
        if n
        else "reductions in loops: each block reduced in the loop"
    )
    if sunk["kept"]:
        text += f"; kept in the loop: {'; '.join(sunk['kept'])}"
    return text


def _tickets(kernel: tile.KernelOp) -> list[dict[str, Any]]:
    """The source's own arrival tickets (a `tile.arrive` on a counter the program takes as
    an argument, not a pass's workspace): per ticket, its counter and the tensors the
    last arrival's `tile.split_sum`s add up (JSON `tickets`)."""
    workspace = workspace_of(kernel)
    out = []
    for op in kernel.walk():
        if not isinstance(op, tile.ArriveOp):
            continue
        counter = argument_name(op.counters, kernel)
        if counter in workspace:
            continue
        sums: dict[str, None] = {}
        for use in op.result.uses:
            if not isinstance(use.operation, scf.IfOp):
                continue
            for inner in use.operation.walk():
                if isinstance(inner, tile.SplitSumOp):
                    sums[argument_name(inner.source, kernel)] = None
        out.append({"counter": counter, "sums": list(sums)})
    return out


def tickets_text(tickets: list[dict[str, Any]]) -> str:
    parts = []
    for t in tickets:
        what = f"adds up {', '.join(t['sums'])} in program order" if t["sums"] else "runs"
        parts.append(
            f"the last program to arrive at {t['counter']} (tile.arrive in the source) {what} "
            "under its scf.if (deterministic)"
        )
    return "tickets: " + "; ".join(parts)


def decomposition_text(info: dict[str, Any]) -> str:
    d = info["decomposition"]
    why = f" ({d['why']})" if d.get("why") else ""
    if d["kind"] == "split_k":
        return (
            f"decomposition: split-K by {d['splits']}: {d['splits']} programs per output tile "
            "along z, each a chunk of the K steps; the last to finish adds the partials in "
            f"split order (deterministic) and runs the epilogue{why}"
        )
    if d["kind"] == "split_keys":
        return (
            f"decomposition: split keys by {d['splits']} (flash-decoding): {d['splits']} "
            "programs per query tile along x, each a chunk of the key loop; the last to finish "
            "combines their (O, row max, row sum) in split order (deterministic) and runs the "
            f"epilogue{why}"
        )
    if d["kind"] == "stream_k":
        return (
            f"decomposition: stream-K: the tiles of the last, partly filled wave split among "
            f"the SMs, at most {d['max_splits']} programs per tile (the tile loop decides from "
            f"the tile and CTA counts); ordered sum of the partials (deterministic){why}"
        )
    if d["kind"] == "swap_ab":
        return (
            "decomposition: swap-AB: each tile computed transposed (C^T = B A^T), its rows "
            "the MMA's N and the weights' rows its M; stored transposed from registers"
            f"{why}"
        )
    return f"decomposition: data-parallel, one program per output tile{why}"


#: How `render` says each store staging (`#tawac.schedule`'s `stores`).
_STAGING_TEXT = {
    "whole": "through one staging tile in shared memory and TMA bulk stores",
    "chunks": "in 64-column chunks through {buffers} staging buffer(s) and TMA bulk stores",
    "rings": "through the aref rings (reused after the main loop) and TMA bulk stores",
    "registers": "straight from registers (predicated global stores)",
}


def _grid_text(grid: list[Any]) -> str:
    def axis(a: Any) -> str:
        if isinstance(a, dict) and "cdiv" in a:
            c = a["cdiv"]
            text = f"cdiv({c['arg']}.shape[{c['dim']}], {a['by']})"
            return text if int(a.get("times", 1)) == 1 else f"{text}*{a['times']}"
        if isinstance(a, dict) and "const" in a:
            return str(a["const"])
        return str(a)

    return " x ".join(axis(a) for a in grid)


def _ring_lines(info: dict[str, Any]) -> list[str]:
    """The lines on the arefs whose slots are read more than once: rows kept on chip
    (`resident`) and slots read again after a reduction (`reread`)."""
    out: list[str] = []
    for a in info["arefs"]:
        if a.get("resident"):
            tiles = a.get("resident_tiles")
            # where the row block is longer than the ring, eviction hints keep the first
            # loop's lines in L2 for the later loops' reads
            held = ", the first loop's lines held in L2 for the next (hints)"
            held = held if a.get("l2_hints") else ""
            kept = a.get("held_tiles", 0)
            rest = (
                f"its first {kept} tiles kept in their slots, the others loaded once per loop{held}"
                if kept
                else f"loaded once per loop{held}"
            )
            at = f" (else {rest})"
            if tiles is not None:
                once = "loaded once" if tiles <= a["depth"] else rest
                at = f"; at this size a program has {tiles}: {once}"
            out.append(
                f"rows kept on chip: aref {a['name']} loaded once for its "
                f"{a['resident_loops']} loops where a program has at most {a['depth']} "
                f"of its tiles{at}"
            )
    again = [a["name"] for a in info["arefs"] if a.get("reread")]
    if again:
        out.append(
            f"slots read again: {', '.join(again)} read a second time after the row "
            "reductions, not held in registers across them (released after the second read)"
        )
    return out


def render(info: dict[str, Any], console) -> None:
    """The tables of `explain_module`'s data on a rich console."""
    from rich.table import Table

    grid = _grid_text(info["grid"])
    ctas = info["ctas_per_sm"]
    per_sm = "one CTA per SM" if ctas == 1 else f"{ctas} CTAs per SM"
    lines = [
        f"kernel @{info['kernel']} on {info['target']}: {info['threads']} threads per CTA",
        f"grid: {per_sm}, looping over {grid} programs"
        if info["persistent"]
        else f"grid: {grid} CTAs" + ("" if ctas == 1 else f", up to {ctas} per SM"),
        f"pipeline: ring depth {info['stages']}, {info['mma_depth']} MMA group(s) in flight",
    ]
    if info["tile_order"] is not None:
        lines.append(f"tile order: {info['tile_order']}")
    if info["turns"]:
        lines.append("consumer warp groups take turns on the tensor core (ping-pong)")
    if info["overlap"]:
        lines.append("each tile's epilogue runs under the next tile's first MMA")
    for st in info.get("stores", []):
        lines.append(f"store {st['name']}: {_STAGING_TEXT[st['staging']].format(**st)}")
    lines += _ring_lines(info)
    cluster = info.get("cluster")
    if cluster is not None:
        shared = [p for a in info["arefs"] for p in a.get("multicast_tensors", [])]
        cx, cy = cluster["shape"]
        tiles = "tile" if len(shared) < 2 else "tiles"
        lines.append(
            f"cluster: {cx}x{cy}, {cluster['pairs']}; each CTA loads 1/{cluster['ctas']} of "
            f"the rows of the {', '.join(shared) or 'no'} {tiles} and multicasts them to all"
        )
    if "group_heads" in info:
        g = info["group_heads"]
        lines.append(
            f"query heads: grouped by {g['group']} (one program per K/V head, "
            f"{g['rows_per_head']} query rows of each of its {g['group']} heads stacked as one "
            "tile: each K/V block loaded once per group)"
        )
    if "group_heads_kept" in info:
        lines.append(f"query heads: one program each, not grouped: {info['group_heads_kept']}")
    if "widen" in info:
        w = info["widen"]
        lines.append(
            f"programs per tile: {w['programs']} along x as one {w['rows']}-row tile (a "
            f"{w['rows'] // w['programs']}-row tile has one consumer warp group; --widen 1 "
            "keeps them apart)"
        )
    if "sink_reductions" in info:
        lines.append(sink_text(info["sink_reductions"]))
    if "blocked_tiles" in info:
        lines.append(blocked_text(info["blocked_tiles"]))
    lines.append(decomposition_text(info))
    if "tickets" in info:
        lines.append(tickets_text(info["tickets"]))
    lines.append(f"planner: {planner_text(info)}")
    solved = info.get("solve")
    if solved is not None:
        text = (
            f"solver: initiation interval {solved['interval']:,} cycles ({solved['status']}; "
            f"lower bound {solved['bound']:,})"
        )
        if solved.get("kept") == "heuristic":
            text += "; the heuristic's schedule kept (it simulates at least as fast)"
        lines.append(text)
    for line in lines:
        console.print(line, markup=False, highlight=False)
    roles = Table(title="warp groups")
    for col in ("role", "warp groups", "threads", "registers/thread"):
        roles.add_column(col, justify="left" if col == "role" else "right")
    for r in info["roles"]:
        roles.add_row(r["role"], *(str(r[k]) for k in ("warp_groups", "threads", "registers")))
    console.print(roles)
    arefs = Table(title="arefs")
    for col in ("aref", "payload", "bytes/slot", "depth", "release lag"):
        arefs.add_column(col, justify="left" if col in ("aref", "payload") else "right")
    for a in info["arefs"]:
        multicast = a.get("multicast", [])
        registers = a.get("registers", [])
        arefs.add_row(
            a["name"],
            ", ".join(
                p
                + (" (multicast)" if k in multicast else "")
                + (" (into registers)" if k in registers else "")
                for k, p in enumerate(a["payload"])
            ),
            str(a["slot_bytes"]),
            str(a["depth"]),
            str(a["release_lag"]),
        )
    console.print(arefs)
    for lp in info["loops"]:
        t = Table(
            title=f"{lp['role']} loop {lp['loop']}: {lp['stages']} stage(s), ops in issue order"
            + (
                f"; chained to loop {lp['loop'] + 1} (one pipeline across their boundary)"
                if lp["chained"]
                else ""
            )
        )
        for col in ("order", "op", "stage", "body #"):
            t.add_column(col, justify="left" if col == "op" else "right")
        for n in range(len(lp["ops"]) + 1):
            for w in [w for w in lp["waits"] if w["after"] == n]:
                what = w["op"].split(" = ")[0]
                t.add_row("", f"wait {what} (pending {w['pending']})", "", str(w["index"]))
            if n < len(lp["ops"]):
                o = lp["ops"][n]
                t.add_row(str(o["order"]), o["op"], str(o["stage"]), str(o["index"]))
        console.print(t)
    smem = info["smem"]
    table = Table(title=f"shared memory: {smem['bytes']} of {smem['limit']} bytes")
    for col in ("offset", "bytes", "holds"):
        table.add_column(col, justify="left" if col == "holds" else "right")
    for r in smem["regions"]:
        table.add_row(str(r["offset"]), str(r["bytes"]), r["what"])
    console.print(table)
    if "timeline" in info:
        tl = info["timeline"]
        busy = ", ".join(f"{u} {100 * v:.0f}%" for u, v in tl["utilisation"].items())
        console.print(
            f"steady state: {tl['ii']:,.0f} cycles per iteration; units busy: {busy}",
            markup=False,
            highlight=False,
        )
    if "measured" in info:
        m = info["measured"]
        console.print(
            f"measured: {m['ii']:,.0f} cycles per iteration (median of {m['iterations']} "
            f"iterations of loop {m['loop']} at {m['ghz']:.2f} GHz, {m['trace']}); "
            f"the model's error {100 * m['error']:+.1f}%",
            markup=False,
            highlight=False,
        )
