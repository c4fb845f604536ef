"""The knobs of `tawac compile`'s pass pipeline, declared once in `KNOBS` (no xDSL import:
the CLI reads the table at start-up).

A knob has one name, spelled with underscores where it is a Python keyword
(`PipelineOptions`, `compile_file`, `tawac.torch.kernel`, tuning tables) and with hyphens
where it is the `plan` pass's option or a command-line flag:
`consumer_warp_groups=2`, `plan{consumer-warp-groups=2}`, `--consumer-warp-groups 2`.
From the table come `PipelineOptions` (its fields, `plan_spec`, the checks of each
value), the `plan` pass's options (`tawac.passes.plan`), the flags of `tawac compile`,
`run` and `explain` (`tawac.tools.cli`) and the names `tawac tune --space` takes: a new knob is
one more row, read by the planner from its `PipelineOptions`.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field, make_dataclass
from typing import Any, ClassVar

from tawac.target.hopper import HOPPER

# Seconds one `tawac compile` (parse, verify, passes, ptxas) may take by default: a
# kernel compiles in about a second and ptxas takes a few; an input that runs for
# minutes is a bug, reported as one.
DEFAULT_TIME_LIMIT = 300.0

#: The environment variable naming the default planner ("heuristic", "solver" or "auto") of
#: `tawac compile`, `run`, `explain` and `compile_file`: a CI pipeline or a test run
#: switches every compilation to the solver without touching each call.
SCHEDULE_ENV = "TAWAC_SCHEDULE"

#: The thread block cluster shapes `--cluster` accepts: CTAs along program ids (x, y).
CLUSTERS: dict[str, tuple[int, int]] = {f"{x}x{y}": (x, y) for x, y in HOPPER.cluster_shapes}

#: The values a pipeline knob takes.
Value = int | bool | str

_INT = re.compile(r"[+-]?\d{1,12}\Z")
_BOOLS = {"true": True, "1": True, "false": False, "0": False}


@dataclass(frozen=True)
class Knob:
    """One pipeline knob: a row of `KNOBS`."""

    name: str
    """The Python name (underscores); with hyphens, the pass option and the flag."""
    type: type
    """int, bool (a `--name/--no-name` flag) or str."""
    default: Value
    """The value where none is given (of `plan{...}` always; of `PipelineOptions` and the
    flags unless `env` is set)."""
    help: str
    """The flag's help text."""
    where: str = "plan"
    """The pass a bad value's error names (`cooperative-consumers: ...`)."""
    min: int | None = None
    max: int | None = None
    choices: tuple[str, ...] = ()
    """The values a str knob takes."""
    env: str | None = None
    """An environment variable that, set, replaces the default of `PipelineOptions` and the
    command line's flag (not of `plan{...}`)."""

    @property
    def option(self) -> str:
        """The pass option and flag word: `consumer-warp-groups`."""
        return self.name.replace("_", "-")

    def default_value(self) -> Value:
        """The default of `PipelineOptions` and of the flag."""
        if self.env is not None and os.environ.get(self.env):
            return os.environ[self.env]
        return self.default

    def spell(self, value: Value) -> str:
        """`value` as a pass option spells it (booleans lower case)."""
        return str(value).lower() if isinstance(value, bool) else str(value)

    def allowed(self) -> str:
        """The values this knob takes, in words: `0..3`, `>= 1`, `one of 1x1, 2x1, 1x2`."""
        if self.type is bool:
            return "true or false"
        if self.choices:
            return f"one of {', '.join(self.choices)}"
        if self.type is int:
            if self.min is not None and self.max is not None:
                return f"{self.min}..{self.max}"
            if self.min is not None:
                return f">= {self.min}"
            if self.max is not None:
                return f"<= {self.max}"
            return "an integer"
        return "a string"

    def problem(self, value: object) -> str | None:
        """What a value this knob takes must be, where `value` is not one (`an integer`,
        `0..3`, `one of 1x1, 2x1, 1x2`); None where it is."""
        kind = {int: "an integer", bool: "true or false", str: "a string"}[self.type]
        if self.type is int:
            if not isinstance(value, int) or isinstance(value, bool):
                return kind
            low = self.min is not None and value < self.min
            high = self.max is not None and value > self.max
            return self.allowed() if low or high else None
        if not isinstance(value, self.type):
            return kind
        return self.allowed() if self.choices and value not in self.choices else None

    def check(self, value: object) -> None:
        """A CompileError (one line) unless this knob takes `value`."""
        must = self.problem(value)
        if must is None:
            return
        from tawac.support.diagnostics import CompileError

        got = f"'{value}'" if isinstance(value, str) else self.spell(value)  # type: ignore[arg-type]
        raise CompileError(f"{self.where}: {self.option} must be {must}, got {got}")

    def parse(self, text: str) -> Value:
        """A value written as text (`tawac tune --space`, the benchmarks' `NAME=VALUE`):
        booleans true, false, 1 or 0, integers in decimal, choices in any case; ValueError
        saying what was expected."""
        word = text.strip().lower()
        if self.type is bool:
            if word not in _BOOLS:
                raise ValueError(f"expected true, false, 1 or 0, got '{text}'")
            return _BOOLS[word]
        if self.type is int:
            if _INT.match(word) is None:
                raise ValueError(f"expected an integer, got '{text}'")
            return int(word)
        if self.choices and word not in self.choices:
            raise ValueError(f"expected {', '.join(self.choices)}, got '{text}'")
        return word if self.choices else text.strip()


