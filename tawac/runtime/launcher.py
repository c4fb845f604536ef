"""Launch a compiled tawac kernel (cubin + JSON sidecar) on torch CUDA tensors.

The sidecar format is specified in docs/abi.md.  This module is its only consumer:

    kernel = load_kernel("gemm.cubin", json.load(open("gemm.json")))
    kernel(a, b, c)               # torch CUDA tensors / python numbers, in sidecar "args" order

The pure pieces (grid computation, parameter packing, padding decisions, tensor-map
arguments) are plain functions that take no GPU, so they are unit-tested on the CPU.
`torch` and `cuda.bindings` are imported only when a kernel is launched.
"""

from __future__ import annotations

import ctypes
import functools
import json
import math
import numbers
import os
import struct
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tawac.runtime.libcuda import libcuda
from tawac.target.dtypes import ELEMENT_BYTES
from tawac.target.hopper import HOPPER

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
TMA_ALIGN = 16
# Accesses of an argument that the kernel writes (sidecar "args" "access").
WRITTEN = frozenset({"write", "readwrite"})
# Parameter sets a Kernel keeps, by call key (addresses, shapes, strides, scalars, stream).
SEEN_CALLS = 64
# Launch plans a Kernel keeps, by shape key (shapes, strides, dtypes, alignment, device).
SHAPE_PLANS = 64
MAX_STATIC_SMEM = 48 * 1024
MAX_GRID_YZ = 65535
MAX_GRID_X = 2**31 - 1


class LaunchError(RuntimeError):
    """A kernel could not be launched: bad arguments, bad sidecar or a CUDA driver error."""


# --------------------------------------------------------------------------- pure pieces


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


def extent(
    entry: Mapping[str, Any],
    shapes: Mapping[str, Sequence[int]],
    what: str,
    sm_count: int | None = None,
) -> int:
    """Evaluates one size of the sidecar (a "grid" axis, a "workspace" dimension) against
    argument shapes: `{"const": n}` is n, `{"cdiv": {"arg": name, "dim": d}, "by": n}` is
    ceil(size of dimension d of tensor argument `name` / n) (times m with `"times": m`: a
    query block's splits), and (a workspace dimension)
    `{"sms": k}` is k times the device's multiprocessors. `what` names the entry in
    errors ("grid axis x")."""
    if "const" in entry:
        return int(entry["const"])
    if "sms" in entry:
        if sm_count is None:
            raise LaunchError(f"{what}: a size in multiprocessors needs the device's count")
        return int(entry["sms"]) * sm_count
    if "cdiv" not in entry:
        raise LaunchError(f"{what}: sidecar entry {entry} is not understood")
    ref = entry["cdiv"]
    name, dim, by = ref["arg"], int(ref["dim"]), int(entry["by"])
    if name not in shapes:
        raise LaunchError(f"{what} refers to unknown tensor argument {name!r}")
    shape = shapes[name]
    if not 0 <= dim < len(shape):
        raise LaunchError(f"{what} refers to dimension {dim} of {name!r} of rank {len(shape)}")
    if by <= 0:
        raise LaunchError(f"{what}: divisor must be positive, got {by}")
    return cdiv(int(shape[dim]), by) * int(entry.get("times", 1))


