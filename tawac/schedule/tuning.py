"""Tuning tables: the best configuration of a kernel per problem-size bucket.

`tawac tune` writes one JSON table per kernel source (beside it: `gemm.mlir` ->
`gemm.tune.json`, see `table_path`); `tawac.torch.kernel` reads it and compiles, per call
shape, the configuration of the nearest bucket. The format:

    {"format": 1, "kernel": "gemm", "source_sha256": "<sha256 of the .mlir text>",
     "args": [<the sidecar's "args">],
     "entries": [{"bucket": {"M": 1024, "N": 1024, "K": 1024},
                  "params": {"BLOCK_N": 128}, "options": {"stages": 4},
                  "time_ms": 0.01, "tflops": 500.0, "device": "NVIDIA H100 ..."}]}

A bucket maps each dimension name to its size rounded up to a power of two
(`bucket_size`). An entry may say whether the sizes it was tuned at were ragged
(`"ragged": true`, `ragged_of`): a bucket can hold one entry of each kind. This module
imports neither torch nor xDSL.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tawac.support.options import KNOBS, knob
from tawac.target.dtypes import ELEMENT_BYTES
from tawac.target.hopper import HOPPER

TABLE_FORMAT = 1
TABLE_SUFFIX = ".tune.json"


class TuningTableError(ValueError):
    """A tuning table that cannot be read or does not follow the format."""


def bucket_size(n: int) -> int:
    """`n` rounded up to a power of two (1 for 0 and 1): 1000 -> 1024, 1024 -> 1024."""
    return 1 << max(0, n - 1).bit_length()


def bucket_of(sizes: Mapping[str, int]) -> dict[str, int]:
    """Each dimension's size rounded up to a power of two."""
    return {name: bucket_size(int(n)) for name, n in sizes.items()}


#: A dimension size that is a multiple of this (or at most this) is tile-aligned.
ALIGNED = 64


def ragged_of(sizes: Mapping[str, int]) -> bool:
    """Whether some dimension is ragged: larger than `ALIGNED` and not a multiple of it
    (1000 is; 1024, 4096 and a batch of 4 are not). Sizes of one bucket that differ in
    this may want other tiles (1000^3 against 1024^3): an entry records it, and `pick`
    prefers an entry of the call's kind among the nearest."""
    return any(int(n) > ALIGNED and int(n) % ALIGNED for n in sizes.values())


def source_sha256(text: str) -> str:
    """The digest a table records of the kernel source it was tuned for."""
    return hashlib.sha256(text.encode()).hexdigest()


def table_path(source: str | os.PathLike) -> Path:
    """Where the tuning table of a kernel source lives: `x.mlir` -> `x.tune.json`."""
    path = Path(source)
    stem = path.name[: -len(".mlir")] if path.name.endswith(".mlir") else path.name
    return path.with_name(stem + TABLE_SUFFIX)


