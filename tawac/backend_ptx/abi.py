"""The launch ABI: kernel parameters, launch grid and the JSON sidecar (docs/abi.md)."""

from __future__ import annotations

from typing import Any

from xdsl.dialects.builtin import (
    DictionaryAttr,
    Float32Type,
    IndexType,
    StringAttr,
)
from xdsl.ir import Attribute, BlockArgument, Operation, SSAValue

from tawac.analysis.grid import checks_of, decomposition_of, from_attr, to_attr, workspace_of
from tawac.dialects import ptx, tile
from tawac.support.diagnostics import CompileError
from tawac.target import HOPPER

SMEM_SYMBOL = "tawac_smem"
#: The trailing parameter of an instrumented build: the trace buffer's address.
TRACE_PARAM = "tawac_trace"


def _elem_name(t: Attribute) -> str:
    return str(t)


def arg_specs(kernel: tile.KernelOp) -> list[dict[str, Any]]:
    """The sidecar's "args" of `kernel` (docs/abi.md): its tensor arguments (name, dtype,
    rank, dimension names) and scalars in order, less the workspace buffers the launcher
    allocates (`workspace_of`)."""
    workspace = workspace_of(kernel)
    args: list[dict[str, Any]] = []
    for i, a in enumerate(kernel.body.block.args):
        t, name = a.type, a.name_hint or f"arg{i}"
        if name in workspace:
            continue  # allocated by the launcher (its "workspace" entry)
        if isinstance(t, tile.GlobalTensorType):
            args.append(
                {
                    "name": name,
                    "kind": "tensor",
                    "dtype": _elem_name(t.element_type),
                    "rank": t.rank,
                    "dims": [n.data for n in t.dim_names],
                }
            )
        elif isinstance(t, Float32Type):
            args.append({"name": name, "kind": "scalar", "dtype": "f32"})
        elif isinstance(t, IndexType):
            args.append({"name": name, "kind": "scalar", "dtype": "s32"})
    return args


