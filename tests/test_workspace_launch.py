"""Workspace buffers (docs/abi.md, "Workspace buffers"): global scratch memory that the
launcher allocates for a kernel from its sidecar's "workspace" entry.

CPU tests of the pure pieces (sidecar checks, shapes, caching, parameter packing and
the shape plan) and, marked `gpu`, launches of a small hand-written PTX kernel that uses
a zeroed counter buffer and a scratch buffer.
"""

from __future__ import annotations

import copy
import struct

import pytest
from gpu_util import requires_gpu

from tawac.runtime import LaunchError
from tawac.runtime.arguments import ParamLayout, TensorView, validate_sidecar
from tawac.runtime.launcher import Kernel
from tawac.runtime.plans import (
    _ShapePlan,
    compute_grid,
    extent,
    row_major_strides,
    workspace_nbytes,
    workspace_shapes,
)

PARTIALS = {
    "name": "tawac_splitk_partials",
    "dtype": "f32",
    "zero": False,
    "shape": [
        {"const": 4},
        {"cdiv": {"arg": "c", "dim": 0}, "by": 1},
        {"cdiv": {"arg": "c", "dim": 1}, "by": 1},
    ],
}
TICKETS = {
    "name": "tawac_splitk_tickets",
    "dtype": "i32",
    "zero": True,
    "shape": [
        {"cdiv": {"arg": "c", "dim": 0}, "by": 64},
        {"cdiv": {"arg": "c", "dim": 1}, "by": 128},
    ],
}

SIDECAR = {
    "format": 1,
    "kernel": "gemm_splitk",
    "target": "sm_90a",
    "block": [384, 1, 1],
    "grid": [
        {"cdiv": {"arg": "c", "dim": 0}, "by": 64},
        {"cdiv": {"arg": "c", "dim": 1}, "by": 128},
        {"const": 4},
    ],
    "args": [
        {"name": "a", "kind": "tensor", "dtype": "bf16", "rank": 2, "dims": ["M", "K"]},
        {"name": "b", "kind": "tensor", "dtype": "bf16", "rank": 2, "dims": ["N", "K"]},
        {"name": "c", "kind": "tensor", "dtype": "bf16", "rank": 2, "dims": ["M", "N"]},
        {"name": "alpha", "kind": "scalar", "dtype": "f32"},
    ],
    "params": [
        {"kind": "pointer", "arg": "a"},  # 0
        {"kind": "pointer", "arg": "c"},  # 1
        {"kind": "pointer", "arg": "tawac_splitk_partials"},  # 2
        {"kind": "stride", "arg": "tawac_splitk_partials", "dim": 0, "type": "s64"},  # 3
        {"kind": "pointer", "arg": "tawac_splitk_tickets"},  # 4
        {"kind": "dim", "arg": "tawac_splitk_tickets", "dim": 1, "type": "s32"},  # 5
        {"kind": "scalar", "arg": "alpha", "type": "f32"},  # 6
    ],
    "workspace": [PARTIALS, TICKETS],
}


class Fake:
    """A tensor as the launcher's pure pieces see it: a shape, and an address."""

    def __init__(self, shape, ptr=0x1000):
        self.shape = tuple(shape)
        self.ptr = ptr

    def data_ptr(self):
        return self.ptr


def _args(m, n, k=64, base=0x10000):
    return [Fake((m, k), base), Fake((n, k), base + 0x1000), Fake((m, n), base + 0x2000), 1.5]


def _kernel_with_fake_allocator(sidecar=SIDECAR):
    """A Kernel whose workspace allocations are recorded and get fresh fake addresses."""
    kernel = Kernel(b"", sidecar)
    allocated = []

    def allocate(w, shape, dev, stream):
        allocated.append((w["name"], shape, dev, w.get("zero", False)))
        return Fake(shape, 0x100000 * len(allocated))

    kernel._allocate_workspace = allocate
    return kernel, allocated


# ---------------------------------------------------------------- sidecar checks


