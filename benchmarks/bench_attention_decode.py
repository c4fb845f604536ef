"""Decode attention: `examples/attention_decode.mlir` (grouped query heads,
split keys) against PyTorch's SDPA backends (flash, cuDNN, memory-efficient; each with
`enable_gqa=True`), same run, round-robin, medians; with the bandwidth of reading the KV
cache (bytes of K and V / time). Each tawac result is checked against SDPA first.

    python3 benchmarks/bench_attention_decode.py [--rows 1,4,16] [--batches 1,8,32]
        [--keys 8192,32768,131072] [--kv-heads 4,8] [--heads 32]
        [--configs 64s1,64s4,128s2]  # tawac configurations: BLOCK_M, keys split S ways
                                     # (64s8n64: BLOCK_N 64)
        [--table]                  # also through tawac.torch with the shipped table
        [--untuned]                # also through tawac.torch without a table: the key
                                   # split the launch rule picks (tuning.launch_splits)
        [--write-table PATH]       # a tuning table of each shape's best configuration
        [--rounds 3]
        [--l2 dirty|clean]         # the L2 emptied before each timed call by do_bench's
                                   # 256 MB memset (default) or by a 256 MB read

Prints one row per shape: tawac's best split and its time, each SDPA backend, the best
SDPA, tawac / best SDPA (time ratio inverted: > 1 is faster), and the KV read rates.
"""

from __future__ import annotations

import argparse
import datetime
import math
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
EXAMPLE = ROOT / "examples" / "attention_decode.mlir"


def _ints(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x]


def _config(text: str) -> tuple[int, int, int, int]:
    """(BLOCK_M, splits, BLOCK_N, stages) of a configuration `64s4`, `64s4n64` or
    `64s4n64d8` (BLOCK_N 128 and the planner's ring depth (0) unless given)."""
    import re

    m = re.fullmatch(r"(\d+)s(\d+)(?:n(\d+))?(?:d(\d+))?", text)
    if m is None:
        raise SystemExit(f"bad configuration {text!r} (expected e.g. 64s4, 64s4n64d8)")
    bm, split, bn, depth = m.groups()
    return int(bm), int(split), int(bn or 128), int(depth or 0)


def _sdpa(backend, q, k, v):
    from torch.nn.attention import sdpa_kernel
    from torch.nn.functional import scaled_dot_product_attention as sdpa

    with sdpa_kernel(backend):
        return sdpa(q, k, v, enable_gqa=True)


def checked(systems: dict, out, ref, where) -> None:
    """Run each system once on the poisoned output and drop (saying so) those whose result
    is not within 2e-2 of the fp32 reference `ref`."""
    for name, fn in list(systems.items()):
        out.fill_(float("nan"))
        fn()
        err = (out.float() - ref).abs().max().item()
        if not err < 2e-2:
            print(f"# {name} wrong at {where}: {err}", file=sys.stderr)
            del systems[name]


def add_sdpa(systems: dict, backends: dict, q, k, v) -> None:
    """Add each SDPA backend that accepts these inputs (`enable_gqa=True`)."""
    for name, be in backends.items():
        try:
            _sdpa(be, q, k, v)
        except RuntimeError:
            continue
        systems[name] = lambda be=be: _sdpa(be, q, k, v)


