"""Decode attention (issue 23): `examples/attention_decode.mlir` (grouped query heads,
split keys) against PyTorch's SDPA backends (flash, cuDNN, memory-efficient; each with
`enable_gqa=True`), same run, round-robin, medians; with the bandwidth of reading the KV
cache (bytes of K and V / time). Each tawac result is checked against SDPA first.

    python3 benchmarks/bench_attention_decode.py [--rows 1,4,16] [--batches 1,8,32]
        [--keys 8192,32768,131072] [--kv-heads 4,8] [--heads 32]
        [--splits 1,2,4,8,16]      # tawac configurations: keys split S ways
        [--table]                  # also through tawac.torch with the shipped table
        [--rounds 3]

Prints one row per shape: tawac's best split and its time, each SDPA backend, the best
SDPA, tawac / best SDPA (time ratio inverted: > 1 is faster), and the KV read rates.
"""

from __future__ import annotations

import argparse
import datetime
import math
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
EXAMPLE = ROOT / "examples" / "attention_decode.mlir"


def _ints(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x]


def _sdpa(backend, q, k, v):
    from torch.nn.attention import sdpa_kernel
    from torch.nn.functional import scaled_dot_product_attention as sdpa

    with sdpa_kernel(backend):
        return sdpa(q, k, v, enable_gqa=True)


def main() -> int:
    import torch
    from torch.nn.attention import SDPBackend

    from tawac.driver import compile_cached
    from tawac.runtime import load_kernel

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", default="1,4,16")
    ap.add_argument("--batches", default="1,8,32")
    ap.add_argument("--keys", default="8192,32768,131072")
    ap.add_argument("--kv-heads", default="4,8")
    ap.add_argument("--heads", type=int, default=32)
    ap.add_argument("--splits", default="1,2,4,8,16")
    ap.add_argument("--table", action="store_true")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()

    backends = {
        "flash": SDPBackend.FLASH_ATTENTION,
        "cudnn": SDPBackend.CUDNN_ATTENTION,
        "efficient": SDPBackend.EFFICIENT_ATTENTION,
    }
    h = args.heads
    dev = torch.cuda.get_device_name()
    print(f"# {datetime.date.today()} {dev}; d128 bf16, H={h}; times in us (medians)")
    kernels: dict[tuple[int, int], object] = {}

    def kern(split: int, group: int):
        if (split, group) not in kernels:
            r = compile_cached(EXAMPLE, params={"GROUP": group}, split_k=split)
            if "0 bytes spill stores, 0 bytes spill loads" not in r.ptxas_report:
                print(f"# split {split} group {group}: spills", file=sys.stderr)
            kernels[split, group] = load_kernel(r.cubin, r.sidecar)
        return kernels[split, group]

    table = None
    if args.table:
        import tawac.torch

        table = tawac.torch.kernel(EXAMPLE)
    print(
        "| B | H | HK | rows | keys | tawac (split) | "
        + " | ".join(backends)
        + " | best SDPA | tawac / best | KV TB/s tawac vs best |"
    )
    print("|---" * (8 + len(backends)) + "|")
    ratios = []
    for hk in _ints(args.kv_heads):
        for b in _ints(args.batches):
            for keys in _ints(args.keys):
                for rows in _ints(args.rows):
                    shape = (b, h, hk, rows, keys)
                    r = _shape(shape, kern, table, backends, _ints(args.splits), args.rounds)
                    if r is not None:
                        ratios.append(r)
    if ratios:
        geo = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
        print(
            f"# geomean tawac / best SDPA: {geo:.3f}x over {len(ratios)} shapes; "
            f"lowest {min(ratios):.2f}x"
        )
    return 0


def _shape(shape, kern, table, backends, splits, rounds) -> float | None:
    """One row of the table; tawac / best SDPA (time ratio, > 1 faster)."""
    import torch
    from torch.nn.attention import SDPBackend

    from tawac.runtime.runner import bench_ms, round_robin

    b, h, hk, rows, keys = shape
    g = torch.Generator(device="cuda").manual_seed(b * 7 + keys + rows)
    bf = torch.bfloat16
    q = torch.randn(b, h, rows, 128, device="cuda", dtype=bf, generator=g)
    k = torch.randn(b, hk, keys, 128, device="cuda", dtype=bf, generator=g)
    v = torch.randn_like(k)
    o = torch.empty_like(q)
    scale = math.log2(math.e) / math.sqrt(128)
    systems = {}
    for s in splits:
        kk = kern(s, h // hk)
        systems[f"s{s}"] = lambda kk=kk: kk(q, k, v, o, scale)
    if table is not None:
        systems["table"] = lambda: table(q, k, v, o, scale)
    ref = _sdpa(SDPBackend.FLASH_ATTENTION, q, k, v).float()
    for name, fn in list(systems.items()):
        o.fill_(float("nan"))
        fn()
        err = (o.float() - ref).abs().max().item()
        if not err < 2e-2:
            print(f"# {name} wrong at {shape}: {err}", file=sys.stderr)
            del systems[name]
    for name, be in backends.items():
        try:
            _sdpa(be, q, k, v)
        except RuntimeError:
            continue
        systems[name] = lambda be=be: _sdpa(be, q, k, v)
    names = list(systems)
    times: dict[str, list[float]] = {n: [] for n in names}
    for i in round_robin(len(names), rounds):
        times[names[i]].append(bench_ms(systems[names[i]])[0] * 1e3)
    med = {n: statistics.median(t) for n, t in times.items()}
    ours = {n: t for n, t in med.items() if n not in backends}
    theirs = {n: med[n] for n in backends if n in med}
    if not ours or not theirs:
        return None
    best = min(ours, key=lambda n: ours[n])
    best_sdpa = min(theirs.values())
    kv = 2 * k.numel() * 2
    ratio = best_sdpa / ours[best]
    cells = " | ".join(f"{theirs[n]:.0f}" if n in theirs else "-" for n in backends)
    print(
        f"| {b} | {h} | {hk} | {rows} | {keys} | {ours[best]:.0f} ({best}) | {cells} | "
        f"{best_sdpa:.0f} | {ratio:.2f}x | {kv / ours[best] / 1e6:.2f} vs "
        f"{kv / best_sdpa / 1e6:.2f} |",
        flush=True,
    )
    print("#   " + " ".join(f"{n}={t:.0f}" for n, t in sorted(ours.items())), flush=True)
    return ratio


if __name__ == "__main__":
    sys.exit(main())
