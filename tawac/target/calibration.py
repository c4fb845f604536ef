"""The cost model's fitted figures as data: what `tawac calibrate` writes and every
planner reads.

A calibration file (JSON, `tawac/target/calibration/<name>.json` ships with tawac) holds
the device it was measured on, the date, the corpus and the fit's error, and `params`:

- `mma_group_cycles`: tensor-core cycles per warp group's `tile.dot` on top of its wgmma
  intervals (`Target.mma_group_cycles`);
- `get_cycles`: a warp group's cycles in an `aref.get` that finds its slot full
  (`Target.get_cycles`);
- `wg_issue_rate`: thread-level elementwise ops one warp group issues per cycle
  (`Target.wg_issue_rate`; 0: as fast as the pipe);
- `fma_rate`, `mufu_rate`, `shfl_rate`: the effective throughput, per cycle per SM, of
  the FMA pipe, the MUFU (ex2 and rcp) and the shuffles in the instruction stream the
  compiler emits (the table's rows are the peak rates of one instruction in isolation);
- `dram_rate`: bytes per cycle per SM a streamed operand arrives at.
- `tma_fixed_cycles`, `tma_bytes_per_cycle`: a TMA copy arrives `fixed + bytes / rate`
  cycles after its issue under the corpus' load (`Target.tma_fixed_cycles`; 0 and 0: the
  table's one-copy latency scaled by the bytes).

and, optionally, `model`: the rules the figures were fitted under, fields of `Target`
(`MODEL_FIELDS`: `mma_mufu_hold`, `phase_leads`, `if_taken`; absent: the `Target`'s
defaults).

`calibrated(target, path)` is `target` with those figures in place of the table's and
the fit's median error as its `model_error` (what the `auto` planner trusts), and, where
the file has them, per kind of loop the error in comparing the planners' schedules
(`planner_errors`) and the planner the corpus measured faster (`planner_preference`). The model
every pass reads (`tawac.target.HOPPER`) takes the file `$TAWAC_TARGET_MODEL` names:
unset or `shipped`, `SHIPPED` (the H100's: the default since the solver checks its
answers' register pressure, `tawac.analysis.pressure`; before, under this model it chose
a two-stage d128 attention loop that spilled); `h200`, `SHIPPED_H200`; a path, that
file; `none`, the uncalibrated table (the measured rows of `tawac.target.hopper`).
"""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path
from typing import Any

# `Target` (tawac/target/hopper.py) imports this module: its type is named, not imported.
Target = Any

#: The file the default model reads.
SHIPPED = Path(__file__).with_name("calibration") / "sm_90a.json"
#: The H200's calibration (`TAWAC_TARGET_MODEL=h200`).
SHIPPED_H200 = Path(__file__).with_name("calibration") / "sm_90a-h200.json"
#: The names `$TAWAC_TARGET_MODEL` may give instead of a path.
NAMED = {"shipped": SHIPPED, "h100": SHIPPED, "h200": SHIPPED_H200}
ENV = "TAWAC_TARGET_MODEL"

#: Fitted figures that are fields of `Target`.
FIELDS = (
    "mma_group_cycles",
    "get_cycles",
    "wg_issue_rate",
    "tma_fixed_cycles",
    "tma_bytes_per_cycle",
)
#: Fitted rates and the cost-table rows whose throughput they replace.
RATES: dict[str, tuple[str, ...]] = {
    "fma_rate": ("fma.rn.f32",),
    "mufu_rate": ("ex2.approx.ftz.f32", "rcp.approx.ftz.f32"),
    "shfl_rate": ("shfl.sync.bfly.b32",),
    "dram_rate": ("bytes",),
}
PARAMS = FIELDS + tuple(RATES)
#: The model's rules a calibration file may set (its `model` section): `Target` fields.
MODEL_FIELDS = ("mma_mufu_hold", "phase_leads", "if_taken")


