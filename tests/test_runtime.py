"""CPU tests of the launcher's and runner's pure pieces (no GPU, no cuda-python needed)."""

from __future__ import annotations

import ctypes
import math
import struct

import pytest

from tawac.runtime import LaunchError, load_kernel, tensor_maps
from tawac.runtime.arguments import (
    ParamLayout,
    TensorView,
    pack_value,
    validate_args,
    validate_sidecar,
)
from tawac.runtime.launcher import Kernel
from tawac.runtime.plans import _call_key, _shape_key, _ShapePlan, compute_grid
from tawac.runtime.tensor_maps import (
    l2_promotion,
    needs_padding,
    padded_inner_size,
    tensor_map_dims,
)
from tawac.target.hopper import HOPPER

SIDECAR = {
    "format": 1,
    "kernel": "gemm",
    "target": "sm_90a",
    "block": [384, 1, 1],
    "cluster": [1, 1, 1],
    "dynamic_smem": 197632,
    "grid": [
        {"cdiv": {"arg": "c", "dim": 0}, "by": 128},
        {"cdiv": {"arg": "c", "dim": 1}, "by": 256},
        {"const": 1},
    ],
    "args": [
        {"name": "a", "kind": "tensor", "dtype": "bf16", "rank": 2, "dims": ["M", "K"]},
        {"name": "b", "kind": "tensor", "dtype": "bf16", "rank": 2, "dims": ["N", "K"]},
        {"name": "c", "kind": "tensor", "dtype": "bf16", "rank": 2, "dims": ["M", "N"]},
        {"name": "alpha", "kind": "scalar", "dtype": "f32"},
    ],
    "params": [
        {"kind": "tensor_map", "arg": "a", "box": [64, 128], "swizzle": "128B"},
        {"kind": "pointer", "arg": "c"},
        {"kind": "dim", "arg": "a", "dim": 1, "type": "s32"},
        {"kind": "stride", "arg": "c", "dim": 0, "type": "s64"},
        {"kind": "scalar", "arg": "alpha", "type": "f32"},
    ],
}


# ---------------------------------------------------------------- grid


def test_grid_cdiv_and_const():
    shapes = {"a": (4096, 1024), "c": (4096, 8192)}
    assert compute_grid(SIDECAR["grid"], shapes) == (32, 32, 1)


def test_grid_ragged_rounds_up():
    assert compute_grid(SIDECAR["grid"], {"c": (129, 257)}) == (2, 2, 1)
    assert compute_grid(SIDECAR["grid"], {"c": (0, 5)}) == (0, 1, 1)


def test_a_persistent_grid_of_no_programs_launches_no_cta():
    """An empty output (M = 0) under a persistent grid: no CTA, so the launcher returns
    before describing any tensor (empty problems behave as torch does)."""
    grid = [{"persistent": 1}, {"const": 1}, {"const": 1}]
    program_grid = [{"cdiv": {"arg": "c", "dim": 0}, "by": 128}, {"const": 1}, {"const": 1}]
    got = compute_grid(grid, {"c": (0, 5)}, program_grid=program_grid, sm_count=132)
    assert got == (0, 1, 1)
    got = compute_grid(grid, {"c": (300, 5)}, program_grid=program_grid, sm_count=132)
    assert got == (3, 1, 1)


def test_grid_errors():
    with pytest.raises(LaunchError, match="unknown tensor argument"):
        compute_grid(SIDECAR["grid"], {"a": (1, 1)})
    with pytest.raises(LaunchError, match="dimension 1"):
        compute_grid(
            [{"cdiv": {"arg": "c", "dim": 1}, "by": 2}, {"const": 1}, {"const": 1}], {"c": (4,)}
        )
    with pytest.raises(LaunchError, match="3 entries"):
        compute_grid([{"const": 1}], {})
    with pytest.raises(LaunchError, match="65535"):
        compute_grid([{"const": 1}, {"const": 70000}, {"const": 1}], {})


