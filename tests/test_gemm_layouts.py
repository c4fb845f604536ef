"""The GEMM in its four operand layouts, the ones a backward pass needs
(`examples/gemm.mlir`: C = A B^T, both K-major; `gemm_nn.mlir`: C = A B, B stored K x N;
`gemm_tn.mlir`: C = A^T B, A stored K x M; `gemm_tt.mlir`: C = A^T B^T), and
`tawac.torch.matmul` / `linear`, differentiable through them: the interpreter against
float32 torch at ragged sizes, the cubins without spills, the GPU against float32 torch,
and a few training steps of a two-layer MLP under `torch.compile(fullgraph=True)`."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from gpu_util import (
    assert_assembles_without_spills,
    assert_trains_alike,
    loaded_kernel,
    requires_gpu,
)

from tawac.compiler import parse_file
from tawac.dialects import tile
from tawac.driver import compile_file
from tawac.runtime.interpret import interpret_launch

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
#: layout -> (the example, A stored M x K (False) or K x M (True), B stored N x K (True)
#: or K x N (False))
LAYOUTS = {
    "nt": ("gemm", False, True),
    "nn": ("gemm_nn", False, False),
    "tn": ("gemm_tn", True, False),
    "tt": ("gemm_tt", True, True),
}
SMALL = {"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 64}  # a quicker interpreter


def _kernel(name: str, params=None) -> tile.KernelOp:
    module = parse_file(EXAMPLES / f"{name}.mlir", params=params)
    return next(o for o in module.walk() if isinstance(o, tile.KernelOp))


def _operands(layout: str, m: int, n: int, k: int, device: str, seed: int):
    """A and B stored as `layout` says, and the float32 reference A B (m x n)."""
    _, a_km, b_nk = LAYOUTS[layout]
    g = torch.Generator(device=device).manual_seed(seed)
    a = torch.randn(m, k, device=device, generator=g).to(torch.bfloat16)
    b = torch.randn(k, n, device=device, generator=g).to(torch.bfloat16)
    ref = a.float() @ b.float()
    return (a.T.contiguous() if a_km else a), (b.T.contiguous() if b_nk else b), ref


def _close(name: str, got, want, rtol: float = 1e-2) -> None:
    assert not torch.isnan(got).any(), f"{name}: unwritten (poisoned) elements"
    err = float((got.float() - want).norm() / want.norm())
    assert err < rtol, f"{name}: relative error {err:.3g}"


@pytest.mark.parametrize(("m", "n", "k"), [(200, 130, 100), (65, 129, 190)])
@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_each_layout_in_the_interpreter(layout, m, n, k):
    a, b, ref = _operands(layout, m, n, k, "cpu", seed=m + n + k)
    c = torch.full((m, n), float("nan")).to(torch.bfloat16)
    interpret_launch(_kernel(LAYOUTS[layout][0], SMALL), [a, b, c])
    _close(layout, c, ref)


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_each_layout_assembles_without_spills_and_transposes_in_the_mma(layout):
    name, a_km, b_nk = LAYOUTS[layout]
    res = compile_file(EXAMPLES / f"{name}.mlir")
    assert_assembles_without_spills(res.ptx)
    # wgmma's last two immediates: A and B transposed (MN-major) in shared memory
    call = res.ptx[res.ptx.index("wgmma.mma_async") :]
    tail = call[: call.index(";")].replace(" ", "").replace("\n", "")
    assert tail.endswith(f",{int(a_km)},{int(not b_nk)}"), tail[-40:]


class _Interpreted:
    """Stands in for a loaded kernel: the tile program the sidecar names, interpreted."""

    def __init__(self, cubin, sidecar):
        self.sidecar = sidecar
        self.kernel = _kernel(sidecar["kernel"], sidecar.get("kernel_params"))

    def __call__(self, *args, stream=None):
        interpret_launch(self.kernel, list(args))


@pytest.mark.parametrize("function", ["matmul", "linear"])
def test_the_autograd_functions_agree_with_autograd_in_the_interpreter(monkeypatch, function):
    """`tawac.torch.matmul` and `linear`, forward and backward (their kernels compiled,
    then run in the interpreter on the CPU), against torch's autograd in float32."""
    import tawac.torch as tt

    monkeypatch.setattr(tt, "load_kernel", _Interpreted)
    monkeypatch.setattr(tt, "DEVICE_TYPES", frozenset({"cuda", "cpu"}))
    monkeypatch.setattr(tt, "_GEMMS", {})
    g = torch.Generator().manual_seed(3)
    m, k, n = 70, 90, 130
    x = torch.randn(m, k, generator=g).to(torch.bfloat16)
    w = torch.randn(k, n, generator=g) if function == "matmul" else torch.randn(n, k, generator=g)
    w = w.to(torch.bfloat16)
    dy = torch.randn(m, n, generator=g).to(torch.bfloat16)
    ours = [t.clone().requires_grad_() for t in (x, w)]
    ref = [t.float().requires_grad_() for t in (x, w)]
    y = getattr(tt, function)(*ours)
    want = ref[0] @ ref[1] if function == "matmul" else ref[0] @ ref[1].T
    y.backward(dy)
    want.backward(dy.float())
    _close("y", y.detach(), want.detach())
    for name, got, exp in zip(("dx", "dw"), ours, ref, strict=True):
        assert got.grad is not None and got.grad.dtype == torch.bfloat16, name
        _close(name, got.grad, exp.grad)