def compute_grid(
    grid_spec: Sequence[Mapping[str, Any]],
    shapes: Mapping[str, Sequence[int]],
    *,
    program_grid: Sequence[Mapping[str, Any]] | None = None,
    sm_count: int | None = None,
    cluster: Sequence[int] = (1, 1, 1),
    program_cluster: Sequence[int] | None = None,
) -> tuple[int, int, int]:
    """Evaluates the sidecar "grid" (one entry per axis x, y, z) against argument shapes.

    Entries are `{"const": n}`, `{"cdiv": {"arg": name, "dim": d}, "by": n}`, or, for a
    persistent kernel, `{"persistent": k}`: min(k * multiprocessors, programs), the
    programs being the product of the sidecar's "program_grid".

    With a `cluster` shape (the sidecar's "cluster"), every axis is rounded up to a
    multiple of the cluster's extent along it (the extra CTAs compute tiles that are
    entirely out of range), and a persistent grid is rounded down to a multiple of the
    cluster's size (at least one cluster), its programs counted in whole clusters: each
    axis of "program_grid" rounded up to a multiple of `program_cluster` (the sidecar's
    "program_cluster": the programs one cluster computes together).
    """
    if len(grid_spec) != 3:
        raise LaunchError(f"sidecar grid must have 3 entries (x, y, z), got {len(grid_spec)}")
    if len(cluster) != 3 or any(int(c) < 1 for c in cluster):
        raise LaunchError(f"cluster shape {tuple(cluster)} is not three positive extents")
    size = math.prod(int(c) for c in cluster)
    out: list[int] = []
    for axis, entry in zip("xyz", grid_spec, strict=True):
        if "persistent" in entry:
            if program_grid is None or sm_count is None:
                raise LaunchError("a persistent grid needs program_grid and the SM count")
            pc = [int(c) for c in (program_cluster or (1, 1, 1))]
            programs = math.prod(
                cdiv(p, c) * c for p, c in zip(compute_grid(program_grid, shapes), pc, strict=True)
            )
            if programs == 0:  # an empty output: no CTA at all
                out.append(0)
                continue
            ctas = int(entry["persistent"]) * sm_count
            if not entry.get("fill", False):  # "fill": every CTA (stream-K splits to fit)
                ctas = min(programs, ctas)
            out.append(max(size, ctas // size * size))
            continue
        if "const" not in entry and "cdiv" not in entry:
            raise LaunchError(f"sidecar grid entry for axis {axis} is not understood: {entry}")
        out.append(extent(entry, shapes, f"grid axis {axis}"))
    if size > 1:
        out = [
            g if "persistent" in e else cdiv(g, int(c)) * int(c)
            for g, c, e in zip(out, cluster, grid_spec, strict=True)
        ]
    x, y, z = out
    if x > MAX_GRID_X or y > MAX_GRID_YZ or z > MAX_GRID_YZ:
        raise LaunchError(f"grid {tuple(out)} exceeds the CUDA limits (2^31-1, 65535, 65535)")
    return x, y, z


def workspace_shapes(
    workspace: Sequence[Mapping[str, Any]],
    shapes: Mapping[str, Sequence[int]],
    sm_count: int | None = None,
) -> list[tuple[int, ...]]:
    """Each buffer's shape of the sidecar "workspace" (in its order), evaluated against
    the argument shapes and the device's multiprocessors (every dimension an `extent`
    entry)."""
    return [
        tuple(
            extent(entry, shapes, f"workspace buffer {w['name']!r} dimension {d}", sm_count)
            for d, entry in enumerate(w["shape"])
        )
        for w in workspace
    ]


def workspace_nbytes(buffer: Mapping[str, Any], shape: Sequence[int]) -> int:
    """Bytes the launcher allocates for a workspace buffer of this shape: at least one
    element (the kernel reads no element of a buffer with a size of 0)."""
    return max(1, math.prod(shape)) * WORKSPACE_DTYPES[buffer["dtype"]][1]


def row_major_strides(shape: Sequence[int]) -> tuple[int, ...]:
    """The strides (elements) of a contiguous, row-major tensor; a size of 0 counts as 1,
    as in torch."""
    strides = [1] * len(shape)
    for d in reversed(range(len(shape) - 1)):
        strides[d] = strides[d + 1] * max(1, int(shape[d + 1]))
    return tuple(strides)


def needs_padding(view: TensorView, stored: bool = False) -> bool:
    """True when TMA cannot address the tensor in place.

    TMA needs a 16-byte aligned base and outer strides that are multiples of 16 bytes.
    A TMA store also writes whole 16-byte pieces of a row (measured on an H100: a row of
    100 bf16 gets 104 written), so a stored tensor whose rows end inside a 16-byte piece
    (a column slice of a wider tensor; a contiguous one fails the stride rule already)
    goes through a padded copy too, or the store would overwrite the columns after it.
    """
    if view.data_ptr % TMA_ALIGN != 0:
        return True
    if stored and (view.shape[-1] * view.elem_size) % TMA_ALIGN != 0:
        return True
    return any((s * view.elem_size) % TMA_ALIGN != 0 for s in view.strides[:-1])


def padded_inner_size(size: int, elem_size: int) -> int:
    """The innermost size rounded up so that one row is a multiple of 16 bytes."""
    per = TMA_ALIGN // math.gcd(TMA_ALIGN, elem_size)
    return cdiv(size, per) * per


def tensor_map_dims(
    param: Mapping[str, Any], view: TensorView
) -> tuple[list[int], list[int], list[int], list[int]]:
    """(globalDim, globalStrides in bytes, boxDim, elementStrides), innermost first."""
    rank = len(view.shape)
    box = [int(b) for b in param["box"]]
    if len(box) != rank:
        raise LaunchError(
            f"tensor_map for {param['arg']!r}: box {box} has {len(box)} entries, "
            f"tensor has rank {rank}"
        )
    shape = view.map_shape if view.map_shape is not None else view.shape
    strides = view.map_strides if view.map_strides is not None else view.strides
    global_dim = [int(d) for d in reversed(shape)]
    global_strides = [int(strides[i]) * view.elem_size for i in reversed(range(rank - 1))]
    return global_dim, global_strides, box, [1] * rank


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
    times a positive integer, or to a constant."""
    for c in sidecar.get("checks", []):
        other = c.get("equals") if isinstance(c, Mapping) else None
        if isinstance(other, Mapping) and _is_int(other.get("const"), 0):
            refs = [c]
        elif isinstance(other, Mapping) and _is_int(other.get("times", 1), 1):
            refs = [c, other]
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
    size: the key block)."""
    dims = {a["name"]: a.get("dims") or [] for a in args}

    def name(arg: str, d: int) -> str:
        n = dims[arg][d] if d < len(dims[arg]) else ""
        return f"{arg}.shape[{d}]" + (f" ({n})" if n else "")

    for c in checks:
        o = c["equals"]
        have = shapes[c["arg"]][c["dim"]]
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


# --------------------------------------------------------------------------- CUDA side


def _driver():
    try:
        from cuda.bindings import driver
    except ImportError:
        try:
            from cuda import cuda as driver  # cuda-python < 12.6
        except ImportError as e:
            raise LaunchError("cuda-python (cuda.bindings) is not installed") from e
    return driver


def _check(result: tuple, what: str) -> tuple:
    """Raises LaunchError unless the CUresult (first element) is CUDA_SUCCESS."""
    err, *rest = result
    if int(err) != 0:
        name = getattr(err, "name", str(err))
        raise LaunchError(f"{what} failed: {name}")
    return tuple(rest)


def _torch_stream(stream: Any):
    """A torch stream object for None (current), a torch stream, or a raw handle."""
    import torch

    if stream is None:
        return torch.cuda.current_stream()
    if isinstance(stream, torch.cuda.Stream):
        return stream
    if isinstance(stream, int):
        return torch.cuda.ExternalStream(stream)
    raise LaunchError(f"stream must be None, a torch.cuda.Stream or an int handle, got {stream!r}")


def _view(t) -> TensorView:
    return TensorView(tuple(t.shape), tuple(t.stride()), t.data_ptr(), t.element_size())


def _pad(t):
    """A contiguous copy of t whose rows are a multiple of 16 bytes, and the view into it."""
    import torch

    inner = padded_inner_size(t.shape[-1], t.element_size())
    buf = torch.zeros((*t.shape[:-1], inner), dtype=t.dtype, device=t.device)
    view = buf[..., : t.shape[-1]]
    view.copy_(t)
    return view


class Kernel:
    """A loaded kernel: call it with torch CUDA tensors and numbers in sidecar "args" order."""

    def __init__(self, cubin: bytes, sidecar: Mapping[str, Any]):
        validate_sidecar(sidecar)
        self.cubin = bytes(cubin)
        self.sidecar = dict(sidecar)
        self._empties: dict = {}
        self.name: str = sidecar["kernel"]
        self.args: list[Mapping[str, Any]] = list(sidecar["args"])
        self.params: list[Mapping[str, Any]] = list(sidecar["params"])
        self.block = tuple(int(b) for b in sidecar["block"])
        self.cluster = tuple(int(c) for c in sidecar.get("cluster", (1, 1, 1)))
        self.dynamic_smem = int(sidecar.get("dynamic_smem", 0))
        self._map_args = {p["arg"] for p in self.params if p["kind"] == "tensor_map"}
        # Tensors the kernel stores as 16-byte vectors (a pointer's "align"): aligned like
        # a TMA-stored tensor, rows of whole 16-byte pieces.
        self._aligned_args = {
            p["arg"] for p in self.params if p["kind"] == "pointer" and p.get("align")
        }
        self.workspace: list[Mapping[str, Any]] = list(sidecar.get("workspace", ()))
        """The sidecar's "workspace" buffers (docs/abi.md), which the launcher allocates."""
        self._workspace_names = frozenset(w["name"] for w in self.workspace)
        # Workspace buffers (torch tensors) by (name, shape, dtype, device), kept for the
        # kernel's lifetime: a CUDA graph captured earlier may hold their addresses.
        self._workspaces: dict[tuple, Any] = {}
        self.trace: Mapping[str, Any] | None = sidecar.get("trace")
        """An instrumented build's "trace" entry (docs/abi.md); None otherwise."""
        self.last_trace = None
        """The trace buffer of the latest launch of an instrumented build (a torch uint8
        CUDA tensor, `tawac.runtime.trace.decode`'s input); None before it."""
        # Tensors TMA writes (a sidecar without "access" counts every one as written).
        self._stored_maps = {
            a["name"]
            for a in self.args
            if a["name"] in self._map_args and a.get("access", "readwrite") in WRITTEN
        }
        self._layout = ParamLayout(self.params)
        self._map_slots: dict | None = None
        self._function = None
        self._module = None
        self._context = None
        self._device: int | None = None
        self._last: tuple | None = None
        self._seen: dict[tuple, tuple[bytes, tuple]] = {}
        self._plans: dict[tuple, _ShapePlan] = {}

    def __repr__(self) -> str:
        return f"<tawac Kernel {self.name} block={self.block} smem={self.dynamic_smem}>"

    # ---- loading

    def _ensure_context(self):
        """Makes sure a context is current: torch's (the device's primary context)."""
        import torch

        driver = _driver()
        torch.cuda.init()
        dev = torch.cuda.current_device()
        _check(driver.cuInit(0), "cuInit")
        (ctx,) = _check(driver.cuCtxGetCurrent(), "cuCtxGetCurrent")
        if int(ctx) != 0:
            return ctx
        (cudev,) = _check(driver.cuDeviceGet(dev), "cuDeviceGet")
        (ctx,) = _check(driver.cuDevicePrimaryCtxRetain(cudev), "cuDevicePrimaryCtxRetain")
        _check(driver.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")
        return ctx

    def load(self):
        """Loads the module into the current context (once) and returns the CUfunction."""
        import torch

        dev = torch.cuda.current_device()
        if self._function is not None and self._device == dev:
            return self._function
        ctx = self._ensure_context()
        if self._function is not None and int(ctx) == int(self._context):
            return self._function
        driver = _driver()
        (module,) = _check(driver.cuModuleLoadData(self.cubin), "cuModuleLoadData")
        (func,) = _check(
            driver.cuModuleGetFunction(module, self.name.encode()),
            f"cuModuleGetFunction({self.name})",
        )
        if self.dynamic_smem > MAX_STATIC_SMEM:
            attr = driver.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
            _check(
                driver.cuFuncSetAttribute(func, attr, self.dynamic_smem),
                f"cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES={self.dynamic_smem})",
            )
        self._module, self._function, self._context = module, func, ctx
        self._device = dev
        return func

    # ---- launching

    def _shapes(self, args: Sequence[Any]) -> dict[str, tuple[int, ...]]:
        """The tensor arguments' shapes, by name."""
        if len(args) != len(self.args):
            raise LaunchError(f"kernel takes {len(self.args)} arguments, got {len(args)}")
        return {
            a["name"]: tuple(v.shape)
            for a, v in zip(self.args, args, strict=True)
            if a["kind"] == "tensor"
        }

    def grid(self, *args) -> tuple[int, int, int]:
        """The launch grid for these arguments."""
        shapes = self._shapes(args)
        program_grid = self.sidecar.get("program_grid")
        sm_count = None
        if program_grid is not None:
            import torch

            sm_count = _sm_count(torch.cuda.current_device())
        return compute_grid(
            self.sidecar["grid"],
            shapes,
            program_grid=program_grid,
            sm_count=sm_count,
            cluster=self.cluster,
            program_cluster=self.sidecar.get("program_cluster"),
        )

    @property
    def _by_sms(self) -> bool:
        """Whether a workspace size is counted in multiprocessors (`{"sms": k}`)."""
        return any("sms" in e for w in self.workspace for e in w["shape"])

    def _sms(self) -> int | None:
        """The current device's multiprocessors where a workspace size needs them."""
        if not self._by_sms:
            return None
        import torch

        return _sm_count(torch.cuda.current_device())

    def workspace_bytes(self, *args) -> int:
        """Bytes of the workspace buffers (docs/abi.md, "Workspace buffers") that a launch
        with these arguments uses; 0 for a kernel without any."""
        shapes = workspace_shapes(self.workspace, self._shapes(args), self._sms())
        return sum(workspace_nbytes(w, s) for w, s in zip(self.workspace, shapes, strict=True))

    def _launch_config(self, driver, grid, stream_handle: int):
        config = driver.CUlaunchConfig()
        config.gridDimX, config.gridDimY, config.gridDimZ = grid
        config.blockDimX, config.blockDimY, config.blockDimZ = self.block
        config.sharedMemBytes = self.dynamic_smem
        config.hStream = driver.CUstream(stream_handle)
        if self.cluster == (1, 1, 1):
            config.numAttrs = 0
            return config
        attr = driver.CUlaunchAttribute()
        attr.id = driver.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION
        attr.value.clusterDim.x, attr.value.clusterDim.y, attr.value.clusterDim.z = self.cluster
        config.attrs = [attr]
        config.numAttrs = 1
        return config

    def __call__(self, *args, stream=None) -> None:
        """Launches the kernel asynchronously on `stream` (default: torch's current stream).

        A call with the same tensors (address, shape, strides, dtype, device), scalars,
        current device and stream as the previous one relaunches its parameters as they
        are; one like any of the last `SEEN_CALLS` calls (the caching allocator hands out
        the same addresses again) restores that call's parameters, tensor maps included,
        without checking or encoding anything again. A call at new addresses with shapes,
        strides, dtypes and alignment seen before (one of `SHAPE_PLANS`) skips the checks
        and the grid: it writes the addresses and scalars into that shape's parameters and
        encodes the tensor maps with their sizes set up already. The sidecar's workspace
        buffers are allocated at the first launch with their shapes and kept for the
        kernel's lifetime: concurrent launches on several streams would share them, which
        is not supported for a kernel with a workspace. Tensors that TMA
        cannot address in place are copied into padded buffers first and copied back after
        the launch (on the same stream); that needs allocations, so it is refused during
        CUDA graph capture. Not for concurrent calls of one Kernel from several threads.
        """
        import torch

        # Once CUDA is initialised (this kernel has launched), the raw device query is
        # enough; torch.cuda.current_device() also checks the lazy initialisation.
        raw = getattr(torch._C, "_cuda_getDevice", None) if self._function is not None else None
        dev = raw() if raw is not None else torch.cuda.current_device()
        handle = _stream_handle(stream, dev)
        # an instrumented build gets a fresh buffer per launch: no cached parameters
        key = _call_key(args, handle, dev) if self.trace is None else None
        last = self._last
        if key is not None and last is not None and last[0] == key:
            self._launch(*last[1], handle)
            return
        self._last = None
        seen = self._seen.get(key) if key is not None else None
        if seen is not None:
            self._layout.restore(seen[0])
            self._launch(*seen[1], handle)
            self._last = (key, seen[1])
            return
        shape_key = _shape_key(key) if key is not None else None
        plan = self._plans.get(shape_key) if shape_key is not None else None
        if plan is not None and plan.func is self._function:
            plan.apply(self._layout, args, _lib())
            self._launch(plan.func, plan.grid, handle)
            self._remember(key, (plan.func, plan.grid))
            return
        validate_args(self.args, args)
        for a, v in zip(self.args, args, strict=True):
            if a["kind"] == "tensor" and v.device.index != dev:
                raise LaunchError(
                    f"argument {a['name']!r} is on {v.device}, the current device is cuda:{dev}"
                )
        if self.sidecar.get("checks"):
            check_shapes(self.sidecar["checks"], self._shapes(args), self.args)
        grid = self.grid(*args)
        if 0 in grid:
            return  # an empty output (M or N = 0): nothing to compute, as torch
        if any(g % c != 0 for g, c in zip(grid, self.cluster, strict=True)):
            raise LaunchError(f"grid {grid} is not a multiple of the cluster shape {self.cluster}")
        func = self.load()
        values: dict[str, TensorView | int | float] = {}
        pad = []
        empty = False
        for a, v in zip(self.args, args, strict=True):
            if a["kind"] == "scalar":
                values[a["name"]] = v
                continue
            if v.numel() == 0:
                # K = 0: the loops over the empty dimension run no step; TMA, which cannot
                # describe a size of 0, reads a zero stand-in (the result is 0, as torch's)
                values[a["name"]] = self._empty_view(v)
                empty = True
                continue
            view = _view(v)
            name = a["name"]
            aligned = name in self._aligned_args
            if (name in self._map_args or aligned) and needs_padding(
                view, aligned or name in self._stored_maps
            ):
                pad.append((name, v))
            values[a["name"]] = view
        copy_back = self._pad_all(pad, values, stream) if pad else []
        if self.workspace:
            values.update(self._workspace_views(args, dev, stream))
        if self.trace is not None:
            values[TRACE_VALUE] = self._trace_buffer(stream)
        self._layout.fill(values, self._encode_map)
        self._launch(func, grid, handle)
        if copy_back:
            with torch.cuda.stream(_torch_stream(stream)):
                for orig, padded in copy_back:
                    orig.copy_(padded)
            return
        # Parameters only depend on addresses, shapes, strides and scalars: keep them for
        # calls with the same key (not with padded copies, which live at new addresses,
        # nor with empty tensors' stand-ins), and a plan for calls with the same shapes at
        # other addresses. Workspace buffers are fixed by the shapes and the device (both
        # in the keys) and live as long as the kernel.
        if key is None or empty:
            return
        self._remember(key, (func, grid))
        if self._map_slots is None and self._map_args:
            self._map_slots = _map_slots(self.params, self.args)
        self._plans[shape_key] = _ShapePlan(self, func, grid, values)
        if len(self._plans) > SHAPE_PLANS:
            del self._plans[next(iter(self._plans))]

    def _empty_view(self, t) -> TensorView:
        """An empty tensor's view: its true sizes and strides (the kernel's loops and bounds
        read them), and for TMA a zero buffer of one element per empty dimension, rows
        padded to 16 bytes, kept alive by this kernel (`TensorView.map_shape`)."""
        import torch

        shape = tuple(max(1, d) for d in t.shape)
        inner = padded_inner_size(shape[-1], t.element_size())
        key = (shape[:-1] + (inner,), t.dtype, t.device)
        buf = self._empties.get(key)
        if buf is None:
            buf = self._empties[key] = torch.zeros(key[0], dtype=t.dtype, device=t.device)
        return TensorView(
            tuple(t.shape), tuple(buf.stride()), buf.data_ptr(), t.element_size(),
            shape, tuple(buf.stride()),
        )  # fmt: skip

    def _workspace_views(self, args: Sequence[Any], dev: int, stream) -> dict[str, TensorView]:
        """The views of the workspace buffers for these arguments, by name. A buffer is
        allocated at the first launch with its shape on device `dev` and kept for the
        kernel's lifetime (docs/abi.md, "Workspace buffers")."""
        sms = _sm_count(dev) if self._by_sms else None
        shapes = workspace_shapes(self.workspace, self._shapes(args), sms)
        views = {}
        for w, shape in zip(self.workspace, shapes, strict=True):
            key = (w["name"], shape, w["dtype"], dev)
            buf = self._workspaces.get(key)
            if buf is None:
                buf = self._workspaces[key] = self._allocate_workspace(w, shape, dev, stream)
            elem = WORKSPACE_DTYPES[w["dtype"]][1]
            views[w["name"]] = TensorView(shape, row_major_strides(shape), buf.data_ptr(), elem)
        return views

    def _allocate_workspace(self, w: Mapping[str, Any], shape: tuple[int, ...], dev: int, stream):
        """A new workspace buffer (a flat torch tensor of at least one element) on device
        `dev`; a "zero" one is zeroed on the launch stream, once: the kernel leaves it
        zero. Refused during CUDA graph capture (the zeroing would only be captured)."""
        import torch

        with torch.cuda.stream(_torch_stream(stream)):
            _refuse_during_capture(
                f"workspace buffer {w['name']!r} of shape {shape} would be allocated "
                "during CUDA graph capture; launch the kernel once with these shapes "
                "before capturing"
            )
            make = torch.zeros if w.get("zero", False) else torch.empty
            dtype = getattr(torch, WORKSPACE_DTYPES[w["dtype"]][0])
            numel = max(1, math.prod(shape))
            return make(numel, dtype=dtype, device=torch.device("cuda", dev))

    def _trace_buffer(self, stream) -> int:
        """The trace buffer (`last_trace`), allocated at the first launch and zeroed on
        `stream` before each: its address."""
        import torch

        assert self.trace is not None
        with torch.cuda.stream(_torch_stream(stream)):
            buf = self.last_trace
            if buf is None or buf.device != torch.device("cuda", torch.cuda.current_device()):
                buf = torch.zeros(trace_bytes(self.trace), dtype=torch.uint8, device="cuda")
            else:
                buf.zero_()
        self.last_trace = buf
        return buf.data_ptr()

    def _remember(self, key: tuple, launch: tuple) -> None:
        """Keeps the arena's parameters of this call for calls with the same key."""
        self._last = (key, launch)
        self._seen[key] = (self._layout.snapshot(), launch)
        if len(self._seen) > SEEN_CALLS:
            del self._seen[next(iter(self._seen))]

    def _pad_all(self, pad, values, stream) -> list:
        """Padded copies (on the launch stream) of the tensors TMA cannot address in place;
        their views go into `values`. Returns (original, padded) pairs to copy back."""
        import torch

        copy_back = []
        with torch.cuda.stream(_torch_stream(stream)):
            _refuse_during_capture(
                f"argument {pad[0][0]!r} needs a padded copy (TMA needs a 16-byte aligned "
                "address and rows that are multiples of 16 bytes), which cannot be made "
                "during CUDA graph capture; pass such a tensor"
            )
            for name, v in pad:
                padded = _pad(v)
                copy_back.append((v, padded))
                values[name] = _view(padded)
        return copy_back

    def _launch(self, func, grid, stream: int) -> None:
        """Launches with the parameters in the layout's arena: cuLaunchKernel through
        ctypes, or cuLaunchKernelEx through cuda-python for a cluster shape."""
        if self.cluster != (1, 1, 1):
            driver = _driver()
            _check(
                driver.cuLaunchKernelEx(
                    self._launch_config(driver, grid, stream), func, self._layout.address, 0
                ),
                f"cuLaunchKernelEx({self.name}, grid={grid}, block={self.block}, "
                f"smem={self.dynamic_smem}, cluster={self.cluster})",
            )
            return
        lib = _lib()
        err = lib.launch(
            int(func), grid, self.block, self.dynamic_smem, stream, self._layout.address
        )
        if err != 0:
            self._last = None
            raise LaunchError(
                f"cuLaunchKernel({self.name}, grid={grid}, block={self.block}, "
                f"smem={self.dynamic_smem}) failed: {lib.error_name(err)}"
            )

    def _encode_map(self, i: int, param: Mapping[str, Any], view: TensorView, at: int) -> None:
        """encode_map for ParamLayout.fill: cuTensorMapEncodeTiled straight into the arena,
        with per-parameter ctypes arrays made once."""
        if self._map_slots is None:
            self._map_slots = _map_slots(self.params, self.args)
        dtype, arrays, enums = self._map_slots[i]
        dims, strides, box, _elem = tensor_map_dims(param, view)
        arrays[0][:] = dims
        arrays[1][: len(strides)] = strides
        arrays[2][:] = box
        enums = _promoted(enums, view.data_ptr, strides)
        lib = _lib()
        err = lib.encode_tiled(at, dtype, len(dims), view.data_ptr, arrays, enums)
        if err != 0:
            raise LaunchError(
                f"cuTensorMapEncodeTiled({param['arg']}: dims={dims} strides={strides} "
                f"box={box} swizzle={param.get('swizzle', 'none')}) failed: "
                f"{lib.error_name(err)}"
            )


class _ShapePlan:
    """A launch for one shape key: the arena as the first call with these shapes left it
    (sizes, strides, tensor-map geometry) and what changes with the addresses and
    scalars: pointer and scalar parameters (written with struct.pack_into) and tensor
    maps (encoded again from ctypes arrays made for these shapes)."""

    def __init__(self, kernel: Kernel, func, grid, values: Mapping[str, Any]):
        self.func = func
        self.grid = grid
        layout = kernel._layout
        self.base = layout.snapshot()
        index = {a["name"]: j for j, a in enumerate(kernel.args)}
        self.writes: list[tuple[int, str, int]] = []
        self.maps: list[tuple] = []
        for i, p in enumerate(kernel.params):
            if p["arg"] in kernel._workspace_names:
                continue  # a workspace buffer: fixed by the shape key, alive as the kernel
            j = index[p["arg"]]
            if p["kind"] == "pointer":
                self.writes.append((layout.shift + layout.offsets[i], "<Q", j))
            elif p["kind"] == "scalar":
                fmt = PARAM_FORMATS[_param_type(p)]
                self.writes.append((layout.shift + layout.offsets[i], fmt, j))
            elif p["kind"] == "tensor_map":
                dtype, _arrays, enums = kernel._map_slots[i]
                dims, strides, box, elem = tensor_map_dims(p, values[p["arg"]])
                arrays = (
                    (ctypes.c_uint64 * len(dims))(*dims),
                    (ctypes.c_uint64 * max(len(strides), 1))(*strides),
                    (ctypes.c_uint32 * len(box))(*box),
                    (ctypes.c_uint32 * len(elem))(*elem),
                )
                at = layout.base + layout.offsets[i]
                whole = HOPPER.on_sectors(*strides)
                self.maps.append((at, dtype, len(dims), j, arrays, enums, p, whole))
        self._promote()

    def _promote(self) -> None:
        """Per tensor map, its enums with the target's two L2 promotions (rows on whole
        sectors, rows not), made once per plan; remade when the target's choice changes
        (an experiment overriding it)."""
        self.promotions = (HOPPER.l2_promotion_aligned, HOPPER.l2_promotion_misaligned)
        self.promoted = [
            (
                _with_promotion(enums, self.promotions[0]),
                _with_promotion(enums, self.promotions[1]),
            )
            for (_at, _dtype, _rank, _j, _arrays, enums, _p, _whole) in self.maps
        ]

    def apply(self, layout: ParamLayout, args: Sequence[Any], lib) -> None:
        """The arena for `args` (same shape key as the plan's first call)."""
        layout.restore(self.base)
        view = layout._view
        try:
            for at, fmt, j in self.writes:
                v = args[j]
                struct.pack_into(
                    fmt,
                    view,
                    at,
                    float(v) if fmt == "<f" else int(v.data_ptr()) if fmt == "<Q" else int(v),
                )
        except struct.error as e:
            raise LaunchError(f"a scalar argument does not fit its parameter type: {e}") from e
        if self.promotions != (HOPPER.l2_promotion_aligned, HOPPER.l2_promotion_misaligned):
            self._promote()
        for (at, dtype, rank, j, arrays, _enums, p, whole), (on, off) in zip(
            self.maps, self.promoted, strict=True
        ):
            address = args[j].data_ptr()
            enums = on if whole and HOPPER.on_sectors(address) else off
            err = lib.encode_tiled(at, dtype, rank, address, arrays, enums)
            if err != 0:
                raise LaunchError(
                    f"cuTensorMapEncodeTiled({p['arg']}) failed: {lib.error_name(err)}"
                )


def _shape_key(call_key: tuple) -> tuple:
    """What a call's checks, grid and sizes depend on: the call key without addresses
    and scalar values, with each address's 16-byte alignment (TMA's condition)."""
    return (call_key[1],) + tuple(
        (k[1], k[2], k[3], k[4], k[0] % TMA_ALIGN == 0) if len(k) == 5 else k[0]
        for k in call_key[2:]
    )


def _refuse_during_capture(why: str) -> None:
    """A LaunchError saying `why` when the current stream is capturing a CUDA graph: an
    allocation or copy made now would exist only in the graph."""
    import torch

    if torch.cuda.is_current_stream_capturing():
        raise LaunchError(why)


def _lib():
    lib = libcuda()
    if lib is None:
        raise LaunchError("the CUDA driver library (libcuda) was not found")
    return lib


def _map_slots(params: Sequence[Mapping[str, Any]], args: Sequence[Mapping[str, Any]]) -> dict:
    """Per tensor-map parameter: its data type enum, ctypes arrays (globalDim, strides, box,
    elementStrides) and the (interleave, swizzle, l2 promotion, oob fill) enums."""
    driver = _driver()
    by_name = {a["name"]: a for a in args}
    slots = {}
    for i, p in enumerate(params):
        if p["kind"] != "tensor_map":
            continue
        arg = by_name[p["arg"]]
        rank = int(arg["rank"])
        dtype = int(getattr(driver.CUtensorMapDataType, TENSOR_DTYPES[arg["dtype"]][1]))
        arrays = (
            (ctypes.c_uint64 * rank)(),
            (ctypes.c_uint64 * max(rank - 1, 1))(),
            (ctypes.c_uint32 * rank)(),
            (ctypes.c_uint32 * rank)(*([1] * rank)),
        )
        enums = (
            int(driver.CUtensorMapInterleave.CU_TENSOR_MAP_INTERLEAVE_NONE),
            int(getattr(driver.CUtensorMapSwizzle, SWIZZLES[p.get("swizzle", "none")])),
            0,  # the L2 promotion: per encode, from the address and strides (_promoted)
            int(driver.CUtensorMapFloatOOBfill.CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE),
        )
        slots[i] = (dtype, arrays, enums)
    return slots


def l2_promotion(address: int, strides: Sequence[int]) -> str:
    """The L2 promotion (a `CU_TENSOR_MAP_L2_PROMOTION_*` name) of a tensor map at
    `address` with row `strides` in bytes: the target's choice for rows that start on
    whole L2 sectors where the address and every stride are multiples of a sector, else
    its choice for rows that do not (docs/abi.md, "Tensor maps")."""
    if HOPPER.on_sectors(address, *strides):
        return HOPPER.l2_promotion_aligned
    return HOPPER.l2_promotion_misaligned


@functools.cache
def _promotion_enum(name: str) -> int:
    return int(getattr(_driver().CUtensorMapL2promotion, f"CU_TENSOR_MAP_L2_PROMOTION_{name}"))


def _with_promotion(enums: tuple, name: str) -> tuple:
    """A tensor map's (interleave, swizzle, l2 promotion, oob fill) enums with the L2
    promotion `name`."""
    return (enums[0], enums[1], _promotion_enum(name), enums[3])


def _promoted(enums: tuple, address: int, strides: Sequence[int]) -> tuple:
    """`enums` with the promotion `l2_promotion` chooses for this address and these
    strides."""
    return _with_promotion(enums, l2_promotion(address, strides))


@functools.cache
def _sm_count(device: int) -> int:
    import torch

    return torch.cuda.get_device_properties(device).multi_processor_count


def _stream_handle(stream: Any, device: int) -> int:
    """The raw CUstream of None (torch's current stream), a torch stream or an int."""
    if stream is None:
        import torch

        raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
        if raw is not None:
            return raw(device)
        return torch.cuda.current_stream(device).cuda_stream
    if isinstance(stream, int):
        return stream
    handle = getattr(stream, "cuda_stream", None)
    if handle is None:
        raise LaunchError(
            f"stream must be None, a torch.cuda.Stream or an int handle, got {stream!r}"
        )
    return handle


def _call_key(args: Sequence[Any], stream_handle: int, device: int) -> tuple | None:
    """What the packed parameters of a call depend on; None for arguments that are neither
    numbers nor tensors (the checks then report them). Plain ints and floats are told
    apart by their exact type first: an ABC check (`numbers.Number`) costs more than the
    rest of a tensor's entry."""
    key: list[Any] = [stream_handle, device]
    for v in args:
        t = type(v)
        if t is float or t is int or t is bool:
            key.append((t, v))
            continue
        try:
            key.append((v.data_ptr(), v.shape, v.stride(), v.dtype, v.get_device()))
        except (AttributeError, TypeError):
            if not isinstance(v, numbers.Number):
                return None
            key.append((t, v))
    return tuple(key)


def load_kernel(
    cubin: bytes | str | os.PathLike, sidecar: Mapping[str, Any] | None = None
) -> Kernel:
    """Makes a Kernel from cubin bytes (or a .cubin path) and its sidecar dict.

    With a path and no sidecar, reads the `.json` beside the cubin (same stem).
    The module is loaded into the current CUDA context at the first launch.
    """
    if isinstance(cubin, bytes | bytearray):
        if sidecar is None:
            raise LaunchError("load_kernel: a sidecar dict is needed with cubin bytes")
        return Kernel(bytes(cubin), sidecar)
    path = Path(cubin)
    if sidecar is None:
        side_path = path.with_suffix(".json")
        if not side_path.exists():
            raise LaunchError(f"no sidecar {side_path} beside {path}")
        sidecar = json.loads(side_path.read_text())
    return Kernel(path.read_bytes(), sidecar)
