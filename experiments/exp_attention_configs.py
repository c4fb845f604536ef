"""Several configurations of one prefill attention example against cuDNN, same run,
round-robin medians (issue 23). Each configuration is `name=OPTIONS` with OPTIONS as
`bench_attention.py --alt` takes them (kernel parameters upper case, pipeline knobs);
`table` is the configuration the shipped tuning table picks per shape.

    python3 experiments/exp_attention_configs.py examples/attention.mlir \
        --config 'table=table' --config 'm192n64=BLOCK_M=192,BLOCK_N=64'

Inputs are random bf16 at the benchmark's shapes (32k tokens, 16 heads at d128, 32 at
d64); each kernel's output is checked against SDPA first (relative error printed).
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tawac.runtime import load_kernel  # noqa: E402
from tawac.runtime.runner import round_robin  # noqa: E402

LOG2E = 1.4426950408889634


def _bench():
    spec = importlib.util.spec_from_file_location(
        "bench_attention", ROOT / "benchmarks" / "bench_attention.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("example", type=Path)
    p.add_argument("--config", action="append", default=[], help="name=OPTIONS")
    p.add_argument("--causal", action="store_true")
    p.add_argument("--head-dim", type=int, default=128)
    p.add_argument("--seqs", default="1024,4096,16384")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--rep-ms", type=float, default=100.0)
    args = p.parse_args()
    from torch.nn.attention import SDPBackend
    from triton.testing import do_bench

    bench = _bench()
    d = args.head_dim
    h = 16 if d == 128 else 32
    configs = dict(c.split("=", 1) for c in args.config)
    fixed = {}
    for name, text in configs.items():
        if text == "table":
            continue
        try:
            fixed[name] = load_kernel(
                *bench._compiled(args.example.resolve(), **bench._options(text))
            )
        except Exception as e:  # noqa: BLE001 - an experiment: say which and go on
            print(f"{name}: {e}", file=sys.stderr)
    print(torch.cuda.get_device_name(), f"d{d}", "causal" if args.causal else "non-causal")
    for s in (int(x) for x in args.seqs.split(",")):
        b = max(1, 32768 // s)
        torch.manual_seed(0)
        q, k, v = (torch.randn(b, h, s, d, device="cuda", dtype=torch.bfloat16) for _ in range(3))
        o = torch.empty_like(q)
        flops = 4 * b * h * s * s * d // (2 if args.causal else 1)
        a = (q, k, v, o, d**-0.5 * LOG2E)
        ref = bench._sdpa_with(SDPBackend.CUDNN_ATTENTION, q, k, v, args.causal).float()
        fns = {
            "cudnn": lambda t=(q, k, v): bench._sdpa_with(
                SDPBackend.CUDNN_ATTENTION, *t, args.causal
            )
        }
        errs = {}
        for name, text in configs.items():
            kern = fixed.get(name)
            if text == "table":
                kern = bench._tuned(ROOT / "examples", args.example.name, b, h, s, d)
            if kern is None:
                continue
            o.fill_(float("nan"))
            kern(*a)
            errs[name] = ((o.float() - ref).norm() / ref.norm()).item()
            fns[name] = lambda kern=kern, a=a: kern(*a)
        names = list(fns)
        times: dict[str, list[float]] = {n: [] for n in names}
        for i in round_robin(len(names), args.rounds):
            times[names[i]].append(do_bench(fns[names[i]], rep=args.rep_ms))
        line = [f"S={s:6d}"]
        cudnn = statistics.median(times["cudnn"])
        for n in names:
            t = statistics.median(times[n])
            err = f" err {errs[n]:.1e}" if n in errs else ""
            line.append(f"{n} {flops / t / 1e9:4.0f} ({cudnn / t:.3f}x{err})")
        print("  ".join(line), flush=True)


if __name__ == "__main__":
    main()