class ParamTable:
    """The entry's parameters, registered as the lowering needs them."""

    def __init__(self, kernel: tile.KernelOp):
        self.kernel = kernel
        self.args = kernel.body.block.args
        self.names = [a.name_hint or f"arg{i}" for i, a in enumerate(self.args)]
        self.entries: dict[str, tuple[str, dict[str, Any]]] = {}

    def _arg(self, v: SSAValue) -> str:
        if not isinstance(v, BlockArgument) or v.owner is not self.kernel.body.block:
            raise CompileError("convert-to-ptx: expected a kernel argument", None)
        return self.names[v.index]

    def _add(self, name: str, decl: str, abi: dict[str, Any]) -> str:
        self.entries.setdefault(name, (decl, abi))
        return name

    def tensor_map(self, v: SSAValue, box: list[int], swizzle: int, op: Operation) -> str:
        """The parameter of a tensor map of `v` with this box (elements per dimension,
        innermost first); a located error at `op` where a box dimension exceeds what
        TMA copies (`HOPPER.tma_max_box`): cuTensorMapEncodeTiled would refuse it at
        launch."""
        too_big = [b for b in box if b > HOPPER.tma_max_box]
        if too_big:
            raise CompileError(
                f"convert-to-ptx: a TMA box of {'x'.join(str(b) for b in reversed(box))} "
                f"elements: TMA copies at most {HOPPER.tma_max_box} along each dimension "
                "(use smaller tiles)",
                op,
            )
        arg = self._arg(v)
        key = "x".join(str(b) for b in box)
        return self._add(
            f"{arg}_tmap_{key}",
            ".align 64 .b8 [128]",
            {
                "kind": "tensor_map",
                "arg": arg,
                "box": box,
                "swizzle": f"{swizzle}B" if swizzle else "none",
            },
        )

    def pointer(self, v: SSAValue) -> str:
        arg = self._arg(v)
        return self._add(f"{arg}_ptr", ".u64", {"kind": "pointer", "arg": arg})

    def aligned(self, v: SSAValue) -> None:
        """The kernel stores whole 8- or 16-byte vectors into this tensor's rows: its
        pointer entry says `"align": 16`, and the launcher gives it a 16-byte aligned
        base, strides and rows (a padded copy otherwise, as for a TMA-stored tensor,
        docs/abi.md)."""
        name = self.pointer(v)
        self.entries[name][1]["align"] = 16

    def dim(self, v: SSAValue, d: int) -> str:
        arg = self._arg(v)
        return self._add(
            f"{arg}_dim{d}", ".s32", {"kind": "dim", "arg": arg, "dim": d, "type": "s32"}
        )

    def stride(self, v: SSAValue, d: int) -> str:
        arg = self._arg(v)
        return self._add(
            f"{arg}_stride{d}", ".s64", {"kind": "stride", "arg": arg, "dim": d, "type": "s64"}
        )

    def scalar(self, v: SSAValue) -> tuple[str, str]:
        """A scalar argument passed by value: (parameter name, PTX type)."""
        arg = self._arg(v)
        ty = "f32" if isinstance(v.type, Float32Type) else "s32"
        return self._add(arg, f".{ty}", {"kind": "scalar", "arg": arg, "type": ty}), ty

    def trace_buffer(self) -> str:
        """The trace buffer of an instrumented build: a `.u64` global address, always
        the entry's last parameter (docs/abi.md, "trace")."""
        return self._add(TRACE_PARAM, ".u64", {"kind": "trace"})

    def decls(self) -> list[DictionaryAttr]:
        out = []
        entries = sorted(self.entries.items(), key=lambda e: e[0] == TRACE_PARAM)
        for name, (decl, abi) in entries:
            out.append(
                DictionaryAttr(
                    {"name": StringAttr(name), "ptx": StringAttr(decl), "abi": to_attr(abi)}
                )
            )
        return out

    def launch(
        self,
        threads: int,
        smem: int,
        grid: list[dict[str, Any]],
        persistent: bool = False,
        cluster: tuple[int, int] = (1, 1),
        ctas_per_sm: int = 1,
    ) -> DictionaryAttr:
        """The launch ABI (docs/abi.md). A cluster of cx x cy programs is the launch's
        cluster shape, whose extents the runtime rounds the grid up to; a persistent
        kernel's one-dimensional grid has clusters of cx * cy CTAs along x, and
        `"program_cluster"` says which programs a cluster computes together."""
        workspace = workspace_of(self.kernel)
        args = arg_specs(self.kernel)
        launch: dict[str, Any] = {
            "block": [threads, 1, 1],
            "cluster": [1, 1, 1],
            "dynamic_smem": smem,
            "grid": grid,
            "args": args,
        }
        if workspace:
            launch["workspace"] = [
                {"name": n, "dtype": w["dtype"], "zero": bool(w["zero"]), "shape": w["shape"]}
                for n, w in workspace.items()
            ]
        checks = checks_of(self.kernel)
        if checks:
            launch["checks"] = checks
        if persistent:
            stream_k = decomposition_of(self.kernel)["kind"] == "stream_k"
            every = {"fill": True} if stream_k else {}
            launch["grid"] = [
                {"persistent": ctas_per_sm, **every},
                {"const": 1},
                {"const": 1},
            ]
            launch["program_grid"] = grid
        if cluster != (1, 1):
            cx, cy = cluster
            launch["cluster"] = [cx * cy, 1, 1] if persistent else [cx, cy, 1]
            if persistent:
                launch["program_cluster"] = [cx, cy, 1]
        return to_attr(launch)  # type: ignore[return-value]


def sidecar(entry: ptx.EntryOp) -> dict[str, Any]:
    """The JSON sidecar of an entry (docs/abi.md)."""
    launch = from_attr(entry.launch)
    for w in launch.get("workspace", []):
        w["zero"] = bool(w["zero"])  # an attribute holds a boolean as an integer
    for axis in launch["grid"]:
        if "fill" in axis:
            axis["fill"] = bool(axis["fill"])
    return {
        "format": 1,
        "kernel": entry.sym_name.data,
        "target": HOPPER.name,
        **launch,
        "params": [from_attr(p)["abi"] for p in entry.params],
    }
