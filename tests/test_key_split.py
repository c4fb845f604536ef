"""One key-split decision for every front end: the compiler records in the launch sidecar
whether an unsplit kernel's key loop can be split and how long it is (`"key_split"`,
docs/abi.md), and `tawac.schedule.tuning.launch_splits` decides a launch's split from it,
for `tawac.torch` (a tile program without a table entry: the decode example at batch 1
and 128k keys splits) as for `tawac.triton`. CPU only: PTX, no ptxas, no launch."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from tawac.compiler import compile_file, parse_file
from tawac.dialects import tile
from tawac.passes.split_k import key_split
from tawac.schedule.tuning import fill_splits, key_steps, launch_splits

REPO = Path(__file__).resolve().parent.parent
DECODE = REPO / "examples/attention_decode.mlir"
#: The decode example's sizes: 32 query heads over 4 K/V heads (GROUP 8), one query row.
DECODE_SIZES = {"H": 32, "L": 1, "HK": 4, "D": 128}


def _fact(path: str):
    module = parse_file(REPO / path)
    return key_split(next(o for o in module.walk() if isinstance(o, tile.KernelOp)))


@pytest.mark.parametrize(
    "path, fact",
    [
        ("examples/attention_decode.mlir", {"cdiv": {"arg": "k", "dim": 2}, "by": 128}),
        ("examples/attention.mlir", {"cdiv": {"arg": "k", "dim": 2}, "by": 128}),
        ("tests/data/triton/unseen_gqa.ttir", {"cdiv": {"arg": "K", "dim": 2}, "by": 128}),
        # `range(0, n_blocks * BLOCK_N, BLOCK_N)`: an index argument, 1 step a block
        ("tests/data/triton/key_bound_scalar.ttir", {"cdiv": {"scalar": "n_blocks"}, "by": 1}),
        ("examples/attention_paged.mlir", None),  # the bound is read from memory
    ],
)
def test_a_splittable_key_loop_and_its_steps(path, fact):
    assert _fact(path) == {"steps": fact}


@pytest.mark.parametrize(
    "path",
    [
        "examples/attention_causal.mlir",  # a row mask (`_row_mask`): not split
        "tests/data/triton/unseen_gqa_causal.ttir",
        "examples/gemm.mlir",  # no online softmax
    ],
)
def test_no_key_loop_to_split(path):
    assert _fact(path) is None


def test_the_sidecar_records_it_on_the_unsplit_kernel_only():
    plain = compile_file(DECODE, cubin=False)
    assert plain.sidecar["key_split"] == {"steps": {"cdiv": {"arg": "k", "dim": 2}, "by": 128}}
    assert "key_split" not in compile_file(DECODE, cubin=False, split_k=2).sidecar
    assert "key_split" not in compile_file(REPO / "examples/gemm.mlir", cubin=False).sidecar


def test_key_steps_evaluates_the_extent():
    shapes = {"k": (1, 4, 131072, 128)}
    assert key_steps({"cdiv": {"arg": "k", "dim": 2}, "by": 128}, shapes) == 1024
    assert key_steps({"cdiv": {"arg": "k", "dim": 2}, "by": 128}, {"k": (1, 4, 129, 8)}) == 2
    assert key_steps({"cdiv": {"scalar": "n"}, "by": 1}, {}, {"n": 63}) == 63
    assert key_steps({"cdiv": {"scalar": "n"}, "by": 1}, {}) is None  # not given
    assert key_steps({"const": 7}, {}) == 7
    assert key_steps(None, shapes) is None


SIDECAR = {"key_split": {"steps": {"cdiv": {"arg": "k", "dim": 2}, "by": 128}}}


@pytest.mark.parametrize(
    "programs, keys, split",
    [(4, 131072, 32), (4, 8000, 4), (16, 8192, 8), (128, 131072, 1), (0, 8192, 1)],
)
def test_launch_splits_is_fill_splits_of_the_programs_and_steps(programs, keys, split):
    shapes = {"k": (1, 4, keys, 128)}
    want = fill_splits(programs, 132, math.ceil(keys / 128))
    assert want == split
    got = launch_splits(SIDECAR, programs, 132, shapes)
    assert got == ({"split_k": split} if split > 1 else {})


def test_launch_splits_leaves_a_named_decomposition_and_other_kernels_alone():
    shapes = {"k": (1, 4, 131072, 128)}
    assert launch_splits(SIDECAR, 4, 132, shapes, given={"split_k": 1}) == {}
    assert launch_splits(SIDECAR, 4, 132, shapes, given={"stream_k": 4}) == {}
    assert launch_splits(SIDECAR, 4, 132, shapes, given={"stages": 3}) == {"split_k": 32}
    assert launch_splits({}, 4, 132, shapes) == {}  # no key loop: a GEMM, a causal one
    unknown = {"key_split": {"steps": None}}  # a paged cache: at most 16 splits
    assert launch_splits(unknown, 4, 132, shapes) == {"split_k": 16}


# ---- tawac.torch: the decode example without a table


@pytest.fixture
def torch_ptx(monkeypatch):
    """`tawac.torch` compiling PTX only (no ptxas) and a launcher that records its calls;
    132 SMs (an H100)."""
    torch = pytest.importorskip("torch")
    import tawac.torch as tt
    from tawac.driver import compile_cached

    def ptx_only(source, *, params=None, **options):
        return compile_cached(source, params=params, **{**options, "cubin": False})

    monkeypatch.setattr(tt, "compile_cached", ptx_only)
    monkeypatch.setattr(tt, "load_kernel", lambda cubin, sidecar: SidecarKernel(sidecar))
    monkeypatch.setattr(tt, "_sms", lambda: 132)
    monkeypatch.setattr(tt, "DEVICE_TYPES", frozenset({"cuda", "cpu"}))
    return torch, tt


class SidecarKernel:
    """Stands in for a loaded kernel: its sidecar, the argument lists it was called with."""

    def __init__(self, sidecar):
        self.sidecar, self.launches = sidecar, []

    def __call__(self, *args, stream=None):
        self.launches.append(args)


def test_the_decode_example_without_a_table_splits_its_keys_at_batch_1(torch_ptx):
    _, tt = torch_ptx
    k = tt.kernel(DECODE, tuning=None)
    assert k.table is None
    params, options = k.config({"B": 1, "S": 131072, **DECODE_SIZES})
    # 1 x 4 grouped programs (GROUP 8), 1024 key steps: 32 splits fill 128 of 132 SMs
    assert options == {"split_k": 32}
    assert params == {}
    assert k.config({"B": 32, "S": 131072, **DECODE_SIZES})[1] == {}  # 128 programs
    assert k.config({"B": 1, "S": 2048, **DECODE_SIZES})[1] == {"split_k": 2}  # 16 steps
    # a decomposition the user names is theirs
    mine = tt.kernel(DECODE, tuning=None, split_k=1)
    assert mine.config({"B": 1, "S": 131072, **DECODE_SIZES})[1] == {"split_k": 1}


def test_the_decode_call_launches_the_split_kernel(torch_ptx):
    torch, tt = torch_ptx
    k = tt.kernel(DECODE, tuning=None)
    q = torch.zeros(1, 32, 1, 128, dtype=torch.bfloat16)
    kv = torch.zeros(1, 4, 4096, 128, dtype=torch.bfloat16)
    k(q, kv, kv, 0.1)
    # 32 key steps: 4 splits of 8 (`FILL_SPLITS_MIN_STEPS`)
    split = [kern for key, kern in k.kernels.items() if '"split_k": 4' in key]
    assert len(split) == 1 and len(split[0].launches) == 1
    assert "key_split" not in split[0].sidecar
    assert split[0].sidecar["workspace"]  # the partial (O, m, l) the splits combine
