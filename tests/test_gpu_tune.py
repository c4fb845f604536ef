"""`tawac tune` on the GPU: a small search over examples/gemm.mlir writes a table whose
winner is correct.

Marked `gpu`; skipped where no Hopper GPU is present.  Run on the device with
`scripts/gpu.sh tests`.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from gpu_util import requires_gpu

from tawac.schedule.tuning import bucket_of, pick, source_sha256
from tawac.tools import cli

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
SIZES = {"M": 512, "N": 512, "K": 512}


@pytest.mark.gpu
@requires_gpu
def test_tune_gemm_writes_a_correct_winner(tmp_path):
    import torch

    from tawac.driver import compile_file
    from tawac.runtime import load_kernel

    source = tmp_path / "gemm.mlir"
    shutil.copy(EXAMPLES / "gemm.mlir", source)
    size = ",".join(f"{k}={v}" for k, v in SIZES.items())
    res = CliRunner().invoke(
        cli.main,
        ["tune", str(source), "--size", size, "--space", "BLOCK_N=128,256", "-j", "2"]
        + ["--rep-ms", "20"],
    )
    assert res.exit_code == 0, res.output
    path = tmp_path / "gemm.tune.json"
    assert f"table: {path}" in res.output
    table = json.loads(path.read_text())
    assert table["kernel"] == "gemm"
    assert table["source_sha256"] == source_sha256(source.read_text())
    (entry,) = table["entries"]
    assert entry["bucket"] == bucket_of(SIZES)
    assert entry["params"] in ({}, {"BLOCK_N": 128}, {"BLOCK_N": 256})
    assert entry["time_ms"] > 0 and entry["tflops"] > 0
    assert entry["device"] == torch.cuda.get_device_name()
    params, options = pick(table, SIZES)

    # the winner computes C = A B^T
    r = compile_file(source, params=params, **options)
    kernel = load_kernel(r.cubin, r.sidecar)
    torch.manual_seed(0)
    a = torch.randn(SIZES["M"], SIZES["K"], device="cuda", dtype=torch.bfloat16)
    b = torch.randn(SIZES["N"], SIZES["K"], device="cuda", dtype=torch.bfloat16)
    c = torch.full((SIZES["M"], SIZES["N"]), float("nan"), device="cuda", dtype=torch.bfloat16)
    kernel(a, b, c)
    torch.cuda.synchronize()
    ref = a.float() @ b.float().T
    assert not torch.isnan(c).any()
    assert float((c.float() - ref).norm() / ref.norm()) < 2e-2
