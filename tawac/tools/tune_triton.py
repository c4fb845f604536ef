"""Tuning a Triton function's calls (`TritonFunction.tune`): what `tawac tune` does for a
tile kernel, for a `tawac.triton.compile` function at one call's arguments.

    fn = tawac.triton.compile(_attn_fwd, signature=..., constexprs={..., "N_CTX": 8192})
    fn.tune(*args, space={"persistent": [True, False]}, sizes=["N_CTX"], table="attn.tune.json")
    fast = tawac.triton.compile(_attn_fwd, ..., tuning="attn.tune.json")

Each candidate (the product of `space`'s option values; the default configuration, the
function's own options, first) is compiled, run on copies of the call's tensors and
compared with the default's outputs (`close`: `tawac tune`'s relative error), then timed
round-robin with the others (`tawac.runtime.runner.timer`); the winner is
`tawac.tools.tune.winner`'s: the fastest correct candidate faster than the default in every
round, else the default. Its entry goes into the function's table, or given `table`, into
that file's table (one is created where there is none or it was tuned for another version
of the source; an entry of the same bucket, ragged mark and constexprs is replaced), which
the function then follows.

An entry's bucket holds the call's sizes: the integer arguments and constexprs named in
`sizes` (`Z`, `H`, a length compiled in as `N_CTX`; default: the integer arguments that
size a tensor, `TritonFunction.sizes`); its `"constexprs"` hold the function's other
constexprs (JSON values), which a function must share for the entry to apply
(`entry_applies`).
"""

from __future__ import annotations

import datetime
import os
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tawac.support.diagnostics import CompileError
from tawac.support.options import knob


def function_source(fn) -> str:
    """The Python source of a Triton function (its `src`, else `inspect`'s), of which a
    Triton tuning table records the digest; "" where none is found."""
    src = getattr(fn, "src", None)
    if isinstance(src, str):
        return src
    import inspect

    try:
        return inspect.getsource(getattr(fn, "fn", fn))
    except (OSError, TypeError):
        return ""


def entry_applies(entry: Mapping[str, Any], constexprs: Mapping[str, Any]) -> bool:
    """Whether a Triton tuning table entry applies to a function compiled with these
    constexprs: each constexpr the entry was tuned with (its `"constexprs"`, those not
    in its bucket) has the same value (`STAGE` 3 is another program than `STAGE` 1)."""
    return all(constexprs.get(k) == v for k, v in entry.get("constexprs", {}).items())


def table_path(fn) -> Path | None:
    """Where `tuning="auto"` looks for the tuning table of the Triton function `fn`:
    `<module>.<function>.tune.json` beside the file that defines it (`attention.py`'s
    `_attn_fwd`: `attention._attn_fwd.tune.json`); None where the file is not known."""
    import inspect

    try:
        where = inspect.getsourcefile(getattr(fn, "fn", fn))
    except TypeError:
        return None
    if where is None:
        return None
    path = Path(where)
    name = getattr(getattr(fn, "fn", fn), "__name__", "kernel")
    return path.with_name(f"{path.stem}.{name}.tune.json")


def load_table(
    spec: str | os.PathLike | Mapping[str, Any] | None, fn, name: str
) -> dict[str, Any] | None:
    """A Triton function's tuning table from `spec` ("auto": `table_path`'s file where it
    exists; a path; a loaded table; None: none), checked as `tawac.schedule.tuning` checks every
    table, and further: its entries set no kernel parameters (a Triton function's
    constexprs are the caller's) and their `"constexprs"` are objects. A table of another
    function (`name`) raises; one tuned for another version of its source
    (`source_sha256`) warns and is not used, as `tawac.torch` does."""
    from tawac.schedule import tuning

    auto = table_path(fn) if isinstance(spec, str) and spec == "auto" else None
    found = tuning.table_for(spec, auto, function_source(fn), name, "tune it again")
    if found is None:
        return None
    table, where = found
    for i, entry in enumerate(table["entries"]):
        if entry.get("params"):
            raise tuning.TuningTableError(
                f"{where}: entries[{i}] sets kernel parameters; a Triton function's "
                "constexprs are the caller's"
            )
        if not isinstance(entry.get("constexprs", {}), dict):
            raise tuning.TuningTableError(f"{where}: entries[{i}]: 'constexprs' must be an object")
    if table["kernel"] != name:
        raise tuning.TuningTableError(f"{where} is the table of {table['kernel']}, not of {name}")
    return table


@dataclass
class TuneResult:
    """`tune`'s outcome: one `tawac.tools.tune.Measured` row per candidate (the default's
    first), the winner's table entry and the table it is now in."""

    rows: list[Any]
    entry: dict[str, Any]
    table: dict[str, Any] = field(default_factory=dict)

    def lines(self) -> list[str]:
        """A line per candidate: its label, median time and each round's, or why it was
        rejected."""
        out = []
        for r in self.rows:
            rounds = ", ".join(f"{t:.4f}" for t in r.rounds)
            what = f"{r.time_ms:.4f} ms ({rounds})" if r.ok else f"rejected ({r.reject})"
            out.append(f"{r.candidate.label()}: {what}")
        return out


def candidates(space: Mapping[str, Sequence[Any]]):
    """The default configuration, then each combination of `space`'s option values
    (Python knob names; a value checked as `tawac compile` checks it;
    `tawac.tools.tune.enumerate_candidates`)."""
    from tawac.tools.tune import Axis, Candidate, enumerate_candidates

    axes = []
    for name, values in space.items():
        k = knob(name)
        if k is None or k.name != name:
            raise CompileError(f"tune: unknown option {name!r}")
        for v in values:
            must = k.problem(v)
            if must is not None:
                raise CompileError(f"tune: option {name} must be {must}, got {v!r}")
        axes.append(Axis(name, "option", tuple(values)))
    combos = enumerate_candidates(axes) if axes else []
    return [Candidate(), *(c for c in combos if c.options)]