def _is_power_of_two(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v > 0 and v & (v - 1) == 0


def validate_table(table: Any, where: str = "tuning table") -> None:
    """Checks a table's structure; raises TuningTableError naming `where` and the entry."""
    if not isinstance(table, dict):
        raise TuningTableError(f"{where}: expected a JSON object, got {type(table).__name__}")
    fmt = table.get("format")
    if fmt != TABLE_FORMAT:
        raise TuningTableError(
            f"{where}: format {fmt!r} is not supported (expected {TABLE_FORMAT})"
        )
    for key, kind in (("kernel", str), ("source_sha256", str), ("args", list), ("entries", list)):
        if not isinstance(table.get(key), kind):
            raise TuningTableError(f"{where}: {key!r} must be a {kind.__name__}")
    for i, entry in enumerate(table["entries"]):
        at = f"{where}: entries[{i}]"
        if not isinstance(entry, dict):
            raise TuningTableError(f"{at} must be an object")
        bucket = entry.get("bucket")
        if not isinstance(bucket, dict) or not bucket:
            raise TuningTableError(f"{at}: 'bucket' must be a non-empty object")
        for name, size in bucket.items():
            if not _is_power_of_two(size):
                raise TuningTableError(f"{at}: bucket size {name}={size!r} is not a power of two")
        for key in ("params", "options"):
            if not isinstance(entry.get(key, {}), dict):
                raise TuningTableError(f"{at}: {key!r} must be an object")
        if not isinstance(entry.get("ragged", False), bool):
            raise TuningTableError(f"{at}: 'ragged' must be true or false")
        exact = entry.get("sizes")
        if exact is not None and (
            not isinstance(exact, dict)
            or set(exact) != set(bucket)
            or any(not isinstance(v, int) or isinstance(v, bool) or v < 1 for v in exact.values())
            or bucket_of(exact) != bucket
        ):
            raise TuningTableError(
                f"{at}: 'sizes' must give each of the bucket's dimensions a positive size "
                "in that bucket"
            )
        for name, value in entry.get("options", {}).items():
            k = knob(name)
            if k is None or k.name != name:
                names = ", ".join(k.name for k in KNOBS)
                raise TuningTableError(f"{at}: unknown option {name!r} (options: {names})")
            must = k.problem(value)
            if must is not None:
                raise TuningTableError(f"{at}: option {name} must be {must}, got {value!r}")


def load_table(path: str | os.PathLike) -> dict[str, Any]:
    """Reads and validates a tuning table; FileNotFoundError or TuningTableError with the
    path in the message."""
    path = Path(path)
    try:
        text = path.read_text()
    except FileNotFoundError:
        raise FileNotFoundError(f"tuning table {path} does not exist") from None
    try:
        table = json.loads(text)
    except json.JSONDecodeError as e:
        raise TuningTableError(f"{path}: not valid JSON: {e}") from None
    validate_table(table, str(path))
    return table


def table_for(
    spec: str | os.PathLike | Mapping[str, Any] | None,
    auto: Path | None,
    text: str,
    what: str,
    again: str = "run `tawac tune` again",
    stacklevel: int = 5,
) -> tuple[dict[str, Any], str] | None:
    """The table a `tuning=` argument names, with where it came from: None for None;
    "auto": the file `auto` where it exists, else None; a loaded table (validated) or a
    path (`load_table`). One tuned for another version of the source (`text`, the
    source `what` is) warns (`again`: what to do) and gives None."""
    if spec is None:
        return None
    if isinstance(spec, str) and spec == "auto":
        if auto is None or not auto.exists():
            return None
        spec = auto
    if isinstance(spec, Mapping):
        table, where = dict(spec), "tuning table"
        validate_table(table, where)
    else:
        table, where = load_table(spec), str(spec)
    if table["source_sha256"] != source_sha256(text):
        import warnings

        warnings.warn(
            f"{where} was tuned for another version of {what} (source_sha256 differs): "
            f"ignored; {again}",
            stacklevel=stacklevel,
        )
        return None
    return table, where


def _distance(bucket: Mapping[str, int], sizes: Mapping[str, int]) -> float | None:
    """Sum over the bucket's dimensions of |log2(bucket) - log2(bucket_size(size))|; None
    when `sizes` lacks one of them."""
    total = 0.0
    for name, size in bucket.items():
        if name not in sizes:
            return None
        total += abs(math.log2(size) - math.log2(bucket_size(int(sizes[name]))))
    return total


def pick(
    table: Mapping[str, Any], sizes: Mapping[str, int], sms: int | None = None
) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """The (params, options) of `pick_entry`'s entry; None where it finds none."""
    entry = pick_entry(table, sizes, sms)
    if entry is None:
        return None
    return dict(entry.get("params", {})), entry_options(entry)


#: Options an entry that does not name them was measured with: the knobs added after
#: tables were written, at the value that compiles as the code did then (`widen`: one
#: program per tile). `tawac tune` names them in every entry it writes.
UNSTATED: dict[str, Any] = {"widen": 1}


def entry_options(entry: Mapping[str, Any]) -> dict[str, Any]:
    """The pipeline options of a table entry, those it does not name at `UNSTATED`."""
    return {**UNSTATED, **entry.get("options", {})}


#: The knobs that choose a work decomposition.
DECOMPOSITION_KNOBS = ("swap_ab", "split_k", "stream_k")


def overrides_decomposition(entry: Mapping[str, Any], given: Mapping[str, Any]) -> bool:
    """Whether options a caller gave choose another work decomposition than a table
    entry's options `entry` (a decomposition knob at another value). The entry was tuned
    with its decomposition, its tile included (a 16-token swap-AB tile is no plain tile),
    so it then does not apply at all."""
    for name in DECOMPOSITION_KNOBS:
        k = knob(name)
        assert k is not None
        if name in given and given[name] != entry.get(name, k.default):
            return True
    return False


#: The most splits `fill_splits` gives a key loop (`split-k`'s combine takes up to 256).
FILL_SPLITS_CAP = 32

#: The fewest key steps (blocks) `fill_splits` leaves a split.
FILL_SPLITS_MIN_STEPS = 8


def fill_splits(
    programs: int, sms: int, steps: int | None = None, cap: int = FILL_SPLITS_CAP
) -> int:
    """The splits of an attention kernel's key loop (split keys, flash-decoding) where no
    tuning table speaks for its size: the largest power of two s <= `cap` whose
    `programs * s` CTAs fit on `sms` multiprocessors at once and whose splits keep
    `FILL_SPLITS_MIN_STEPS` key steps of the loop's `steps` each (None: unknown, then at
    most 16 splits); 1 (no split) where the programs fill a quarter of the machine or
    more, or there are none. Measured on the H100 with the user-style grouped-query
    attention (`scripts/exp_triton_gqa_split.py`, `benchmarks/bench_triton_unseen.py`,
    128-key steps): 4 programs fastest at 32 splits at 32k and 128k keys (45 and 112 us,
    16 splits 46 and 121), at 8 or 16 at 8k keys (22.2, 22.0; 32 splits 23.5); 8
    programs at 16; 32 programs at 8k keys at 4 (63 vs 73 us unsplit); 64 programs lost
    with 2 (84 vs 74 us) (`docs/data/triton-gqa-split-keys*-h100-2026-11-27.log`)."""
    if programs <= 0 or 4 * programs > sms:
        return 1
    if steps is None:
        cap = min(cap, 16)
    s = 1
    while s * 2 <= cap and programs * s * 2 <= sms:
        if steps is not None and steps < FILL_SPLITS_MIN_STEPS * s * 2:
            break
        s *= 2
    return s


def key_steps(
    entry: Mapping[str, Any] | None,
    shapes: Mapping[str, Any],
    scalars: Mapping[str, int] | None = None,
) -> int | None:
    """A key loop's trip count from the sidecar's `"key_split"` `"steps"` extent (docs/abi.md):
    `{"const": n}`, `{"cdiv": {"arg": name, "dim": d}, "by": n}` over the tensors'
    `shapes` (by argument name) or `{"cdiv": {"scalar": name}, "by": n}` over the index
    arguments' values `scalars` (by name); None where it is unknown (null, or a size or
    scalar not given)."""
    if not isinstance(entry, Mapping):
        return None
    if "const" in entry:
        return int(entry["const"])
    ref, by = entry.get("cdiv"), int(entry.get("by", 0))
    if not isinstance(ref, Mapping) or by <= 0:
        return None
    if "scalar" in ref:
        value = (scalars or {}).get(ref["scalar"])
    else:
        shape = shapes.get(ref.get("arg"))
        dim = int(ref.get("dim", -1))
        value = shape[dim] if shape is not None and 0 <= dim < len(shape) else None
    return None if value is None else max(0, -(-int(value) // by))


def launch_splits(
    sidecar: Mapping[str, Any],
    programs: int,
    sms: int,
    shapes: Mapping[str, Any],
    scalars: Mapping[str, int] | None = None,
    given: Mapping[str, Any] | None = None,
) -> dict[str, int]:
    """The key split a launch adds to its options where no tuning table entry speaks for
    it, one rule for every front end (`tawac.torch`, `tawac.triton`): `{"split_k": s}`
    for a kernel whose sidecar says its key loop can be split (`"key_split"`, recorded on
    an unsplit kernel), `fill_splits(programs, sms, steps)` of its `programs` (the
    unsplit launch's logical grid) and the loop's steps (`key_steps` of the launch's
    tensor `shapes` and index `scalars`), where s > 1; {} where the `given` options (a
    table entry's and the user's) name a work decomposition, the kernel has no such loop,
    or the rule says 1."""
    fact = sidecar.get("key_split")
    if fact is None or any(n in (given or {}) for n in DECOMPOSITION_KNOBS):
        return {}
    s = fill_splits(programs, sms, key_steps(fact.get("steps"), shapes, scalars))
    return {"split_k": s} if s > 1 else {}


def output_dims(table: Mapping[str, Any]) -> tuple[str, str] | None:
    """The (rows, columns) dimension names of a table's kernel whose one written tensor
    is a matrix tiled by BLOCK_M x BLOCK_N (a GEMM: c [M, N], with a dimension it reads
    and does not write, K, that each tile contracts); None for another kernel (a row
    kernel, y [M, N] from x [M, N]: a program is a band of whole rows, not a tile, so
    the wave model's tile count does not hold)."""
    written = [a for a in table.get("args", []) if a.get("access") == "write"]
    if len(written) != 1 or len(written[0].get("dims", [])) != 2:
        return None
    rows, cols = written[0]["dims"]
    read = {
        str(d)
        for a in table.get("args", [])
        if a.get("access") == "read"
        for d in a.get("dims") or []
    }
    if not read - {str(rows), str(cols)}:
        return None
    return str(rows), str(cols)


def rows_aligned(table: Mapping[str, Any], sizes: Mapping[str, int]) -> bool:
    """Whether every tensor the kernel reads has rows (its last dimension) of whole L2
    sectors (`Target.on_sectors`). A GEMM whose rows are only 16-byte aligned (K = 3000
    or 5000 in bf16) ran 1.5-1.6x slower at the same tiles on the H100 under 256-byte L2
    promotion, and still 1.1-1.3x under none (docs/perf.md, 2026-11-27): its entries are
    timed apart from the aligned ones."""
    for a in table.get("args", []):
        dims, size = a.get("dims") or [], ELEMENT_BYTES.get(str(a.get("dtype")))
        if a.get("access") == "read" and dims and size and dims[-1] in sizes:
            if not HOPPER.on_sectors(int(sizes[dims[-1]]) * size):
                return False
    return True


def _decomposed(entry: Mapping[str, Any]) -> bool:
    """An entry of another decomposition than one program per output tile: a
    decomposition knob (swap-AB, split-K, stream-K) off its default."""
    return overrides_decomposition({}, entry.get("options", {}))


def _tile_filling(entry: Mapping[str, Any]) -> bool:
    """An entry of whole output tiles, one program each, with its tile named."""
    params = entry.get("params", {})
    return "BLOCK_M" in params and "BLOCK_N" in params and not _decomposed(entry)


def _tiles(entry: Mapping[str, Any], sizes: Mapping[str, int], dims) -> int:
    bm, bn = int(entry["params"]["BLOCK_M"]), int(entry["params"]["BLOCK_N"])
    return -(-int(sizes[dims[0]]) // bm) * -(-int(sizes[dims[1]]) // bn)


def wave_cost(entry: Mapping[str, Any], sizes: Mapping[str, int], dims, sms: int) -> float:
    """Whole waves of the entry's tile at `sizes` times the work of one tile: each SM
    computes ceil(tiles / sms) tiles of BLOCK_M x BLOCK_N x (every other dimension)."""
    bm, bn = int(entry["params"]["BLOCK_M"]), int(entry["params"]["BLOCK_N"])
    depth = math.prod(int(v) for k, v in sizes.items() if k not in dims)
    return -(-_tiles(entry, sizes, dims) // sms) * bm * bn * depth


def predicted_ms(
    entry: Mapping[str, Any], sizes: Mapping[str, int], dims, sms: int
) -> float | None:
    """The entry's time at `sizes` by the wave model: its measured time scaled by
    `wave_cost` there over `wave_cost` at the sizes it was measured at; None for an
    entry the model does not calibrate from: not tile-filling (`_tile_filling`), no
    time at recorded `sizes` (older entries kept a time without its sizes), or tuned at
    sizes of less than one wave of tiles (a decode tile's time is its bandwidth's)."""
    at = entry.get("sizes")
    if not _tile_filling(entry) or "time_ms" not in entry or at is None:
        return None
    if set(at) != set(sizes) or _tiles(entry, at, dims) < sms:
        return None
    return (
        float(entry["time_ms"])
        * wave_cost(entry, sizes, dims, sms)
        / wave_cost(entry, at, dims, sms)
    )


def pick_entry(
    table: Mapping[str, Any], sizes: Mapping[str, int], sms: int | None = None
) -> Mapping[str, Any] | None:
    """The entry for `sizes`. One tuned at exactly these sizes (its `sizes`, else its
    bucket); else, given the SM count `sms`, for a GEMM's table (`output_dims`) whose
    nearest entry (below) is of one program per tile, the tile-filling entry with at
    least one whole wave of tiles here that the wave model predicts fastest here
    (`predicted_ms`: a tile tuned at one size is not the best at another whose tile
    count leaves the last wave emptier; 7168 x 2048 x 4096 ran 206 us with its nearest
    entry's 192 x 192 tiles, 171 with 256 x 160, which the model picks), among the
    entries timed with rows of the same alignment (`rows_aligned`), where the nearest
    entry's own time at these sizes is predicted or it was timed with rows of the other
    alignment; else the nearest entry.

    The nearest entry: the one whose bucket holds `sizes`, else of the nearest bucket
    (sum of |log2 differences| over its dimensions); among entries as near, one tuned at
    sizes as ragged as these (`ragged_of`; an entry without the mark counts for either,
    after a match), then the one tuned at the nearest sizes (an entry's `sizes`, else
    its bucket: 5120^2 x 8192 and 8192^3 share a bucket and keep their own entries),
    then the first. None when no entry's dimensions are all in `sizes`."""
    for entry in table["entries"]:
        if (entry.get("sizes") or entry["bucket"]) == dict(sizes):
            return entry
    near = nearest_entry(table, sizes)
    dims = output_dims(table)
    if near is not None and sms is not None and dims is None:
        return _filling_rows(table, sizes, near, sms)
    if near is None or sms is None or dims is None or _decomposed(near):
        return near
    if set(dims) - set(sizes):
        return near
    aligned = rows_aligned(table, sizes)
    best, best_ms = near, None
    if rows_aligned(table, near.get("sizes") or near["bucket"]) == aligned:
        best_ms = predicted_ms(near, sizes, dims, sms)
        if best_ms is None:  # timed where the model cannot say: it stands
            return near
    for entry in table["entries"]:
        at = entry.get("sizes")
        if at is None or rows_aligned(table, at) != aligned or not _tile_filling(entry):
            continue
        if _tiles(entry, sizes, dims) < sms:  # less than a wave here: not the model's
            continue
        ms = predicted_ms(entry, sizes, dims, sms)
        if ms is not None and (best_ms is None or ms < best_ms * (1 - 1e-9)):
            best, best_ms = entry, ms
    return best


def program_rows(table: Mapping[str, Any]) -> str | None:
    """The rows dimension of a row kernel's table: its written tensors' first dimension
    (y [M, N], and the row statistics mean [M], rstd [M]), a 2-d one among them, none
    of it contracted (`output_dims` None); each program a band of BLOCK_M whole rows.
    None for another kernel."""
    written = [a.get("dims") or [] for a in table.get("args", []) if a.get("access") == "write"]
    if output_dims(table) is not None or not any(len(d) == 2 for d in written):
        return None
    firsts = {str(d[0]) for d in written if d}
    return firsts.pop() if len(firsts) == 1 else None


def busy_sms(entry: Mapping[str, Any], sizes: Mapping[str, int], rows: str, sms: int) -> int | None:
    """The SMs a row kernel's entry keeps busy at `sizes`: its bands of BLOCK_M rows, up to
    `sms`; None for an entry without BLOCK_M or of another decomposition."""
    bm = entry.get("params", {}).get("BLOCK_M")
    if bm is None or _decomposed(entry):
        return None
    return min(-(-int(sizes[rows]) // int(bm)), sms)


def _filling_rows(
    table: Mapping[str, Any], sizes: Mapping[str, int], near: Mapping[str, Any], sms: int
) -> Mapping[str, Any]:
    """A row kernel's entry at sizes no entry was tuned at: the nearest, unless its bands
    of rows keep fewer than half the SMs busy here (programs < sms / 2): then, of the
    entries whose bands keep at least half busy, the one of the thickest bands (more
    rows a program run more efficiently once the machine is busy: one row a program ran
    0.74x the 16-row one at 4096 x 4096), then the nearest; where none does, the entry
    that keeps the most busy. Measured on the H100
    (docs/perf/2026-12-07.md): the softmax at 128 x 4096 ran 11.7 us with its nearest
    entry's 8-row bands (16 programs), 7.4 with one row a program (128), and every norm
    bucket of 1-128 tokens was tuned to one row a program."""
    rows = program_rows(table)
    if rows is None or rows not in sizes:
        return near

    def busy(entry: Mapping[str, Any]) -> tuple[int, int, float] | None:
        """(SMs busy, BLOCK_M, -distance): larger is better."""
        n = busy_sms(entry, sizes, rows, sms)
        d = _distance(entry["bucket"], sizes)
        if n is None or d is None:
            return None
        return n, int(entry["params"]["BLOCK_M"]), -d

    here = busy(near)
    if here is None or 2 * here[0] >= sms:
        return near
    ranked = [(key, entry) for entry in table["entries"] if (key := busy(entry)) is not None]
    enough = [(key, entry) for key, entry in ranked if 2 * key[0] >= sms]
    if enough:  # the thickest bands that keep half the SMs busy, then the nearest
        return max(enough, key=lambda r: (r[0][1], r[0][2]))[1]
    key, best = max(ranked, key=lambda r: r[0])  # else the busiest
    return best if key[0] > here[0] else near


def nearest_entry(table: Mapping[str, Any], sizes: Mapping[str, int]) -> Mapping[str, Any] | None:
    """`pick_entry`'s nearest entry."""
    ragged = ragged_of(sizes)
    best: tuple[tuple[float, int, float], Mapping[str, Any]] | None = None
    for entry in table["entries"]:
        d = _distance(entry["bucket"], sizes)
        if d is None:
            continue
        kind = entry.get("ragged")
        point = entry.get("sizes") or entry["bucket"]
        near = sum(abs(math.log2(v) - math.log2(max(1, int(sizes[k])))) for k, v in point.items())
        rank = (d, 0 if kind == ragged else 1 if kind is None else 2, near)
        if best is None or rank < best[0]:
            best = (rank, entry)
    return best[1] if best is not None else None
