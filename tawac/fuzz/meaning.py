"""Meaning checks of accepted mutants: the passes up to `lower-aref` keep what the mutant
computes.

A mutant that `tawac compile` accepts is also run through `tawac.check`: its outputs in
the reference interpreter on random inputs (`baseline`) at the ragged sizes its source
program is checked at (`corpus/corpus.json`'s `check_sizes`, the entry of the source file
without defines), compared with those of the IR after the passes the compile ran with the
same flags before `lower-aref` (`validate_pipeline` to `PARTITION_STOP`: the tile-level
rewrites and the warp-specialized kernel's, its arefs' protocol checked too). A
difference is a `mismatch` finding; an error of the interpreter on the rewritten IR
where the original ran is a `check-error`.

A mutant is not checked ("unchecked", with a reason) where the check would not say
anything or would cost too much: its source has no sizes (`no-sizes`: filecheck chunks,
TTIR, the template instances), its tensors' dimension names or its scalar arguments are
not all named by the sizes (`sizes`), a tensor would have over `MAX_TENSOR_ELEMENTS`
elements or the interpreter's values over `MAX_WORK` (programs x the largest tile's
elements: `work`), the interpreter cannot run the mutant as written (`baseline`), a pass
refuses it (`refused`), memory runs out (`memory`), or the check runs past its time limit
(`time`).

`check_meaning` imports torch (through `tawac.check`): the harness calls it in a forked
child only, so that the campaign's parent, which forks a child per mutant, stays light.
"""

from __future__ import annotations

import json
import random
import signal
import traceback
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

#: The most elements of one tensor argument at the check's sizes.
MAX_TENSOR_ELEMENTS = 1 << 24
#: The most elements of one value in the interpreter (vectorized over the programs):
#: programs of the grid x the elements of the largest tile.
MAX_WORK = 1 << 26
#: Seconds one check may take (the interpreter on the CPU), after the imports.
CHECK_TIMEOUT = 20.0


@dataclass(frozen=True)
class Check:
    """What a meaning check of a mutant of `source` needs: the corpus program whose sizes
    it runs at (`program`: its name in corpus.json), the sizes and index tensors, or
    `sizes` None where the source has none."""

    source: str
    program: str | None = None
    sizes: dict[str, Any] | None = None
    indices: dict[str, str] | None = field(default=None)

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True) + "\n"

    @classmethod
    def from_json(cls, text: str) -> Check:
        return cls(**json.loads(text))


def load_checks(root: str | Path) -> dict[str, Check]:
    """The sizes of every source file in `root`/corpus/corpus.json that has an entry
    without defines (the mutants are compiled with the parameters' defaults), and of the
    Triton kernels in `root`/corpus/triton.json, by the source's repository-relative
    path."""
    path = Path(root) / "corpus" / "corpus.json"
    if not path.is_file():
        return {}
    out: dict[str, Check] = {}
    for entry in json.loads(path.read_text())["programs"]:
        if entry.get("defines") or entry["source"] in out or "check_sizes" not in entry:
            continue
        sizes, indices = entry["check_sizes"], entry.get("indices")
        out[entry["source"]] = Check(entry["source"], entry["name"], sizes, indices)
    triton = Path(root) / "corpus" / "triton.json"
    if triton.is_file():  # the Triton kernels' sizes, by their .ttir
        for source, sizes in json.loads(triton.read_text())["kernels"].items():
            out.setdefault(source, Check(source, source, sizes))
    return out


def selected(seed: int, index: int, fraction: float) -> bool:
    """Whether mutant `index` of campaign `seed` is checked for meaning (if accepted):
    a draw of its own from (seed, index), so a campaign checks the same mutants however
    it is sharded."""
    if fraction <= 0:
        return False
    return fraction >= 1 or random.Random(f"{seed}:{index}:meaning").random() < fraction


def pipeline_options(flags: list[str]) -> dict[str, Any]:
    """The `PipelineOptions` fields `tawac compile` runs with under these flags, read by
    the command's own parser."""
    import tawac.tools.cli
    from tawac.support.options import KNOBS

    ctx = tawac.tools.cli.main.commands["compile"].make_context(
        "compile", ["k.mlir", "-o", "k.ptx", *flags]
    )
    return {k.name: ctx.params[k.name] for k in KNOBS}


