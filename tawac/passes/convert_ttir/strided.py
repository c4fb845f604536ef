"""Grid-stride loops, `for r in range(pid, n, tl.num_programs(0))` in a kernel's body: each
program takes the rows `pid, pid + G, ...` of `n` (the fused softmax's rows). Converted,
the loop's body runs once per `r`, `r` a program symbol (`tawac.passes.convert_ttir.scalars
._grid_stride`): which program runs which row does not change what is written when the
iterations are independent, which this module proves from the pointer analysis, refusing
the loop otherwise:

- no data is carried from one iteration to the next, or used after the loop (the
  loop's converter, `tawac.passes.convert_ttir.control._tiles`);
- every store is in the loop, and writes a block no other iteration writes: the output
  store's block indices, computed from the row, take each value once over the rows (the
  grid check, `tawac.passes.convert_ttir.grid._Check`, which also checks that the loop's
  row count is the output's block count), any other store has a dimension whose origin
  is `r` times its tile's extent along it;
- no load in the loop reads a tensor the kernel stores to (an iteration reading
  another's rows), but for the block a store of its own iteration writes (in place).

An access along a dimension at `r` itself (one element of it: `input_ptr + r *
input_row_stride + cols`) stays below the loop's end `n`, so where `n` is a kernel
argument it sizes that dimension, as a mask's bound would (`Dim.bound`): the tensor has
`n` rows, and the programs cover them."""

from __future__ import annotations

import dataclasses

from xdsl.ir import BlockArgument

from tawac.analysis.pointers import Access, Poly, Range
from tawac.dialects import tt
from tawac.passes.convert_ttir.common import _error
from tawac.passes.convert_ttir.scalars import _grid_stride, _is_arg, _program_symbols
from tawac.passes.convert_ttir.tensors import _is_store, tensor_dims, tile_shape


def grid_stride_rows(func: tt.FuncOp, acc: list[Access], out: Access) -> list[Access]:
    """`acc` with the dimensions at a grid-stride loop's row bounded by the loop's end
    (module docstring), after checking that the loop's iterations are independent."""
    loops = [op for op in func.body.block.ops if _grid_stride(op) is not None]
    if not loops:
        return acc
    stored = {a.base for a in acc if _is_store(a.op)}
    found = []
    for a in acc:
        loop = next((lp for lp in loops if lp.is_ancestor(a.op)), None)
        if loop is None:
            if _is_store(a.op):
                why = "a store outside the grid-stride loop (once per program, not per row)"
                raise _error(why, a.op)
            found.append(a)
            continue
        row = loop.body.block.args[0]
        if not _is_store(a.op) and a.base in stored and not _own_row(a, acc, row):
            raise _error(
                "a load in a grid-stride loop of a tensor the kernel stores to, other than "
                "the block its own iteration stores",
                a.op,
            )
        placed = _indexed_by(a, row) or (a is out and _moves_with(a, row))
        if _is_store(a.op) and not placed:
            raise _error(
                "a store in a grid-stride loop that no dimension places at the loop's row "
                "(two iterations could write the same elements)",
                a.op,
            )
        found.append(_bounded(a, row, loop.ub))
    return found


def _moves_with(a: Access, row: BlockArgument) -> bool:
    """The block's origin is computed from `row` (the output store, whose block indices
    the grid check proves take each value once over the rows)."""
    return any(
        row in _program_symbols(s)
        for d, _ in tensor_dims(a)
        for m in d.origin.terms
        for s in m
        if not isinstance(s, Range)
    )


def _own_row(load: Access, acc: list[Access], row: BlockArgument) -> bool:
    """`load` reads the very block a store of the same iteration writes, one placed at
    `row` (`y = f(y)` in place)."""
    key = _block(load)
    return any(
        _is_store(a.op) and a.base is load.base and _indexed_by(a, row) and _block(a) == key
        for a in acc
    )


def _block(a: Access) -> tuple:
    return tile_shape(a.op), [(d.origin, d.stride) for d, _ in tensor_dims(a)]


def _indexed_by(a: Access, row: BlockArgument) -> bool:
    """Some dimension of `a`'s block starts at `row` times the tile's extent along it."""
    shape = tile_shape(a.op)
    for d, tile_index in tensor_dims(a):
        extent = 1 if tile_index is None else shape[tile_index]
        if d.origin == Poly.sym(row).scale(extent):
            return True
    return False


def _bounded(a: Access, row: BlockArgument, end) -> Access:
    """`a` with each dimension of one element at `row` bounded by `end`, where `end` is
    an argument of the kernel and no mask bounds the dimension."""
    if not _is_arg(end):
        return a
    shape = tile_shape(a.op)

    def bound(d, extent: int):
        if d.bound is None and extent == 1 and d.origin == Poly.sym(row):
            return dataclasses.replace(d, bound=Poly.sym(end))
        return d

    dims = tuple(bound(d, shape[i]) for i, d in enumerate(a.dims))
    outer = tuple(bound(d, 1) for d in a.outer)
    return dataclasses.replace(a, dims=dims, outer=outer)
