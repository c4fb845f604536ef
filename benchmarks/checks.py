"""The benchmarks' correctness gate: every system runs once on poisoned outputs before it
is timed, and one that fails or is wrong is dropped, saying so.

    from checks import drop_wrong
    drop_wrong(systems, [y], [reference], "4096x1024")          # norm-wise within 1e-2
    drop_wrong(systems, [z], [x + y], "1x1048576", exact=True)  # bit for bit
"""

from __future__ import annotations

import math
import sys


def drop_wrong(
    systems: dict, outs: list, refs: list, shape: str, *, rtol: float = 1e-2, exact: bool = False
) -> None:
    """Run each system (a callable writing `outs`) once with `outs` filled with NaN first
    and drop from `systems`, with a line on stderr, those that raise or whose outputs are
    not their float32 references `refs`: bit for bit with `exact`, else each within a
    norm-wise relative error of `rtol` (an output left unwritten, NaN, is wrong)."""
    import torch

    for name, fn in list(systems.items()):
        for o in outs:
            o.fill_(float("nan"))
        try:
            fn()
            torch.cuda.synchronize()
        except Exception as e:  # noqa: BLE001 - a system that cannot run is reported
            print(f"# {name} failed at {shape}: {type(e).__name__}: {e}", file=sys.stderr)
            del systems[name]
            continue
        pairs = list(zip(outs, refs, strict=True))
        if exact:
            wrong = "" if all(torch.equal(o, r) for o, r in pairs) else "not bit-exact"
        else:
            errs = [float((o.float() - r).norm() / r.norm()) for o, r in pairs]
            worst = max(errs, key=lambda e: math.inf if math.isnan(e) else e)
            wrong = "" if worst < rtol else f"relative error {worst:.3g}"
        if wrong:
            print(f"# {name} wrong at {shape}: {wrong}", file=sys.stderr)
            del systems[name]
