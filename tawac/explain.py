"""`tawac explain`: what the compiler decided for a kernel, as tables or JSON.

Runs the default pipeline up to the PTX lowering and reads the decisions where they are
recorded as data: the kernel's `#tawac.schedule` (ring depth, MMA depth, shared memory,
persistent grid), the partitions (roles, warp groups, register budgets), the arefs
before they are lowered (payload, bytes, depth, release lag) and the shared-memory
allocations after (the plan of `tawac.schedule.smem`).
"""

from __future__ import annotations

from typing import Any

from xdsl.dialects.builtin import ModuleOp

from tawac import schedule
from tawac.backend_ptx import abi
from tawac.diagnostics import CompileError
from tawac.dialects import aref, hopper, tile
from tawac.driver import run_pipeline
from tawac.options import PipelineOptions
from tawac.target import HOPPER


def _kernel(module: ModuleOp) -> tile.KernelOp:
    kernels = [op for op in module.body.block.ops if isinstance(op, tile.KernelOp)]
    if len(kernels) != 1:
        raise CompileError(f"expected exactly one tile.kernel, found {len(kernels)}")
    return kernels[0]


def _arefs(kernel: tile.KernelOp, mma_depth: int) -> list[dict[str, Any]]:
    """Each aref as the pipeline left it (before lower-aref)."""
    out = []
    for i, create in enumerate(o for o in kernel.walk() if isinstance(o, aref.CreateOp)):
        t = create.result.type
        assert isinstance(t, aref.ArefType)
        deferred = any(
            isinstance(u.operation, aref.ConsumedOp) and u.operation.deferred is not None
            for u in create.result.uses
        )
        slot = sum(hopper.smem_ring_type(p, 1).tile_type.nbytes for p in t.payload)
        out.append(
            {
                "name": create.result.name_hint or f"aref{i}",
                "payload": [str(p) for p in t.payload],
                "slot_bytes": slot,
                "depth": t.depth.data,
                "release_lag": mma_depth if deferred else 0,
            }
        )
    return out


def _smem_map(kernel: tile.KernelOp, arefs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The shared-memory allocations in offset order, named after what they hold."""
    rings = [(a["name"], p) for a in arefs for p in a["payload"]]
    regions: list[dict[str, Any]] = []
    barriers = iter(a["name"] for a in arefs for _ in (0, 1))
    for op in kernel.walk():
        if isinstance(op, hopper.SmemAllocOp):
            t = op.result.type
            assert isinstance(t, hopper.SmemRingType)
            staging = op.result.name_hint == "staging"
            what = "staging tile" if staging else "ring of {} {}".format(*rings.pop(0))
            size = hopper.ring_bytes(t)
            regions.append({"offset": op.offset.value.data, "bytes": size, "what": what})
        elif isinstance(op, hopper.MbarrierAllocOp):
            count = op.result.type.count.data
            what = f"{next(barriers)} {op.result.name_hint or 'barriers'} mbarriers"
            regions.append({"offset": op.offset.value.data, "bytes": 8 * count, "what": what})
    return sorted(regions, key=lambda r: r["offset"])


def explain_module(module: ModuleOp, options: PipelineOptions) -> dict[str, Any]:
    """The decisions of the default pipeline for the module's kernel, as plain data."""
    kernel = _kernel(module)
    run_pipeline(module, options.pipeline(stop="lower-aref"))
    plan = schedule.of(kernel)
    arefs = _arefs(kernel, plan.get("mma_depth") or 0)
    run_pipeline(module, options.pipeline(start="lower-aref", stop="convert-to-ptx"))
    plan = schedule.of(kernel)
    parts = [p for p in kernel.body.block.ops if isinstance(p, aref.PartitionOp)]
    roles = [
        {
            "role": p.role.data,
            "warp_groups": p.warp_groups.data,
            "threads": HOPPER.warp_group_size * p.warp_groups.data,
            "registers": p.regs.data,
        }
        for p in parts
    ]
    grid = abi.infer_grid(kernel)
    return {
        "kernel": kernel.sym_name.data,
        "target": HOPPER.name,
        "threads": sum(r["threads"] for r in roles),
        "persistent": plan.persistent,
        "grid": grid,
        "stages": plan.get("stages"),
        "mma_depth": plan.get("mma_depth"),
        "roles": roles,
        "arefs": arefs,
        "smem": {
            "bytes": plan.get("smem_bytes") or 0,
            "limit": HOPPER.smem_per_block,
            "regions": _smem_map(kernel, arefs),
        },
    }


def _grid_text(grid: list[Any]) -> str:
    def axis(a: Any) -> str:
        if isinstance(a, dict) and "cdiv" in a:
            c = a["cdiv"]
            return f"cdiv({c['arg']}.shape[{c['dim']}], {a['by']})"
        if isinstance(a, dict) and "const" in a:
            return str(a["const"])
        return str(a)

    return " x ".join(axis(a) for a in grid)


def render(info: dict[str, Any], console) -> None:
    """The tables of `explain_module`'s data on a rich console."""
    from rich.table import Table

    grid = _grid_text(info["grid"])
    lines = [
        f"kernel @{info['kernel']} on {info['target']}: {info['threads']} threads per CTA",
        f"grid: one CTA per SM, looping over {grid} programs"
        if info["persistent"]
        else f"grid: {grid} CTAs",
        f"pipeline: ring depth {info['stages']}, {info['mma_depth']} MMA group(s) in flight",
    ]
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
        arefs.add_row(
            a["name"],
            ", ".join(a["payload"]),
            str(a["slot_bytes"]),
            str(a["depth"]),
            str(a["release_lag"]),
        )
    console.print(arefs)
    smem = info["smem"]
    table = Table(title=f"shared memory: {smem['bytes']} of {smem['limit']} bytes")
    for col in ("offset", "bytes", "holds"):
        table.add_column(col, justify="left" if col == "holds" else "right")
    for r in smem["regions"]:
        table.add_row(str(r["offset"]), str(r["bytes"]), r["what"])
    console.print(table)