def test_kernel_grid_from_tensors_like_objects():
    class Shape:
        def __init__(self, *s):
            self.shape = s

    k = Kernel(b"", SIDECAR)
    assert k.grid(Shape(300, 64), Shape(512, 64), Shape(300, 512), 1.0) == (3, 2, 1)


# ---------------------------------------------------------------- parameter packing


def test_pack_value_layouts():
    assert pack_value("s32", 4096) == struct.pack("<i", 4096)
    assert pack_value("s64", 8192) == (8192).to_bytes(8, "little")
    assert pack_value("u64", 2**40 + 3) == (2**40 + 3).to_bytes(8, "little")
    assert pack_value("f32", 0.5) == struct.pack("<f", 0.5)
    with pytest.raises(LaunchError, match="does not fit"):
        pack_value("s32", 2**31)
    with pytest.raises(LaunchError, match="unsupported parameter type"):
        pack_value("b16", 1)


def test_param_layout_in_param_order_and_aligned():
    a = TensorView((4096, 1000), (1008, 1), 0x7F0000001000, 2)
    c = TensorView((4096, 512), (512, 1), 0x7F0000200000, 2)
    layout = ParamLayout(SIDECAR["params"])
    seen = []

    def encode(i, param, view, address):
        seen.append((i, param["arg"], view))
        ctypes.memmove(address, bytes(range(128)), 128)

    layout.fill({"a": a, "c": c, "alpha": 0.25}, encode)
    assert seen == [(0, "a", a)]
    blobs = [
        bytes(range(128)),
        struct.pack("<Q", 0x7F0000200000),
        struct.pack("<i", 1000),
        struct.pack("<q", 512),
        struct.pack("<f", 0.25),
    ]
    assert [layout.read(i) for i in range(len(blobs))] == blobs
    ptrs = (ctypes.c_void_p * len(blobs)).from_address(layout.address)
    for i, b in enumerate(blobs):
        assert ptrs[i] % 64 == 0
        assert ctypes.string_at(ptrs[i], len(b)) == b


def test_param_layout_rejects_unsupported_types():
    with pytest.raises(LaunchError, match="unsupported parameter type"):
        ParamLayout([{"kind": "scalar", "arg": "alpha", "type": "b16"}])


def test_param_layout_empty():
    assert ParamLayout([]).address != 0


def test_param_layout_refills_in_place_and_checks_ranges():
    layout = ParamLayout(SIDECAR["params"])
    address = layout.address
    c = TensorView((8, 8), (8, 1), 0x1000, 2)
    for ptr, alpha in ((0x2000, 1.0), (0x3000, -2.5)):
        a = TensorView((8, 8), (8, 1), ptr, 2)
        layout.fill({"a": a, "c": c, "alpha": alpha}, lambda i, p, v, at: None)
        assert layout.read(4) == struct.pack("<f", alpha)
    assert layout.address == address
    saved = layout.snapshot()
    layout.fill({"a": a, "c": c, "alpha": 9.0}, lambda i, p, v, at: None)
    layout.restore(saved)
    assert layout.read(4) == struct.pack("<f", -2.5)
    big = TensorView((8, 2**31), (2**31, 1), 0x2000, 2)
    with pytest.raises(LaunchError, match="does not fit"):
        layout.fill({"a": big, "c": c, "alpha": 1.0}, lambda i, p, v, at: None)


def test_call_key_tells_calls_apart():
    class T:
        def __init__(self, ptr, shape, stride, dtype="bf16"):
            self._p, self.shape, self._s, self.dtype = ptr, shape, stride, dtype

        def data_ptr(self):
            return self._p

        def stride(self):
            return self._s

        def get_device(self):
            return 0

    a = T(0x1000, (8, 8), (8, 1))
    base = _call_key((a, 1.0), 0, 0)
    assert base == _call_key((T(0x1000, (8, 8), (8, 1)), 1.0), 0, 0)
    assert base != _call_key((T(0x2000, (8, 8), (8, 1)), 1.0), 0, 0)
    assert base != _call_key((T(0x1000, (8, 16), (16, 1)), 1.0), 0, 0)
    assert base != _call_key((T(0x1000, (8, 8), (8, 1), "f16"), 1.0), 0, 0)
    assert base != _call_key((a, 2.0), 0, 0)
    assert base != _call_key((a, 1), 0, 0)  # an int scalar is another call than a float
    assert base != _call_key((a, 1.0), 7, 0)  # another stream
    assert base != _call_key((a, 1.0), 0, 1)  # another device
    assert _call_key(("not a tensor", 1.0), 0, 0) is None


