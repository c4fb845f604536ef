"""`convert-ttir`: a Triton kernel (`tt.func`, read by `tawac.ir.ttir`) to a tile kernel
(`tile.kernel`) in front of the default pipeline.

The pointer analysis (`tawac.analysis.pointers`) reads every load and store as a block:
the pointer argument, per tile dimension its stride, origin, mask bound and `% size`
wrap, and its outer dimensions (`off_z x stride_qz`: one element of a batch or head).
The conversion:

- **Arguments.** Each pointer argument becomes a `!tile.tensor` whose dimensions are its
  outer dimensions, then its tile dimensions with the contiguous one last (the one of
  constant stride 1, as Triton's launcher specializes a unit stride; else the tile's
  last). A dimension is named after the argument that sizes it: a mask's bound or a
  `% size` wrap (`["M", "K"]`), the `S` of an origin `pid % S` (the heads `H` of
  `off_hz % H`); else after its stride argument (`stride_qm` -> `"qm"`), and the launch
  takes its size from the tensor's storage (`tawac.triton.storage_sizes`). Integer
  arguments disappear (the tensors' shapes and layouts hold them); f32 arguments (a
  softmax scale) stay.
- **The grid.** The output store (the last of the largest rank) has, per tensor
  dimension, a block index `q_d` (its origin over its block size) computed from one
  program id. A `q_d` that is a program id itself keeps its axis; the dimensions one
  program id is split into (the tutorial matmul's grouped order; attention's
  `off_hz // H`, `off_hz % H`) are checked to cover their block grid once over the
  programs (evaluating the kernel's scalar code at the sizes of `CHECK_SIZES` and
  `FREE_COUNTS`) and take the free `tile.program_id` axes, the fastest-changing first:
  programs are independent, so a permutation of them computes the same result.
- **Origins** of every access, loop bounds and mask origins are rebuilt as index
  arithmetic from the `q_d`, the loops' new induction variables and sizes (`tile.dim`);
  a program id the output splits as `p / S`, `p % S` is `q_z x S + q_h` (the flat
  `off_hz * N_CTX` of attention's log-sum-exp); what else they would need is refused.
- **Loops.** `for k in range(cdiv(S, B))` with pointers advanced by `B` elements each
  iteration becomes `scf.for %kk = 0 to S step B` over index (`k x B` is `%kk`); any other
  loop with a constant step keeps its bounds (`range(lo, hi, BLOCK_N)`). Pointer and
  integer iteration arguments (block pointers' offsets, as Triton 3.6 rewrites them)
  disappear; float data is carried.
- **Masks and wraps.** A mask that bounds a dimension by its size, and `other = 0`, is
  what `tile.load`'s zero fill and `tile.store`'s clipping already do; a `% size` wrap of
  a load's dimension is dropped when the output store masks that size (the wrapped rows
  reach only masked-off outputs), else refused. `tl.where(mask, a, b)` of float tiles,
  the mask one comparison of index tiles `origin + range_d` (causal attention's
  `offs_m[:, None] >= start_n + offs_n[None, :]`), becomes `tile.iota`, `tile.cmpi` and
  `tile.select`, except `tl.where(mask, tl.load(p, mask=...), 0.0)` where `mask` is false
  only outside the tensor the load reads (each comparison a bound the load's own mask
  puts on a dimension, by the size of the tensor's dimension, or `index >= 0`) and the
  other value +0.0: the `tile.load`'s zero fill already is that select, so there is none
  (`_zero_filled`), and `tt.dot` reads the load.
- **Transposes.** A 2-d load whose tile order is the transpose of its tensor's (K read
  through a block pointer of `order=(0, 1)`) loads the tensor's order, and `tt.dot` reads
  it with `transpose_lhs` / `transpose_rhs`; `tt.trans` flips that; any other reader of
  a transposed tile is refused.
- **Division.** Triton's `/` on f32 is `div.full.f32` (within 2 ulp, not correctly
  rounded; `tl.math.div_rn` is the exact one, `tt.precise_divf`, refused): the converted
  `arith.divf` carries `fastmath<arcp>`, a reciprocal and a product, the same precision
  class (a reciprocal per row where the divisor is a broadcast row statistic).
- **Compute.** `tt.dot` -> `tile.dot`; `tt.reduce` by `maxnumf`/`maximumf`,
  `minnumf`/`minimumf` or `addf` -> `tile.reduce max/min/sum` (a 2-d tile to a 1-d one, a
  1-d tile to a scalar); a float vector given a size-1 dimension and broadcast ->
  `tile.broadcast`; a splat of an f32 (an argument or a scalar computed in the kernel) ->
  `tile.splat`; float arith and math ops are copied, on tiles and on f32 scalars, and an
  integer scalar made a float (`arith.sitofp` of a size) is rebuilt over index. A 1-d
  store (attention's log-sum-exp) is a `tile.store` of a row vector; a store of one f32
  through a scalar pointer (`tl.store(Mean + row, mean)`) a `tile.store` of the
  1-element tile `tile.splat` makes of it.
- **Grid-stride loops** (`for r in tl.range(pid, n_rows, tl.num_programs(0))`): one
  program per row, where the iterations are proven independent
  (`tawac.passes.convert_ttir.strided`).
- **Atomics**: an f32 `tl.atomic_add` whose result is unused -> `tile.atomic_add`; a
  lock's `tl.atomic_cas` / `tl.atomic_xchg` of one i32 element -> `tile.atomic_cas` /
  `tile.atomic_xchg`, its spin (`scf.while`), the `if` and compares around it
  (`tawac.passes.convert_ttir.locks`, `control`); any other atomic is refused at its
  line.

**One value per expression.** The index arithmetic is emitted per use (a fresh
`pid x BM` for the Q load, the O store, the causal row iota and the loop end); the kernel
is then CSE'd (xDSL's `cse`), so the later passes meet one value per distinct pure
expression. Only ops with the `Pure` trait merge (arith, math, `tile.dot`, `tile.iota`,
...); `tile.load` and `tile.store` have no memory-effect trait and are left alone.

Errors are `CompileError`s at the op's Python line (`tawac.ir.ttir.python_location`); the
`tile.dot` and a `tl.where`'s `tile.select` carry that line as their location, where a
later pass's error about them points.
"""