def test_the_autograd_functions_refuse_what_they_do_not_cover():
    import tawac.torch as tt
    from tawac.runtime.arguments import LaunchError

    with pytest.raises(LaunchError, match="2-d bf16"):
        tt.matmul(torch.ones(2, 3, 4, dtype=torch.bfloat16), torch.ones(4, 5, dtype=torch.bfloat16))
    with pytest.raises(LaunchError, match="2-d bf16"):
        tt.linear(torch.ones(3, 4), torch.ones(5, 4))


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize(("m", "n", "k"), [(4096, 4096, 4096), (1000, 2000, 3000), (129, 257, 65)])
@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_each_layout_on_the_gpu(layout, m, n, k):
    kern = loaded_kernel(EXAMPLES / f"{LAYOUTS[layout][0]}.mlir")
    a, b, ref = _operands(layout, m, n, k, "cuda", seed=m + n + k)
    c = torch.full((m, n), float("nan"), device="cuda", dtype=torch.bfloat16)
    kern(a, b, c)
    torch.cuda.synchronize()
    _close(f"{layout} {m}x{n}x{k}", c, ref)


@pytest.mark.gpu
@requires_gpu
def test_a_training_step_matches_torch():
    """A two-layer MLP with `tawac.torch.linear` and `matmul`, a few SGD steps on bf16
    weights: the loss and the gradients follow torch's (cuBLAS, the same bf16 weights and
    updates) step after step, eager and under torch.compile (no graph break at the
    custom operators: fullgraph)."""
    import tawac.torch as tt

    def mlp(lin, mm, x, w1, w2):
        return mm(torch.relu(lin(x, w1)), w2).float().square().mean()

    g = torch.Generator(device="cuda").manual_seed(0)
    x = torch.randn(300, 256, device="cuda", generator=g).to(torch.bfloat16)
    init = (torch.randn(512, 256, device="cuda", generator=g) / 16,
            torch.randn(512, 200, device="cuda", generator=g) / 22)  # fmt: skip
    ours = [w.to(torch.bfloat16).requires_grad_() for w in init]
    ref = [w.to(torch.bfloat16).requires_grad_() for w in init]
    assert_trains_alike(
        lambda ws: mlp(tt.linear, tt.matmul, x, *ws),
        lambda ws: mlp(torch.nn.functional.linear, torch.matmul, x, *ws),
        ours,
        ref,
        lr=0.5,
        grad_rtol=3e-2,
    )