class _Expired(BaseException):
    """The check's time ran out (a BaseException: no `except Exception` swallows it)."""


def _alarm(signum, frame) -> None:
    raise _Expired()


def _error_line(e: BaseException) -> str:
    """`Type: message (in function, file)` of an exception, on one line."""
    frames = traceback.extract_tb(e.__traceback__)
    where = f" (in {frames[-1].name}, {Path(frames[-1].filename).name})" if frames else ""
    text = " ".join(str(e).split())
    return f"{type(e).__name__}: {text[:300]}{where}"


def _applicable(module, check: Check) -> str | None:
    """Why the mutant cannot be checked at the check's sizes (`sizes` or `work`), or
    None."""
    from xdsl.dialects.builtin import TensorType

    from tawac.backend_ptx.abi import arg_specs
    from tawac.check.validate import kernel_of
    from tawac.runtime.interpret import launch_grid

    kernel = kernel_of(module)
    sizes = check.sizes or {}
    shapes: dict[str, tuple[int, ...]] = {}
    for spec in arg_specs(kernel):
        if spec["kind"] == "scalar":
            if spec["name"] not in sizes:
                return f"sizes: scalar {spec['name']!r} is not one of the sizes"
            continue
        dims = spec.get("dims") or []
        missing = [d for d in dims if not isinstance(d, int) and d not in sizes]
        if len(dims) != spec["rank"] or missing:
            return f"sizes: a dimension of {spec['name']!r} is not one of the sizes"
        shape = tuple(d if isinstance(d, int) else int(sizes[d]) for d in dims)
        count = 1
        for d in shape:
            count *= d
        if count > MAX_TENSOR_ELEMENTS:
            return f"work: {spec['name']!r} would have {count} elements"
        shapes[spec["name"]] = shape
    try:
        gx, gy, gz = launch_grid(kernel, shapes)
    except Exception as e:
        return f"sizes: no grid at these sizes ({_error_line(e)})"
    largest = 1
    for op in kernel.walk():
        for r in op.results:
            if isinstance(r.type, TensorType):
                n = 1
                for d in r.type.get_shape():
                    n *= max(d, 1)
                largest = max(largest, n)
    if gx * gy * gz * largest > MAX_WORK:
        return f"work: {gx * gy * gz} programs x {largest}-element tiles"
    return None


def check_meaning(
    text: str,
    filename: str,
    flags: list[str],
    check: Check,
    *,
    seconds: float = CHECK_TIMEOUT,
    program: str | None = None,
) -> tuple[str, str]:
    """(verdict, detail) of one accepted mutant (`text`, parsed as `filename`) compiled
    with `flags`: ("checked", the passes that changed it), ("unchecked", "reason: why"),
    ("mismatch", the `ValidationError`) or ("check-error", the exception). Imports torch;
    sets SIGALRM for `seconds` (the check, the imports not counted)."""
    if check.sizes is None:
        return "unchecked", "no-sizes: the source has no check_sizes in corpus/corpus.json"
    from tawac.check import ValidationError, baseline, validate_pipeline
    from tawac.check.validate import PARTITION_STOP
    from tawac.compiler import parse_text
    from tawac.support.diagnostics import CompileError

    program = program or check.program or check.source
    previous = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    stage = "parsing"
    try:
        try:
            options = pipeline_options(flags)
            module = parse_text(text, filename)
            why = _applicable(module, check)
            if why is not None:
                return "unchecked", why
            stage = "baseline"
            base = baseline(module, check.sizes, indices=check.indices)
        except (_Expired, MemoryError):
            raise
        except Exception as e:
            return "unchecked", f"{stage}: {_error_line(e)}"
        stage = "passes"
        try:
            done = validate_pipeline(module, base, program=program, stop=PARTITION_STOP, **options)
        except ValidationError as e:
            return "mismatch", str(e)
        except CompileError as e:
            return "unchecked", f"refused: {' '.join(str(e).split())}"
        except (_Expired, MemoryError):
            raise
        except Exception as e:
            return "check-error", _error_line(e)
        changed = [v.pass_name for v in done if v.changed]
        return "checked", f"passes that changed it: {', '.join(changed) or 'none'}"
    except _Expired:
        return "unchecked", f"time: over {seconds:g} s ({stage})"
    except MemoryError:
        return "unchecked", f"memory: out of memory ({stage})"
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
