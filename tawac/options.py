"""The knobs of `tawac compile`'s pass pipeline (no xDSL import: the CLI reads the
defaults at start-up)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

# Seconds one `tawac compile` (parse, verify, passes, ptxas) may take by default: a
# kernel compiles in about a second and ptxas takes a few; an input that runs for
# minutes is a bug, reported as one.
DEFAULT_TIME_LIMIT = 300.0

#: The environment variable naming the default planner ("heuristic" or "solver") of
#: `tawac compile`, `run`, `explain` and `compile_file`: a CI pipeline or a test run
#: switches every compilation to the solver without touching each call.
SCHEDULE_ENV = "TAWAC_SCHEDULE"


def default_planner() -> str:
    return os.environ.get(SCHEDULE_ENV) or "heuristic"


#: The thread block cluster shapes `--cluster` accepts: CTAs along program ids (x, y).
CLUSTERS: dict[str, tuple[int, int]] = {"1x1": (1, 1), "2x1": (2, 1), "1x2": (1, 2)}


@dataclass(frozen=True)
class PipelineOptions:
    """The knobs of the pass pipeline `tawac compile` runs (CLI flags, `compile_file`
    keyword arguments); the defaults are the measured best (docs/perf.md)."""

    stages: int = 0
    mma_depth: int = 0
    consumer_warp_groups: int = 0
    tma_store: bool = True
    persistent: bool = True
    group_m: int = 8
    tile_prefetch: bool = True
    pingpong: bool = False
    coarse_pipeline: bool = True
    cluster: str = "1x1"

    planner: str = field(default_factory=default_planner)

    def plan_spec(self) -> str:
        """The `plan` pass with these options, in `tawac opt -p` syntax."""
        args = {
            "planner": self.planner,
            "stages": self.stages,
            "mma-depth": self.mma_depth,
            "warp-groups": self.consumer_warp_groups,
            "persistent": self.persistent,
            "group-m": self.group_m,
            "tile-prefetch": self.tile_prefetch,
            "coarse-pipeline": self.coarse_pipeline,
            "pingpong": self.pingpong,
            "cluster": self.cluster,
        }
        text = " ".join(
            f"{k}={str(v).lower() if isinstance(v, bool) else v}" for k, v in args.items()
        )
        return f"plan{{{text}}}"

    def pipeline(self, start: str | None = None, stop: str | None = None) -> str:
        """The pass pipeline, in `tawac opt -p` syntax; with `start` / `stop` (pass
        names), only the passes from `start` on and before `stop`.  Every decision is
        made by `plan`; the passes after it apply the schedule (and do nothing where it
        says so)."""
        passes = [
            "warp-specialize",
            self.plan_spec(),
            "pipeline",
            "persistent",
            "coarse-pipeline",
            "cooperative-consumers",
            "lower-aref",
            "pingpong",
            "tma-store" if self.tma_store else "",
            "convert-to-ptx",
        ]
        names = [p.split("{")[0] for p in passes]
        lo = names.index(start) if start is not None else 0
        hi = names.index(stop) if stop is not None else len(passes)
        return ",".join(p for p in passes[lo:hi] if p)


def _spelled(v: object) -> str:
    """A pass option's value as `-p` spells it (booleans lower case)."""
    return str(v).lower() if isinstance(v, bool) else str(v)
