"""Translation validation of the tile-level passes: the IR before and after a pass computes
the same outputs in the reference interpreter (`tawac.runtime.interpret`).

A pass that rewrites the tile program (`canonicalize`, `group-heads`, `swap-ab`, `split-k`,
`widen`, `guard-masks`, `sink-reductions`) must not change what the program computes.
`validate` runs one pass (or a pipeline of them) on a copy of a module, runs the kernel
before and after it on the same random inputs at the given sizes (each IR on its own
grid, `infer_grid`: grouping heads or splitting K changes it; workspace buffers a pass
adds allocated as the launcher would), and compares every output the original stores. A
difference beyond rounding raises `ValidationError`, naming the pass, the program and the
first differing element.

The comparison allows what a legal rewrite may change: the order of fp32 additions (a
split sum, an MMA of another shape) and so the rounding of an output by about one unit in
its own type (a split softmax: a little more). Per element, |after - before| <= 4 eps(type)
|before| + 4e-3 max |before|, and NaN (an element no program stores: outputs start as NaN)
where and only where the original has NaN. A wrong rewrite (a row or key masked wrongly, a
tile stored at another place) changes elements by the size of the values themselves.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
from xdsl.dialects.builtin import ModuleOp

from tawac import schedule
from tawac.analysis.args import kernel_arg_uses
from tawac.analysis.grid import checks_of
from tawac.backend_ptx.abi import arg_specs
from tawac.compiler import run_pipeline
from tawac.dialects import hopper, tile
from tawac.ir.fingerprint import fingerprint
from tawac.ir.fingerprint import key as structure_key
from tawac.runtime.arguments import LaunchError, check_shapes
from tawac.runtime.interpret import interpret, interpret_launch, launch_args, user_arguments
from tawac.runtime.partitions import ProtocolError, partitioned
from tawac.runtime.plans import compute_grid
from tawac.runtime.runner import make_args
from tawac.support.options import PipelineOptions

#: Outputs are compared within this share of their largest magnitude, plus rounding.
ABS_SHARE = 4e-3


class ValidationError(AssertionError):
    """A rewrite changed what the program computes."""

    def __init__(self, pass_name: str, program: str, difference: Difference | str):
        self.pass_name = pass_name
        self.program = program
        self.difference = difference
        super().__init__(f"{pass_name} changed the meaning of {program}: {difference}")


class NotComparable(Exception):
    """The sizes do not fit the rewritten kernel (a launch check it states fails)."""


@dataclass(frozen=True)
class Difference:
    """The first element (row-major) of an output that differs beyond rounding."""

    output: str
    index: tuple[int, ...]
    before: float
    after: float
    differing: int  # elements that differ
    total: int

    def __str__(self) -> str:
        where = ", ".join(str(i) for i in self.index)
        return (
            f"{self.output}[{where}] is {self.after:.6g} after it, {self.before:.6g} before "
            f"({self.differing} of {self.total} elements differ)"
        )


@dataclass
class Validation:
    """What one validated pass did: whether it changed the IR and, where it did, the
    largest relative error of any output (norm-wise) against the IR before it."""

    pass_name: str
    changed: bool
    max_error: float = 0.0
    outputs: list[str] = field(default_factory=list)


def kernel_of(module: ModuleOp | tile.KernelOp) -> tile.KernelOp:
    if isinstance(module, tile.KernelOp):
        return module
    kernels = [op for op in module.walk() if isinstance(op, tile.KernelOp)]
    if len(kernels) != 1:
        raise ValueError(f"expected one tile.kernel, found {len(kernels)}")
    return kernels[0]


def make_inputs(
    kernel: tile.KernelOp,
    sizes: Mapping[str, Any],
    *,
    seed: int = 0,
    indices: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """Inputs of `kernel` by argument name on the CPU, as `tawac run` makes them
    (`make_args`): random tensors of the sizes' shapes (float32 copies of their values in
    the declared type), NaN-filled pure outputs, i32 index tensors from `indices` (else
    zeros), scalars from `sizes`."""
    specs = arg_specs(kernel)
    position = {s["name"]: i for i, s in enumerate(specs)}
    names = [a.name_hint or f"arg{i}" for i, a in enumerate(kernel.body.block.args)]
    loads, stores = kernel_arg_uses(kernel)
    reads = {position[names[i]] for i in loads if names[i] in position}
    writes = {position[names[i]] for i in stores if names[i] in position}
    args = make_args(
        {"args": specs},
        dict(sizes),
        writes,
        reads,
        seed=seed,
        device="cpu",
        indices=indices,
    )
    out: dict[str, Any] = {}
    for s, a in zip(specs, args, strict=True):
        if isinstance(a, torch.Tensor) and a.is_floating_point():
            a = a.float()
        out[s["name"]] = a
    return out


def _shapes(values: Mapping[str, Any]) -> dict[str, tuple[int, ...]]:
    return {n: tuple(v.shape) for n, v in values.items() if isinstance(v, torch.Tensor)}


def run(kernel: tile.KernelOp, inputs: Mapping[str, Any]) -> dict[str, torch.Tensor]:
    """The tensors `kernel` stores, by argument name, after running it in the interpreter
    as a launch (`interpret_launch`: its grid, a fresh workspace; a warp-specialized
    kernel, `interpret_partitioned`: a persistent one on a few CTAs) on copies of
    `inputs` (by argument name); `NotComparable` where the shapes break a launch check it
    states."""
    try:
        check_shapes(checks_of(kernel), _shapes(inputs), arg_specs(kernel))
    except LaunchError as e:
        raise NotComparable(str(e)) from None
    names = user_arguments(kernel)
    args = [inputs[n].clone() if isinstance(inputs[n], torch.Tensor) else inputs[n] for n in names]
    if partitioned(kernel):
        interpret_partitioned(kernel, launch_args(kernel, args), _shapes(inputs))
    else:
        interpret_launch(kernel, args)
    _, stores = kernel_arg_uses(kernel)
    block = kernel.body.block
    written = {block.args[i].name_hint or f"arg{i}" for i in stores}
    return {n: a for n, a in zip(names, args, strict=True) if n in written}


def interpret_partitioned(
    kernel: tile.KernelOp,
    args: Sequence[Any],
    shapes: Mapping[str, Sequence[int]],
    *,
    ctas: int = 3,
) -> dict[str, int]:
    """Runs a partitioned kernel (`args` as `interpret` takes them, workspace included):
    a persistent one (its tile loop over `hopper.cta_id`) on at most `ctas` CTAs, each
    taking every `ctas`-th tile of its program grid; any other on the program grid."""
    grid = compute_grid(schedule.launch_grid(kernel), shapes)
    if any(isinstance(o, hopper.CtaIdOp) for o in kernel.walk()):
        tiles = grid[0] * grid[1] * grid[2]
        grid = (min(ctas, tiles), 1, 1)
    return interpret(kernel, args, grid)


def _tolerance(dtype_name: str) -> float:
    """Four times the unit roundoff of an output type: a split softmax rounds each split's
    probabilities against its own row maximum, so a legal split changes a bf16 output by
    up to 1.25 times 2 eps (fp32: what reordered sums may change)."""
    eps = {
        "bf16": 2.0**-8,
        "f16": 2.0**-11,
        "f8E4M3FN": 2.0**-4,
        "f8E5M2": 2.0**-3,
    }.get(dtype_name, 2.0**-18)
    return 4 * eps


def _mismatch(b: torch.Tensor, a: torch.Tensor, rtol: float) -> tuple[torch.Tensor | None, float]:
    """The elements of `a` that differ from `b` beyond rounding (None where none does: the
    two are the same bits, the common case) and the norm-wise relative error over the
    elements finite in both (NaN where there is none)."""
    if a.dtype == b.dtype == torch.float32 and torch.equal(
        a.view(torch.int32), b.view(torch.int32)
    ):
        return None, 0.0 if bool(torch.isfinite(b).any()) else math.nan
    if b.numel() == 0:
        return None, math.nan
    b64, a64 = b.double(), a.double()
    nan_b, nan_a = torch.isnan(b), torch.isnan(a)
    both = torch.isfinite(b) & torch.isfinite(a)
    every = bool(both.all())
    scale = float(b.abs().max() if every else torch.where(both, b.abs(), 0).max())
    # equal values (the same infinity too: inf - inf is NaN) are close
    diff = a64 - b64
    near = diff.abs() <= b64.abs().mul_(rtol).add_(ABS_SHARE * scale)
    bad = (nan_a != nan_b) | (~nan_b & ~((a == b) | (both & near)))
    if every:  # the norms over the same elements in the same order as the masked ones
        denom, dist = float(b64.norm()), float(diff.norm())
    elif bool(both.any()):
        ref = b64[both]
        denom, dist = float(ref.norm()), float((a64[both] - ref).norm())
    else:
        return bad, math.nan
    return bad, dist / denom if denom else (0.0 if dist == 0 else math.inf)


def compare(
    before: Mapping[str, torch.Tensor],
    after: Mapping[str, torch.Tensor],
    dtypes: Mapping[str, str],
) -> tuple[Difference | None, float]:
    """The first difference beyond rounding between two runs' outputs (module docstring)
    and the largest norm-wise relative error of any output."""
    worst = 0.0
    for name, b in before.items():
        a = after.get(name)
        if a is None:
            return Difference(name, (), math.nan, math.nan, b.numel(), b.numel()), math.inf
        bad, error = _mismatch(b, a, _tolerance(dtypes.get(name, "f32")))
        if not math.isnan(error):
            worst = max(worst, error)
        if bad is not None and bool(bad.any()):
            flat = int(torch.nonzero(bad.flatten())[0])
            index = tuple(int(i) for i in torch.unravel_index(torch.tensor(flat), b.shape))
            return (
                Difference(
                    name,
                    index,
                    float(b.double().flatten()[flat]),
                    float(a.double().flatten()[flat]),
                    int(bad.sum()),
                    b.numel(),
                ),
                worst,
            )
    return None, worst


def output_dtypes(kernel: tile.KernelOp) -> dict[str, str]:
    return {s["name"]: s["dtype"] for s in arg_specs(kernel) if s["kind"] == "tensor"}


def split_pipeline(spec: str) -> list[str]:
    """The passes of a pipeline spec (`a,b{x=1 y=2},c`), each with its options."""
    out, depth, start = [], 0, 0
    for i, ch in enumerate(spec):
        depth += {"{": 1, "}": -1}.get(ch, 0)
        if ch == "," and depth == 0:
            out.append(spec[start:i])
            start = i + 1
    out.append(spec[start:])
    return [p.strip() for p in out if p.strip()]


def tile_pipeline(stop: str = "warp-specialize", **options: Any) -> list[str]:
    """The passes `tawac compile` runs with these options before `stop`, each with its
    options (`PipelineOptions.pipeline`): by default the tile-level ones; up to
    `lower-aref`, the warp-specialized kernel's passes too (`PARTITION_STOP`)."""
    return split_pipeline(PipelineOptions(**options).pipeline(stop=stop))


