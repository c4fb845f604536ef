"""The compiler driver: parse, verify, run a pass pipeline, print PTX, call ptxas.

Every failure the user can cause becomes one `CompileError` with a location where there
is one; the CLI prints it and exits non-zero.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from xdsl.context import Context
from xdsl.dialects.builtin import FileLineColLoc, IntAttr, ModuleOp, StringAttr, UnknownLoc
from xdsl.ir import Operation
from xdsl.parser import Parser
from xdsl.passes import ModulePass, PassPipeline
from xdsl.utils.exceptions import ParseError, VerifyException
from xdsl.utils.lexer import Span

from tawac.backend_ptx.abi import sidecar
from tawac.backend_ptx.convert_to_ptx import ConvertToPtxPass
from tawac.backend_ptx.printer import print_module, ptx_modules
from tawac.context import make_context
from tawac.diagnostics import CompileError
from tawac.dialects import tile
from tawac.options import PipelineOptions
from tawac.passes.coarse_pipeline import CoarsePipelinePass
from tawac.passes.cooperative_consumers import CooperativeConsumersPass
from tawac.passes.lower_aref import LowerArefPass
from tawac.passes.persistent import PersistentPass
from tawac.passes.pingpong import PingpongPass
from tawac.passes.pipeline import PipelinePass
from tawac.passes.tma_store import TmaStorePass
from tawac.passes.warp_specialize import WarpSpecializePass

PASSES: dict[str, Callable[[], type[ModulePass]]] = {
    p.name: (lambda p=p: p)
    for p in (
        WarpSpecializePass,
        PipelinePass,
        PersistentPass,
        CoarsePipelinePass,
        CooperativeConsumersPass,
        LowerArefPass,
        PingpongPass,
        TmaStorePass,
        ConvertToPtxPass,
    )
}


def default_pipeline(**options: Any) -> str:
    """The pass pipeline `tawac compile` runs, from its options."""
    return PipelineOptions(**options).pipeline()


_RESULTS = re.compile(r"(?:%[^\s,=:]+(?::\d+)?\s*,\s*)*%[^\s,=:]+(?::\d+)?\s*=\s*")


class _LocatingParser(Parser):
    """Attaches `file:line:col` of the op name (MLIR's convention) to every op parsed
    without an explicit `loc(...)`."""

    def parse_operation(self) -> Operation:
        start = self._current_token.span
        results = _RESULTS.match(str(start.input.content), start.start)
        pos = results.end() if results is not None else start.start
        name = Span(pos, pos + 1, start.input)
        try:
            op = super().parse_operation()
        except ParseError as e:
            if "is not registered" not in e.msg or getattr(e, "at_op_name", False):
                raise
            located = ParseError(name, e.msg)
            located.at_op_name = True  # type: ignore[attr-defined]
            raise located from None
        if isinstance(op.location, UnknownLoc):
            loc = name.get_location()
            op.location = FileLineColLoc(StringAttr(loc.file), IntAttr(loc.line), IntAttr(loc.col))
        return op

    def _located_verify(self, parse):
        """Run a type/attribute parse; a verifier failure is reported where it began."""
        start = self._current_token.span
        try:
            return parse()
        except VerifyException as e:
            raise ParseError(Span(start.start, self.pos, start.input), _verify_message(e)) from None

    def parse_optional_type(self):
        return self._located_verify(super().parse_optional_type)

    def parse_optional_attribute(self):
        return self._located_verify(super().parse_optional_attribute)


def _parse_error(e: ParseError) -> CompileError:
    loc = e.span.get_location()
    msg = e.msg.strip().splitlines()[0] if e.msg.strip() else "parse error"
    return CompileError(msg, location=str(loc))


def verify(module: ModuleOp) -> None:
    """Verify every op, innermost first, reporting the first failure at its location."""
    for op in module.walk(reverse=True):
        try:
            op.verify(verify_nested_ops=False)
        except VerifyException as e:
            raise CompileError(_verify_message(e), op) from None


def _verify_message(e: Exception) -> str:
    msg = str(e.args[0]) if e.args else str(e)
    msg = msg.removeprefix("Operation does not verify: ")
    return msg.strip().splitlines()[0]


def parse_text(text: str, filename: str, ctx: Context | None = None) -> ModuleOp:
    ctx = ctx if ctx is not None else make_context()
    parser = _LocatingParser(ctx, text, filename)
    try:
        module = parser.parse_module()
    except ParseError as e:
        raise _parse_error(e) from None
    except VerifyException as e:  # type verifiers run while parsing: the type just ended
        loc = parser._current_token.span.get_location()
        raise CompileError(_verify_message(e), location=str(loc)) from None
    verify(module)
    return module


def parse_file(path: str | Path, ctx: Context | None = None) -> ModuleOp:
    p = Path(path)
    try:
        text = p.read_text()
    except OSError as e:
        raise CompileError(f"cannot read {path}: {e.strerror}") from None
    return parse_text(text, str(path), ctx)


def make_pipeline(spec: str, callback=None) -> PassPipeline:
    try:
        return PassPipeline.parse_spec(PASSES, spec, callback)
    except Exception as e:  # malformed spec or unknown pass/option
        raise CompileError(f"invalid pass pipeline '{spec}': {e}") from None


def run_pipeline(module: ModuleOp, spec: str, ctx: Context | None = None, callback=None) -> None:
    ctx = ctx if ctx is not None else make_context()
    make_pipeline(spec, callback).apply(ctx, module)
    verify(module)


# --- ptxas -----------------------------------------------------------------------------------


def find_ptxas() -> str:
    """ptxas from PATH, $CUDA_HOME/bin, or the nvidia-cuda-nvcc wheel."""
    env = os.environ.get("TAWAC_PTXAS")
    if env:
        return env
    found = shutil.which("ptxas")
    if found is not None:
        return found
    for var in ("CUDA_HOME", "CUDA_PATH"):
        home = os.environ.get(var)
        if home and (Path(home) / "bin" / "ptxas").is_file():
            return str(Path(home) / "bin" / "ptxas")
    for site in sys.path:
        for sub in ("nvidia/cu13/bin/ptxas", "nvidia/cuda_nvcc/bin/ptxas"):
            cand = Path(site) / sub
            if cand.is_file():
                return str(cand)
    raise CompileError(
        "ptxas not found: put it on PATH, set CUDA_HOME, or `pip install tawac[ptxas]`"
    )


def assemble(ptx_text: str, ptxas: str | None = None, verbose: bool = False) -> tuple[bytes, str]:
    """Run `ptxas -arch=sm_90a`; returns (cubin, ptxas's report)."""
    exe = ptxas if ptxas is not None else find_ptxas()
    with tempfile.TemporaryDirectory(prefix="tawac-") as tmp:
        src, dst = Path(tmp) / "kernel.ptx", Path(tmp) / "kernel.cubin"
        src.write_text(ptx_text)
        cmd = [exe, "-arch=sm_90a", str(src), "-o", str(dst)]
        if verbose:
            cmd.insert(1, "-v")
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        except OSError as e:
            raise CompileError(f"cannot run ptxas ({exe}): {e.strerror}") from None
        report = proc.stdout + proc.stderr
        if proc.returncode != 0:
            first = next((ln for ln in report.splitlines() if ln.strip()), "no output")
            raise CompileError(f"ptxas failed (exit {proc.returncode}): {first}")
        return dst.read_bytes(), report


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
    module: ModuleOp, *, cubin: bool = False, ptxas: str | None = None, **options: Any
) -> CompileResult:
    """Compile a parsed module with the default pipeline; `options` are
    `PipelineOptions` fields."""
    pipeline = default_pipeline(**options)
    kernels = [op for op in module.body.block.ops if isinstance(op, tile.KernelOp)]
    if len(kernels) != 1:
        raise CompileError(f"expected exactly one tile.kernel, found {len(kernels)}")
    original = kernels[0].clone()
    run_pipeline(module, pipeline)
    pms = ptx_modules(module)
    text = print_module(pms[0])
    entry = pms[0].body.block.first_op
    result = CompileResult(text, sidecar(entry), original, ir=module)  # type: ignore[arg-type]
    if cubin:
        result.cubin, result.ptxas_report = assemble(text, ptxas, verbose=True)
    return result


def compile_file(path: str | Path, **options: Any) -> CompileResult:
    """Compile one `.mlir` file; `cubin=True` also assembles it."""
    options.setdefault("cubin", True)
    return compile_module(parse_file(path), **options)