def test_validate_sidecar_accepts_workspace_params():
    validate_sidecar(SIDECAR)
    kernel = Kernel(b"", SIDECAR)
    assert [w["name"] for w in kernel.workspace] == [PARTIALS["name"], TICKETS["name"]]
    # without "zero" (false by default), and without any workspace
    unzeroed = {k: v for k, v in TICKETS.items() if k != "zero"}
    validate_sidecar({**SIDECAR, "workspace": [unzeroed], "params": SIDECAR["params"][4:]})
    no_ws = {k: v for k, v in SIDECAR.items() if k != "workspace"}
    validate_sidecar({**no_ws, "params": [SIDECAR["params"][0]]})
    assert Kernel(b"", {**no_ws, "params": []}).workspace == []


def _with(workspace=None, params=None):
    bad = copy.deepcopy(SIDECAR)
    if workspace is not None:
        bad["workspace"] = workspace
    if params is not None:
        bad["params"] = params
    return bad


def _shaped(*shape):
    return [{**PARTIALS, "shape": list(shape)}, TICKETS]


@pytest.mark.parametrize(
    ("sidecar", "message"),
    [
        (_with([{**PARTIALS, "dtype": "f16"}, TICKETS]), "unsupported dtype 'f16'"),
        (_with([{**PARTIALS, "dtype": "bf16"}, TICKETS]), "unsupported dtype 'bf16'"),
        (_with([{**PARTIALS, "name": "c"}, TICKETS], params=[]), "name of an argument"),
        (_with([PARTIALS, {**TICKETS, "name": PARTIALS["name"]}]), "not unique"),
        (_with([{**PARTIALS, "zero": 1}, TICKETS]), '"zero" must be true or false'),
        (_with({"tawac_splitk_partials": PARTIALS}), "must be a list"),
        (_with([{**PARTIALS, "name": ""}, TICKETS]), 'needs a "name"'),
        (_with([{k: v for k, v in PARTIALS.items() if k != "name"}]), 'needs a "name"'),
        (_with(_shaped()), "non-empty list"),
        (_with([{**PARTIALS, "shape": {"const": 4}}, TICKETS]), "non-empty list"),
        (_with(_shaped({"const": -1})), "dimension 0: const must be a non-negative"),
        (_with(_shaped({"const": 1.5})), "const must be a non-negative integer"),
        (_with(_shaped({"const": True})), "const must be a non-negative integer"),
        (_with(_shaped({"persistent": 1})), "dimension 0: sidecar entry .* not understood"),
        (_with(_shaped(4)), "not understood"),
        (_with(_shaped({"cdiv": "c", "by": 1})), "not understood"),
        (
            _with(_shaped({"const": 4}, {"cdiv": {"arg": "zz", "dim": 0}, "by": 1})),
            "dimension 1 refers to unknown tensor argument 'zz'",
        ),
        (
            _with(_shaped({"cdiv": {"arg": "alpha", "dim": 0}, "by": 1})),
            "unknown tensor argument 'alpha'",
        ),
        (
            _with(_shaped({"cdiv": {"arg": "c", "dim": 2}, "by": 1})),
            "dimension 2 of 'c' of rank 2",
        ),
        (
            _with(_shaped({"cdiv": {"arg": "c", "dim": -1}, "by": 1})),
            "dimension -1 of 'c'",
        ),
        (_with(_shaped({"cdiv": {"arg": "c", "dim": 0}, "by": 0})), "divisor must be"),
        (_with(_shaped({"cdiv": {"arg": "c", "dim": 0}})), "divisor must be"),
        (
            _with(params=[{"kind": "tensor_map", "arg": TICKETS["name"], "box": [1, 1]}]),
            "tensor_map cannot refer to workspace buffer 'tawac_splitk_tickets'",
        ),
        (
            _with(params=[{"kind": "scalar", "arg": TICKETS["name"], "type": "s32"}]),
            "scalar cannot refer to workspace buffer",
        ),
        (
            _with(params=[{"kind": "dim", "arg": TICKETS["name"], "dim": 2, "type": "s32"}]),
            "dimension 2 of workspace buffer 'tawac_splitk_tickets' of rank 2",
        ),
        (
            _with(params=[{"kind": "stride", "arg": TICKETS["name"], "type": "s64"}]),
            "dimension None of workspace buffer",
        ),
        (
            _with(params=[{"kind": "pointer", "arg": "tawac_splitk_nothing"}]),
            "unknown argument 'tawac_splitk_nothing'",
        ),
    ],
)
def test_validate_sidecar_rejects_bad_workspace(sidecar, message):
    with pytest.raises(LaunchError, match=message):
        validate_sidecar(sidecar)
    with pytest.raises(LaunchError, match=message):
        Kernel(b"", sidecar)


