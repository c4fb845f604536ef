"""Decode attention over a paged KV cache: `examples/attention_paged.mlir`
(pages of 128 keys in a shuffled pool, a block table per sequence) against the same
keys laid out contiguously, run by `examples/attention_decode.mlir` and by PyTorch's SDPA
backends (`enable_gqa=True`): same run, round-robin, medians. The paged result is
checked against SDPA first.

    python3 benchmarks/bench_attention_paged.py [--batches 1,8,32] [--keys 8192,32768]
        [--kv-heads 4,8] [--heads 32] [--splits 1,2,4,8,16] [--rounds 3]

The cost of paging is paged / contiguous (same split); the table's last column is the
best paged time against the best SDPA backend's.
"""

from __future__ import annotations

import argparse
import datetime
import math
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
PAGED = ROOT / "examples" / "attention_paged.mlir"
DECODE = ROOT / "examples" / "attention_decode.mlir"
PAGE = 128


def _ints(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x]


def _caches(b: int, hk: int, keys: int):
    """A shuffled pool of pages holding b sequences of `keys` keys, their block table,
    and the same keys contiguous ([b, hk, keys, 128])."""
    import torch

    pages = -(-keys // PAGE)
    g = torch.Generator(device="cuda").manual_seed(b + keys)
    k = torch.randn(b, hk, pages * PAGE, 128, device="cuda", dtype=torch.bfloat16, generator=g)
    v = torch.randn_like(k)
    order = torch.randperm(b * pages, generator=g, device="cuda")
    kc = torch.empty(b * pages, hk, PAGE, 128, device="cuda", dtype=torch.bfloat16)
    vc = torch.empty_like(kc)
    as_pages = (b * pages, hk, PAGE, 128)
    kc[order] = k.view(b, hk, pages, PAGE, 128).permute(0, 2, 1, 3, 4).reshape(as_pages)
    vc[order] = v.view(b, hk, pages, PAGE, 128).permute(0, 2, 1, 3, 4).reshape(as_pages)
    table = order.view(b, pages).to(torch.int32)
    lens = torch.full((b,), keys, device="cuda", dtype=torch.int32)
    return kc, vc, table, lens, k[:, :, :keys].contiguous(), v[:, :, :keys].contiguous()


def main() -> int:
    import torch
    from torch.nn.attention import SDPBackend

    from tawac.driver import compile_cached
    from tawac.runtime import load_kernel

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--batches", default="1,8,32")
    ap.add_argument("--keys", default="8192,32768")
    ap.add_argument("--kv-heads", default="4,8")
    ap.add_argument("--heads", type=int, default=32)
    ap.add_argument("--splits", default="1,2,4,8,16")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    h = args.heads
    backends = {"flash": SDPBackend.FLASH_ATTENTION, "cudnn": SDPBackend.CUDNN_ATTENTION}
    print(
        f"# {datetime.date.today()} {torch.cuda.get_device_name()}; d128 bf16, H={h}, one query row"
    )
    print("| B | HK | keys | paged (split) | contiguous (split) | best SDPA | paged / SDPA |")
    print("|---|---|---|---|---|---|---|")
    cache: dict = {}

    def kern(path: Path, split: int, group: int):
        if (path, split, group) not in cache:
            r = compile_cached(path, params={"GROUP": group}, split_k=split)
            cache[path, split, group] = load_kernel(r.cubin, r.sidecar)
        return cache[path, split, group]

    for hk in _ints(args.kv_heads):
        for b in _ints(args.batches):
            for keys in _ints(args.keys):
                _shape((b, h, hk, keys), kern, backends, _ints(args.splits), args.rounds)
    return 0


def _shape(shape, kern, backends, splits, rounds) -> None:
    """One row of the table."""
    import torch
    from bench_attention_decode import add_sdpa, checked
    from torch.nn.functional import scaled_dot_product_attention as sdpa

    from tawac.runtime.runner import round_robin_medians

    b, h, hk, keys = shape
    scale = math.log2(math.e) / math.sqrt(128)
    kc, vc, table, lens, k, v = _caches(b, hk, keys)
    q = torch.randn(b, h, 1, 128, device="cuda", dtype=torch.bfloat16)
    o = torch.empty_like(q)
    ref = sdpa(q, k, v, enable_gqa=True).float()
    systems = {}
    for s in splits:
        pk, dk = kern(PAGED, s, h // hk), kern(DECODE, s, h // hk)
        systems[f"paged s{s}"] = lambda pk=pk: pk(q, kc, vc, table, lens, o, scale)
        systems[f"contiguous s{s}"] = lambda dk=dk: dk(q, k, v, o, scale)
    checked(systems, o, ref, (b, hk, keys))
    add_sdpa(systems, backends, q, k, v)
    med = {n: ms * 1e3 for n, ms in round_robin_medians(systems, rounds).items()}
    paged = {n: t for n, t in med.items() if n.startswith("paged")}
    flat = {n: t for n, t in med.items() if n.startswith("contiguous")}
    best_sdpa = min(med[n] for n in backends if n in med)
    bp, bf = min(paged, key=lambda n: paged[n]), min(flat, key=lambda n: flat[n])
    print(
        f"| {b} | {hk} | {keys} | {paged[bp]:.0f} ({bp.split()[1]}) | "
        f"{flat[bf]:.0f} ({bf.split()[1]}) | {best_sdpa:.0f} | "
        f"{best_sdpa / paged[bp]:.2f}x |",
        flush=True,
    )
    print("#   " + " ".join(f"{n}={t:.0f}" for n, t in sorted(med.items())), flush=True)


if __name__ == "__main__":
    from results import run_recorded

    sys.exit(run_recorded("attention_paged", main))
