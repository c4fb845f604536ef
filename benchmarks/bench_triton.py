"""Triton's compile against tawac's compile of the same Triton source.

- `matmul`: the tutorial matmul of `examples/triton/matmul.py` launched by Triton (its
  tutorial's configuration for 128x256x64 tiles: 8 warps, 3 stages), its TTIR
  (`examples/triton/matmul.ttir`) compiled by tawac, the same source through
  `tawac.triton.compile` launched with Triton's own arguments, tawac's own tile-dialect
  kernel of the same shape (`corpus/gemm_nn_fp16.mlir`, B stored K x N, 128x256 tiles)
  and cuBLAS (`torch.mm`).
- `epilogue`: `examples/triton/matmul_epilogue.py`, relu(A @ B + bias) + R, by Triton,
  by tawac (through `tawac.triton.compile`), and by torch (`addmm`, `relu_`, `add`).
- `persistent`: the tutorial's persistent matmul with host-side tensor descriptors
  (`examples/triton/matmul_persistent.py`, C = A B^T, 128x256x64 tiles, 132 programs)
  by Triton (8 warps, 3 stages), its `.ttir` and its source by tawac, tawac's tile GEMM
  of the same shape (`examples/gemm_fp16.mlir`) and cuBLAS.
- `descriptor`: the same with device-side descriptors (`tl.make_tensor_descriptor`,
  `matmul_descriptor_persistent.ttir`), Triton launching it with a scratch allocator.

Same run, round-robin, medians; every kernel checked against a float32 torch reference
first.

    python3 benchmarks/bench_triton.py [--program matmul|epilogue|persistent|descriptor]
        [--rounds 5]
        [--sizes 4096x4096x4096,...]
"""

from __future__ import annotations

import argparse
import datetime
import importlib.util
import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SIZES = ["4096x4096x4096", "8192x8192x8192", "3000x5000x2000", "2304x4608x3072", "1000x1000x1000"]