#: Where `validate_pipeline` stops to check the partition passes as well: the kernel
#: before `lower-aref` is still arefs and tiles, which the interpreter runs
#: (`tawac.runtime.partitions`).
PARTITION_STOP = "lower-aref"


@dataclass
class Baseline:
    """A program's inputs at some sizes and what it stores from them (the reference a
    rewritten program is compared with)."""

    inputs: dict[str, Any]
    expected: dict[str, torch.Tensor]
    dtypes: dict[str, str]


def baseline(
    module: ModuleOp | tile.KernelOp,
    sizes: Mapping[str, Any],
    *,
    seed: int = 0,
    indices: Mapping[str, str] | None = None,
) -> Baseline:
    """`module`'s outputs on random inputs at `sizes` (`make_inputs`)."""
    kernel = kernel_of(module)
    inputs = make_inputs(kernel, sizes, seed=seed, indices=indices)
    return Baseline(inputs, run(kernel, inputs), output_dtypes(kernel))


class Validator:
    """Validates passes applied one after another to one module, against a baseline (the
    module as it was given, or another spelling of the program: `tawac.check.variants`)."""

    def __init__(self, module: ModuleOp, base: Baseline, program: str = "<program>"):
        self.module = module
        self.base = base
        self.program = program
        self.shape = fingerprint(module)
        self.unnamed: object = None

    def check(self, module: ModuleOp, spec: str) -> Validation:
        """Compares `module`'s outputs with the baseline's; `ValidationError` (naming
        `spec`) where they differ."""
        name = spec.split("{")[0]
        try:
            got = run(kernel_of(module), self.base.inputs)
        except NotComparable:
            return Validation(name, changed=True, max_error=math.nan)
        except ProtocolError as e:  # a warp-specialized kernel that would hang or misread
            raise ValidationError(spec, self.program, str(e)) from None
        difference, worst = compare(self.base.expected, got, self.base.dtypes)
        if difference is not None:
            raise ValidationError(spec, self.program, difference)
        return Validation(name, changed=True, max_error=worst, outputs=sorted(got))

    def apply(self, specs: Sequence[str], known: set[object] | None = None) -> list[Validation]:
        """Runs the passes `specs` one after another on the module, then checks the result
        (one interpretation); where it differs, checks each pass's result in turn, so the
        error names the first pass whose output differs. A pass changed the module where
        its fingerprint (`tawac.ir.fingerprint`: what printing shows, names included)
        changed. With `known` (keys, `unnamed_key`, of results checked against this
        baseline), a result whose key is there is not interpreted again (the interpreter
        computes the same from the same IR), and a checked one's key is added;
        `self.unnamed` keeps the key (None where `known` was not given or no pass changed
        the module)."""
        done: list[Validation] = []
        snapshots: list[tuple[str, ModuleOp]] = []
        for spec in specs:
            run_pipeline(self.module, spec)
            shape = fingerprint(self.module)
            changed = shape != self.shape
            self.shape = shape
            done.append(Validation(spec.split("{")[0], changed=changed))
            if changed:
                snapshots.append((spec, self.module.clone()))
        if not snapshots:
            return done
        key = self.unnamed = unnamed_key(self.module) if known is not None else None
        if key is not None and key in known:
            return done
        try:
            last = self.check(self.module, snapshots[-1][0])
        except ValidationError:
            for spec, snapshot in snapshots:
                self.check(snapshot, spec)
            raise
        if key is not None:
            known.add(key)
        done[max(i for i, v in enumerate(done) if v.changed)] = last
        return done

    def apply_all(self, specs: Sequence[str], known: set[object] | None = None) -> Validation:
        """`apply` without its account of each pass: the passes run as one pipeline (one
        verification, one print: a fifth of the time of a variant's check), then the
        result is checked once (`known` as for `apply`); only where it differs are the
        passes run again one by one from a copy of the module as given, so the error
        still names the first pass whose output differs. The one `Validation` is named
        by the passes, joined by commas."""
        original = self.module.clone()
        run_pipeline(self.module, ",".join(specs))
        shape = fingerprint(self.module)
        name = ",".join(spec.split("{")[0] for spec in specs)
        if shape == self.shape:
            return Validation(name, changed=False)
        self.shape = shape
        key = self.unnamed = unnamed_key(self.module) if known is not None else None
        if key is not None and key in known:
            return Validation(name, changed=True)
        try:
            last = self.check(self.module, name)
        except ValidationError:
            Validator(original, self.base, self.program).apply(specs)
            raise
        if key is not None:
            known.add(key)
        return last


