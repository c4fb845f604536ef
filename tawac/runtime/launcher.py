"""Launch a compiled tawac kernel (cubin + JSON sidecar) on torch CUDA tensors.

The sidecar format is specified in docs/abi.md; this module and its parts (below) read it:

    kernel = load_kernel("gemm.cubin", json.load(open("gemm.json")))
    kernel(a, b, c)               # torch CUDA tensors / python numbers, in sidecar "args" order

In: cubin bytes (or a .cubin path) and the sidecar dict. Out: a `Kernel`, which loads
its module into the current CUDA context at the first launch and launches it on a call:
it checks the call, computes the grid, allocates the workspace buffers, pads what TMA
cannot address in place, writes the parameters and calls the driver, and keeps the
parameters of recent calls and a plan per shape for the next ones. Its parts are modules
of their own, whose pure pieces take no GPU and are unit-tested on the CPU:
`tawac.runtime.arguments` (the ABI: parameter packing, sidecar and argument checks,
`LaunchError`), `tawac.runtime.tensor_maps` (padding decisions, tensor-map arguments,
L2 promotion), `tawac.runtime.plans` (grid, workspace shapes, call keys, shape plans),
`tawac.runtime.graphs` (streams, graph capture) and `tawac.runtime.cuda_driver` (the
driver calls). `torch` and `cuda.bindings` are imported only when a kernel is launched.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from tawac.runtime.arguments import (
    TRACE_VALUE,
    WORKSPACE_DTYPES,
    LaunchError,
    ParamLayout,
    TensorView,
    _view,
    check_shapes,
    trace_bytes,
    validate_args,
    validate_sidecar,
)
from tawac.runtime.cuda_driver import _check, _driver, _lib, _sm_count
from tawac.runtime.graphs import _refuse_during_capture, _stream_handle, _torch_stream
from tawac.runtime.plans import (
    SEEN_CALLS,
    SHAPE_PLANS,
    _call_key,
    _shape_key,
    _ShapePlan,
    compute_grid,
    row_major_strides,
    workspace_nbytes,
    workspace_shapes,
)
from tawac.runtime.tensor_maps import (
    _map_slots,
    _pad,
    _promoted,
    needs_padding,
    padded_inner_size,
    tensor_map_dims,
)

# Accesses of an argument that the kernel writes (sidecar "args" "access").
WRITTEN = frozenset({"write", "readwrite"})
MAX_STATIC_SMEM = 48 * 1024


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
