"""The sidecar's ABI as the launcher encodes it (docs/abi.md): its vocabulary, the
kernel's parameters packed into one arena, and the checks of a sidecar and of a call.

In: a sidecar dict (its "args", "params", "checks", "workspace", "trace") and a call's
arguments (torch tensors, python numbers). Out: `validate_sidecar` and `validate_args` /
`check_shapes`, which raise `LaunchError`; `ParamLayout`, the `void*[]` of every kernel
parameter at a fixed place, written per launch from `TensorView`s and numbers
(`pack_value`, `param_size`); `trace_bytes`, an instrumented build's buffer size; and the
tables the other runtime modules and the integrations read (`TENSOR_DTYPES`,
`WORKSPACE_DTYPES`, the scalar dtypes, `SWIZZLES`, the trace parameter's names).

`LaunchError`, which every part of the launcher raises, is defined here, the lowest of
them. Everything here but `_check_tensor` and `_view` (which read torch tensors) takes no
GPU and no torch.
"""

from __future__ import annotations

import ctypes
import numbers
import struct
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tawac.target.dtypes import ELEMENT_BYTES

SIDECAR_FORMAT = 1

# sidecar dtype -> (torch dtype attribute, CUtensorMapDataType member, bytes per element).
# TMA has no fp8 data type: fp8 tensors are copied as bytes (UINT8); boxes, strides and
# the 16-byte rules are in bytes, so a 128-byte swizzle row holds 128 fp8 elements.
TENSOR_DTYPES: dict[str, tuple[str, str, int]] = {
    name: (torch_name, map_type, ELEMENT_BYTES[name])
    for name, torch_name, map_type in (
        ("bf16", "bfloat16", "CU_TENSOR_MAP_DATA_TYPE_BFLOAT16"),
        ("f16", "float16", "CU_TENSOR_MAP_DATA_TYPE_FLOAT16"),
        ("f32", "float32", "CU_TENSOR_MAP_DATA_TYPE_FLOAT32"),
        ("f8E4M3FN", "float8_e4m3fn", "CU_TENSOR_MAP_DATA_TYPE_UINT8"),
        ("f8E5M2", "float8_e5m2", "CU_TENSOR_MAP_DATA_TYPE_UINT8"),
        ("i32", "int32", "CU_TENSOR_MAP_DATA_TYPE_INT32"),
    )
}
FP8_DTYPES = frozenset({"f8E4M3FN", "f8E5M2"})

SWIZZLES: dict[str, str] = {
    "none": "CU_TENSOR_MAP_SWIZZLE_NONE",
    "32B": "CU_TENSOR_MAP_SWIZZLE_32B",
    "64B": "CU_TENSOR_MAP_SWIZZLE_64B",
    "128B": "CU_TENSOR_MAP_SWIZZLE_128B",
}

# workspace buffer dtype -> (torch dtype attribute, bytes per element) (docs/abi.md,
# "Workspace buffers")
WORKSPACE_DTYPES: dict[str, tuple[str, int]] = {
    "f32": ("float32", 4),
    "i32": ("int32", 4),
}
#: The parameter kinds that may name a workspace buffer.
WORKSPACE_PARAM_KINDS = frozenset({"pointer", "dim", "stride"})

FLOAT_SCALAR_DTYPES = frozenset({"f32"})
INT_SCALAR_DTYPES = frozenset({"index", "s32", "i32", "s64", "i64"})

# param "type" -> struct format (little-endian, no padding)
PARAM_FORMATS: dict[str, str] = {
    "s32": "<i",
    "u32": "<I",
    "s64": "<q",
    "u64": "<Q",
    "f32": "<f",
}

PARAM_KINDS = frozenset({"tensor_map", "pointer", "dim", "stride", "scalar"})
TRACE_RECORD_BYTES = 16
#: Sync records per (CTA, warp group), after all the rings (docs/abi.md).
TRACE_HEADER_RECORDS = 2
#: The parameter of an instrumented build (the last one): the trace buffer's address,
#: which the launcher allocates (docs/abi.md, "trace"); its key in `ParamLayout.fill`'s
#: values, which no argument name can take.
TRACE_KIND = "trace"
TRACE_VALUE = "\0trace"
TENSOR_MAP_BYTES = 128