def _module(name: str):
    file = "matmul_persistent" if name == "matmul_descriptor_persistent" else name
    spec = importlib.util.spec_from_file_location(file, ROOT / f"examples/triton/{file}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    if name == "matmul_descriptor_persistent":
        module.TTIR = module.TTIR_VARIANTS[name]
    return module


def _strides(*ts):
    return [s for t in ts for s in t.stride()]


def _triton(name: str):
    cfg = _module(name).TTIR
    kernel, consts = cfg["kernel"], cfg["constexprs"]

    def run(*args):
        a, b, c = args[:3]
        m, k = a.shape
        n = c.shape[1]
        grid = (-(-m // consts["BLOCK_SIZE_M"]) * -(-n // consts["BLOCK_SIZE_N"]),)
        if name in ("matmul_persistent", "matmul_descriptor_persistent"):
            grid = (min(consts["NUM_SMS"], grid[0]),)
            kernel[grid](*_call_args(name, *args), **consts, num_warps=8, num_stages=3)
            return
        kernel[grid](*_call_args(name, *args), **consts, num_warps=8, num_stages=3)

    return run


def _descriptors(a, b, c):
    """Host-side tensor descriptors of the persistent matmul's A [M, K], B [N, K], C."""
    from triton.tools.tensor_descriptor import TensorDescriptor

    return (
        TensorDescriptor.from_tensor(a, [128, 64]),
        TensorDescriptor.from_tensor(b, [256, 64]),
        TensorDescriptor.from_tensor(c, [128, 256]),
    )


def _call_args(name: str, *args):
    a, b, c = args[:3]
    m, k = a.shape
    n = c.shape[1]
    if name == "matmul_persistent":
        return (*_descriptors(a, b, c), m, n, k)
    if name == "matmul_descriptor_persistent":
        return (a, b, c, m, n, k)
    if name == "matmul":
        return (a, b, c, m, n, k, *_strides(a, b, c))
    bias, r = args[3:]
    return (a, b, c, bias, r, m, n, k, *_strides(a, b, c, r))


def _tawac_triton(name: str):
    """The kernel through `tawac.triton.compile`, launched with Triton's arguments."""
    import tawac.triton

    cfg = _module(name).TTIR
    k = tawac.triton.compile(
        cfg["kernel"], signature=cfg["signature"], constexprs=cfg["constexprs"]
    )
    return lambda *args: k[(1,)](*_call_args(name, *args))


def _tawac(source: Path, params=None, **options):
    from tawac.driver import compile_cached
    from tawac.runtime import load_kernel

    built = compile_cached(source, params=params, cubin=True, **options)
    kernel = load_kernel(built.cubin, json.loads(built.sidecar_text))
    return lambda *args: kernel(*args)


def _tawac_ttir_persistent(ttir: Path):
    """The shipped `.ttir` through `tawac.triton.from_ttir`, called with descriptors."""
    from tawac.triton import from_ttir

    k = from_ttir(ttir.read_text(), str(ttir))
    return lambda *args: k[(132,)](*_call_args("matmul_persistent", *args))


def _tawac_ttir_desc(ttir: Path):
    """The shipped device-side descriptor `.ttir` through `tawac.triton.from_ttir`."""
    from tawac.triton import from_ttir

    k = from_ttir(ttir.read_text(), str(ttir))
    return lambda *args: k[(132,)](*_call_args("matmul_descriptor_persistent", *args))


def _bound(fn, args):
    return lambda: fn(*args)


def _systems(program: str, alts: list[str]):
    import torch

    from tawac.tools.calibrate import parse_config

    ttir = ROOT / f"examples/triton/{'matmul' if program == 'matmul' else 'matmul_epilogue'}.ttir"
    extra = {}
    for alt in alts:  # "stages=3:tma-store=false": tawac's compile of the .ttir with knobs
        _, fields = parse_config("heuristic:" + alt)
        extra[f"tawac ({alt})"] = _tawac(ttir, **fields)

    if program == "descriptor":
        import triton

        # device-side descriptors need Triton's scratch allocator to launch under Triton
        triton.set_allocator(
            lambda size, align, stream: torch.empty(size, device="cuda", dtype=torch.int8)
        )
        ttir = ROOT / "examples/triton/matmul_descriptor_persistent.ttir"
        return {
            "triton": _triton("matmul_descriptor_persistent"),
            "tawac (ttir)": _tawac_ttir_desc(ttir),
            "tawac.triton": _tawac_triton("matmul_descriptor_persistent"),
            "tawac (tile)": _tawac(ROOT / "examples/gemm_fp16.mlir"),
            "cublas": lambda a, b, c: torch.mm(a, b.T, out=c),
            **extra,
        }
    if program == "persistent":
        ttir = ROOT / "examples/triton/matmul_persistent.ttir"
        return {
            "triton": _triton("matmul_persistent"),
            "tawac (ttir)": _tawac_ttir_persistent(ttir),
            "tawac.triton": _tawac_triton("matmul_persistent"),
            "tawac (tile)": _tawac(ROOT / "examples/gemm_fp16.mlir"),
            "cublas": lambda a, b, c: torch.mm(a, b.T, out=c),
            **extra,
        }
    if program == "matmul":
        return {
            "triton": _triton("matmul"),
            "tawac (ttir)": _tawac(ROOT / "examples/triton/matmul.ttir"),
            "tawac.triton": _tawac_triton("matmul"),
            "tawac (tile)": _tawac(ROOT / "corpus/gemm_nn_fp16.mlir", {"BLOCK_N": 256}),
            "cublas": lambda a, b, c: torch.mm(a, b, out=c),
            **extra,
        }

    def eager(a, b, c, bias, r):
        c.copy_(torch.relu_(torch.mm(a, b).float() + bias).add_(r.float()))

    return {
        "triton": _triton("matmul_epilogue"),
        "tawac.triton": _tawac_triton("matmul_epilogue"),
        "torch": eager,
        **extra,
    }


def _inputs(program: str, m: int, n: int, k: int):
    import torch

    a = torch.randn(m, k, device="cuda", dtype=torch.float16)
    if program in ("persistent", "descriptor"):  # B stored N x K, C = A B^T
        b = torch.randn(n, k, device="cuda", dtype=torch.float16)
        return (a, b), a.float() @ b.float().T
    b = torch.randn(k, n, device="cuda", dtype=torch.float16)
    if program == "matmul":
        return (a, b), a.float() @ b.float()
    bias = torch.randn(n, device="cuda")
    r = torch.randn(m, n, device="cuda", dtype=torch.float16)
    ref = torch.relu(a.float() @ b.float() + bias) + r.float()
    return (a, b, bias, r), ref


def main(argv: list[str] | None = None) -> int:
    import torch

    from tawac.runtime.runner import bench_ms, round_robin

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--program", choices=("matmul", "epilogue", "persistent", "descriptor"), default="matmul"
    )
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--sizes", default=",".join(SIZES))
    ap.add_argument(
        "--alt", action="append", default=[], help="a tawac configuration of the .ttir too "
        "(knobs as on the command line, ':'-separated: stages=3:tma-store=false)"
    )  # fmt: skip
    args = ap.parse_args(argv)
    systems = _systems(args.program, args.alt)
    names = list(systems)
    dev = torch.cuda.get_device_name(0)
    print(f"# {args.program}: Triton vs tawac on the same Triton source, "
          f"{datetime.date.today()}, {dev}")  # fmt: skip
    print(f"# {args.rounds} round-robin rounds, medians (ms); TFLOP/s in brackets")
    tawac_name = "tawac (ttir)" if "tawac (ttir)" in systems else "tawac.triton"
    print("| M x N x K | " + " | ".join(names) + f" | {tawac_name} / triton |")
    print("|---|" + "---:|" * (len(names) + 1))
    for size in args.sizes.split(","):
        m, n, k = (int(x) for x in size.split("x"))
        torch.manual_seed(0)
        ins, ref = _inputs(args.program, m, n, k)
        outs = {}
        for s, fn in systems.items():
            outs[s] = torch.full((m, n), float("nan"), device="cuda", dtype=torch.float16)
            call = (*ins[:2], outs[s], *ins[2:])
            fn(*call)
            torch.cuda.synchronize()
            err = ((outs[s].float() - ref).abs().max() / ref.abs().max()).item()
            if not err < 2e-3:
                print(f"{s} at {size}: wrong result (max relative error {err})")
                return 1
        samples: dict[str, list[float]] = {s: [] for s in names}
        for i in round_robin(len(names), args.rounds):
            s = names[i]
            call = _bound(systems[s], (*ins[:2], outs[s], *ins[2:]))
            samples[s].append(bench_ms(call, 25.0, 100.0)[0])
        ms = {s: statistics.median(v) for s, v in samples.items()}
        flops = 2.0 * m * n * k
        cells = [f"{ms[s]:.4f} ({flops / ms[s] / 1e9:.0f})" for s in names]
        ratio = ms["triton"] / ms[tawac_name]
        print(f"| {size} | " + " | ".join(cells) + f" | {ratio:.2f}x |")
    return 0


if __name__ == "__main__":
    from results import run_recorded

    sys.exit(run_recorded("triton", main))