def test_shape_key_drops_addresses_keeps_alignment():
    def key(ptr_a, alpha, shape=(8, 8)):
        return (0, 0, (ptr_a, shape, (8, 1), "bf16", 0), (float, alpha))

    assert _shape_key(key(0x1000, 1.0)) == _shape_key(key(0x2000, 2.0))
    assert _shape_key(key(0x1000, 1.0)) != _shape_key(key(0x1008, 1.0))  # TMA alignment
    assert _shape_key(key(0x1000, 1.0)) != _shape_key(key(0x1000, 1.0, (8, 16)))
    assert _shape_key(key(0x1000, 1.0)) != _shape_key((0, 1, *key(0x1000, 1.0)[2:]))  # device


PROMOTION_ENUMS = {"NONE": 0, "L2_64B": 1, "L2_128B": 2, "L2_256B": 3}


def test_l2_promotion_by_sector_alignment():
    """Rows that start on whole 32-byte sectors take the target's aligned promotion; an
    address or a row stride of 16 but not 32 bytes (K = 3000 in bf16) the other."""
    aligned, misaligned = HOPPER.l2_promotion_aligned, HOPPER.l2_promotion_misaligned
    assert aligned != misaligned
    assert l2_promotion(0x1000, [6016]) == aligned
    assert l2_promotion(0x1000, [6016, 6016 * 4096]) == aligned
    assert l2_promotion(0x1000, [6000]) == misaligned
    assert l2_promotion(0x1010, [6016]) == misaligned
    assert l2_promotion(0x1000, [6016, 6016 * 4096 + 16]) == misaligned
    assert l2_promotion(0x1000, []) == aligned


def test_shape_plan_writes_new_addresses_and_scalars_keeps_sizes(monkeypatch):
    """A plan made from one call's arena, applied to a call with other addresses and
    scalars: the pointer and scalar change, sizes and strides stay, and the tensor map is
    encoded again at the new address with the sizes of the first call (and the L2
    promotion of the new address: a 16- but not 32-byte aligned one takes the other)."""
    monkeypatch.setattr(tensor_maps, "_promotion_enum", PROMOTION_ENUMS.__getitem__)

    class T:
        def __init__(self, ptr):
            self.ptr = ptr

        def data_ptr(self):
            return self.ptr

    class Lib:
        calls: list = []

        def encode_tiled(self, at, dtype, rank, address, arrays, enums):
            self.calls.append((dtype, rank, address, list(arrays[0]), list(arrays[1]), enums))
            return 0

    kernel = Kernel(b"", SIDECAR)
    kernel._map_slots = {0: (7, None, (0, 3, 2, 0))}
    values = {
        "a": TensorView((256, 64), (64, 1), 0x1000, 2),
        "b": TensorView((256, 64), (64, 1), 0x2000, 2),
        "c": TensorView((256, 512), (512, 1), 0x3000, 2),
        "alpha": 1.5,
    }
    kernel._layout.fill(values, lambda i, p, v, at: None)
    plan = _ShapePlan(kernel, "func", (2, 2, 1), values)
    lib = Lib()
    plan.apply(kernel._layout, [T(0x9000), T(0xA000), T(0xB000), -4.0], lib)
    layout = kernel._layout
    assert layout.read(1) == struct.pack("<Q", 0xB000)
    assert layout.read(2) == struct.pack("<i", 64)
    assert layout.read(3) == struct.pack("<q", 512)
    assert layout.read(4) == struct.pack("<f", -4.0)
    aligned = PROMOTION_ENUMS[HOPPER.l2_promotion_aligned]
    misaligned = PROMOTION_ENUMS[HOPPER.l2_promotion_misaligned]
    assert lib.calls == [(7, 2, 0x9000, [64, 256], [128], (0, 3, aligned, 0))]
    plan.apply(kernel._layout, [T(0x9010), T(0xA000), T(0xB000), -4.0], lib)
    assert lib.calls[-1] == (7, 2, 0x9010, [64, 256], [128], (0, 3, misaligned, 0))