#: The pipeline knobs, in the order of `plan{...}` and of the flags. The defaults are the
#: measured best (docs/perf.md); 0 lets the planner choose.
KNOBS: tuple[Knob, ...] = (
    Knob(
        "schedule",
        str,
        "auto",
        "who decides the schedule: measured rules, the constraint solver (Twill; needs "
        "tawac[solver]), or auto: both propose and the cost model picks (within its "
        f"error, the target's preference for the kind of loop); ${SCHEDULE_ENV} sets the "
        "default",
        choices=("heuristic", "solver", "auto"),
        env=SCHEDULE_ENV,
    ),
    Knob(
        "stages",
        int,
        0,
        "aref ring depth D (0: 4, or fewer when shared memory is short)",
        where="pipeline",
        min=0,
    ),
    Knob(
        "mma_depth",
        int,
        0,
        "wgmma groups in flight P (P < stages)",
        where="pipeline",
        min=0,
    ),
    Knob(
        "consumer_warp_groups",
        int,
        0,
        "consumer warp groups (0: the most of 3, 2, 1 giving whole m64 blocks)",
        where="cooperative-consumers",
        min=0,
        max=HOPPER.max_consumer_warp_groups,
    ),
    Knob(
        "group_heads",
        bool,
        True,
        "grouped-query attention: one program per group of query heads that share a K/V "
        "head (the K/V loads read h / G), their query rows stacked as one tile, so each K/V "
        "block is loaded once per group",
        where="group-heads",
    ),
    Knob(
        "guard_masks",
        bool,
        True,
        "a bounds or causal mask in a loop (tl.where(offs < n, x, -inf)) computed under an "
        "scf.if of the iterations where some element is false, not on every iteration",
        where="guard-masks",
    ),
    Knob(
        "sink_reductions",
        bool,
        True,
        "a reduction folded into a loop's accumulator on every iteration (a running max, or "
        "a sum marked fastmath<reassoc>) accumulated elementwise in a tile instead, reduced "
        "once after the loop (as Triton's tutorials spell it), where the tiles fit the "
        "registers",
        where="sink-reductions",
    ),
    Knob(
        "swap_ab",
        bool,
        False,
        "swap-AB: a GEMM's tile computed transposed (C^T = B A^T), so that its few rows "
        "(a decode step's tokens) are the MMA's N and the weights' rows its M; the tile is "
        "stored from registers (not with split-K)",
        where="swap-ab",
    ),
    Knob(
        "split_k",
        int,
        1,
        "split-K: S programs per output tile, each summing a chunk of the K steps; the "
        "last to finish adds the S partial tiles in a fixed order and runs the epilogue "
        "(deterministic)",
        where="split-k",
        min=1,
        max=64,
    ),
    Knob(
        "stream_k",
        int,
        0,
        "stream-K: the tiles of the last, partly filled wave are split among all the SMs, "
        "at most N programs per tile (the persistent loop decides how many from the tile "
        "and CTA counts; ordered in-kernel sum, deterministic); 0: off",
        where="split-k",
        min=0,
        max=64,
    ),
    Knob(
        "widen",
        int,
        0,
        "programs of grid axis x per tile: neighbouring programs' rows as one tile (two "
        "64-row programs as one 128-row tile on two consumer warp groups, sharing the "
        "operands both read); 0: two where a tile has one m64 block of rows and the plan "
        "is the planner's (no stages, consumer warp groups, cluster or split given); 1: off",
        where="widen",
        min=0,
        max=4,
    ),
    Knob(
        "ctas_per_sm",
        int,
        0,
        "CTAs that share one SM: each CTA's shared memory and registers fit its share, and "
        "a persistent launch runs that many per SM; 0: the planner's choice",
        min=0,
        max=8,
    ),
    Knob(
        "persistent",
        bool,
        True,
        "one CTA per SM looping over tiles (grouped order for L2)",
    ),
    Knob(
        "group_m",
        int,
        0,
        "tile-order group: values of program id x that share a y (Triton's grouped order); "
        "0: the planner's choice (8, or the whole x axis where the main loops' loads do not "
        "depend on x, as attention's K/V)",
        where="persistent",
        min=0,
    ),
    Knob(
        "tile_prefetch",
        bool,
        True,
        "second slot for operands loaded once per tile (loads the next tile's early)",
    ),
    Knob(
        "reuse_slots",
        bool,
        True,
        "loops that read the same tiles again (a norm's statistics, then its output) read "
        "them from the ring the first filled, the producer loading them once, wherever a "
        "program's tiles fit in the ring (a ring as deep as shared memory allows)",
    ),
    Knob(
        "l2_hints",
        bool,
        True,
        "where a resident row block is longer than the ring (read once per loop), the "
        "first loop's copies keep their lines in L2 and the later loops' and the stores "
        "let theirs go first (L2 eviction hints), so the second read hits L2",
    ),
    Knob(
        "spread_rows",
        bool,
        False,
        "a one-row program's row of 64 elements a thread or more (8192 columns) over two "
        "consumer warp groups, all eight warps side by side along it (off until its "
        "default builds have run on a GPU)",
    ),
    Knob(
        "hold_slots",
        bool,
        True,
        "where a resident row block is longer than the ring, its first tiles keep their "
        "slots for the later loops and only the others are loaded again, through the "
        "rest of the ring",
    ),
    Knob(
        "reread_slots",
        bool,
        True,
        "where a row kernel's consumer would hold more row-long values across a row "
        "reduction than its registers take, it reads their ring slots again after the "
        "reduction and computes them anew (the slots released after the second read)",
    ),
    Knob(
        "coarse_pipeline",
        bool,
        True,
        "defer a loop's accumulating MMA (attention's P V) under the next softmax",
    ),
    Knob(
        "chain_loops",
        bool,
        True,
        "two consecutive deferred loops, the second carrying on the first's results, as "
        "one pipeline: the second's first MMA and softmax under the first's last P V",
    ),
    Knob(
        "overlap_epilogue",
        bool,
        False,
        "a persistent consumer runs each tile's epilogue (no MMA: attention's O / l and its "
        "store) after issuing the next tile's first MMA, before waiting for it",
    ),
    Knob(
        "pingpong",
        bool,
        False,
        "consumer warp groups take turns issuing MMAs (loops with several MMAs)",
    ),
    Knob(
        "cluster",
        str,
        "1x1",
        "thread block cluster over program ids (x, y): 2x1 pairs x = 2i, 2i+1, which load "
        "the operands they share once, multicast to both (loops with equal trip counts)",
        choices=tuple(CLUSTERS),
    ),
    Knob(
        "tma_store",
        bool,
        True,
        "epilogue stores of 16-bit tiles through shared memory and TMA bulk copies (else "
        "one global store per element)",
    ),
    Knob(
        "skip_rescale",
        bool,
        False,
        "a loop-carried tile multiplied by a row vector (attention's rescale of O by "
        "2^(m - m')) is left as it is in a warp whose factors are all exactly 1 (the row "
        "maxima did not grow): the same bits, fewer multiplies",
        where="convert-to-ptx",
    ),
    Knob(
        "exp2_fma",
        int,
        0,
        "every N-th exp2 of a tile computed on the FMA pipe (a cubic in the fraction, the "
        "integer part into the exponent bits) instead of the MUFU unit, whose rate bounds "
        "attention's softmax at head dim 64; 0: all on MUFU",
        where="convert-to-ptx",
        min=0,
        max=8,
    ),
    Knob(
        "trace",
        bool,
        False,
        "instrumented build: each warp group's leader stamps %clock64 at the schedule's "
        'boundaries into a buffer the launcher adds (docs/abi.md, "trace")',
        where="trace",
    ),
    Knob(
        "trace_every",
        int,
        1,
        "an instrumented build's innermost main loops store their stamps on every N-th "
        "iteration only (a power of two: cheaper, for measuring steady states)",
        where="trace",
        min=1,
        max=1 << 16,
    ),
)