def unnamed_key(module: ModuleOp) -> object:
    """A hashable key of the module with every value unnamed but the kernel's arguments
    (which the inputs are bound by): two spellings that differ only in names have one
    key (`tawac.ir.fingerprint.key`)."""
    return structure_key(module)


def validate(
    module: ModuleOp,
    spec: str,
    sizes: Mapping[str, Any],
    *,
    program: str = "<program>",
    seed: int = 0,
    indices: Mapping[str, str] | None = None,
) -> Validation:
    """Runs the pass `spec` on a copy of `module` and checks that the kernel computes the
    same outputs after it as before, at `sizes` (the module docstring); raises
    `ValidationError` otherwise."""
    base = baseline(module, sizes, seed=seed, indices=indices)
    return Validator(module.clone(), base, program).apply([spec])[0]


def validate_pipeline(
    module: ModuleOp,
    base: Baseline,
    *,
    program: str = "<program>",
    known: set[object] | None = None,
    stop: str = "warp-specialize",
    **options: Any,
) -> list[Validation]:
    """Validates the passes `tawac compile` runs with `options` before `stop` (the
    tile-level ones; `PARTITION_STOP`: those of the warp-specialized kernel too),
    applied one after another to a copy of `module`, against `base` (`baseline`): a
    result that differs names the first pass whose output differs. `known`: as for
    `Validator.apply` (results of other options already checked against `base`)."""
    validator = Validator(module.clone(), base, program)
    return validator.apply(tile_pipeline(stop, **options), known=known)
