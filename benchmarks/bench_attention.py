"""Attention forward benchmark: tawac (examples/attention*.mlir) vs cuDNN and
FlashAttention-2 through torch's SDPA backends vs a Triton FA2 kernel, bf16, same run.

TFLOP/s = 4 * B * H * S^2 * D / time, half that when causal.  Prints a table (markdown with
--markdown) and checks tawac's output against SDPA once per shape.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import statistics
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tawac.driver import compile_file  # noqa: E402
from tawac.runtime import load_kernel  # noqa: E402
from tawac.runtime.runner import round_robin  # noqa: E402
from tawac.support.diagnostics import CompileError  # noqa: E402
from tawac.support.options import knob  # noqa: E402
from tawac.support.params import substitute  # noqa: E402

LOG2E = 1.4426950408889634
# (head dim, seq): B * S = 32k tokens, 16 heads at d128 and 32 at d64 (as the baselines).
SHAPES = [
    (128, 1024, False), (128, 4096, False), (128, 16384, False),
    (64, 1024, False), (64, 4096, False), (64, 16384, False),
    (128, 1024, True), (128, 4096, True), (128, 16384, True),
    (64, 1024, True), (64, 4096, True), (64, 16384, True),
]  # fmt: skip


def _triton_attention():
    """A FlashAttention-2 forward in Triton (non-causal), or None without Triton."""
    try:
        import triton
        import triton.language as tl
    except ImportError:
        return None

    configs = [
        triton.Config({"BM": bm, "BN": bn}, num_stages=s, num_warps=w)
        for bm, bn, s, w in [(128, 64, 3, 8), (128, 128, 2, 8), (128, 64, 4, 4), (64, 64, 3, 4)]
    ]

    @triton.autotune(configs=configs, key=["S", "D", "CAUSAL"])
    @triton.jit
    def fwd(q_ptr, k_ptr, v_ptr, o_ptr, S, scale, D: tl.constexpr, BM: tl.constexpr,
            BN: tl.constexpr, CAUSAL: tl.constexpr):  # fmt: skip
        pid_m = tl.program_id(0)
        bh = tl.program_id(1)
        base = bh.to(tl.int64) * S * D
        offs_m = pid_m * BM + tl.arange(0, BM)
        offs_d = tl.arange(0, D)
        q = tl.load(q_ptr + base + offs_m[:, None] * D + offs_d[None, :])
        m_i = tl.full((BM,), -1.0e30, tl.float32)
        l_i = tl.zeros((BM,), tl.float32)
        acc = tl.zeros((BM, D), tl.float32)
        end = (pid_m + 1) * BM if CAUSAL else S
        for n in range(0, end, BN):
            offs_n = n + tl.arange(0, BN)
            k = tl.load(k_ptr + base + offs_n[:, None] * D + offs_d[None, :])
            v = tl.load(v_ptr + base + offs_n[:, None] * D + offs_d[None, :])
            s = tl.dot(q, tl.trans(k)) * scale
            if CAUSAL:
                s = tl.where(offs_m[:, None] >= offs_n[None, :], s, -1.0e30)
            m_new = tl.maximum(m_i, tl.max(s, 1))
            p = tl.math.exp2(s - m_new[:, None])
            alpha = tl.math.exp2(m_i - m_new)
            l_i = l_i * alpha + tl.sum(p, 1)
            acc = acc * alpha[:, None] + tl.dot(p.to(tl.bfloat16), v)
            m_i = m_new
        o = acc / l_i[:, None]
        tl.store(o_ptr + base + offs_m[:, None] * D + offs_d[None, :], o.to(tl.bfloat16))

    def run(q, k, v, o, scale_log2e, causal=False):
        b, h, s, d = q.shape

        def grid(meta):
            return (triton.cdiv(s, meta["BM"]), b * h)

        fwd[grid](q, k, v, o, s, scale_log2e, D=d, CAUSAL=causal)

    return run


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--markdown", action="store_true")
    p.add_argument("--rep-ms", type=float, default=50.0)
    p.add_argument("--repeat", type=int, default=3, help="round-robin timings per kernel")
    p.add_argument(
        "--alt",
        default="",
        help="also time tawac compiled with these options and kernel parameters (A/B in "
        "the same run), e.g. coarse-pipeline=0,stages=2 or BLOCK_N=160 (a parameter applies to "
        "the kernels that declare it)",
    )
    p.add_argument(
        "--tuned",
        type=Path,
        help="a folder of tuning tables (<example>.tune.json, from tawac tune): the 'alt' "
        "column is then the configuration each table picks for the shape",
    )
    args = p.parse_args()
    alt = _options(args.alt)
    from triton.testing import do_bench

    triton_attn = _triton_attention()
    files = {
        (128, False): "attention.mlir",
        (64, False): "attention_d64.mlir",
        (128, True): "attention_causal.mlir",
        (64, True): "attention_causal_d64.mlir",
    }
    kernels = {key: load_kernel(*_compiled(ROOT / "examples" / f)) for key, f in files.items()}
    alt_kernels = {key: _alt_kernel(ROOT / "examples" / f, alt) for key, f in files.items()}
    if args.tuned is not None:
        alt = {"tuned": True}
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from torch.nn.functional import scaled_dot_product_attention as sdpa

    rows = []
    for d, s, causal in SHAPES:
        h = 16 if d == 128 else 32
        b = max(1, 32768 // s)
        q, k, v = (torch.randn(b, h, s, d, device="cuda", dtype=torch.bfloat16) for _ in range(3))
        o = torch.empty_like(q)
        flops = 4 * b * h * s * s * d // (2 if causal else 1)
        scale = d**-0.5
        fns = {}
        kern = kernels[(d, causal)]
        kern(q, k, v, o, scale * LOG2E)
        ref = sdpa(q, k, v, is_causal=causal)
        err = ((o.float() - ref.float()).norm() / ref.float().norm()).item()
        args_t = (q, k, v, o, scale * LOG2E)
        fns["tawac"] = lambda kern=kern, a=args_t: kern(*a)
        if args.tuned is not None:
            alt_kernels[(d, causal)] = _tuned(args.tuned, files[(d, causal)], b, h, s, d)
        ka = alt_kernels.get((d, causal)) if alt else None
        if ka is not None:
            ka(*args_t)
            err = max(err, ((o.float() - ref.float()).norm() / ref.float().norm()).item())
            fns["alt"] = lambda kern=ka, a=args_t: kern(*a)
        for name, backend in (
            ("cudnn", SDPBackend.CUDNN_ATTENTION),
            ("flash2", SDPBackend.FLASH_ATTENTION),
        ):
            try:
                with sdpa_kernel(backend):
                    sdpa(q, k, v, is_causal=causal)
                fns[name] = lambda a=(q, k, v), c=causal, bk=backend: _sdpa_with(bk, *a, c)
            except Exception:  # noqa: BLE001 - a backend unavailable for this shape
                pass
        if triton_attn is not None:
            o2 = torch.empty_like(q)
            triton_attn(q, k, v, o2, scale * LOG2E, causal)
            fns["triton"] = lambda a=(q, k, v, o2, scale * LOG2E, causal): triton_attn(*a)
        # Round-robin repeats, median per kernel: clock and power drift during the run
        # hit every kernel alike instead of whichever was timed last.
        times: dict[str, list[float]] = {name: [] for name in fns}
        names = list(fns)
        for name in (names[i] for i in round_robin(len(names), args.repeat)):
            times[name].append(do_bench(fns[name], rep=args.rep_ms))
        res = {name: flops / statistics.median(t) / 1e9 for name, t in times.items()}
        rows.append((d, s, causal, b, h, res, err))

    name = torch.cuda.get_device_name()
    now = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    head = [
        "d",
        "seq",
        "causal",
        "B x H",
        "tawac",
        *(["alt"] if alt else []),
        "cuDNN",
        "FA2",
        "Triton",
        "tawac/cuDNN",
        "tawac/Triton",
        *(["alt/tawac", "alt/cuDNN"] if alt else []),
        "rel. err",
    ]

    def f(x, spec=".0f"):
        return "—" if x is None else format(x, spec)

    lines = []
    for d, s, causal, b, h, r, err in rows:
        t, c, tr = r.get("tawac"), r.get("cudnn"), r.get("triton")
        lines.append(
            [
                str(d),
                str(s),
                "yes" if causal else "no",
                f"{b}x{h}",
                f(t),
                *([f(r.get("alt"))] if alt else []),
                f(r.get("cudnn")),
                f(r.get("flash2")),
                f(tr),
                f(t / c if t and c else None, ".2f"),
                f(t / tr if t and tr else None, ".2f"),
                *(
                    [
                        f(r["alt"] / t if r.get("alt") and t else None, ".2f"),
                        f(r["alt"] / c if r.get("alt") and c else None, ".2f"),
                    ]
                    if alt
                    else []
                ),
                f"{err:.1e}",
            ]
        )
    title = (
        f"bf16 attention forward, TFLOP/s (halved flops when causal; median of {args.repeat} "
        f"round-robin timings), on {name}, {now}"
    )
    if alt:
        title += f"; tawac = heuristic planner, alt = tawac with {args.alt}"
    if args.markdown:
        print(f"### {title}\n")
        print("| " + " | ".join(head) + " |")
        print("|" + "---|" * len(head))
        for ln in lines:
            print("| " + " | ".join(ln) + " |")
    else:
        print(title)
        print("  ".join(f"{x:>12}" for x in head))
        for ln in lines:
            print("  ".join(f"{x:>12}" for x in ln))
    from results import record  # benchmarks/results.py: benchmarks/results/attention-*.json

    record("attention", head, lines, title)
    for col in ("tawac", *(["alt"] if alt else [])):
        summary = _against(rows, col, "cudnn")
        if summary is not None:
            print(f"{col} / cuDNN: geomean {summary[0]:.3f}, lowest {summary[1]:.2f} over "
                  f"{summary[2]} shapes")  # fmt: skip
    if any(err > 1e-2 for *_, err in rows):
        sys.exit(1)


def _against(rows: list, col: str, base: str) -> tuple[float, float, int] | None:
    """(geomean, lowest, count) of column `col` over column `base`, the shapes timed by
    both (a geomean over cuDNN and a floor); None where there are none."""
    ratios = [r[col] / r[base] for *_, r, _err in rows if r.get(col) and r.get(base)]
    if not ratios:
        return None
    return math.exp(sum(map(math.log, ratios)) / len(ratios)), min(ratios), len(ratios)


def _sdpa_with(backend, q, k, v, causal):
    from torch.nn.attention import sdpa_kernel
    from torch.nn.functional import scaled_dot_product_attention as sdpa

    with sdpa_kernel(backend):
        return sdpa(q, k, v, is_causal=causal)


def _alt_kernel(path: Path, alt: dict):
    """The --alt kernel of an example, or None where the options do not apply to it (a
    clear compile error, printed: e.g. cluster=2x1 on a causal kernel)."""
    if not alt:
        return None
    try:
        return load_kernel(*_compiled(path, **alt))
    except CompileError as e:
        print(f"--alt for {path.name}: {e}", file=sys.stderr)
        return None


def _compiled(path: Path, **options):
    """Compiled with the heuristic planner (the "tawac" column, whatever TAWAC_SCHEDULE
    says) and `options`; kernel parameters (upper-case names, in "params") only where the
    kernel declares them."""
    params = dict(options.pop("params", {}))
    declared = substitute(path.read_text(), str(path)).values
    params = {k: v for k, v in params.items() if k in declared}
    r = compile_file(path, params=params, **{"schedule": "heuristic", **options})
    return r.cubin, r.sidecar


_tuned_kernels: dict[tuple, object] = {}


def _tuned(folder: Path, name: str, b: int, h: int, s: int, d: int):
    """The kernel the tuning table folder/<stem>.tune.json picks for this shape (the
    default configuration where there is no table)."""
    from tawac.schedule.tuning import load_table, pick

    table_file = folder / name.replace(".mlir", ".tune.json")
    picked = None
    if table_file.exists():
        picked = pick(load_table(table_file), {"B": b, "H": h, "S": s, "D": d})
    params, options = picked if picked is not None else ({}, {})
    key = (name, json.dumps([params, options], sort_keys=True))
    if key not in _tuned_kernels:
        print(f"tuned {name} S={s}: params {params} options {options}", file=sys.stderr)
        _tuned_kernels[key] = load_kernel(
            *_compiled(ROOT / "examples" / name, params=params, **options)
        )
    return _tuned_kernels[key]


def _options(text: str) -> dict[str, int | bool | str | dict]:
    """`coarse-pipeline=0,schedule=solver,BLOCK_N=160` -> compile_file keyword arguments:
    pipeline knobs (hyphens or underscores) by their type (`tawac.support.options.Knob.parse`:
    booleans true, false, 1, 0), kernel parameters (upper case) in "params"."""
    out: dict[str, int | bool | str | dict] = {}
    for item in filter(None, text.split(",")):
        key, _, value = item.partition("=")
        if key.isupper():
            out.setdefault("params", {})[key] = int(value)  # type: ignore[index]
            continue
        k = knob(key)
        if k is None:
            raise SystemExit(f"--alt: '{key}' is neither a pipeline knob nor a kernel parameter")
        try:
            out[k.name] = k.parse(value)
        except ValueError as e:
            raise SystemExit(f"--alt {key}: {e}") from None
    return out


if __name__ == "__main__":
    from results import run_recorded

    run_recorded("attention", main, printed=False)
