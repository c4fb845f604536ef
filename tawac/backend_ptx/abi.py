"""The launch ABI: kernel parameters, launch grid and the JSON sidecar (docs/abi.md)."""

from __future__ import annotations

from typing import Any

from xdsl.dialects import arith
from xdsl.dialects.builtin import (
    ArrayAttr,
    DictionaryAttr,
    Float32Type,
    IndexType,
    IntAttr,
    IntegerAttr,
    StringAttr,
    i64,
)
from xdsl.ir import Attribute, BlockArgument, SSAValue

from tawac import schedule
from tawac.diagnostics import CompileError
from tawac.dialects import hopper, ptx, tile

SMEM_SYMBOL = "tawac_smem"


def to_attr(x: Any) -> Attribute:
    if isinstance(x, Attribute):
        return x
    if isinstance(x, bool | int):
        return IntegerAttr(int(x), i64)
    if isinstance(x, str):
        return StringAttr(x)
    if isinstance(x, list | tuple):
        return ArrayAttr(to_attr(v) for v in x)
    if isinstance(x, dict):
        return DictionaryAttr({k: to_attr(v) for k, v in x.items()})
    raise TypeError(x)


def from_attr(a: Attribute) -> Any:
    """Plain Python data from the attributes `_to_attr` makes."""
    if isinstance(a, IntAttr):
        return a.data
    if isinstance(a, IntegerAttr):
        return a.value.data
    if isinstance(a, StringAttr):
        return a.data
    if isinstance(a, ArrayAttr):
        return [from_attr(v) for v in a]
    if isinstance(a, DictionaryAttr):
        return {k: from_attr(v) for k, v in a.data.items()}
    raise TypeError(a)


def _elem_name(t: Attribute) -> str:
    return str(t)


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

    def tensor_map(self, v: SSAValue, box: list[int], swizzle: int) -> str:
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

    def decls(self) -> list[DictionaryAttr]:
        out = []
        for name, (decl, abi) in self.entries.items():
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
    ) -> DictionaryAttr:
        """The launch ABI (docs/abi.md). A cluster of cx x cy programs is the launch's
        cluster shape, whose extents the runtime rounds the grid up to; a persistent
        kernel's one-dimensional grid has clusters of cx * cy CTAs along x, and
        `"program_cluster"` says which programs a cluster computes together."""
        args = []
        for a, name in zip(self.args, self.names, strict=True):
            t = a.type
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
        launch: dict[str, Any] = {
            "block": [threads, 1, 1],
            "cluster": [1, 1, 1],
            "dynamic_smem": smem,
            "grid": grid,
            "args": args,
        }
        if persistent:
            launch["grid"] = [{"persistent": 1}, {"const": 1}, {"const": 1}]
            launch["program_grid"] = grid
        if cluster != (1, 1):
            cx, cy = cluster
            launch["cluster"] = [cx * cy, 1, 1] if persistent else [cx, cy, 1]
            if persistent:
                launch["program_cluster"] = [cx, cy, 1]
        return to_attr(launch)  # type: ignore[return-value]


def _const(v: SSAValue) -> int | None:
    op = v.owner
    if isinstance(op, arith.ConstantOp) and isinstance(op.value, IntegerAttr):
        return op.value.value.data
    return None


def _pid_times(v: SSAValue) -> tuple[int, int] | None:
    """(axis, c) if v = program_id(axis) * c (or program_id(axis) itself: c = 1)."""
    op = v.owner
    if isinstance(op, tile.ProgramIdOp):
        return op.axis.data, 1
    if not isinstance(op, arith.MuliOp):
        return None
    for a, b in ((op.lhs, op.rhs), (op.rhs, op.lhs)):
        c = _const(b)
        if isinstance(a.owner, tile.ProgramIdOp) and c is not None:
            return a.owner.axis.data, c
    return None


def infer_grid(kernel: tile.KernelOp) -> list[dict[str, Any]]:
    """The launch grid from the stores: a store at `program_id(a) * T` along dimension d
    of tensor X means axis a spans ceil(size(X, d) / T) programs."""
    recorded = schedule.of(kernel)
    if recorded.persistent:
        return from_attr(recorded.program_grid)
    names = [a.name_hint or f"arg{i}" for i, a in enumerate(kernel.body.block.args)]
    grid: list[dict[str, Any] | None] = [None, None, None]
    used = {op.axis.data for op in kernel.walk() if isinstance(op, tile.ProgramIdOp)}
    for st in kernel.walk():
        if not isinstance(st, tile.StoreOp | hopper.TmaStoreOp):
            continue
        dest = st.dest
        assert isinstance(dest, BlockArgument)
        for d, idx in enumerate(st.indices):
            found = _pid_times(idx)
            if found is None:
                continue
            axis, by = found
            entry = {"cdiv": {"arg": names[dest.index], "dim": d}, "by": by}
            if grid[axis] is None:
                grid[axis] = entry
    out: list[dict[str, Any]] = []
    for axis in range(3):
        g = grid[axis]
        if g is not None:
            out.append(g)
            continue
        if axis in used:
            raise CompileError(
                f"cannot infer the launch grid along axis {'xyz'[axis]}: store a tile at "
                f"coordinate program_id {'xyz'[axis]} * <tile size>",
                kernel,
            )
        out.append({"const": 1})
    return out


def sidecar(entry: ptx.EntryOp) -> dict[str, Any]:
    """The JSON sidecar of an entry (docs/abi.md)."""
    launch = from_attr(entry.launch)
    return {
        "format": 1,
        "kernel": entry.sym_name.data,
        "target": "sm_90a",
        **launch,
        "params": [from_attr(p)["abi"] for p in entry.params],
    }
