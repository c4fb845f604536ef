"""The tensor dtypes of the launch ABI (a sidecar's `"dtype"`, docs/abi.md) and the bytes
per element of each: the one table the launcher (`TENSOR_DTYPES`) and the tuning tables'
row-alignment rule (`tawac.schedule.tuning.rows_aligned`) read. No torch, no xDSL."""

from __future__ import annotations

#: Sidecar dtype -> bytes per element.
ELEMENT_BYTES: dict[str, int] = {
    "bf16": 2,
    "f16": 2,
    "f32": 4,
    "f8E4M3FN": 1,
    "f8E5M2": 1,
    "i32": 4,
}
