"""Draw the steady state of a toy attention loop: two consumer warp groups (get K,
S = QK^T, softmax, P V) and a producer putting K and V through 2-slot arefs, with costs of
128x128 bf16 tiles from the Hopper cost model (`tawac.schedule.cost.op_cost` on the loop of
examples/attention.mlir with 2 consumer warp groups; the softmax's small ops are merged into
a few steps).

    python experiments/timeline_demo.py out.svg [--png out.png] [--iterations 24]
"""

from __future__ import annotations

import argparse

from tawac.schedule.simulate import Dep, Lane, Step, simulate
from tawac.tools.timeline import render_svg, write_png

DEPTH = 2  # aref ring slots


def consumer(name: str) -> Lane:
    own = ""
    return Lane(
        name,
        "consumer",
        (
            Step("get K", "sync", 0, 0, 0, (Dep("producer", 0, 0, "full aref1"),)),
            Step("S=QK^T", "tensor", 16, 512, 566, (Dep(own, 0),)),
            Step("rel K", "sync", 0, 0, 72, (Dep(own, 1, 0, "S ready"),)),
            Step("max", "fma", 84, 64, 144, (Dep(own, 1, 0, "S ready"),)),
            Step("scale", "fma", 128, 128, 132, (Dep(own, 3),)),
            Step("exp2", "mufu", 512, 512, 529, (Dep(own, 4),)),
            Step("sum", "fma", 84, 64, 144, (Dep(own, 5),)),
            Step("O*=a", "fma", 70, 70, 74, (Dep(own, 10, 1, "O ready"),)),
            Step("cvt P", "fma", 64, 64, 68, (Dep(own, 5),)),
            Step("get V", "sync", 0, 0, 0, (Dep("producer", 1, 0, "full aref2"),)),
            Step("O+=PV", "tensor", 16, 512, 566, (Dep(own, 8), Dep(own, 9), Dep(own, 7))),
            Step("rel V", "sync", 0, 0, 72, (Dep(own, 10, 0, "PV ready"),)),
        ),
    )


def lanes(consumers: int = 2) -> list[Lane]:
    names = [f"consumer wg{i}" for i in range(consumers)]
    put_k = Step("put K", "tma", 2, 958, 958, tuple(Dep(n, 2, DEPTH, "empty aref1") for n in names))
    put_v = Step(
        "put V", "tma", 2, 958, 958, tuple(Dep(n, 11, DEPTH, "empty aref2") for n in names)
    )
    return [Lane("producer", "producer", (put_k, put_v)), *(consumer(n) for n in names)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("svg")
    ap.add_argument("--png")
    ap.add_argument("--iterations", type=int, default=24)
    args = ap.parse_args()
    tl = simulate(lanes(), iterations=args.iterations)
    svg = render_svg(tl, title="Attention (toy): 2 consumer warp groups, K/V rings of 2, d=128")
    with open(args.svg, "w") as f:
        f.write(svg)
    if args.png:
        write_png(svg, args.png)
    print(f"II {tl.ii:.1f} cycles/iteration; utilisation", tl.utilisation)


if __name__ == "__main__":
    main()