# ---------------------------------------------------------------- tensor maps and padding


def test_tensor_map_dims_innermost_first():
    view = TensorView((4096, 1024), (1024, 1), 0, 2)
    dims, strides, box, elem = tensor_map_dims(SIDECAR["params"][0], view)
    assert dims == [1024, 4096]
    assert strides == [2048]
    assert box == [64, 128]
    assert elem == [1, 1]


def test_tensor_map_dims_rank3_strides():
    view = TensorView((3, 5, 8), (48, 8, 1), 0, 4)
    param = {"kind": "tensor_map", "arg": "x", "box": [8, 4, 1], "swizzle": "none"}
    dims, strides, box, _ = tensor_map_dims(param, view)
    assert dims == [8, 5, 3]
    assert strides == [32, 192]
    assert box == [8, 4, 1]
    with pytest.raises(LaunchError, match="box"):
        tensor_map_dims({**param, "box": [8, 4]}, view)


@pytest.mark.parametrize(
    "shape,strides,ptr,elem,expected",
    [
        ((64, 64), (64, 1), 0x1000, 2, False),  # 128-byte rows, aligned
        ((64, 7), (7, 1), 0x1000, 2, True),  # 14-byte rows
        ((64, 8), (8, 1), 0x1000, 2, False),  # 16-byte rows
        ((64, 8), (8, 1), 0x1002, 2, True),  # misaligned base (a sliced tensor)
        ((64, 4), (4, 1), 0x1000, 4, False),  # f32, 16-byte rows
        ((64, 3), (3, 1), 0x1000, 4, True),
        ((2, 8, 9), (144, 16, 1), 0x1000, 2, False),  # strides 288 and 32 bytes
        ((2, 8, 8), (68, 8, 1), 0x1000, 2, True),  # 136 bytes: not a multiple of 16
        ((2, 8, 7), (56, 7, 1), 0x1000, 2, True),  # 14-byte rows, 112-byte planes
        ((5,), (1,), 0x1000, 2, False),  # rank 1: only the base matters
    ],
)
def test_needs_padding(shape, strides, ptr, elem, expected):
    assert needs_padding(TensorView(shape, strides, ptr, elem)) is expected


def test_stored_rows_ending_inside_16_bytes_are_padded():
    """A TMA store writes whole 16-byte pieces of a row: a stored column slice whose rows
    end inside one (100 bf16 = 200 bytes) is padded; read, or ending on 16 bytes, it is
    not."""
    view = TensorView((100, 100), (112, 1), 0x1000, 2)
    assert needs_padding(view, stored=True)
    assert not needs_padding(view, stored=False)
    assert not needs_padding(TensorView((100, 104), (112, 1), 0x1000, 2), stored=True)
    assert not needs_padding(TensorView((100, 100), (112, 1), 0x1000, 4), stored=True)


def test_padded_inner_size():
    assert padded_inner_size(7, 2) == 8
    assert padded_inner_size(8, 2) == 8
    assert padded_inner_size(9, 2) == 16
    assert padded_inner_size(3, 4) == 4
    assert padded_inner_size(1, 4) == 4


# ---------------------------------------------------------------- sidecar and argument checks