# ---------------------------------------------------------------- shapes


def test_extent_forms_and_errors():
    shapes = {"c": (300, 500)}
    assert extent({"const": 4}, shapes, "x") == 4
    assert extent({"cdiv": {"arg": "c", "dim": 0}, "by": 64}, shapes, "x") == 5
    assert extent({"cdiv": {"arg": "c", "dim": 1}, "by": 1}, shapes, "x") == 500
    assert extent({"cdiv": {"arg": "c", "dim": 1}, "by": 128}, {"c": (3, 0)}, "x") == 0
    with pytest.raises(LaunchError, match="^buffer dim 1 refers to unknown tensor argument 'a'"):
        extent({"cdiv": {"arg": "a", "dim": 0}, "by": 1}, shapes, "buffer dim 1")
    with pytest.raises(LaunchError, match="^w refers to dimension 2 of 'c' of rank 2"):
        extent({"cdiv": {"arg": "c", "dim": 2}, "by": 1}, shapes, "w")
    with pytest.raises(LaunchError, match="^w: divisor must be positive, got 0"):
        extent({"cdiv": {"arg": "c", "dim": 0}, "by": 0}, shapes, "w")
    with pytest.raises(LaunchError, match="^w: sidecar entry .* is not understood"):
        extent({"persistent": 1}, shapes, "w")


def test_compute_grid_keeps_its_messages():
    """compute_grid evaluates its "const" and "cdiv" axes with `extent`: same values and
    the same error messages as before."""
    grid = SIDECAR["grid"]
    assert compute_grid(grid, {"c": (300, 500)}) == (5, 4, 4)
    with pytest.raises(LaunchError, match="^grid axis x refers to unknown tensor argument 'c'"):
        compute_grid(grid, {"a": (1, 1)})
    with pytest.raises(LaunchError, match="^grid axis y refers to dimension 1 of 'c' of rank 1"):
        compute_grid(grid, {"c": (4,)})
    bad = [grid[0], {"cdiv": {"arg": "c", "dim": 1}, "by": -2}, grid[2]]
    with pytest.raises(LaunchError, match="^grid axis y: divisor must be positive, got -2"):
        compute_grid(bad, {"c": (4, 4)})
    with pytest.raises(LaunchError, match="^sidecar grid entry for axis z is not understood"):
        compute_grid([grid[0], grid[1], {"tiles": 3}], {"c": (4, 4)})


def test_workspace_shapes_and_bytes_from_argument_shapes():
    shapes = {"a": (300, 64), "c": (300, 500)}
    assert workspace_shapes(SIDECAR["workspace"], shapes) == [(4, 300, 500), (5, 4)]
    assert workspace_shapes([], shapes) == []
    with pytest.raises(LaunchError, match="buffer 'tawac_splitk_tickets' dimension 0 refers"):
        workspace_shapes([TICKETS], {"a": (300, 64)})
    assert workspace_nbytes(PARTIALS, (4, 300, 500)) == 4 * 300 * 500 * 4
    assert workspace_nbytes(TICKETS, (5, 4)) == 5 * 4 * 4
    assert workspace_nbytes(TICKETS, (0, 4)) == 4  # at least one element
    kernel = Kernel(b"", SIDECAR)
    assert kernel.workspace_bytes(*_args(300, 500)) == 4 * 300 * 500 * 4 + 5 * 4 * 4
    assert kernel.workspace_bytes(*_args(64, 128)) == 4 * 64 * 128 * 4 + 1 * 1 * 4
    assert kernel.workspace_bytes(*_args(0, 128)) == 4 + 4
    no_ws = {k: v for k, v in SIDECAR.items() if k != "workspace"}
    assert Kernel(b"", {**no_ws, "params": []}).workspace_bytes(*_args(300, 500)) == 0
    with pytest.raises(LaunchError, match="takes 4 arguments, got 3"):
        kernel.workspace_bytes(*_args(300, 500)[:3])


