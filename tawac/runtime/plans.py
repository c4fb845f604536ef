"""Launch plans: what a launch's grid, workspace and cached parameters depend on.

In: the sidecar's "grid", "program_grid", "cluster" and "workspace" entries and the
arguments' shapes (and the device's multiprocessors); a call's arguments, stream and
device. Out: `compute_grid` (the launch grid, `extent` per entry), `workspace_shapes` and
`workspace_nbytes` (the buffers the launcher allocates), `row_major_strides`; the keys a
`Kernel` caches a call's parameters by (`_call_key`: addresses, shapes, strides, scalars,
stream, device; `_shape_key`: the same without addresses and scalars) and `_ShapePlan`, a
launch for one shape key that writes only a new call's addresses and scalars and encodes
its tensor maps again (`SEEN_CALLS`, `SHAPE_PLANS`: how many of each a Kernel keeps).
All but `_ShapePlan.apply` (which calls the driver it is given) take no GPU.
"""

from __future__ import annotations

import ctypes
import math
import numbers
import struct
from collections.abc import Mapping, Sequence
from typing import Any

from tawac.runtime.arguments import (
    PARAM_FORMATS,
    WORKSPACE_DTYPES,
    LaunchError,
    ParamLayout,
    _param_type,
    cdiv,
)
from tawac.runtime.tensor_maps import TMA_ALIGN, _with_promotion, tensor_map_dims
from tawac.target.hopper import HOPPER

# Parameter sets a Kernel keeps, by call key (addresses, shapes, strides, scalars, stream).
SEEN_CALLS = 64
# Launch plans a Kernel keeps, by shape key (shapes, strides, dtypes, alignment, device).
SHAPE_PLANS = 64
MAX_GRID_YZ = 65535
MAX_GRID_X = 2**31 - 1


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


def program_count(sidecar: Mapping[str, Any], shapes: Mapping[str, Sequence[int]]) -> int:
    """The programs of a launch at these argument shapes: its logical grid's (a persistent
    kernel's "program_grid", before the launch puts them on the SMs; else its "grid")."""
    x, y, z = compute_grid(sidecar.get("program_grid") or sidecar["grid"], shapes)
    return x * y * z


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


class _ShapePlan:
    """A launch for one shape key: the arena as the first call with these shapes left it
    (sizes, strides, tensor-map geometry) and what changes with the addresses and
    scalars: pointer and scalar parameters (written with struct.pack_into) and tensor
    maps (encoded again from ctypes arrays made for these shapes). `kernel` is the
    `tawac.runtime.launcher.Kernel` whose arena the first call filled."""

    def __init__(self, kernel: Any, func, grid, values: Mapping[str, Any]):
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