def model_rules(doc: dict[str, Any], path: Path) -> dict[str, Any]:
    """A calibration file's `model` section as `Target` field values (checked)."""
    rules = doc.get("model") or {}
    if not isinstance(rules, dict) or not set(rules) <= set(MODEL_FIELDS):
        raise ValueError(f"{path}: 'model' may set {', '.join(MODEL_FIELDS)} only")
    out: dict[str, Any] = {}
    for name, value in rules.items():
        if name == "phase_leads":
            if (
                not isinstance(value, list)
                or not value
                or not all(isinstance(v, (int, float)) and v >= 0 for v in value)
            ):
                raise ValueError(f"{path}: 'phase_leads' must be a list of leads >= 0")
            out[name] = tuple(float(v) for v in value)
            continue
        if not isinstance(value, (int, float)) or not 0 <= value <= 1:
            raise ValueError(f"{path}: '{name}' must be a number in [0, 1]")
        out[name] = float(value)
    return out


def params_of(target: Target) -> dict[str, float]:
    """The figures a calibration sets, as `target` has them."""
    out = {f: float(getattr(target, f)) for f in FIELDS}
    for name, rows in RATES.items():
        rate = target.cost(rows[0]).throughput
        assert rate is not None
        out[name] = float(rate)
    return out


def with_params(target: Target, params: dict[str, float], calibration: str) -> Target:
    """`target` with `params` (any subset of `PARAMS`) in place of its figures."""
    unknown = sorted(set(params) - set(PARAMS))
    if unknown:
        raise ValueError(f"unknown calibration parameters: {', '.join(unknown)}")
    fields: dict[str, Any] = {f: float(params[f]) for f in FIELDS if f in params}
    replaced = {row: float(params[n]) for n, rows in RATES.items() if n in params for row in rows}
    if any(v <= 0 for v in replaced.values()):
        raise ValueError("a calibrated rate must be positive")
    costs = tuple(
        dataclasses.replace(c, throughput=replaced[c.op], source=f"fitted: {calibration}")
        if c.op in replaced
        else c
        for c in target.costs
    )
    return dataclasses.replace(target, costs=costs, calibration=calibration, **fields)


def load(path: Path) -> dict[str, Any]:
    """A calibration file's contents (checked: a `params` map of known names)."""
    doc = json.loads(Path(path).read_text())
    if not isinstance(doc, dict) or not isinstance(doc.get("params"), dict):
        raise ValueError(f"{path}: not a calibration file (no 'params')")
    return doc


def label(doc: dict[str, Any]) -> str:
    """How a calibration names itself: device and date."""
    return f"{doc.get('device', '?')}, {doc.get('date', '?')}"


def calibrated(target: Target, path: Path | None = None) -> Target:
    """`target` with the figures of the calibration file at `path` (default: the one
    `$TAWAC_TARGET_MODEL` names, a `NAMED` file or a path; unset: `SHIPPED`; `none`:
    `target` as it is)."""
    if path is None:
        env = os.environ.get(ENV, "") or "shipped"
        if env.lower() == "none":
            return target
        path = NAMED.get(env.lower(), Path(env))
    doc = load(path)
    out = with_params(target, doc["params"], label(doc))
    out = dataclasses.replace(out, **model_rules(doc, path))
    error = doc.get("fit", {}).get("median_error")
    if error:
        out = dataclasses.replace(out, model_error=float(error))
    kinds = doc.get("planner_errors") or {}
    if not isinstance(kinds, dict) or not all(
        isinstance(v, (int, float)) and 0 <= v < 1 for v in kinds.values()
    ):
        raise ValueError(f"{path}: 'planner_errors' must map loop kinds to fractions in [0, 1)")
    if kinds:
        out = dataclasses.replace(out, planner_errors=tuple(sorted(kinds.items())))
    preference = doc.get("planner_preference") or {}
    known = dict(out.planner_preference)
    if not isinstance(preference, dict) or not all(
        k in known and p in ("heuristic", "solver") for k, p in preference.items()
    ):
        raise ValueError(
            f"{path}: 'planner_preference' must map kinds of loop ({', '.join(known)}) to "
            "'heuristic' or 'solver'"
        )
    if preference:
        merged = tuple((k, preference.get(k, p)) for k, p in out.planner_preference)
        out = dataclasses.replace(out, planner_preference=merged)
    return out