def test_row_major_strides():
    assert row_major_strides((4, 300, 500)) == (150000, 500, 1)
    assert row_major_strides((5, 4)) == (4, 1)
    assert row_major_strides((7,)) == (1,)
    assert row_major_strides((3, 0, 5)) == (5, 5, 1)  # as torch's contiguous strides


# ---------------------------------------------------------------- buffers and parameters


def test_workspace_buffers_are_cached_by_shape_and_device():
    """One allocation per (name, shape, dtype, device); another shape gets new buffers and
    the old ones stay (a captured graph may hold them)."""
    kernel, allocated = _kernel_with_fake_allocator()
    first = kernel._workspace_views(_args(300, 500), 0, None)
    assert allocated == [
        (PARTIALS["name"], (4, 300, 500), 0, False),
        (TICKETS["name"], (5, 4), 0, True),
    ]
    partials, tickets = first[PARTIALS["name"]], first[TICKETS["name"]]
    assert partials == TensorView((4, 300, 500), (150000, 500, 1), 0x100000, 4)
    assert tickets == TensorView((5, 4), (4, 1), 0x200000, 4)
    # same shapes at other argument addresses, and another K: the same buffers
    assert kernel._workspace_views(_args(300, 500, 32, base=0x90000), 0, None) == first
    assert len(allocated) == 2
    # another output shape: new buffers of its shapes
    other = kernel._workspace_views(_args(64, 128), 0, None)
    assert allocated[2:] == [
        (PARTIALS["name"], (4, 64, 128), 0, False),
        (TICKETS["name"], (1, 1), 0, True),
    ]
    assert other[PARTIALS["name"]].data_ptr == 0x300000
    assert other[TICKETS["name"]].data_ptr == 0x400000
    # the first shapes again: the first buffers, nothing allocated
    assert kernel._workspace_views(_args(300, 500), 0, None) == first
    assert len(allocated) == 4
    # another device: buffers of its own
    kernel._workspace_views(_args(300, 500), 1, None)
    assert [a[2] for a in allocated[4:]] == [1, 1]
    assert len(kernel._workspaces) == 6


def _fill(kernel, args):
    """Fills the kernel's parameters for these (fake) arguments as a launch does; the
    values, workspace views included."""
    values = {
        a["name"]: TensorView(v.shape, (v.shape[1], 1), v.ptr, 2)
        for a, v in zip(kernel.args[:3], args[:3], strict=True)
    }
    values["alpha"] = args[3]
    values.update(kernel._workspace_views(args, 0, None))
    kernel._layout.fill(values, lambda i, p, v, at: None)
    return values


def test_layout_fills_workspace_params():
    kernel, _ = _kernel_with_fake_allocator()
    _fill(kernel, _args(300, 500))
    layout = kernel._layout
    assert layout.read(1) == struct.pack("<Q", 0x12000)
    assert layout.read(2) == struct.pack("<Q", 0x100000)
    assert layout.read(3) == struct.pack("<q", 300 * 500)
    assert layout.read(4) == struct.pack("<Q", 0x200000)
    assert layout.read(5) == struct.pack("<i", 4)


def test_shape_plan_skips_workspace_params_and_keeps_their_values():
    """A plan made from a call with workspace parameters (their "arg" is no call
    argument) writes the new calls' addresses and scalars and keeps the workspace
    buffers' addresses and sizes, which the shape key fixes."""
    kernel, allocated = _kernel_with_fake_allocator()
    layout = kernel._layout
    values = _fill(kernel, _args(300, 500))
    plan = _ShapePlan(kernel, "func", (5, 4, 4), values)
    # only the call arguments' pointers and the scalar are rewritten
    assert [at for at, _fmt, _j in plan.writes] == [
        layout.shift + layout.offsets[i] for i in (0, 1, 6)
    ]
    assert plan.maps == []
    # another call of those shapes at new addresses, after a call of another shape
    _fill(kernel, _args(64, 128))
    assert layout.read(2) == struct.pack("<Q", 0x300000)
    plan.apply(layout, _args(300, 500, base=0x70000)[:3] + [-2.0], lib=None)
    assert layout.read(0) == struct.pack("<Q", 0x70000)
    assert layout.read(1) == struct.pack("<Q", 0x72000)
    assert layout.read(2) == struct.pack("<Q", 0x100000)
    assert layout.read(3) == struct.pack("<q", 300 * 500)
    assert layout.read(4) == struct.pack("<Q", 0x200000)
    assert layout.read(5) == struct.pack("<i", 4)
    assert layout.read(6) == struct.pack("<f", -2.0)
    assert len(allocated) == 4