def test_validate_sidecar_ok_and_errors():
    validate_sidecar(SIDECAR)
    with pytest.raises(LaunchError, match="format"):
        validate_sidecar({**SIDECAR, "format": 2})
    bad = {**SIDECAR, "params": [{"kind": "pointer", "arg": "zz"}]}
    with pytest.raises(LaunchError, match="unknown argument 'zz'"):
        validate_sidecar(bad)
    bad = {**SIDECAR, "params": [{"kind": "tensor_map", "arg": "alpha", "box": [1]}]}
    with pytest.raises(LaunchError, match="needs a tensor"):
        validate_sidecar(bad)
    bad = {
        **SIDECAR,
        "params": [{"kind": "tensor_map", "arg": "a", "box": [1, 1], "swizzle": "256B"}],
    }
    with pytest.raises(LaunchError, match="swizzle"):
        validate_sidecar(bad)
    with pytest.raises(LaunchError, match="no 'grid'"):
        validate_sidecar({k: v for k, v in SIDECAR.items() if k != "grid"})


def test_load_kernel_reads_sidecar_beside_cubin(tmp_path):
    import json

    (tmp_path / "gemm.cubin").write_bytes(b"\x7fELF")
    (tmp_path / "gemm.json").write_text(json.dumps(SIDECAR))
    k = load_kernel(tmp_path / "gemm.cubin")
    assert k.name == "gemm" and k.cubin == b"\x7fELF" and k.dynamic_smem == 197632
    with pytest.raises(LaunchError, match="sidecar dict"):
        load_kernel(b"\x7fELF")


def test_validate_args_messages():
    torch = pytest.importorskip("torch")
    a = torch.zeros(256, 64, dtype=torch.bfloat16)
    b = torch.zeros(512, 64, dtype=torch.bfloat16)
    c = torch.zeros(256, 512, dtype=torch.bfloat16)
    args = SIDECAR["args"]
    with pytest.raises(LaunchError, match="takes 4 arguments"):
        validate_args(args, [a, b, c])
    with pytest.raises(LaunchError, match="dtype torch.bfloat16"):
        validate_args(args, [a.float(), b, c, 1.0])
    with pytest.raises(LaunchError, match="rank 2"):
        validate_args(args, [a[0], b, c, 1.0])
    with pytest.raises(LaunchError, match="stride 1"):
        validate_args(args, [a, b, c.t().contiguous().t(), 1.0])
    with pytest.raises(LaunchError, match="python number"):
        validate_args(args, [a, b, c, "x"])
    with pytest.raises(LaunchError, match="size K differs"):
        validate_args(args, [a, b[:, :32], c, 1.0])
    with pytest.raises(LaunchError, match="CUDA device"):
        validate_args(args, [a, b, c, 1.0])


# ---------------------------------------------------------------- runner pieces


def test_runner_shapes_and_args():
    torch = pytest.importorskip("torch")
    from tawac.runtime.runner import make_args, relative_error, tensor_shape

    sizes = {"M": 5, "N": 7, "K": 3}
    assert tensor_shape(SIDECAR["args"][1], sizes) == (7, 3)
    with pytest.raises(LaunchError, match="'K'"):
        tensor_shape(SIDECAR["args"][0], {"M": 5})
    args = make_args(SIDECAR, sizes, outputs={2}, inputs={0, 1}, device="cpu")
    assert args[0].shape == (5, 3) and args[0].dtype == torch.bfloat16
    assert torch.isnan(args[2]).all()
    assert args[3] == 0.5
    ref = torch.tensor([1.0, 2.0, float("nan")])
    assert relative_error(torch.tensor([1.0, 2.0, 5.0]), ref) == 0.0
    assert math.isnan(relative_error(torch.tensor([1.0, float("nan"), 5.0]), ref))