def main() -> int:
    import torch
    from torch.nn.attention import SDPBackend

    from tawac.driver import compile_cached
    from tawac.runtime import load_kernel
    from tawac.runtime.runner import L2_MODES

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", default="1,4,16")
    ap.add_argument("--batches", default="1,8,32")
    ap.add_argument("--keys", default="8192,32768,131072")
    ap.add_argument("--kv-heads", default="4,8")
    ap.add_argument("--heads", type=int, default=32)
    ap.add_argument("--configs", default="64s1,64s2,64s4,64s8,64s16,64s32,128s1,128s2,128s4")
    ap.add_argument("--table", action="store_true")
    ap.add_argument("--untuned", action="store_true")
    ap.add_argument("--write-table", default="")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--l2", choices=L2_MODES, default="dirty")
    args = ap.parse_args()

    backends = {
        "flash": SDPBackend.FLASH_ATTENTION,
        "cudnn": SDPBackend.CUDNN_ATTENTION,
        "efficient": SDPBackend.EFFICIENT_ATTENTION,
    }
    h = args.heads
    dev = torch.cuda.get_device_name()
    print(f"# {datetime.date.today()} {dev}; d128 bf16, H={h}; times in us (medians); "
          f"L2 emptied {args.l2} before each call")  # fmt: skip
    kernels: dict[tuple[str, int], object] = {}

    def kern(config: str, group: int):
        if (config, group) not in kernels:
            bm, split, bn, depth = _config(config)
            params = {"GROUP": group, "BLOCK_M": bm, "BLOCK_N": bn}
            r = compile_cached(EXAMPLE, params=params, split_k=split, stages=depth)
            if "0 bytes spill stores, 0 bytes spill loads" not in r.ptxas_report:
                print(f"# {config} group {group}: spills", file=sys.stderr)
            kernels[config, group] = load_kernel(r.cubin, r.sidecar)
        return kernels[config, group]

    table = None
    if args.table:
        import tawac.torch

        table = tawac.torch.kernel(EXAMPLE)
    untuned = None
    if args.untuned:
        import tawac.torch

        untuned = tawac.torch.kernel(EXAMPLE, tuning=None)
    print(
        "| B | H | HK | rows | keys | tawac (split) | "
        + " | ".join(backends)
        + " | best SDPA | tawac / best | KV TB/s tawac vs best |"
    )
    print("|---" * (8 + len(backends)) + "|")
    ratios = []
    best: list[tuple[tuple, str, float]] = []
    for hk in _ints(args.kv_heads):
        for b in _ints(args.batches):
            for keys in _ints(args.keys):
                for rows in _ints(args.rows):
                    shape = (b, h, hk, rows, keys)
                    configs = args.configs.split(",")
                    r = _shape(shape, kern, table, backends, configs, args.rounds, args.l2, untuned)
                    if r is not None:
                        ratios.append(r[0])
                        best.append((shape, r[1], r[2]))
    if ratios:
        geo = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
        print(
            f"# geomean tawac / best SDPA: {geo:.3f}x over {len(ratios)} shapes; "
            f"lowest {min(ratios):.2f}x"
        )
    if args.write_table:
        _write_table(Path(args.write_table), best, dev)
    return 0


def _write_table(path: Path, best, device: str) -> None:
    """A tuning table (`tawac.schedule.tuning`'s format) of each shape's best configuration."""
    import json

    from tawac.driver import compile_file
    from tawac.schedule import tuning

    args = compile_file(EXAMPLE, cubin=False).sidecar["args"]
    entries = []
    for (b, h, hk, rows, keys), config, us in best:
        if config == "table":
            continue
        bm, split, bn, depth = _config(config)
        sizes = {"B": b, "H": h, "L": rows, "HK": hk, "S": keys, "D": 128}
        entries.append(
            {
                "bucket": tuning.bucket_of(sizes),
                "ragged": tuning.ragged_of(sizes),
                "sizes": sizes,
                "params": {"GROUP": h // hk, "BLOCK_M": bm, "BLOCK_N": bn},
                "options": {
                    **({"split_k": split} if split > 1 else {}),
                    **({"stages": depth} if depth else {}),
                },
                "time_ms": us / 1e3,
                "device": device,
                "date": str(datetime.date.today()),
            }
        )
    table = {
        "format": tuning.TABLE_FORMAT,
        "kernel": "attention_decode",
        "source_sha256": tuning.source_sha256(EXAMPLE.read_text()),
        "args": args,
        "entries": entries,
    }
    tuning.validate_table(table)
    path.write_text(json.dumps(table, indent=2) + "\n")
    print(f"# wrote {path} ({len(entries)} entries)")


def _shape(
    shape, kern, table, backends, configs, rounds, l2="dirty", untuned=None
) -> tuple[float, str, float] | None:
    """One row of the table; (tawac / best SDPA (time ratio, > 1 faster), tawac's best
    configuration, its time in us)."""
    import torch
    from torch.nn.attention import SDPBackend

    from tawac.runtime.runner import round_robin_medians

    b, h, hk, rows, keys = shape
    g = torch.Generator(device="cuda").manual_seed(b * 7 + keys + rows)
    bf = torch.bfloat16
    q = torch.randn(b, h, rows, 128, device="cuda", dtype=bf, generator=g)
    k = torch.randn(b, hk, keys, 128, device="cuda", dtype=bf, generator=g)
    v = torch.randn_like(k)
    o = torch.empty_like(q)
    scale = math.log2(math.e) / math.sqrt(128)
    systems = {}
    for c in configs:
        kk = kern(c, h // hk)
        systems[c] = lambda kk=kk: kk(q, k, v, o, scale)
    if table is not None:
        systems["table"] = lambda: table(q, k, v, o, scale)
    if untuned is not None:
        systems["untuned"] = lambda: untuned(q, k, v, o, scale)
    ref = _sdpa(SDPBackend.FLASH_ATTENTION, q, k, v).float()
    checked(systems, o, ref, shape)
    add_sdpa(systems, backends, q, k, v)
    med = {n: ms * 1e3 for n, ms in round_robin_medians(systems, rounds, l2=l2).items()}
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
    return ratio, best, ours[best]


if __name__ == "__main__":
    from results import run_recorded

    sys.exit(run_recorded("attention_decode", main))