def test_param_layout_of_workspace_params_needs_the_view():
    """ParamLayout reads a workspace parameter from `values` under the buffer's name."""
    layout = ParamLayout(SIDECAR["params"][2:4])
    with pytest.raises(KeyError, match="tawac_splitk_partials"):
        layout.fill({}, lambda i, p, v, at: None)
    view = TensorView((4, 2, 3), row_major_strides((4, 2, 3)), 0xABC000, 4)
    layout.fill({PARTIALS["name"]: view}, lambda i, p, v, at: None)
    assert layout.read(0) == struct.pack("<Q", 0xABC000)
    assert layout.read(1) == struct.pack("<q", 6)


# ---------------------------------------------------------------- on the GPU

# Thread i < n of CTA x: scratch[i] = 2 i; takes a ticket t from tickets[x] (the CTA's
# arrival counter, zero at the start); the last of the CTA's `count` threads resets it
# to zero (the zero contract); c[i] = scratch[i] + (scratch's size - n), or -1 where
# t >= count (a counter that was not zero at the start).
_PTX = r"""
.version 8.0
.target sm_90a
.address_size 64

.visible .entry ws_probe(
    .param .u64 p_c,
    .param .u32 p_n,
    .param .u64 p_scratch,
    .param .u64 p_tickets,
    .param .u32 p_scratch_n
)
{
    .reg .pred %p<4>;
    .reg .b32 %r<12>;
    .reg .b64 %rd<12>;
    .reg .f32 %f<4>;

    ld.param.u64 %rd1, [p_c];
    ld.param.u32 %r1, [p_n];
    ld.param.u64 %rd2, [p_scratch];
    ld.param.u64 %rd3, [p_tickets];
    ld.param.u32 %r2, [p_scratch_n];
    cvta.to.global.u64 %rd1, %rd1;
    cvta.to.global.u64 %rd2, %rd2;
    cvta.to.global.u64 %rd3, %rd3;
    mov.u32 %r3, %ctaid.x;
    mov.u32 %r4, %tid.x;
    shl.b32 %r5, %r3, 7;
    add.u32 %r6, %r5, %r4;
    setp.ge.u32 %p1, %r6, %r1;
    @%p1 bra DONE;
    mul.wide.u32 %rd4, %r6, 4;
    add.u64 %rd5, %rd2, %rd4;
    cvt.rn.f32.u32 %f1, %r6;
    add.f32 %f1, %f1, %f1;
    st.global.f32 [%rd5], %f1;
    mul.wide.u32 %rd6, %r3, 4;
    add.u64 %rd7, %rd3, %rd6;
    atom.global.add.u32 %r7, [%rd7], 1;
    sub.u32 %r8, %r1, %r5;
    min.u32 %r8, %r8, 128;
    sub.u32 %r9, %r8, 1;
    setp.eq.u32 %p2, %r7, %r9;
    mov.u32 %r11, 0;
    @%p2 st.global.u32 [%rd7], %r11;
    ld.global.f32 %f2, [%rd5];
    sub.u32 %r10, %r2, %r1;
    cvt.rn.f32.s32 %f3, %r10;
    add.f32 %f2, %f2, %f3;
    setp.lt.u32 %p3, %r7, %r8;
    selp.f32 %f2, %f2, 0fBF800000, %p3;
    add.u64 %rd8, %rd1, %rd4;
    st.global.f32 [%rd8], %f2;
DONE:
    ret;
}
"""

