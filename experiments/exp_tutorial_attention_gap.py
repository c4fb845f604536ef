"""Experiment: where the tutorial attention converted from TTIR (`examples/triton/attention.ttir`,
fp16, N_CTX = 4096) loses to tawac's own example with f16 tiles. Same run, round-robin
medians (ms) of: the converted tile program as is; without its log-sum-exp store (`M`);
with its loop bound dynamic (the key length from the tensor, as the example has it); the
example (`examples/attention.mlir` with f16 tiles). Each output is checked against a float32
reference first.

    python3 experiments/exp_tutorial_attention_gap.py     (needs /tmp/tut_tile.mlir:
        tawac opt examples/triton/attention.ttir -p convert-ttir > /tmp/tut_tile.mlir)
"""

from __future__ import annotations

import json
import math
import re
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main() -> int:
    import torch

    from tawac.driver import compile_cached
    from tawac.runtime import load_kernel
    from tawac.runtime.runner import bench_ms, round_robin

    tut = Path(sys.argv[1] if len(sys.argv) > 1 else "/tmp/tut_tile.mlir").read_text()
    no_m = re.sub(r"^\s*tile\.store %m_i_2.*$", "", tut, flags=re.M)
    dyn = tut.replace(
        "%8 = arith.constant 4096 : index",
        '%8 = tile.dim %K[2] : !tile.tensor<?x?x?x?xf16, ["qz", "H", "kn", "K3"]>',
    )
    assert dyn != tut
    ex = (ROOT / "examples/attention.mlir").read_text().replace("bf16", "f16")
    z, h, n, d = 4, 32, 4096, 128
    q, k, v = (torch.randn(z, h, n, d, device="cuda", dtype=torch.float16) for _ in range(3))
    m = torch.empty(z * h * n, device="cuda", dtype=torch.float32)
    scale = 1 / math.sqrt(d)
    ref = torch.softmax(q.float() @ k.float().transpose(-1, -2) * scale, -1) @ v.float()

    def load(text, name):
        built = compile_cached(ROOT / name, text=text, cubin=True)
        return load_kernel(built.cubin, json.loads(built.sidecar_text))

    kt, km, kd, ke = (
        load(tut, "tut.mlir"),
        load(no_m, "tut_no_m.mlir"),
        load(dyn, "tut_dyn.mlir"),
        load(ex, "ex16.mlir"),
    )
    systems = {
        "converted": lambda o: kt(q, k, v, scale, m, o),
        "no M store": lambda o: km(q, k, v, scale, m, o),
        "dynamic bound": lambda o: kd(q, k, v, scale, m, o),
        "example f16": lambda o: ke(q, k, v, o, scale * 1.44269504),
    }
    outs = {}
    for name, f in systems.items():
        o = torch.full_like(q, float("nan"))
        f(o)
        torch.cuda.synchronize()
        err = (o.float() - ref).abs().max().item()
        assert err < 2e-2, (name, err)
        outs[name] = o
    names = list(systems)
    samples = {s: [] for s in names}
    for i in round_robin(len(names), 7):
        s = names[i]
        samples[s].append(bench_ms(lambda f=systems[s], o=outs[s]: f(o), 25.0, 100.0)[0])
    print(f"# tutorial attention gap, fp16 4x32x4096 d128, {torch.cuda.get_device_name(0)}")
    for s in names:
        ms = statistics.median(samples[s])
        print(f"| {s} | {ms:.4f} ms | {4.0 * z * h * n * n * d / ms / 1e9:.0f} TFLOP/s |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
