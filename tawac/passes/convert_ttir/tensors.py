"""Pointer arguments as `!tile.tensor`s: per argument its dimensions (outer ones first, the
contiguous one last), their names and strides, and the argument that sizes each."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from xdsl.dialects.builtin import IntegerType, TensorType, i32
from xdsl.ir import BlockArgument, Operation, SSAValue

from tawac.analysis.pointers import Access, Dim, Poly, origin_arguments
from tawac.dialects import tt
from tawac.passes.convert_ttir.common import _error
from tawac.passes.convert_ttir.scalars import _is_arg, _rem_size, _single_symbol


@dataclass
class _Tensor:
    """How a pointer argument becomes a `!tile.tensor`: per dimension (outermost first,
    the contiguous one last) its name, its stride, and the argument that sizes it (a
    mask's bound, a `% size` wrap, the `S` of a `pid % S` origin) or None (the launch
    takes the size from the tensor's storage, `tawac.triton`)."""

    arg: BlockArgument
    names: tuple[str, ...]
    strides: tuple[Poly, ...]
    sizes: tuple[BlockArgument | None, ...]


def tensor_dims(a: Access) -> list[tuple[Dim, int | None]]:
    """The tensor's dimensions an access walks, outermost first: its outer dimensions
    (tile index None), then its tile dimensions with the contiguous one (constant stride
    1, else the tile's last) moved last."""
    rank = len(a.dims)
    unit = [d for d, x in enumerate(a.dims) if x.stride.terms == {(): 1}]
    last = unit[0] if unit else rank - 1
    order = [d for d in range(rank) if d != last] + [last]
    return [(d, None) for d in a.outer] + [(a.dims[d], d) for d in order]


def _desc_dim_name(a: BlockArgument) -> str | None:
    """`a_desc0` for the first size argument of descriptor `a_desc` (None for another
    argument)."""
    args = list(a.owner.args)
    for k in range(a.index - 1, -1, -1):
        t = args[k].type
        if isinstance(t, tt.TensorDescType):
            d = a.index - k - 1
            return f"{args[k].name_hint}{d}" if d < t.block.get_num_dims() else None
        if not isinstance(t, IntegerType):
            return None
    return None


def _dim_name(
    d: Dim, arg: BlockArgument, i: int, at: Operation
) -> tuple[str, BlockArgument | None]:
    """A tensor dimension's name and the argument that sizes it (module docstring)."""
    for cand in (d.wrap, *([] if d.bound is None else _single_symbol(d.bound))):
        if isinstance(cand, BlockArgument):
            return _desc_dim_name(cand) or cand.name_hint or "?", cand
    if d.bound is not None:
        raise _error(f"a mask bound {d.bound} that is not a size argument", at)
    rem = _rem_size(d.origin)
    if rem is not None:
        return rem.name_hint or "?", rem
    (stride,) = _single_symbol(d.stride) or (None,)
    if stride is not None and _is_arg(stride) and stride.name_hint:
        return stride.name_hint.removeprefix("stride_"), None
    base = (arg.name_hint or "t").removesuffix("_ptr")
    return f"{base}{i}", None


def _tensors(acc: list[Access]) -> dict[BlockArgument, _Tensor]:
    out: dict[BlockArgument, _Tensor] = {}
    # integer arguments in a block's origin: the tile kernel's scalars, whose names a
    # dimension named after its stride would take (`Delta + off_hz * N_CTX + off_m`)
    taken = {x.name_hint for x in origin_arguments(acc)}
    for a in acc:
        dims = tensor_dims(a)
        named = [_dim_name(d, a.base, i, a.op) for i, (d, _) in enumerate(dims)]
        named = _distinct(named, a, taken)
        t = _Tensor(
            a.base,
            tuple(n for n, _ in named),
            tuple(d.stride for d, _ in dims),
            tuple(s for _, s in named),
        )
        old = out.get(a.base)
        if old is not None and (old.names != t.names or old.strides != t.strides):
            raise _error(
                f"argument {a.base.name_hint} is accessed with two layouts "
                f"({', '.join(old.names)} / {', '.join(t.names)})",
                a.op,
            )
        if old is not None:  # a size one access names and another does not
            t = dataclasses.replace(
                t, sizes=tuple(x or y for x, y in zip(old.sizes, t.sizes, strict=True))
            )
        out[a.base] = t
    return out


def _distinct(
    named: list[tuple[str, BlockArgument | None]], a: Access, taken: set[str | None]
) -> list[tuple[str, BlockArgument | None]]:
    """The dimensions' names, one named after a stride that is also another's size (the
    partial sums' `DW + lock_id * N + cols`: rows of stride `N`, columns sized by `N`) or
    a scalar of the kernel (`taken`: `Delta + off_hz * N_CTX`) named after the tensor
    instead (`DW0`, `Delta0`)."""
    names = [n for n, _ in named]
    base = (a.base.name_hint or "t").removesuffix("_ptr")
    return [
        (f"{base}{i}", None) if size is None and (names.count(n) > 1 or n in taken) else (n, size)
        for i, (n, size) in enumerate(named)
    ]


def _stored(op: Operation) -> SSAValue:
    if isinstance(op, tt.AtomicRmwOp):
        return op.rest[0]  # the value added
    return op.src if isinstance(op, tt.DescriptorStoreOp) else op.value


def tile_shape(op: Operation) -> tuple[int, ...]:
    """The shape of the tile a load reads or a store writes; (1,) for one element (a
    scalar pointer's: `tl.store(Mean + row, mean)`)."""
    v = _stored(op) if _is_store(op) else op.results[0]
    t = v.type
    return tuple(t.get_shape()) if isinstance(t, TensorType) else (1,)


def _is_store(op: Operation) -> bool:
    """A store, or an atomic read-modify-write (`tl.atomic_add`, which writes as a store
    does; a lock's `tl.atomic_xchg`)."""
    return isinstance(op, tt.StoreOp | tt.DescriptorStoreOp | tt.AtomicRmwOp)


def scalar_atomic(op: Operation) -> bool:
    """Whether `op` is a `tl.atomic_cas` or `tl.atomic_xchg` of one `i32` element through
    a scalar pointer (a lock's: `tile.atomic_cas`, `tile.atomic_xchg`)."""
    if isinstance(op, tt.AtomicCasOp):
        values = list(op.rest)  # cmp, val
    elif isinstance(op, tt.AtomicRmwOp) and op.words.data[0].data == "exch":
        values = list(op.rest[:1])  # val (then the mask)
    else:
        return False
    if isinstance(op.ptr.type, TensorType) or op.result.type != i32:
        return False
    return len(values) == (2 if isinstance(op, tt.AtomicCasOp) else 1) and all(
        v.type == i32 for v in values
    )


def _element(a: BlockArgument):
    """The element type of a pointer or tensor descriptor argument."""
    t = a.type
    return t.block.element_type if isinstance(t, tt.TensorDescType) else t.pointee