def close(got: Sequence[Any], want: Sequence[Any]) -> str | None:
    """None where every tensor of `got` lies within `tawac tune`'s tolerance of `want`'s
    (`relative_error`, NaN-free where `want` is finite), else what differs."""
    import math

    import torch

    from tawac.runtime.runner import relative_error
    from tawac.tools.tune import TOLERANCE

    for i, (a, b) in enumerate(zip(got, want, strict=True)):
        if not isinstance(b, torch.Tensor):
            continue
        err = relative_error(a, b)
        if math.isnan(err):
            return f"argument {i}: NaN where the default has a number"
        if err > TOLERANCE:
            return f"argument {i}: relative error {err:.3g} > {TOLERANCE:g}"
    return None


def _merge(table: Mapping[str, Any] | None, entry: dict[str, Any], fn) -> dict[str, Any]:
    """`table` with `entry` in (`tawac.tools.tune.merge_table`: it replaces the entry of its
    bucket and constexprs), for `fn`."""
    from tawac.schedule.tuning import source_sha256
    from tawac.tools.tune import merge_table

    sha = source_sha256(function_source(fn.fn))
    args = [{"name": n} for n in fn.params]
    return merge_table(table, [entry], kernel=fn.name, sha256=sha, args=args)[0]


def tune(
    fn,
    args: Sequence[Any],
    space: Mapping[str, Sequence[Any]],
    *,
    sizes: Sequence[str] | None = None,
    rounds: int = 5,
    warmup_ms: float = 25.0,
    rep_ms: float = 50.0,
    l2: str = "dirty",
    table: str | os.PathLike | None = None,
) -> TuneResult:
    """Tunes `fn` (a `TritonFunction`) at the call `args` (module docstring): `space`
    the option values to try, `sizes` the names of the call's sizes (the bucket's),
    `rounds` round-robin rounds of `rep_ms` each (`l2`: `tawac.runtime.runner.timer`'s
    flush), `table` the file to write the table to."""
    import torch

    from tawac.runtime.runner import round_robin, timer
    from tawac.schedule.tuning import UNSTATED, bucket_of, ragged_of
    from tawac.tools.tune import Measured, winner

    dims = fn.table_sizes(args)
    names = sorted(fn.sizes()) if sizes is None else list(sizes)
    unknown = [n for n in names if n not in dims]
    if unknown:
        raise CompileError(
            f"tune: {', '.join(unknown)} is no integer argument or constexpr of {fn.name}"
        )
    if not names:
        raise CompileError(f"tune: no argument of {fn.name} sizes a tensor; name its sizes")
    ones = fn._ones(args)
    cands = candidates(space)
    kernels: list[Any] = []
    rows = []
    for c in cands:
        given = {**fn.options, **c.options}
        try:
            kernels.append(fn._kernel(ones, {**given, **fn._auto(ones, args, given)}))
            rows.append(Measured(c))
        except CompileError as e:
            kernels.append(None)
            rows.append(Measured(c, reject=f"compile: {str(e).splitlines()[0]}"))
    if rows[0].reject is not None:
        raise CompileError(f"tune: the default configuration of {fn.name}: {rows[0].reject}")
    original = [a.clone() if isinstance(a, torch.Tensor) else a for a in args]

    def restore() -> None:
        for a, o in zip(args, original, strict=True):
            if isinstance(a, torch.Tensor):
                a.copy_(o)

    want = None
    for row, k in zip(rows, kernels, strict=True):
        if k is None:
            continue
        restore()
        k(*args)
        torch.cuda.synchronize()
        got = [a.clone() if isinstance(a, torch.Tensor) else a for a in args]
        if want is None:
            want = got
        why = close(got, want)
        if why is not None:
            row.reject = f"wrong result: {why}"
    restore()
    time = timer(l2)
    samples: list[list[float]] = [[] for _ in cands]
    live = [i for i, r in enumerate(rows) if r.reject is None]
    for j in round_robin(len(live), rounds):
        i = live[j]
        samples[i].append(time(lambda k=kernels[i]: k(*args), warmup_ms, rep_ms))
    restore()
    for i in live:
        rows[i].time_ms = statistics.median(samples[i])
        rows[i].rounds = tuple(samples[i])
    best = winner(rows)
    if best is None:
        raise CompileError(f"tune: no candidate of {fn.name} ran correctly")
    exact = {n: max(1, dims[n]) for n in names}
    bucket = dict(bucket_of(exact))
    consts = {
        k: v
        for k, v in fn.constexprs.items()
        if k not in names and isinstance(v, bool | int | float | str)
    }
    entry = {
        "bucket": bucket,
        "ragged": ragged_of(exact),
        **({"sizes": exact} if exact != bucket else {}),
        "constexprs": consts,
        "options": {**{k: knob(k).default for k in UNSTATED}, **best.candidate.options},
        "time_ms": best.time_ms,
        **({"l2": l2} if l2 != "dirty" else {}),  # timed with a clean L2 (`tawac tune`'s mark)
        "device": torch.cuda.get_device_name(),
        "date": datetime.date.today().isoformat(),
    }
    base = fn.table
    if table is not None and Path(table).exists():
        base = load_table(table, fn.fn, fn.name)  # stale: warned, a new table
    fn.table = _merge(base, entry, fn)
    if table is not None:
        from tawac.tools.tune import write_table

        write_table(Path(table), fn.table)
    return TuneResult(rows, entry, fn.table)