from __future__ import annotations

from xdsl.context import Context
from xdsl.dialects.builtin import Float32Type, IndexType, ModuleOp
from xdsl.ir import Block, BlockArgument, Region
from xdsl.passes import ModulePass
from xdsl.transforms.common_subexpression_elimination import cse
from xdsl.utils.exceptions import VerifyException

from tawac.dialects import tile, tt

# The converters' modules: importing them adds their rows to the table (`dispatch`).
from tawac.passes.convert_ttir import (  # noqa: F401
    control,
    dot,
    elementwise,
    locks,
    memory,
    reductions,
    shapes,
    where,
)
from tawac.passes.convert_ttir.common import _error
from tawac.passes.convert_ttir.dispatch import _body
from tawac.passes.convert_ttir.emitter import _Emitter
from tawac.passes.convert_ttir.planning import _Plan, plan
from tawac.passes.convert_ttir.tensors import _element


def _tensor_type(p: _Plan, a: BlockArgument, names) -> tile.GlobalTensorType:
    """The `!tile.tensor` of pointer argument `a`; an element type a tile tensor cannot
    hold (i1, i8, i64, ...) is an error at the first op that reads or writes through it."""
    try:
        return tile.GlobalTensorType([tile.DYNAMIC] * len(names), _element(a), names)
    except VerifyException as e:
        user = next((u.operation for u in a.uses), p.func)
        message = str(e).removeprefix("!tile.tensor ")
        what = f"%{a.name_hint}" if a.name_hint else f"argument {a.index}"
        raise _error(f"the tensor {what} points to: {message}", user) from None


def _kernel_args(p: _Plan) -> tuple[list, list[BlockArgument]]:
    """The tile kernel's arguments: a tensor per pointer argument loaded or stored, and
    each f32 argument (a scale) as it is."""
    types, source = [], []
    for a in p.func.body.block.args:
        t = p.tensors.get(a)
        if t is not None:
            types.append(_tensor_type(p, a, t.names))
            source.append(a)
        elif isinstance(a.type, Float32Type) and a.uses:
            types.append(a.type)
            source.append(a)
        elif a in p.scalars:
            types.append(IndexType())
            source.append(a)
    return types, source


def convert(func: tt.FuncOp) -> tile.KernelOp:
    """The tile kernel computing what `func` computes (module docstring)."""
    p = plan(func)
    types, sources = _kernel_args(p)
    block = Block(arg_types=types)
    for new, old in zip(block.args, sources, strict=True):
        new.name_hint = old.name_hint.removesuffix("_ptr") if old.name_hint else None
    em = _Emitter(p, block)
    em.values.update(dict(zip(sources, block.args, strict=True)))
    em.scalars = {a: em.values[a] for a in p.scalars}
    for d, axis in enumerate(p.axes):
        if axis is not None:
            em.pids[d] = em.add(tile.ProgramIdOp(axis)).result
    _body(em, func.body.block)
    kernel = tile.KernelOp(func.sym_name.data, types, Region(block))
    return kernel


class ConvertTtir(ModulePass):
    """Every `tt.func` of the module replaced by its tile kernel, CSE'd (xDSL's `cse`:
    one value per distinct pure expression; `tile.load`, `tile.store` and the other ops
    without a memory-effect trait are never merged)."""

    name = "convert-ttir"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for func in [o for o in op.body.block.ops if isinstance(o, tt.FuncOp)]:
            kernel = convert(func)
            op.body.block.insert_op_before(kernel, func)
            func.detach()
            func.erase(safe_erase=False)
            cse(kernel)


__all__ = ["ConvertTtir", "convert", "plan"]