def knob(name: str) -> Knob | None:
    """The knob called `name` (underscores or hyphens), or None."""
    word = name.strip().replace("-", "_")
    return next((k for k in KNOBS if k.name == word), None)


class _Options:
    """What `PipelineOptions` adds to its fields (one per knob of `knobs`)."""

    knobs: ClassVar[tuple[Knob, ...]]

    def check(self) -> None:
        """A CompileError naming the first knob with a value it does not take."""
        for k in self.knobs:
            k.check(getattr(self, k.name))

    def plan_spec(self) -> str:
        """The `plan` pass with these options, in `tawac opt -p` syntax."""
        text = " ".join(f"{k.option}={k.spell(getattr(self, k.name))}" for k in self.knobs)
        return f"plan{{{text}}}"

    def _split_k_spec(self) -> str:
        """The `split-k` pass of these options, "" where no decomposition splits."""
        if self.stream_k:
            return f"split-k{{splits={self.split_k} stream={self.stream_k}}}"
        return f"split-k{{splits={self.split_k}}}" if self.split_k > 1 else ""

    def _widen_spec(self) -> str:
        """The `widen` pass of these options, "" where it is off: `widen=1`, or `widen=0`
        (the rule decides) where the plan is not all the planner's: a ring depth, consumer
        warp groups or a cluster given, or a split decomposition (a given plan was chosen
        for the tiles as written)."""
        if self.widen == 1:
            return ""
        if self.widen > 1:
            return f"widen{{by={self.widen}}}"
        given = self.stages or self.consumer_warp_groups or self.cluster != "1x1"
        if given or self.split_k > 1 or self.stream_k or self.swap_ab:
            return ""
        return "widen"

    def _convert_spec(self) -> str:
        """`convert-to-ptx` with the options of these knobs that differ from its defaults."""
        opts = []
        if self.exp2_fma:
            opts.append(f"exp2-fma={self.exp2_fma}")
        if self.skip_rescale:
            opts.append("skip-rescale=true")
        return f"convert-to-ptx{{{' '.join(opts)}}}" if opts else "convert-to-ptx"

    def pipeline(self, start: str | None = None, stop: str | None = None) -> str:
        """The pass pipeline, in `tawac opt -p` syntax; with `start` / `stop` (pass
        names), only the passes from `start` on and before `stop`.  Every decision is
        made by `plan`; the passes after it apply the schedule (and do nothing where it
        says so)."""
        passes = [
            "canonicalize",
            "group-heads" if self.group_heads else "",
            "swap-ab" if self.swap_ab else "",
            self._split_k_spec(),
            self._widen_spec(),
            "pad-loads",
            "guard-masks" if self.guard_masks else "",
            "sink-reductions" if self.sink_reductions else "",
            "warp-specialize",
            self.plan_spec(),
            "pipeline",
            "reuse-slots",
            "persistent",
            "coarse-pipeline",
            "overlap-epilogue",
            "cooperative-consumers",
            "reread-slots",
            "lower-aref",
            "pingpong",
            "tma-store",
            f"trace{{every={self.trace_every}}}" if self.trace else "",
            self._convert_spec(),
        ]
        # an optional pass that is off ("") is named by where it would run
        names = [p.split("{")[0] for p in passes]
        names[:8] = [
            "canonicalize",
            "group-heads",
            "swap-ab",
            "split-k",
            "widen",
            "pad-loads",
            "guard-masks",
            "sink-reductions",
        ]
        names[-2] = "trace"
        lo = names.index(start) if start is not None else 0
        hi = names.index(stop) if stop is not None else len(passes)
        return ",".join(p for p in passes[lo:hi] if p)


def knob_fields(knobs: Sequence[Knob], *, env: bool) -> list[tuple[str, type, Any]]:
    """`make_dataclass` fields, one per knob, in table order, defaulting to each knob's
    `default`; with `env`, a knob with an environment variable reads it at each
    construction (`default_value`)."""
    return [
        (
            k.name,
            k.type,
            field(default_factory=k.default_value) if env and k.env else field(default=k.default),
        )
        for k in knobs
    ]


def options_class(knobs: Sequence[Knob]) -> type:
    """The frozen dataclass of `knobs`' values (`PipelineOptions` is the one of `KNOBS`)."""
    cls = make_dataclass(
        "PipelineOptions",
        knob_fields(knobs, env=True),
        bases=(_Options,),
        frozen=True,
        namespace={"knobs": tuple(knobs), "__module__": __name__},
    )
    cls.__doc__ = (
        "The knobs of the pass pipeline `tawac compile` runs (CLI flags, `compile_file` "
        "keyword arguments), one field per row of `tawac.support.options.KNOBS`."
    )
    return cls


PipelineOptions = options_class(KNOBS)
