"""The compiler core: parse, verify, run a pass pipeline, print PTX, call ptxas.

It imports xDSL and every pass. `tawac.driver` above it is the one compile path of the
command line, `tawac tune` and `tawac.torch` (options, the compile cache, then this
module on a miss), and re-exports the names here.

Every failure the user can cause becomes one `CompileError` with a location where there
is one; the CLI prints it and exits non-zero.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from xdsl.context import Context
from xdsl.dialects.builtin import DictionaryAttr, IntegerAttr, ModuleOp
from xdsl.passes import ModulePass, PassPipeline

from tawac.backend_ptx.abi import sidecar
from tawac.backend_ptx.convert_to_ptx import ConvertToPtxPass
from tawac.backend_ptx.printer import print_module, ptx_modules
from tawac.dialects import tile
from tawac.ir.context import make_context
from tawac.ir.parser import parse_text as _parse_mlir
from tawac.ir.ttir import parse_ttir
from tawac.ir.verifier import verify
from tawac.passes.canonicalize import CanonicalizePass
from tawac.passes.coarse_pipeline import CoarsePipelinePass
from tawac.passes.convert_ttir import ConvertTtir
from tawac.passes.cooperative_consumers import CooperativeConsumersPass
from tawac.passes.fuse_loops import FuseLoopsPass
from tawac.passes.group_heads import GroupHeadsPass
from tawac.passes.guard_masks import GuardMasksPass
from tawac.passes.lower_aref import LowerArefPass
from tawac.passes.overlap_epilogue import OverlapEpiloguePass
from tawac.passes.pad_loads import PadLoadsPass
from tawac.passes.persistent import PersistentPass
from tawac.passes.pingpong import PingpongPass
from tawac.passes.pipeline import PipelinePass
from tawac.passes.plan import PlanPass
from tawac.passes.reread_slots import RereadSlotsPass
from tawac.passes.reuse_slots import ReuseSlotsPass
from tawac.passes.sink_reductions import SinkReductionsPass
from tawac.passes.split_k import SplitKPass, key_split
from tawac.passes.swap_ab import SwapAbPass
from tawac.passes.tma_store import TmaStorePass
from tawac.passes.trace import TracePass
from tawac.passes.warp_specialize import WarpSpecializePass
from tawac.passes.widen import WidenPass
from tawac.support import cache
from tawac.support.diagnostics import CompileError
from tawac.support.options import DEFAULT_TIME_LIMIT, PipelineOptions
from tawac.support.ptxas import assemble, find_ptxas
from tawac.support.timelimit import TimeLimit, set_stage

__all__ = [
    "PASSES",
    "CompileResult",
    "TimeLimit",
    "assemble",
    "compile_file",
    "compile_module",
    "compile_source",
    "default_pipeline",
    "find_ptxas",
    "make_pipeline",
    "parse_file",
    "parse_text",
    "run_pipeline",
    "verify",
]

PASSES: dict[str, Callable[[], type[ModulePass]]] = {
    p.name: (lambda p=p: p)
    for p in (
        CanonicalizePass,
        SplitKPass,
        SwapAbPass,
        GroupHeadsPass,
        WidenPass,
        PadLoadsPass,
        GuardMasksPass,
        SinkReductionsPass,
        WarpSpecializePass,
        PlanPass,
        PipelinePass,
        ReuseSlotsPass,
        PersistentPass,
        CoarsePipelinePass,
        OverlapEpiloguePass,
        CooperativeConsumersPass,
        RereadSlotsPass,
        LowerArefPass,
        PingpongPass,
        TmaStorePass,
        TracePass,
        ConvertToPtxPass,
        ConvertTtir,
        FuseLoopsPass,
    )
}


def parse_text(
    text: str, filename: str, ctx=None, params: Mapping[str, object] | None = None
) -> ModuleOp:
    """Parse and verify a source: a `.mlir` file of the tile dialect (`tawac.ir.parser`), or
    a Triton kernel's `.ttir` (`tawac.ir.ttir`), converted to a tile kernel (`convert-ttir`).
    Every failure is one located `CompileError`."""
    if not filename.endswith(".ttir"):
        return _parse_mlir(text, filename, ctx, params)
    if params:
        raise CompileError(
            f"{filename}: -D sets parameters of .mlir sources; a .ttir's constants are "
            "Triton's constexprs, fixed when it was made"
        )
    module = parse_ttir(text, filename)
    ConvertTtir().apply(make_context(), module)
    verify(module)
    return module


def parse_file(path: str | Path, ctx=None, params: Mapping[str, object] | None = None):
    """`parse_text` of a file."""
    from tawac.support.files import read_source

    return parse_text(read_source(path), str(path), ctx, params)


def default_pipeline(**options: Any) -> str:
    """The pass pipeline `tawac compile` runs, from its options."""
    return PipelineOptions(**options).pipeline()


def make_pipeline(spec: str, callback=None, schedule: str | None = None) -> PassPipeline:
    """The pipeline `spec` names; with `schedule`, every `plan` pass uses that planner."""
    try:
        pipeline = PassPipeline.parse_spec(PASSES, spec, callback)
    except Exception as e:  # malformed spec or unknown pass/option
        raise CompileError(f"invalid pass pipeline '{spec}': {e}") from None
    if schedule is None:
        return pipeline
    passes = tuple(
        dataclasses.replace(p, schedule=schedule) if isinstance(p, PlanPass) else p
        for p in pipeline.passes
    )
    return dataclasses.replace(pipeline, passes=passes)


def run_pipeline(
    module: ModuleOp,
    spec: str,
    ctx: Context | None = None,
    callback=None,
    schedule: str | None = None,
) -> None:
    ctx = ctx if ctx is not None else make_context()

    def between(prev, op, nxt):
        set_stage(f"running {nxt.name}" if nxt is not None else "verifying")
        if callback is not None:
            callback(prev, op, nxt)

    make_pipeline(spec, between, schedule).apply(ctx, module)
    verify(module)


# --- the main job ----------------------------------------------------------------------------


@dataclass
class CompileResult:
    ptx: str
    sidecar: dict[str, Any]
    kernel: tile.KernelOp  # the user's kernel, unlowered (for the reference interpreter)
    cubin: bytes | None = None
    ptxas_report: str = ""
    ir: ModuleOp | None = field(default=None, repr=False)


def compile_module(
    module: ModuleOp,
    *,
    cubin: bool = False,
    ptxas: str | None = None,
    time_limit: float | None = None,
    start: str | None = None,
    **options: Any,
) -> CompileResult:
    """Compile a parsed module with the default pipeline; `options` are
    `PipelineOptions` fields; `time_limit` bounds the seconds it may take; `start` (a
    pass name) runs the pipeline from that pass on, for a module the passes before it
    have already run over."""
    with TimeLimit(time_limit):
        return _compile_module(module, cubin=cubin, ptxas=ptxas, start=start, **options)


def _compile_module(
    module: ModuleOp, *, cubin: bool, ptxas: str | None, start: str | None, **options: Any
):
    opts = PipelineOptions(**options)
    pipeline = opts.pipeline(start=start)
    kernels = [op for op in module.body.block.ops if isinstance(op, tile.KernelOp)]
    if len(kernels) != 1:
        raise CompileError(f"expected exactly one tile.kernel, found {len(kernels)}")
    original = kernels[0].clone()
    run_pipeline(module, pipeline)
    pms = ptx_modules(module)
    text = print_module(pms[0])
    entry = pms[0].body.block.first_op
    side = _user_sidecar(sidecar(entry), original)
    if not (opts.split_k > 1 or opts.stream_k or opts.swap_ab):
        fact = key_split(original)
        if fact is not None:
            side["key_split"] = fact
    result = CompileResult(text, side, original, ir=module)
    if cubin:
        result.cubin, result.ptxas_report = cache.assemble(text, ptxas)
    return result


def _user_sidecar(side: dict[str, Any], kernel: tile.KernelOp) -> dict[str, Any]:
    """The sidecar with what the user's kernel says: each argument's access ("read",
    "write", "readwrite", "none": loaded, stored) and the kernel parameters' values."""
    from tawac.analysis.args import kernel_arg_uses

    loads, stores = kernel_arg_uses(kernel)
    for i, arg in enumerate(side["args"]):
        access = {(True, True): "readwrite", (True, False): "read", (False, True): "write"}
        arg["access"] = access.get((i in loads, i in stores), "none")
    declared = kernel.attributes.get("params")
    if isinstance(declared, DictionaryAttr):
        side["kernel_params"] = {
            k: v.value.data for k, v in declared.data.items() if isinstance(v, IntegerAttr)
        }
    return side


def compile_source(
    text: str,
    filename: str,
    *,
    params: Mapping[str, object] | None = None,
    time_limit: float | None = DEFAULT_TIME_LIMIT,
    **options: Any,
) -> CompileResult:
    """Compile the text of a `.mlir` file (`filename` names it in diagnostics), its
    kernel parameters set from `params`; `cubin=True` (the default) also assembles it.
    The whole compilation, parsing and ptxas included, takes at most `time_limit` s."""
    options.setdefault("cubin", True)
    with TimeLimit(time_limit):
        module = parse_text(text, filename, params=params)
        return compile_module(module, **options)


def compile_file(
    path: str | Path,
    *,
    params: Mapping[str, object] | None = None,
    time_limit: float | None = DEFAULT_TIME_LIMIT,
    **options: Any,
) -> CompileResult:
    """Compile one `.mlir` file (see `compile_source`)."""
    options.setdefault("cubin", True)
    with TimeLimit(time_limit):
        module = parse_file(path, params=params)
        return compile_module(module, **options)
