"""Attention programs nobody wrote by hand: one template instantiated over query block
(64/128/192 rows: one, two, three consumer warp groups), key block (64/128), head dim
(64/128) and causal or not, compiled with the default pipeline and checked against
torch's SDPA on ragged sequence lengths.

Marked `gpu`; skipped where no Hopper GPU is present.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from gpu_util import requires_gpu
from test_gpu_attention import _check

from tawac.driver import compile_module, parse_text

TEMPLATE = Path(__file__).resolve().parent / "data" / "attention_template.mlir.in"


def instantiate(bm: int, bn: int, d: int, causal: bool, dt: str = "bf16") -> str:
    text = TEMPLATE.read_text()
    if causal:
        kv_end = "arith.addi %m0, %cbm : index"
        need = "arith.cmpi sgt, %n_end, %m0 : index"
        mask2 = "tile.select %in2, %m1, %neg : tensor<{BM}x{BN}xi1>, tensor<{BM}x{BN}xf32>"
    else:
        kv_end = "arith.addi %S, %c0 : index"
        need = "arith.cmpi sgt, %n_end, %S : index"
        mask2 = "tile.select %in1, %m1, %neg : tensor<{BM}x{BN}xi1>, tensor<{BM}x{BN}xf32>"
    for key, value in (("{KVEND}", kv_end), ("{NEED}", need), ("{MASK2}", mask2)):
        text = text.replace(key, value)
    for key, value in (("{BM}", bm), ("{BN}", bn), ("{D}", d), ("{DT}", dt)):
        text = text.replace(key, str(value))
    return text


CASES = list(itertools.product([64, 128, 192], [64, 128], [64, 128], [False, True]))


@pytest.mark.parametrize(("bm", "bn", "d", "causal"), CASES)
def test_template_instances_compile_to_ptx(bm, bn, d, causal):
    """Every instance goes through the whole pipeline to PTX (no GPU needed)."""
    res = compile_module(parse_text(instantiate(bm, bn, d, causal), "sweep.mlir"))
    assert "wgmma.mma_async" in res.ptx, (bm, bn, d, causal)


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize(("bm", "bn", "d", "causal"), CASES)
def test_attention_block_sweep_matches_sdpa(bm, bn, d, causal):
    from tawac.runtime import load_kernel

    res = compile_module(parse_text(instantiate(bm, bn, d, causal), "sweep.mlir"), cubin=True)
    kern = load_kernel(res.cubin, res.sidecar)
    for b, h, s in ((1, 2, 333), (2, 3, 1000)):
        _check(kern, b, h, s, d, causal, bm + bn + d + s)