class LaunchError(RuntimeError):
    """A kernel could not be launched: bad arguments, bad sidecar or a CUDA driver error."""


@dataclass(frozen=True)
class TensorView:
    """What the launcher needs of a tensor: sizes, strides (elements), address, element size."""

    shape: tuple[int, ...]
    strides: tuple[int, ...]
    data_ptr: int
    elem_size: int
    #: an empty tensor's stand-in for TMA (which cannot describe a dimension of size 0):
    #: the sizes and strides of a zero buffer of at least one element per dimension at
    #: `data_ptr`; `shape` keeps the true sizes, which the kernel's loops and bounds read
    map_shape: tuple[int, ...] | None = None
    map_strides: tuple[int, ...] | None = None


def cdiv(a: int, b: int) -> int:
    """Ceiling division of non-negative integers."""
    return -(-a // b)


def pack_value(type_name: str, value: int | float) -> bytes:
    """The little-endian bytes of one scalar kernel parameter (`s32`, `s64`, `f32`, ...)."""
    fmt = PARAM_FORMATS.get(type_name)
    if fmt is None:
        raise LaunchError(f"unsupported parameter type {type_name!r}")
    if fmt == "<f":
        return struct.pack(fmt, float(value))
    try:
        return struct.pack(fmt, int(value))
    except struct.error as e:
        raise LaunchError(f"value {value} does not fit parameter type {type_name}") from e


def _param_type(param: Mapping[str, Any]) -> str:
    """The PARAM_FORMATS type of a parameter that is not a tensor map."""
    kind = param["kind"]
    if kind in ("pointer", TRACE_KIND):
        return "u64"
    return param.get("type", {"dim": "s32", "stride": "s64"}.get(kind, ""))


def param_size(param: Mapping[str, Any]) -> int:
    """Bytes of one PTX entry parameter of the sidecar."""
    if param["kind"] == "tensor_map":
        return TENSOR_MAP_BYTES
    return len(pack_value(_param_type(param), 0))


class ParamLayout:
    """Every parameter of a kernel at a fixed, 64-byte aligned place in one arena.

    The arena and its `void*[]` (`address`, what `cuLaunchKernel` takes) live as long as
    the kernel; a launch writes only the values (`fill`). The driver copies the values at
    the launch call (and a CUDA graph capture records them), so the next call may
    overwrite them.
    """

    ALIGN = 64

    def __init__(self, params: Sequence[Mapping[str, Any]]):
        self.params = list(params)
        self.offsets: list[int] = []
        size = 0
        for p in self.params:
            size = cdiv(size, self.ALIGN) * self.ALIGN
            self.offsets.append(size)
            size += param_size(p)
        self._arena = (ctypes.c_ubyte * (size + self.ALIGN))()
        base = ctypes.addressof(self._arena)
        self.shift = (-base) % self.ALIGN
        self.base = base + self.shift
        self._ptrs = (ctypes.c_void_p * max(len(self.params), 1))()
        for i, off in enumerate(self.offsets):
            self._ptrs[i] = self.base + off
        self._view = memoryview(self._arena).cast("B")

    @property
    def address(self) -> int:
        return ctypes.addressof(self._ptrs)

    def fill(
        self,
        values: Mapping[str, TensorView | int | float],
        encode_map: Callable[[int, Mapping[str, Any], TensorView, int], None],
    ) -> None:
        """Writes every parameter for these argument values (tensor views, already padded
        where needed, or python numbers); `encode_map(i, param, view, address)` writes the
        128-byte CUtensorMap of parameter i at `address`."""
        for i, p in enumerate(self.params):
            kind = p["kind"]
            value = values[TRACE_VALUE if kind == TRACE_KIND else p["arg"]]
            if kind == "tensor_map":
                encode_map(i, p, value, self.base + self.offsets[i])
                continue
            if kind == "pointer":
                value = value.data_ptr
            elif kind == "dim":
                value = value.shape[int(p["dim"])]
            elif kind == "stride":
                value = value.strides[int(p["dim"])]
            elif kind not in ("scalar", TRACE_KIND):
                raise LaunchError(f"unknown parameter kind {kind!r}")
            blob = pack_value(_param_type(p), value)
            at = self.shift + self.offsets[i]
            self._view[at : at + len(blob)] = blob

    def snapshot(self) -> bytes:
        """Every parameter's bytes, for `restore`."""
        return bytes(self._view[self.shift :])

    def restore(self, saved: bytes) -> None:
        self._view[self.shift :] = saved

    def read(self, i: int) -> bytes:
        """The bytes stored for parameter i (for tests and debugging)."""
        at = self.shift + self.offsets[i]
        return bytes(self._view[at : at + param_size(self.params[i])])


def validate_sidecar(sidecar: Mapping[str, Any]) -> None:
    """Checks the sidecar's structure and cross references; raises LaunchError."""
    fmt = sidecar.get("format")
    if fmt != SIDECAR_FORMAT:
        raise LaunchError(f"sidecar format {fmt!r} is not supported (expected {SIDECAR_FORMAT})")
    for key in ("kernel", "block", "grid", "args", "params"):
        if key not in sidecar:
            raise LaunchError(f"sidecar has no {key!r} entry")
    if len(sidecar["block"]) != 3 or len(sidecar.get("cluster", [1, 1, 1])) != 3:
        raise LaunchError("sidecar block and cluster must have 3 entries")
    if len(sidecar.get("program_cluster", [1, 1, 1])) != 3:
        raise LaunchError("sidecar program_cluster must have 3 entries")
    args = {a["name"]: a for a in sidecar["args"]}
    if len(args) != len(sidecar["args"]):
        raise LaunchError("sidecar argument names are not unique")
    for a in sidecar["args"]:
        if a["kind"] == "tensor" and a["dtype"] not in TENSOR_DTYPES:
            raise LaunchError(f"argument {a['name']!r}: unsupported tensor dtype {a['dtype']!r}")
        if a["kind"] not in ("tensor", "scalar"):
            raise LaunchError(f"argument {a['name']!r}: unknown kind {a['kind']!r}")
    _validate_trace(sidecar)
    _validate_checks(sidecar, args)
    workspace = _validate_workspace(sidecar, args)
    for p in sidecar["params"]:
        kind, name = p.get("kind"), p.get("arg")
        if kind == TRACE_KIND:
            continue
        if kind not in PARAM_KINDS:
            raise LaunchError(f"unknown parameter kind {kind!r}")
        if name in workspace:
            if kind not in WORKSPACE_PARAM_KINDS:
                raise LaunchError(
                    f"parameter {kind} cannot refer to workspace buffer {name!r} "
                    "(only pointer, dim and stride parameters can)"
                )
            rank = len(workspace[name]["shape"])
            if kind != "pointer" and not _is_int(p.get("dim"), 0, rank - 1):
                raise LaunchError(
                    f"parameter {kind} refers to dimension {p.get('dim')!r} of workspace "
                    f"buffer {name!r} of rank {rank}"
                )
            continue
        if name not in args:
            raise LaunchError(f"parameter {kind} refers to unknown argument {name!r}")
        want = "scalar" if kind == "scalar" else "tensor"
        if args[name]["kind"] != want:
            raise LaunchError(f"parameter {kind} needs a {want} argument, {name!r} is not")
        if kind == "tensor_map" and p.get("swizzle", "none") not in SWIZZLES:
            raise LaunchError(f"tensor_map for {name!r}: unknown swizzle {p.get('swizzle')!r}")


def _validate_checks(sidecar: Mapping[str, Any], args: Mapping[str, Mapping[str, Any]]) -> None:
    """The "checks" entries' structure: a tensor argument's dimension, equal to another's
    times a positive integer, or to a constant; at most a constant (`at_most`:
    `{"const"}`); or in blocks of `by`, at least another's blocks (`at_least`:
    `{"cdiv": {arg, dim}, "by"}`)."""
    for c in sidecar.get("checks", []):
        other = c.get("equals") if isinstance(c, Mapping) else None
        least = c.get("at_least") if isinstance(c, Mapping) else None
        most = c.get("at_most") if isinstance(c, Mapping) else None
        if isinstance(other, Mapping) and _is_int(other.get("const"), 0):
            refs = [c]
        elif isinstance(most, Mapping) and _is_int(most.get("const"), 0):
            refs = [c]
        elif isinstance(other, Mapping) and _is_int(other.get("times", 1), 1):
            refs = [c, other]
        elif (
            isinstance(least, Mapping)
            and isinstance(least.get("cdiv"), Mapping)
            and _is_int(least.get("by"), 1)
            and _is_int(c.get("by"), 1)
        ):
            refs = [c, least["cdiv"]]
        else:
            raise LaunchError(f"sidecar check {c!r} is not understood")
        for ref in refs:
            arg = args.get(ref.get("arg"))
            if arg is None or arg["kind"] != "tensor":
                raise LaunchError(f"sidecar check refers to unknown tensor {ref.get('arg')!r}")
            if not _is_int(ref.get("dim"), 0, int(arg.get("rank", 0)) - 1):
                raise LaunchError(f"sidecar check refers to a dimension {arg['name']!r} lacks")


def check_shapes(
    checks: Sequence[Mapping[str, Any]],
    shapes: Mapping[str, Sequence[int]],
    args: Sequence[Mapping[str, Any]],
) -> None:
    """Raises LaunchError where the arguments' shapes break one of the sidecar's
    "checks" (grouped query heads: q has G times the heads of k; a paged cache's page
    size: the key block; a row held whole in one block: at most its width; a per-program
    output with room for every program's store)."""
    dims = {a["name"]: a.get("dims") or [] for a in args}

    def name(arg: str, d: int) -> str:
        n = dims[arg][d] if d < len(dims[arg]) else ""
        return f"{arg}.shape[{d}]" + (f" ({n})" if n else "")

    for c in checks:
        have = shapes[c["arg"]][c["dim"]]
        if "at_most" in c:
            most = c["at_most"]["const"]
            if have > most:
                raise LaunchError(
                    f"{name(c['arg'], c['dim'])} is {have}: the kernel handles at most {most} "
                    "(a size it was compiled for; recompile it for a larger one)"
                )
            continue
        if "at_least" in c:
            o = c["at_least"]
            base, by = shapes[o["cdiv"]["arg"]][o["cdiv"]["dim"]], int(o["by"])
            programs, room = -(-base // by), -(-have // int(c["by"]))
            if room < programs:
                src = name(o["cdiv"]["arg"], o["cdiv"]["dim"])
                raise LaunchError(
                    f"{name(c['arg'], c['dim'])} is {have}: the launch runs {programs} "
                    f"programs ({src} is {base}, {by} a program), each storing "
                    f"{c['by']} along it, so it needs {programs * int(c['by'])} at least "
                    "(the programs past it would drop their results)"
                )
            continue
        o = c["equals"]
        if "const" in o:
            if have != o["const"]:
                raise LaunchError(
                    f"{name(c['arg'], c['dim'])} is {have}: the kernel needs {o['const']} "
                    "(a size it was compiled for)"
                )
            continue
        base, times = shapes[o["arg"]][o["dim"]], int(o.get("times", 1))
        if have != base * times:
            raise LaunchError(
                f"{name(c['arg'], c['dim'])} is {have}, {name(o['arg'], o['dim'])} is {base}: "
                f"the kernel needs {times} times as many (it was compiled for {times} query "
                f"heads per K/V head; recompile for {have}/{base})"
            )


def _is_int(v: Any, low: int, high: int | None = None) -> bool:
    """True for a python int (not a bool) in [low, high] (no upper bound: high is None)."""
    if not isinstance(v, int) or isinstance(v, bool):
        return False
    return low <= v and (high is None or v <= high)


def _validate_workspace(
    sidecar: Mapping[str, Any], args: Mapping[str, Mapping[str, Any]]
) -> dict[str, Mapping[str, Any]]:
    """The sidecar's "workspace" buffers (docs/abi.md, "Workspace buffers"), by name,
    checked: dtype, a shape of "grid"-like entries over tensor arguments, names unique
    and unlike every argument's."""
    entries = sidecar.get("workspace", [])
    if not isinstance(entries, list):
        raise LaunchError('sidecar "workspace" must be a list of buffers')
    out: dict[str, Mapping[str, Any]] = {}
    for w in entries:
        name = w.get("name") if isinstance(w, Mapping) else None
        if not isinstance(name, str) or not name:
            raise LaunchError(f'sidecar "workspace": every buffer needs a "name", got {w!r}')
        if name in args:
            raise LaunchError(f"workspace buffer {name!r} has the name of an argument")
        if name in out:
            raise LaunchError(f"workspace buffer names are not unique: {name!r}")
        if w.get("dtype") not in WORKSPACE_DTYPES:
            raise LaunchError(
                f"workspace buffer {name!r}: unsupported dtype {w.get('dtype')!r} "
                f"(expected one of {', '.join(WORKSPACE_DTYPES)})"
            )
        if not isinstance(w.get("zero", False), bool):
            raise LaunchError(f'workspace buffer {name!r}: "zero" must be true or false')
        shape = w.get("shape")
        if not isinstance(shape, list) or not shape:
            raise LaunchError(f'workspace buffer {name!r}: "shape" must be a non-empty list')
        for d, entry in enumerate(shape):
            _validate_extent(entry, args, f"workspace buffer {name!r} dimension {d}")
        out[name] = w
    return out


def _validate_extent(entry: Any, args: Mapping[str, Mapping[str, Any]], what: str) -> None:
    """Checks one `extent` entry's structure: `{"const": n}` with n >= 0, or a "cdiv" of a
    dimension of a tensor argument by a positive integer."""
    if isinstance(entry, Mapping) and "const" in entry:
        if not _is_int(entry["const"], 0):
            raise LaunchError(f"{what}: const must be a non-negative integer, got {entry!r}")
        return
    if isinstance(entry, Mapping) and "sms" in entry:
        if not _is_int(entry["sms"], 1):
            raise LaunchError(f"{what}: sms must be a positive integer, got {entry!r}")
        return
    ref = entry.get("cdiv") if isinstance(entry, Mapping) else None
    if not isinstance(ref, Mapping):
        raise LaunchError(f"{what}: sidecar entry {entry!r} is not understood")
    arg = args.get(ref.get("arg"))
    if arg is None or arg["kind"] != "tensor":
        raise LaunchError(f"{what} refers to unknown tensor argument {ref.get('arg')!r}")
    rank = int(arg.get("rank", 0))
    if not _is_int(ref.get("dim"), 0, rank - 1):
        raise LaunchError(
            f"{what} refers to dimension {ref.get('dim')!r} of {arg['name']!r} of rank {rank}"
        )
    if not _is_int(entry.get("by"), 1):
        raise LaunchError(f"{what}: divisor must be a positive integer, got {entry.get('by')!r}")
    if not _is_int(entry.get("times", 1), 1):
        raise LaunchError(f"{what}: times must be a positive integer, got {entry.get('times')!r}")


def _validate_trace(sidecar: Mapping[str, Any]) -> None:
    """An instrumented build's "trace" entry and its parameter, the last one, come
    together (docs/abi.md, "trace")."""
    params = sidecar["params"]
    kinds = [p.get("kind") for p in params]
    trace = sidecar.get("trace")
    if trace is None:
        if TRACE_KIND in kinds:
            raise LaunchError('sidecar has a trace parameter but no "trace" entry')
        return
    if kinds.count(TRACE_KIND) != 1 or kinds[-1] != TRACE_KIND:
        raise LaunchError('sidecar "trace" needs exactly one trace parameter, the last')
    for key in ("slots", "ctas", "warp_groups", "record_bytes"):
        v = trace.get(key)
        if not isinstance(v, int) or isinstance(v, bool) or v < 1:
            raise LaunchError(f'sidecar "trace": {key!r} must be a positive integer')
    if trace["record_bytes"] != TRACE_RECORD_BYTES:
        raise LaunchError(f'sidecar "trace": record_bytes must be {TRACE_RECORD_BYTES}')
    slots = trace["slots"]
    if slots < 2 or slots & (slots - 1):
        raise LaunchError('sidecar "trace": slots must be a power of two, at least 2')
    events = trace.get("events")
    if not isinstance(events, list) or any(
        not isinstance(e, Mapping) or e.get("id") != i for i, e in enumerate(events)
    ):
        raise LaunchError('sidecar "trace": events must be a list of {"id": i, ...} in order')


def trace_bytes(trace: Mapping[str, Any]) -> int:
    """The size of an instrumented build's trace buffer (docs/abi.md, "trace")."""
    slices = int(trace["ctas"]) * int(trace["warp_groups"])
    return slices * (int(trace["slots"]) + TRACE_HEADER_RECORDS) * TRACE_RECORD_BYTES


def _check_dim_names(
    sidecar_args: Sequence[Mapping[str, Any]], shapes: Mapping[str, Sequence[int]]
) -> None:
    """Sizes that share a symbolic name must agree; static (integer) sizes must match."""
    seen: dict[str, tuple[str, int, int]] = {}
    for a in sidecar_args:
        if a["kind"] != "tensor":
            continue
        shape = shapes[a["name"]]
        for d, dim_name in enumerate(a.get("dims") or ()):
            if dim_name is None:
                continue
            if isinstance(dim_name, int):
                if shape[d] != dim_name:
                    raise LaunchError(
                        f"argument {a['name']!r}: dimension {d} must be {dim_name}, got {shape[d]}"
                    )
                continue
            prev = seen.setdefault(dim_name, (a["name"], d, shape[d]))
            if prev[2] != shape[d]:
                raise LaunchError(
                    f"size {dim_name} differs: {prev[0]!r} dimension {prev[1]} is {prev[2]}, "
                    f"{a['name']!r} dimension {d} is {shape[d]}"
                )


def validate_args(sidecar_args: Sequence[Mapping[str, Any]], args: Sequence[Any]) -> None:
    """Checks call arguments against the sidecar "args"; raises LaunchError.

    Tensors: dtype, rank, innermost stride 1, consistent named sizes, and last (so that the
    other checks can be tested with CPU tensors) on a CUDA device.  Scalars: python numbers.
    """
    if len(args) != len(sidecar_args):
        names = ", ".join(a["name"] for a in sidecar_args)
        raise LaunchError(f"kernel takes {len(sidecar_args)} arguments ({names}), got {len(args)}")
    shapes: dict[str, tuple[int, ...]] = {}
    for spec, value in zip(sidecar_args, args, strict=True):
        name = spec["name"]
        if spec["kind"] == "scalar":
            _check_scalar(name, spec["dtype"], value)
            continue
        shapes[name] = _check_tensor(name, spec, value)
    _check_dim_names(sidecar_args, shapes)
    for spec, value in zip(sidecar_args, args, strict=True):
        if spec["kind"] == "tensor" and not value.is_cuda:
            raise LaunchError(
                f"argument {spec['name']!r} must be on a CUDA device, got {value.device}"
            )


def _check_scalar(name: str, dtype: str, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise LaunchError(f"argument {name!r} must be a python number ({dtype}), got {type(value)}")
    if dtype in INT_SCALAR_DTYPES and not isinstance(value, numbers.Integral):
        raise LaunchError(f"argument {name!r} must be an integer ({dtype}), got {value!r}")
    if dtype not in INT_SCALAR_DTYPES and dtype not in FLOAT_SCALAR_DTYPES:
        raise LaunchError(f"argument {name!r}: unsupported scalar dtype {dtype!r}")


def _check_tensor(name: str, spec: Mapping[str, Any], value: Any) -> tuple[int, ...]:
    import torch

    if not isinstance(value, torch.Tensor):
        raise LaunchError(f"argument {name!r} must be a torch tensor, got {type(value)}")
    want = getattr(torch, TENSOR_DTYPES[spec["dtype"]][0])
    if value.dtype != want:
        raise LaunchError(
            f"argument {name!r} must have dtype {want} ({spec['dtype']}), got {value.dtype}"
        )
    rank = int(spec["rank"])
    if value.dim() != rank:
        raise LaunchError(
            f"argument {name!r} must have rank {rank}, got shape {tuple(value.shape)}"
        )
    if value.shape[-1] > 1 and value.stride(-1) != 1:
        raise LaunchError(
            f"argument {name!r}: innermost dimension must be contiguous (stride 1), got "
            f"strides {tuple(value.stride())}; pass .contiguous()"
        )
    return tuple(value.shape)


def _view(t) -> TensorView:
    return TensorView(tuple(t.shape), tuple(t.stride()), t.data_ptr(), t.element_size())
