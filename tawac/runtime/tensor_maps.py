"""Tensor maps (TMA descriptors) of the launcher: what TMA can address in place, the
padded copies of what it cannot, the descriptor's geometry and its encoding settings.

In: a tensor argument as a `TensorView` (sizes, strides, address, element size) and its
sidecar "tensor_map" parameter (box, swizzle). Out: `needs_padding` and
`padded_inner_size` (TMA's 16-byte rules; `_pad` makes the padded copy),
`tensor_map_dims` (cuTensorMapEncodeTiled's globalDim, globalStrides, boxDim,
elementStrides), `_map_slots` (per tensor-map parameter: its data type enum, ctypes arrays
and enums, made once per kernel) and the L2 promotion chosen per address and strides
(`l2_promotion`, `_promoted`, `_with_promotion`; docs/abi.md, "Tensor maps").
`_map_slots` and the promotion enums read cuda-python's enums and `_pad` copies on the
tensor's device; the rest takes no GPU.
"""

from __future__ import annotations

import ctypes
import functools
import math
from collections.abc import Mapping, Sequence
from typing import Any

from tawac.runtime.arguments import SWIZZLES, TENSOR_DTYPES, LaunchError, TensorView, cdiv
from tawac.runtime.cuda_driver import _driver
from tawac.target.hopper import HOPPER

TMA_ALIGN = 16


def needs_padding(view: TensorView, stored: bool = False) -> bool:
    """True when TMA cannot address the tensor in place.

    TMA needs a 16-byte aligned base and outer strides that are multiples of 16 bytes.
    A TMA store also writes whole 16-byte pieces of a row (measured on an H100: a row of
    100 bf16 gets 104 written), so a stored tensor whose rows end inside a 16-byte piece
    (a column slice of a wider tensor; a contiguous one fails the stride rule already)
    goes through a padded copy too, or the store would overwrite the columns after it.
    """
    if view.data_ptr % TMA_ALIGN != 0:
        return True
    if stored and (view.shape[-1] * view.elem_size) % TMA_ALIGN != 0:
        return True
    return any((s * view.elem_size) % TMA_ALIGN != 0 for s in view.strides[:-1])


def padded_inner_size(size: int, elem_size: int) -> int:
    """The innermost size rounded up so that one row is a multiple of 16 bytes."""
    per = TMA_ALIGN // math.gcd(TMA_ALIGN, elem_size)
    return cdiv(size, per) * per


def tensor_map_dims(
    param: Mapping[str, Any], view: TensorView
) -> tuple[list[int], list[int], list[int], list[int]]:
    """(globalDim, globalStrides in bytes, boxDim, elementStrides), innermost first."""
    rank = len(view.shape)
    box = [int(b) for b in param["box"]]
    if len(box) != rank:
        raise LaunchError(
            f"tensor_map for {param['arg']!r}: box {box} has {len(box)} entries, "
            f"tensor has rank {rank}"
        )
    shape = view.map_shape if view.map_shape is not None else view.shape
    strides = view.map_strides if view.map_strides is not None else view.strides
    global_dim = [int(d) for d in reversed(shape)]
    global_strides = [int(strides[i]) * view.elem_size for i in reversed(range(rank - 1))]
    return global_dim, global_strides, box, [1] * rank


def _pad(t):
    """A contiguous copy of t whose rows are a multiple of 16 bytes, and the view into it."""
    import torch

    inner = padded_inner_size(t.shape[-1], t.element_size())
    buf = torch.zeros((*t.shape[:-1], inner), dtype=t.dtype, device=t.device)
    view = buf[..., : t.shape[-1]]
    view.copy_(t)
    return view


def _map_slots(params: Sequence[Mapping[str, Any]], args: Sequence[Mapping[str, Any]]) -> dict:
    """Per tensor-map parameter: its data type enum, ctypes arrays (globalDim, strides, box,
    elementStrides) and the (interleave, swizzle, l2 promotion, oob fill) enums."""
    driver = _driver()
    by_name = {a["name"]: a for a in args}
    slots = {}
    for i, p in enumerate(params):
        if p["kind"] != "tensor_map":
            continue
        arg = by_name[p["arg"]]
        rank = int(arg["rank"])
        dtype = int(getattr(driver.CUtensorMapDataType, TENSOR_DTYPES[arg["dtype"]][1]))
        arrays = (
            (ctypes.c_uint64 * rank)(),
            (ctypes.c_uint64 * max(rank - 1, 1))(),
            (ctypes.c_uint32 * rank)(),
            (ctypes.c_uint32 * rank)(*([1] * rank)),
        )
        enums = (
            int(driver.CUtensorMapInterleave.CU_TENSOR_MAP_INTERLEAVE_NONE),
            int(getattr(driver.CUtensorMapSwizzle, SWIZZLES[p.get("swizzle", "none")])),
            0,  # the L2 promotion: per encode, from the address and strides (_promoted)
            int(driver.CUtensorMapFloatOOBfill.CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE),
        )
        slots[i] = (dtype, arrays, enums)
    return slots


def l2_promotion(address: int, strides: Sequence[int]) -> str:
    """The L2 promotion (a `CU_TENSOR_MAP_L2_PROMOTION_*` name) of a tensor map at
    `address` with row `strides` in bytes: the target's choice for rows that start on
    whole L2 sectors where the address and every stride are multiples of a sector, else
    its choice for rows that do not (docs/abi.md, "Tensor maps")."""
    if HOPPER.on_sectors(address, *strides):
        return HOPPER.l2_promotion_aligned
    return HOPPER.l2_promotion_misaligned


@functools.cache
def _promotion_enum(name: str) -> int:
    return int(getattr(_driver().CUtensorMapL2promotion, f"CU_TENSOR_MAP_L2_PROMOTION_{name}"))


def _with_promotion(enums: tuple, name: str) -> tuple:
    """A tensor map's (interleave, swizzle, l2 promotion, oob fill) enums with the L2
    promotion `name`."""
    return (enums[0], enums[1], _promotion_enum(name), enums[3])


def _promoted(enums: tuple, address: int, strides: Sequence[int]) -> tuple:
    """`enums` with the promotion `l2_promotion` chooses for this address and these
    strides."""
    return _with_promotion(enums, l2_promotion(address, strides))