_PROBE_SIDECAR = {
    "format": 1,
    "kernel": "ws_probe",
    "target": "sm_90a",
    "block": [128, 1, 1],
    "grid": [{"cdiv": {"arg": "c", "dim": 0}, "by": 128}, {"const": 1}, {"const": 1}],
    "args": [
        {"name": "c", "kind": "tensor", "dtype": "f32", "rank": 1, "dims": ["N"], "access": "write"}
    ],
    "params": [
        {"kind": "pointer", "arg": "c"},
        {"kind": "dim", "arg": "c", "dim": 0, "type": "s32"},
        {"kind": "pointer", "arg": "scratch"},
        {"kind": "pointer", "arg": "tickets"},
        {"kind": "dim", "arg": "scratch", "dim": 0, "type": "s32"},
    ],
    "workspace": [
        {"name": "scratch", "dtype": "f32", "zero": False,
         "shape": [{"cdiv": {"arg": "c", "dim": 0}, "by": 1}]},
        {"name": "tickets", "dtype": "i32", "zero": True,
         "shape": [{"cdiv": {"arg": "c", "dim": 0}, "by": 128}]},
    ],
}  # fmt: skip


def _probe():
    from tawac.runtime import load_kernel

    # cuModuleLoadData takes PTX text (NUL-terminated) as well as a cubin
    return load_kernel(_PTX.encode() + b"\0", _PROBE_SIDECAR)


def _check_probe(kern, c):
    import torch

    torch.cuda.synchronize()
    want = 2 * torch.arange(c.shape[0], device="cuda", dtype=torch.float32)
    assert torch.equal(c, want), (c - want).abs().max().item()
    tickets = kern._workspaces[("tickets", (-(-c.shape[0] // 128),), "i32", c.device.index)]
    assert not tickets.any(), "the kernel left a counter non-zero"


@pytest.mark.gpu
@requires_gpu
def test_workspace_launches_on_the_gpu():
    """The first launch (allocated buffers, counters zeroed over dirty memory), the same
    call again (cached parameters), new addresses (the shape plan), another shape (new
    buffers) and the first shape again: every call's output and counters are right."""
    import torch

    dirty = torch.full((4096,), -7, dtype=torch.int32, device="cuda")
    del dirty  # the caching allocator hands this memory out again
    kern = _probe()
    n = 300
    c = torch.full((n,), float("nan"), device="cuda")
    assert kern.workspace_bytes(c) == n * 4 + 3 * 4
    kern(c)
    _check_probe(kern, c)
    c.fill_(float("nan"))
    kern(c)
    _check_probe(kern, c)
    others = [torch.full((n,), float("nan"), device="cuda") for _ in range(3)]
    for o in others:
        kern(o)
    assert len(kern._plans) == 1
    for o in others:
        _check_probe(kern, o)
    scratch = kern._workspaces[("scratch", (n,), "f32", c.device.index)]
    assert kern._layout.read(2) == struct.pack("<Q", scratch.data_ptr())
    big = torch.full((1000,), float("nan"), device="cuda")
    kern(big)
    _check_probe(kern, big)
    assert len(kern._workspaces) == 4
    big_scratch = kern._workspaces[("scratch", (1000,), "f32", c.device.index)]
    assert big_scratch.data_ptr() != scratch.data_ptr()
    again = torch.full((n,), float("nan"), device="cuda")
    kern(again)
    _check_probe(kern, again)
    assert kern._layout.read(2) == struct.pack("<Q", scratch.data_ptr())
    assert len(kern._workspaces) == 4


@pytest.mark.gpu
@requires_gpu
def test_workspace_in_a_cuda_graph():
    """A capture after a launch of its shapes replays with the same buffers; a shape
    never launched would allocate during the capture: refused with a clear error."""
    import torch

    kern = _probe()
    c = torch.full((520,), float("nan"), device="cuda")
    kern(c)  # warm up: module load and buffers
    _check_probe(kern, c)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        kern(c)
    for _ in range(3):
        c.fill_(float("nan"))
        g.replay()
        _check_probe(kern, c)
    fresh = torch.full((77,), float("nan"), device="cuda")
    g2 = torch.cuda.CUDAGraph()
    with pytest.raises(LaunchError, match="during CUDA graph capture"), torch.cuda.graph(g2):
        kern(fresh)