def test_runner_index_arguments_a_benchmark_names():
    """i32 index tensors are zeros (valid for any tensor) unless named: `arange` (a
    paged cache's block table, each sequence its own pages) or a product of sizes (each
    sequence's full length); anything else is an error."""
    torch = pytest.importorskip("torch")
    from tawac.runtime.runner import index_values, make_args

    sidecar = {
        "args": [
            {"name": "table", "kind": "tensor", "dtype": "i32", "rank": 2, "dims": ["B", "MAXP"]},
            {"name": "lens", "kind": "tensor", "dtype": "i32", "rank": 1, "dims": ["B"]},
        ]
    }
    sizes = {"B": 2, "MAXP": 3, "PAGE": 128}
    zeros = make_args(sidecar, sizes, outputs=set(), inputs={0, 1}, device="cpu")
    assert all(int(a.abs().sum()) == 0 for a in zeros)
    named = {"table": "arange", "lens": "MAXP*PAGE"}
    table, lens = make_args(sidecar, sizes, set(), {0, 1}, device="cpu", indices=named)
    assert table.dtype == torch.int32 and table.tolist() == [[0, 1, 2], [3, 4, 5]]
    assert lens.dtype == torch.int32 and lens.tolist() == [384, 384]
    assert index_values("2*B", (1,), sizes).tolist() == [4]
    with pytest.raises(ValueError, match="'Q' is no size"):
        index_values("Q*PAGE", (2,), sizes)


def test_runner_finds_loads_and_stores():
    from pathlib import Path

    from xdsl.context import Context
    from xdsl.dialects.arith import Arith
    from xdsl.dialects.builtin import Builtin
    from xdsl.dialects.math import Math
    from xdsl.dialects.scf import Scf
    from xdsl.parser import Parser

    from tawac.analysis.args import kernel_arg_uses
    from tawac.dialects.tile import KernelOp, Tile
    from tawac.support.params import substitute

    ctx = Context()
    for d in (Builtin, Arith, Math, Scf, Tile):
        ctx.load_dialect(d)
    text = (Path(__file__).parents[1] / "examples" / "gemm.mlir").read_text()
    module = Parser(ctx, substitute(text, "gemm.mlir").text, "gemm.mlir").parse_module()
    kernel = next(op for op in module.ops if isinstance(op, KernelOp))
    assert kernel_arg_uses(kernel) == ({0, 1}, {2})


def test_round_robin_rotates_the_start_of_each_round():
    """Each system once per round, each round starting one later: every system is timed
    first, last and in between alike."""
    from tawac.runtime.runner import round_robin

    assert round_robin(3, 2) == [0, 1, 2, 1, 2, 0]
    order = round_robin(4, 4)
    assert [order[4 * r] for r in range(4)] == [0, 1, 2, 3]
    assert all(order.count(i) == 4 for i in range(4))
    assert round_robin(2, 0) == [0, 1]  # at least one round
    assert round_robin(0, 3) == []


def test_round_robin_medians_times_each_call_in_rotation(monkeypatch):
    """Each call timed `rounds` times in the rotation's order, its median kept."""
    from tawac.runtime import runner

    order: list[str] = []
    times = {"a": iter([3.0, 1.0, 2.0]), "b": iter([5.0, 4.0, 6.0])}

    def fake(fn, warmup_ms, rep_ms):
        order.append(fn())
        return next(times[order[-1]]), "fake"

    monkeypatch.setattr(runner, "bench_ms", fake)
    med = runner.round_robin_medians({"a": lambda: "a", "b": lambda: "b"}, 3)
    assert med == {"a": 2.0, "b": 5.0}
    assert order == ["a", "b", "b", "a", "a", "b"]


def test_timer_times_through_bench_ms_unless_the_l2_is_clean(monkeypatch):
    """`timer("dirty")` is `bench_ms` (its median, the warm-up and repetitions passed on);
    a mode other than dirty or clean is refused before anything is allocated."""
    from tawac.runtime import runner

    seen = []

    def fake(fn, warmup_ms, rep_ms):
        seen.append((fn(), warmup_ms, rep_ms))
        return 1.5, "fake"

    monkeypatch.setattr(runner, "bench_ms", fake)
    assert runner.timer("dirty")(lambda: "x", 10.0, 50.0) == 1.5
    assert seen == [("x", 10.0, 50.0)]
    with pytest.raises(ValueError, match="l2 'warm': one of dirty, clean"):
        runner.timer("warm")
