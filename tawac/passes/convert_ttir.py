"""`convert-ttir`: a Triton kernel (`tt.func`, read by `tawac.ir.ttir`) to a tile kernel
(`tile.kernel`) in front of the default pipeline (issue 21, item 1).

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
- **Compute.** `tt.dot` -> `tile.dot`; `tt.reduce` by `maxnumf`/`maximumf`/`addf` of a 2-d
  tile -> `tile.reduce max/sum`; a float vector given a size-1 dimension and broadcast ->
  `tile.broadcast`; a splat of an f32 -> `tile.splat`; float arith and math ops are
  copied. A 1-d store (attention's log-sum-exp) is a `tile.store` of a row vector.

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

import dataclasses
import itertools
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from xdsl.context import Context
from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import (
    AnyFloat,
    DenseIntOrFPElementsAttr,
    FileLineColLoc,
    Float32Type,
    FloatAttr,
    IndexType,
    IntAttr,
    IntegerAttr,
    IntegerType,
    ModuleOp,
    StringAttr,
    TensorType,
    i32,
)
from xdsl.dialects.utils import FastMathFlag
from xdsl.ir import Block, BlockArgument, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.transforms.common_subexpression_elimination import cse

from tawac.analysis import pointers
from tawac.analysis.pointers import Access, Dim, PointerError, Poly, Range, accesses
from tawac.analysis.scalars import constant_int
from tawac.dialects import tile, tt
from tawac.ir.ttir import python_location
from tawac.support.diagnostics import CompileError

#: Sizes at which a computed program order is checked to cover the tile grid once.
CHECK_SIZES = (1, 63, 64, 127, 128, 129, 255, 256, 257, 1000, 1024, 3000)


def _error(message: str, op: Operation | None) -> CompileError:
    where = python_location(op) if op is not None else None
    return CompileError(f"convert-ttir: {message}", location=where)


def _located(new: Operation, old: Operation) -> Operation:
    """`new` at the Python line of the TTIR op `old` (where a later pass's error about
    it points), where `old` has one."""
    where = python_location(old)
    if where is not None:
        file, line, col = where.rsplit(":", 2)
        new.location = FileLineColLoc(StringAttr(file), IntAttr(int(line)), IntAttr(int(col)))
    return new


# -- scalar evaluation (the grid check) ------------------------------------------------------


def _eval(v: SSAValue, env: Mapping[SSAValue, int], memo: dict, reader=None) -> int:
    """The integer value of a scalar of the kernel's integer code at `env` (a loop's
    integer iteration argument through its polynomial, `reader.int_poly`)."""
    if v in env:
        return env[v]
    if v in memo:
        if memo[v] is None:  # only text that uses a value before defining it
            raise PointerError("a program order computed from itself", _op(v))
        return memo[v]
    memo[v] = None
    op = v.owner
    if reader is not None and _is_iter_arg(v):
        try:
            out = _poly_value(reader.int_poly(v), env, memo, reader)
        except PointerError as e:
            raise PointerError(e.message, e.op) from None
        memo[v] = out
        return out
    if isinstance(op, tt.ExtSIOp | tt.ExtUIOp | tt.TruncIOp):
        out = _eval(op.src, env, memo, reader)
    elif isinstance(op, arith.ConstantOp) and isinstance(op.value, IntegerAttr):
        out = op.value.value.data
    elif isinstance(op, arith.AddiOp | arith.SubiOp | arith.MuliOp | arith.DivSIOp):
        a, b = _eval(op.lhs, env, memo, reader), _eval(op.rhs, env, memo, reader)
        if isinstance(op, arith.AddiOp):
            out = a + b
        elif isinstance(op, arith.SubiOp):
            out = a - b
        elif isinstance(op, arith.MuliOp):
            out = a * b
        elif b == 0:
            raise PointerError("a program order that divides by zero", op)
        else:
            out = int(a / b)  # rounds toward zero, as divsi
    elif isinstance(op, arith.RemSIOp):
        a, b = _eval(op.lhs, env, memo, reader), _eval(op.rhs, env, memo, reader)
        if b == 0:
            raise PointerError("a program order that takes a remainder by zero", op)
        out = a - b * int(a / b)
    elif isinstance(op, arith.MinSIOp):
        out = min(_eval(op.lhs, env, memo, reader), _eval(op.rhs, env, memo, reader))
    elif isinstance(op, arith.MaxSIOp):
        out = max(_eval(op.lhs, env, memo, reader), _eval(op.rhs, env, memo, reader))
    else:
        raise PointerError(f"a program order computed by {_name(op)}", _op(v))
    memo[v] = out
    return out


def _is_iter_arg(v: SSAValue) -> bool:
    return (
        isinstance(v, BlockArgument) and isinstance(v.owner.parent_op(), scf.ForOp) and v.index > 0
    )


def _grid_stride(loop: Operation) -> int | None:
    """The program-id axis of a persistent loop over tiles, `for t in range(pid, T, S)`
    in the kernel's body (S a constant or `tl.num_programs`): its `t` takes each tile
    id once over the programs when the grid has S programs, as Triton's persistent
    kernels launch; tawac runs the body once per tile id instead (its own grid, its own
    persistence). None for any other loop."""
    if not isinstance(loop, scf.ForOp) or not isinstance(loop.parent_op(), tt.FuncOp):
        return None
    lb = loop.lb.owner
    if not isinstance(lb, tt.GetProgramIdOp):
        return None
    step = loop.step.owner
    const = isinstance(step, arith.ConstantOp) and isinstance(step.value, IntegerAttr)
    if const and step.value.value.data > 0:
        return lb.axis_index
    if isinstance(step, tt.GetNumProgramsOp) and step.axis_index == lb.axis_index:
        return lb.axis_index
    return None


def _program_axis(v: SSAValue) -> int | None:
    """The axis of a program symbol: a program id, or the tile id of a persistent loop."""
    if isinstance(v.owner, tt.GetProgramIdOp):
        return v.owner.axis_index
    if isinstance(v, BlockArgument) and v.index == 0:
        return _grid_stride(v.owner.parent_op())
    return None


def _name(op) -> str:
    return op.name if isinstance(op, Operation) else "a block argument"


def _op(v: SSAValue) -> Operation | None:
    return v.owner if isinstance(v.owner, Operation) else None


def _poly_value(p: Poly, env: Mapping[SSAValue, int], memo: dict, reader=None) -> int:
    total = 0
    for m, c in p.terms.items():
        term = c
        for s in m:
            term *= _eval(s, env, memo, reader)
        total += term
    return total


# -- the plan ---------------------------------------------------------------------------------


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


@dataclass
class _Plan:
    func: tt.FuncOp
    accesses: dict[Operation, Access]
    tensors: dict[BlockArgument, _Tensor]
    out: Access  # the output store: its program-indexed dimensions are the grid
    q: list[Poly]  # per output tensor dimension, its block index as a polynomial
    axes: list[int | None]  # per output tensor dimension, its tile.program_id axis
    reader: object = None
    #: integer arguments tied to the output size they must equal (`_Check`)
    ties: dict[BlockArgument, BlockArgument] = field(default_factory=dict)
    #: integer arguments the tile kernel keeps as `index` scalars (loop bounds no
    #: tensor dimension is sized by)
    scalars: list[BlockArgument] = field(default_factory=list)
    canon: object = None


def _single_symbol(p: Poly) -> list[SSAValue]:
    if len(p.terms) == 1:
        ((m, c),) = p.terms.items()
        if c == 1 and len(m) == 1 and not isinstance(m[0], Range):
            return [m[0]]
    return []


def _is_arg(v: SSAValue) -> bool:
    return isinstance(v, BlockArgument) and isinstance(v.owner.parent_op(), tt.FuncOp)


def _rem_size(origin: Poly) -> BlockArgument | None:
    """`S` where the origin is `x % S` of a scalar, `S` a kernel argument (the head of
    `off_hz % H`): the dimension has `S` blocks."""
    (sym,) = _single_symbol(origin) or (None,)
    op = sym.owner if sym is not None else None
    if isinstance(op, arith.RemSIOp) and _is_arg(op.rhs):
        return op.rhs
    return None


def _rem_count(origin: Poly) -> int | None:
    """`C` where the origin is `x % C` of a scalar, `C` a positive constant (the head of
    `off_hz % H` with H a constexpr): the dimension has `C` blocks."""
    (sym,) = _single_symbol(origin) or (None,)
    op = sym.owner if sym is not None else None
    if not isinstance(op, arith.RemSIOp | arith.RemUIOp):
        return None
    value = constant_int(op.rhs)
    return value if value is not None and value > 0 else None


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
    for a in acc:
        dims = tensor_dims(a)
        named = [_dim_name(d, a.base, i, a.op) for i, (d, _) in enumerate(dims)]
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


def _pid_axes(p: Poly) -> set[int]:
    """The program-id axes a block index depends on (through the scalar code)."""
    found: set[int] = set()
    for m in p.terms:
        for s in m:
            if not isinstance(s, Range):
                found |= {a for v in _program_symbols(s) if (a := _program_axis(v)) is not None}
    return found


def _sources(v: SSAValue, leaf: Callable[[SSAValue], SSAValue | None]) -> set[SSAValue]:
    """What `leaf` picks out of the kernel's integer code `v` is computed from: walking
    operands, and from a loop's iteration argument to its initial value."""
    out: set[SSAValue] = set()
    work, seen = [v], set()
    while work and len(seen) < 10000:
        x = work.pop()
        if x in seen:
            continue
        seen.add(x)
        found = leaf(x)
        if found is not None:
            out.add(found)
        elif _is_iter_arg(x):
            work.append(x.owner.parent_op().iter_args[x.index - 1])
        elif isinstance(x.owner, Operation):
            work.extend(x.owner.operands)
    return out


def _program_symbols(v: SSAValue) -> set[SSAValue]:
    """The program symbols (`_program_axis`) a scalar is computed from; an iteration
    argument of a persistent loop stands for its tile id (the loop's `t`)."""

    def leaf(x: SSAValue) -> SSAValue | None:
        if _program_axis(x) is not None:
            return x
        loop = x.owner.parent_op() if _is_iter_arg(x) else None
        return (
            loop.body.block.args[0] if loop is not None and _grid_stride(loop) is not None else None
        )

    return _sources(v, leaf)


def _arguments_of(v: SSAValue) -> set[BlockArgument]:
    """The kernel's integer arguments a scalar is computed from."""
    return _sources(v, lambda x: x if _is_arg(x) else None)


def _stored(op: Operation) -> SSAValue:
    return op.src if isinstance(op, tt.DescriptorStoreOp) else op.value


def _is_store(op: Operation) -> bool:
    return isinstance(op, tt.StoreOp | tt.DescriptorStoreOp)


@dataclass
class _Grid:
    q: list[Poly]
    axes: list[int | None]
    #: integer arguments the program order computes the tile grid from, tied to the
    #: output dimension's size they must equal (`M` of a persistent matmul to the
    #: output descriptor's rows): checked at launch
    ties: dict[BlockArgument, BlockArgument] = field(default_factory=dict)


def _grid(func: tt.FuncOp, store: Access, tensors: dict, reader) -> _Grid:
    """Per output tensor dimension its block index polynomial `q_d` and the
    `tile.program_id` axis it becomes (module docstring)."""
    shape = _stored(store.op).type.get_shape()
    dims = tensor_dims(store)
    q: list[Poly] = []
    for d, tile_index in dims:
        t = 1 if tile_index is None else shape[tile_index]
        if any(c % t for c in d.origin.terms.values()):
            raise _error(f"the output's origin along a dimension is no multiple of {t}", store.op)
        q.append(Poly({m: c // t for m, c in d.origin.terms.items()}))
    groups: dict[int, list[int]] = {}
    for i, qd in enumerate(q):
        axes = _pid_axes(qd)
        if len(axes) > 1:
            raise _error("an output block index computed from two program ids", store.op)
        if axes:
            groups.setdefault(next(iter(axes)), []).append(i)
        elif qd.terms:
            raise _error(f"an output block index {qd} from no program id", store.op)
    if sum(len(g) for g in groups.values()) > 3:
        raise _error("an output indexed along more than three dimensions", store.op)
    axes_of: list[int | None] = [None] * len(q)
    speed: dict[int, int] = {}
    ties: dict[BlockArgument, BlockArgument] = {}
    for axis, members in groups.items():
        direct = [i for i in members if _direct(q[i]) == axis]
        if len(members) == 1 and direct:
            axes_of[members[0]] = axis
            continue
        check = _Check(store, dims, q, members, tensors[store.base], shape, reader)
        changes, tied = check.run()
        speed |= changes
        ties |= tied
    taken = {a for a in axes_of if a is not None}
    free = [a for a in range(3) if a not in taken]
    rest = [i for i, qd in enumerate(q) if qd.terms and axes_of[i] is None]
    for i in sorted(rest, key=lambda i: (-speed.get(i, 0), i)):
        axes_of[i] = free.pop(0)
    return _Grid(q, axes_of, ties)


def _direct(qd: Poly) -> int | None:
    """The axis where `qd` is a program symbol itself."""
    (sym,) = _single_symbol(qd) or (None,)
    return _program_axis(sym) if sym is not None else None


#: Counts tried for an output dimension no size argument bounds.
FREE_COUNTS = (1, 2, 3, 5)


@dataclass
class _Check:
    """The dimensions `members` of the output, computed from one program symbol, cover
    their block grid once over the programs (checked at sizes: `CHECK_SIZES`,
    `FREE_COUNTS`); a persistent loop's tile count is that grid's. Integer arguments the
    order reads that no dimension is sized by (the `M`, `N` of a persistent matmul whose
    tensors are descriptors) are tied to the members' sizes: the first assignment under
    which the order checks is kept, and the launch checks it."""

    store: Access
    dims: list
    q: list[Poly]
    members: list[int]
    tensor: _Tensor
    shape: tuple
    reader: object

    def run(self) -> tuple[dict[int, int], dict[BlockArgument, BlockArgument]]:
        syms = {v for i in self.members for m in self.q[i].terms for s in m
                for v in _program_symbols(s)}  # fmt: skip
        if len(syms) != 1:
            raise _error("an output block index computed from two program symbols", self.store.op)
        (pid,) = syms
        loop = pid.owner.parent_op() if isinstance(pid, BlockArgument) else None
        sizes = {self.tensor.sizes[i] for i in self.members} - {None}
        needed = set()
        for i in self.members:
            for m in self.q[i].terms:
                for s in m:
                    needed |= _arguments_of(s)
        if loop is not None:
            needed |= _arguments_of(loop.ub)
        free = sorted(needed - sizes, key=lambda a: a.index)
        targets = [self.tensor.sizes[i] for i in self.members if self.tensor.sizes[i] is not None]
        first: CompileError | None = None
        for chosen in itertools.permutations(targets, len(free)) if free else [()]:
            tie = dict(zip(free, chosen, strict=True))
            try:
                return self._check(pid, loop, tie), tie
            except CompileError as e:
                first = first or e
        if first is None:  # more such arguments than output dimensions to tie them to
            names = ", ".join(a.name_hint or "?" for a in free)
            raise _error(
                f"the program order reads {names}, which no output dimension is sized by",
                self.store.op,
            )
        raise first

    def _choices(self):
        out = []
        for i in self.members:
            size = self.tensor.sizes[i]
            d, tile_index = self.dims[i]
            t = 1 if tile_index is None else self.shape[tile_index]
            if size is not None and _rem_size(d.origin) is size:
                out.append([(size, v, v) for v in (1, 3, 8, 16)])
            elif size is not None:
                out.append([(size, v, -(-v // t)) for v in CHECK_SIZES])
            elif (count := _rem_count(d.origin)) is not None:
                out.append([(None, None, count)])
            else:
                out.append([(None, None, c) for c in FREE_COUNTS])
        return out

    def _check(self, pid, loop, tie) -> dict[int, int]:
        changes = dict.fromkeys(self.members, 0)
        for combo in itertools.product(*self._choices()):
            env = {s: v for s, v, _ in combo if s is not None}
            env |= {a: env[b] for a, b in tie.items()}
            counts = [c for _, _, c in combo]
            total = 1
            for c in counts:
                total *= c
            where = ", ".join(f"{s.name_hint}={v}" for s, v, _ in combo if s is not None)
            where = where or f"block counts {tuple(counts)}"
            if loop is not None and self._value(loop.ub, env) != total:
                raise _error(
                    f"the persistent loop's tile count is not the output's tile grid at {where}",
                    loop,
                )
            seen, last = set(), None
            for p in range(total):
                env[pid] = p
                point = tuple(self._value(self.q[i], env) for i in self.members)
                bad = any(not 0 <= x < c for x, c in zip(point, counts, strict=True))
                if point in seen or bad:
                    raise _error(
                        f"the program order is not a permutation of the tile grid at {where}",
                        self.store.op,
                    )
                seen.add(point)
                if last is not None:
                    for i, a, b in zip(self.members, last, point, strict=True):
                        changes[i] += a != b
                last = point
        return changes

    def _value(self, x, env) -> int:
        memo: dict = {}
        try:
            if isinstance(x, Poly):
                return _poly_value(x, env, memo, self.reader)
            return _eval(x, env, memo, self.reader)
        except PointerError as e:
            raise _error(e.message, e.op) from None


def _output(acc: list[Access]) -> Access:
    """The store whose blocks the programs partition: the last of the largest rank."""
    stores = [a for a in acc if _is_store(a.op)]
    if not stores:
        raise _error("a kernel that stores nothing", None)
    rank = max(len(a.dims) for a in stores)
    return [a for a in stores if len(a.dims) == rank][-1]


def plan(func: tt.FuncOp) -> _Plan:
    r = pointers.reader()
    try:
        acc = accesses(func, r)
    except PointerError as e:
        raise _error(e.message, e.op) from None
    if not any(_is_store(a.op) for a in acc):
        raise _error("a kernel that stores nothing", func)
    tensors = _tensors(acc)
    out = _output(acc)
    g = _grid(func, out, tensors, r)
    _check_wraps(acc, out)
    p = _Plan(func, {a.op: a for a in acc}, tensors, out, g.q, g.axes, r, g.ties)
    p.scalars = _scalars(p)
    p.canon = _Canon(r)
    return p


class _Canon:
    """Scalars of the kernel's integer code up to equal computation: a key per value
    (its polynomial over opaque symbols, each opaque symbol keyed by its op and its
    operands' keys) and one representative per key. The tutorial's persistent matmul
    computes `pid_m` twice, from the tile id and from a counter equal to it; both are
    one symbol here."""

    def __init__(self, reader):
        self.reader = reader
        self.keys: dict[SSAValue, object] = {}
        self.reps: dict[object, SSAValue] = {}

    def key(self, v: SSAValue, depth: int = 0):
        if v in self.keys:
            return self.keys[v]
        if depth > 200:
            return ("value", id(v))
        try:
            p = self.reader.int_poly(v)
        except PointerError:
            p = None
        single = _single_symbol(p) if p is not None else []
        if p is None or single == [v] or isinstance(v.type, TensorType):
            k = self._opaque(v, depth)
        elif single:
            k = self.key(single[0], depth + 1)  # equal to another value: its key
        else:
            k = ("poly", frozenset(
                (tuple(sorted(repr(self.key(x, depth + 1)) for x in m)), c)
                for m, c in p.terms.items()
            ))  # fmt: skip
        self.keys[v] = k
        self.reps.setdefault(k, v)
        return k

    def _opaque(self, v: SSAValue, depth: int):
        axis = _program_axis(v)
        if axis is not None:
            return ("program", axis, isinstance(v, BlockArgument))
        op = v.owner
        if isinstance(op, arith.ConstantOp) and isinstance(op.value, IntegerAttr):
            return ("const", op.value.value.data)
        if not isinstance(op, Operation) or isinstance(op, scf.ForOp):
            return ("value", id(v))
        return (op.name, tuple(self.key(o, depth + 1) for o in op.operands))

    def poly(self, p: Poly) -> Poly:
        """`p` with each scalar symbol replaced by its key's representative."""
        out: dict[tuple, int] = {}
        for m, c in p.terms.items():
            mono = []
            for x in m:
                mono.append(x if isinstance(x, Range) else self.reps[self.key(x)])
            mono_t = tuple(sorted(mono, key=pointers._key))
            out[mono_t] = out.get(mono_t, 0) + c
        return Poly({m: c for m, c in out.items() if c})


def _scalars(p: _Plan) -> list[BlockArgument]:
    """The integer arguments loop bounds read that no tensor dimension is sized by (the
    `K` of a K loop over descriptor loads): the tile kernel takes them as `index`."""
    sized = {a for t in p.tensors.values() for a in t.sizes if a is not None}
    found: set[BlockArgument] = set()
    for loop in p.func.walk():
        if not isinstance(loop, scf.ForOp) or _grid_stride(loop) is not None:
            continue
        for v in (loop.lb, loop.ub, loop.step):
            found |= {a for a in _arguments_of(v) if isinstance(a.type, IntegerType)}
    return sorted(found - sized, key=lambda a: a.index)


def _check_wraps(acc: list[Access], out: Access) -> None:
    """A `% size` wrap of a load is dropped when the output store masks that size."""
    masked = {b for d in out.dims if d.bound is not None for b in _single_symbol(d.bound)}
    for a in acc:
        for d in a.dims:
            if d.wrap is not None and d.wrap not in masked:
                raise _error(
                    f"a % {d.wrap.name_hint} wrap whose rows the output does not mask", a.op
                )


# -- emission ---------------------------------------------------------------------------------


@dataclass
class _Emitter:
    plan: _Plan
    block: Block
    values: dict[SSAValue, SSAValue] = field(default_factory=dict)
    pids: dict[int, SSAValue] = field(default_factory=dict)  # output dim -> program id
    ivs: dict[SSAValue, tuple[SSAValue, int]] = field(default_factory=dict)  # k -> (kk, B)
    #: float tiles given a size-1 dimension (`x[None, :]`): the new value and the axis
    expanded: dict[SSAValue, tuple[SSAValue, int]] = field(default_factory=dict)
    #: TTIR 2-d tiles whose tile-kernel value is held transposed (the tensor's order)
    transposed: set[SSAValue] = field(default_factory=set)
    #: integer arguments kept as `index` scalars of the tile kernel
    scalars: dict[SSAValue, SSAValue] = field(default_factory=dict)

    def get(self, v: SSAValue, at: Operation) -> SSAValue:
        """What `v` became in the tile kernel; an error where `at` reads a value the
        conversion does not carry (an index tensor, a pointer, a value from later)."""
        found = self.values.get(v)
        if found is None:
            what = v.owner.name if isinstance(v.owner, Operation) else "a block argument"
            raise _error(f"{at.name} reads a value of {what} that tawac does not convert", at)
        if v in self.transposed and not isinstance(at, tt.DotOp | tt.TransOp):
            raise _error(f"{at.name} reads a transposed tile (only tt.dot can)", at)
        return found

    def add(self, op: Operation) -> Operation:
        self.block.add_op(op)
        return op

    def const(self, c: int) -> SSAValue:
        op = self.add(arith.ConstantOp(IntegerAttr(c, IndexType())))
        return op.result

    def index(self, p: Poly, at: Operation) -> SSAValue:
        """A polynomial of the program ids, loop variables and sizes as index arithmetic
        over the tile kernel's program ids and loops."""
        canon = self.plan.canon
        rest = canon.poly(p)
        total: SSAValue | None = None

        def plus(v: SSAValue) -> None:
            nonlocal total
            total = v if total is None else self.add(arith.AddiOp(total, v)).result

        for attempt in range(2):
            for d, qd in enumerate(self.plan.q):
                if d not in self.pids:
                    continue
                cof, rest = _factor(rest, canon.poly(qd))
                if cof.terms:
                    plus(self._times(self.pids[d], cof, at))
            if attempt == 0:
                rest = self._pid_inverse(rest)
        for iv, (kk, step) in self.ivs.items():
            cof, rest = _factor(rest, canon.poly(Poly.sym(iv)))
            if not cof.terms:
                continue
            if set(cof.terms) != {()} or cof.terms[()] % step:
                raise _error(f"an offset of {cof} per iteration, not a multiple of {step}", at)
            plus(self._scaled(kk, cof.terms[()] // step))
        c0 = rest.terms.get((), 0)
        rest = rest - Poly.const(c0)
        if rest.terms:
            sized = self._sizes(rest, at)
            if sized is None:
                raise _error(f"a block origin with the term {rest} tawac cannot rebuild", at)
            plus(sized)
        if c0 or total is None:
            plus(self.const(c0))
        assert total is not None
        return total

    def _pid_inverse(self, rest: Poly) -> Poly:
        """`rest` with a program id `p` the output splits as `p / S` and `p % S` written
        as `(p / S) x S + p % S`, so that the blocks indices' factors take it."""
        syms = {s for qd in self.plan.q for s in _single_symbol(self.plan.canon.poly(qd))}
        div = {(s.owner.lhs, s.owner.rhs): s for s in syms if isinstance(s.owner, arith.DivSIOp)}
        rem = {(s.owner.lhs, s.owner.rhs): s for s in syms if isinstance(s.owner, arith.RemSIOp)}
        for key, dsym in div.items():
            if key in rem:
                pid, size = key
                rest = _substitute(rest, pid, Poly.sym(dsym) * Poly.sym(size) + Poly.sym(rem[key]))
        return rest

    def _times(self, v: SSAValue, cof: Poly, at: Operation) -> SSAValue:
        if set(cof.terms) == {()}:
            return self._scaled(v, cof.terms[()])
        sized = self._sizes(cof, at)
        if sized is None:
            raise _error(f"a block origin scaled by {cof}, which tawac cannot rebuild", at)
        return self.add(arith.MuliOp(v, sized)).result

    def _sizes(self, p: Poly, at: Operation) -> SSAValue | None:
        """A polynomial of size arguments and constants as index arithmetic (each size
        a `tile.dim` of a tensor it sizes, a min or max of such polynomials as the same
        of theirs); None where another symbol is in it."""
        total: SSAValue | None = None
        for m, c in p.terms.items():
            term: SSAValue = self.const(c)
            for s in m:
                d = self._dim_sized_by(s)
                if d is None:
                    d = self._min_max(s, at)
                if d is None:
                    d = self._quotient(s, at)
                if d is None:
                    return None
                term = self.add(arith.MuliOp(term, d)).result
            total = term if total is None else self.add(arith.AddiOp(total, term)).result
        return total

    def _min_max(self, s, at: Operation) -> SSAValue | None:
        """`tl.minimum(a, b)` / `tl.maximum(a, b)` of scalars tawac can rebuild (a causal
        loop's end, `min((start_m + 1) * BLOCK_M, seqlen)`): the same over index."""
        op = s.owner if isinstance(s, SSAValue) else None
        if not isinstance(op, arith.MinSIOp | arith.MaxSIOp):
            return None
        try:
            sides = [self.plan.reader.int_poly(v) for v in (op.lhs, op.rhs)]
        except PointerError:
            return None
        a, b = (self.index(x, at) for x in sides)
        return self.add(type(op)(a, b)).result

    def _quotient(self, s, at: Operation) -> SSAValue | None:
        """`a // c` of a scalar tawac can rebuild and a positive constant (grouped-query
        attention's K/V head, `off_h // G`): `arith.divui` over index (the indices are
        not negative)."""
        op = s.owner if isinstance(s, SSAValue) else None
        if not isinstance(op, arith.DivSIOp | arith.DivUIOp):
            return None
        c = constant_int(op.rhs)
        if c is None or c <= 0:
            return None
        try:
            num = self.plan.reader.int_poly(op.lhs)
        except PointerError:
            return None
        return self.add(arith.DivUIOp(self.index(num, at), self.const(c))).result

    def _dim_sized_by(self, s) -> SSAValue | None:
        if s in self.scalars:
            return self.scalars[s]
        for a, t in self.plan.tensors.items():
            if s in t.sizes:
                src = self.values[a]
                return self.add(tile.DimOp(src, t.sizes.index(s))).result
        return None

    def _scaled(self, v: SSAValue, k: int) -> SSAValue:
        return v if k == 1 else self.add(arith.MuliOp(v, self.const(k))).result


def _factor(p: Poly, q: Poly) -> tuple[Poly, Poly]:
    """(`cof`, `rest`) with `p = q x cof + rest`: `cof` gathers the terms of `p` that
    `q`'s first monomial divides (divided by it); the other monomials of `q` times `cof`
    come off `rest` with them."""
    if not q.terms:
        return Poly(), p
    qm, qc = next(iter(q.terms.items()))
    cof: dict[tuple, int] = {}
    for m, c in p.terms.items():
        left = list(m)
        if c % qc == 0 and all(x in left and (left.remove(x) or True) for x in qm):
            cof[tuple(left)] = cof.get(tuple(left), 0) + c // qc
    cofactor = Poly(cof)
    return cofactor, p - q * cofactor


def _substitute(p: Poly, sym: SSAValue, by: Poly) -> Poly:
    out = Poly()
    for m, c in p.terms.items():
        term = Poly.const(c)
        for s in m:
            term = term * (by if s is sym else Poly.sym(s))
        out = out + term
    return out


def _element(a: BlockArgument):
    """The element type of a pointer or tensor descriptor argument."""
    t = a.type
    return t.block.element_type if isinstance(t, tt.TensorDescType) else t.pointee


def _kernel_args(p: _Plan) -> tuple[list, list[BlockArgument]]:
    """The tile kernel's arguments: a tensor per pointer argument loaded or stored, and
    each f32 argument (a scale) as it is."""
    types, source = [], []
    for a in p.func.body.block.args:
        t = p.tensors.get(a)
        if t is not None:
            types.append(tile.GlobalTensorType([tile.DYNAMIC] * len(t.names), _element(a), t.names))
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


def _dim_of(em: _Emitter, arg: BlockArgument) -> SSAValue:
    """The size argument `arg` in the tile kernel: a tensor dimension it sizes, or the
    kernel's `index` scalar."""
    found = em._dim_sized_by(arg)
    if found is None:
        raise _error(f"no tensor dimension is sized by {arg.name_hint}", None)
    return found


def _indices(em: _Emitter, a: Access) -> list[SSAValue]:
    return [em.index(d.origin, a.op) for d, _ in tensor_dims(a)]


def _tile_order(a: Access) -> list[int]:
    return [i for _, i in tensor_dims(a) if i is not None]


def _body(em: _Emitter, block: Block) -> None:
    for op in block.ops:
        if isinstance(op, tt.LoadOp | tt.DescriptorLoadOp):
            a = em.plan.accesses[op]
            if isinstance(op, tt.LoadOp):
                _check_other(op)
            order = _tile_order(a)
            shape = op.result.type.get_shape()
            t = TensorType(op.result.type.element_type, [shape[i] for i in order])
            load = em.add(tile.LoadOp(em.get(a.base, op), _indices(em, a), t))
            em.values[op.result] = load.result
            if order != sorted(order):
                if len(order) != 2:
                    raise _error("a permuted load of more than two dimensions", op)
                em.transposed.add(op.result)
        elif _is_store(op):
            a = em.plan.accesses[op]
            if _tile_order(a) != sorted(_tile_order(a)):
                raise _error("a store of a tile in the transpose of its tensor's order", op)
            em.add(tile.StoreOp(em.get(_stored(op), op), em.get(a.base, op), _indices(em, a)))
        elif isinstance(op, tt.DotOp):
            v = [em.get(x, op) for x in (op.a, op.b, op.c)]
            if op.c in em.transposed:
                raise _error("a tt.dot accumulating into a transposed tile", op)
            flip = [x in em.transposed for x in (op.a, op.b)]
            dot = tile.DotOp(*v, transpose_lhs=flip[0], transpose_rhs=flip[1])
            em.values[op.result] = em.add(_located(dot, op)).result
        elif isinstance(op, tt.TransOp):
            _trans(em, op)
        elif isinstance(op, tt.FpToFpOp):
            _fp_to_fp(em, op)
        elif isinstance(op, tt.ExpandDimsOp) and _is_float(op.result):
            em.expanded[op.result] = (em.get(op.src, op), op.axis.value.data)
        elif isinstance(op, tt.BroadcastOp) and _is_float(op.result):
            _broadcast(em, op)
        elif isinstance(op, tt.SplatOp) and _is_float(op.result):
            if not isinstance(op.src.type, Float32Type):
                raise _error("a splat of a scalar other than f32", op)
            splat = tile.SplatOp.build(operands=[em.get(op.src, op)], result_types=[op.result.type])
            em.values[op.result] = em.add(splat).result
        elif isinstance(op, tt.ReduceOp):
            _reduce(em, op)
        elif isinstance(op, tt.SelectOp) and isinstance(op.cond.type, TensorType):
            _select(em, op)
        elif isinstance(op, tt.CmpfOp) and all(
            isinstance(u.operation, tt.SelectOp) and u.index == 0 for u in op.result.uses
        ):
            continue  # a float mask: built where its select reads it (`_select_by_value`)
        elif isinstance(op, scf.ForOp) and _grid_stride(op) is not None:
            _tiles(em, op)
        elif isinstance(op, scf.ForOp):
            _loop(em, op)
        elif isinstance(op, tt.ReturnOp):
            em.add(tile.ReturnOp())
        elif isinstance(op, scf.YieldOp):
            continue
        elif _is_data(op) and _on_expanded(em, op) is not None:
            _expanded_math(em, op)
        elif _is_data(op) and not _only_other(op):
            clone = op.clone(value_mapper={o: em.get(o, op) for o in op.operands})
            if isinstance(clone, arith.DivfOp) and _is_f32(clone.result):
                clone.fastmath = arith.FastMathFlagsAttr(
                    [FastMathFlag.ALLOW_RECIP]
                )  # Triton's `/`: 2 ulp
            em.add(clone)
            em.values.update(dict(zip(op.results, clone.results, strict=True)))
        elif _is_index_work(op):
            continue  # pointers, index tensors, masks, program order: rebuilt from the plan
        else:
            raise _error(f"{op.name} is not supported", op)


def _trans(em: _Emitter, op: tt.TransOp) -> None:
    """`tl.trans(x)` / `x.T` of a 2-d tile: the same tile, which `tt.dot` reads
    transposed (or, transposed twice, as it is)."""
    if len(op.result.type.get_shape()) != 2:
        raise _error("a tt.trans of other than a 2-d tile", op)
    em.values[op.result] = em.get(op.src, op)
    if op.src not in em.transposed:
        em.transposed.add(op.result)


def _fp_to_fp(em: _Emitter, op: tt.FpToFpOp) -> None:
    """`x.to(tl.float8e4nv)` and back: `arith.truncf` (round to nearest even, the only
    rounding tawac emits) or `arith.extf`."""
    src = em.get(op.src, op)
    bits = [_elem(t).bitwidth for t in (op.src.type, op.result.type)]
    if bits[1] < bits[0]:
        if op.rounding is not None and op.rounding.data != "rtne":
            raise _error(f"an fp8 conversion rounding {op.rounding.data} (tawac rounds rtne)", op)
        new = arith.TruncFOp(src, op.result.type)
    else:
        new = arith.ExtFOp(src, op.result.type)
    new.location = op.location
    em.values[op.result] = em.add(new).result


def _elem(t):
    return t.element_type if isinstance(t, TensorType) else t


def _select(em: _Emitter, op: tt.SelectOp) -> None:
    """`tl.where(mask, a, b)` of float tiles, the mask a comparison of two index tiles
    `origin + range_d` (`offs_m[:, None] >= start_n + offs_n[None, :]`): `tile.iota` of
    each side, `tile.cmpi`, `tile.select`; none where it is the zero fill of the load it
    selects from (`_zero_filled`)."""
    load = _zero_filled(em, op)
    if load is not None:
        em.values[op.result] = em.values[load.result]
        if load.result in em.transposed:
            em.transposed.add(op.result)
        return
    cond = op.cond
    while isinstance(cond.owner, tt.BroadcastOp):
        cond = cond.owner.src
    cmp = cond.owner
    shape = op.result.type.get_shape()
    if isinstance(cmp, tt.CmpfOp) and cond is op.cond:
        _select_by_value(em, op, cmp)
        return
    if len(shape) != 2:
        raise _error("a tl.where whose mask is not one comparison of 2-d index tiles", op)
    a, b = em.get(op.lhs, op), em.get(op.rhs, op)
    em.values[op.result] = _where(em, op.cond, a, b, shape, op)


def _zero_filled(em: _Emitter, op: tt.SelectOp) -> tt.LoadOp | None:
    """The load of `tl.where(mask, tl.load(p, mask=...), 0.0)` where the select changes
    nothing in the tile kernel: the other value is +0.0 and `mask` is false only where
    the converted `tile.load` reads outside its tensor, which it reads as +0.0. The mask
    must be a conjunction (`&`, through broadcasts) of bounds the load's own mask puts on
    it (`_mask_bound`); None otherwise (the select is converted)."""
    load = op.lhs.owner
    if not isinstance(load, tt.LoadOp) or load.mask is None:
        return None
    if not _is_positive_zero(op.rhs):
        return None
    a = em.plan.accesses.get(load)
    if a is None or load.result not in em.values:
        return None
    sizes = em.plan.tensors[a.base].sizes
    position = {tile_index: j for j, (_, tile_index) in enumerate(tensor_dims(a))}
    work = [op.cond]
    while work:
        v = work.pop()
        while isinstance(v.owner, tt.BroadcastOp):
            v = v.owner.src
        if isinstance(v.owner, arith.AndIOp):
            work += [v.owner.lhs, v.owner.rhs]
        elif not _mask_bound(em, v, a, sizes, position):
            return None
    return load


def _mask_bound(em: _Emitter, v: SSAValue, a: Access, sizes, position) -> bool:
    """`v` is one comparison false only outside the tensor `a` reads: along a tile
    dimension d, `origin_d + range_d < S` with S the bound the load's own mask puts on d
    and the size of the tensor's dimension (the proof `tawac.analysis.pointers` makes of
    the load's mask, on `v`), or `origin_d + range_d >= 0`."""
    cmp = v.owner
    if not isinstance(cmp, tt.CmpiOp):
        return False
    reader = em.plan.reader
    origins = [d.origin for d in a.dims]
    try:
        if cmp.predicate_name == "slt":
            ((d, bound),) = pointers._mask_bounds(v, origins, reader, cmp).items()
            return bound == a.dims[d].bound and _single_symbol(bound) == [sizes[position[d]]]
        if cmp.predicate_name == "sge":
            lhs, rhs = reader.int_poly(cmp.lhs), reader.int_poly(cmp.rhs)
            return not rhs.terms and any(lhs == a.dims[d].origin + Poly.sym(Range(d))
                                         for d in range(len(a.dims)))  # fmt: skip
    except PointerError:
        return False
    return False


def _is_positive_zero(v: SSAValue) -> bool:
    """`v` is a splat constant of +0.0 (what `tile.load` reads outside its tensor)."""
    c = v.owner
    if not isinstance(c, arith.ConstantOp) or not isinstance(c.value, DenseIntOrFPElementsAttr):
        return False
    if not c.value.is_splat():
        return False
    x = float(c.value.get_values()[0])
    return x == 0.0 and math.copysign(1.0, x) > 0


def _where(em: _Emitter, cond: SSAValue, a: SSAValue, b: SSAValue, shape, at) -> SSAValue:
    """`tl.where(cond, a, b)` for a mask of comparisons of index tiles joined by `&`
    (`(offs_n < seqlen) & (offs_m >= offs_n)`): where(m1 & m2, a, b) is where(m1,
    where(m2, a, b), b), one `tile.select` per comparison."""
    while isinstance(cond.owner, tt.BroadcastOp | tt.ExpandDimsOp):
        cond = cond.owner.src
    both = cond.owner
    if isinstance(both, arith.AndIOp):
        inner = _where(em, both.rhs, a, b, shape, at)
        return _where(em, both.lhs, inner, b, shape, at)
    cmp = both
    if not isinstance(cmp, tt.CmpiOp):
        raise _error("a tl.where whose mask is not comparisons of 2-d index tiles", at)
    pred = cmp.predicate_name
    if pred not in tile.CMPI_PREDICATES:
        raise _error(f"a tl.where mask compared by {pred}", cmp)
    sides = [_iota(em, v, shape, cmp) for v in (cmp.lhs, cmp.rhs)]
    mask = em.add(tile.CmpiOp(pred, *sides)).result
    return em.add(_located(tile.SelectOp(mask, a, b), at)).result


def _select_by_value(em: _Emitter, op: tt.SelectOp, cmp: tt.CmpfOp) -> None:
    """`tl.where(x >= 0, x, 0.01 * x)` (the tutorial's leaky ReLU): a comparison of float
    tiles and the select, as xDSL's `arith.cmpf` and `arith.select` on tiles."""
    pred = cmp.PREDICATES[cmp.predicate.value.data]
    a, b = em.get(cmp.lhs, cmp), em.get(cmp.rhs, cmp)
    # as tile programs write it: xDSL's arith.cmpf types its result i1, the backend and
    # the interpreter compare element by element
    mask = em.add(arith.CmpfOp(a, b, pred))
    x, y = em.get(op.lhs, op), em.get(op.rhs, op)
    em.values[op.result] = em.add(arith.SelectOp(mask.result, x, y)).result


def _iota(em: _Emitter, v: SSAValue, shape, at: Operation) -> SSAValue:
    """An index tile `origin + range_d` as `tile.iota d, origin`; a scalar as
    `tile.splat`."""
    try:
        p = em.plan.reader.int_poly(v)
    except PointerError as e:
        raise _error(e.message, e.op or at) from None
    dims = p.ranges()
    if not dims:  # a scalar side (`offs_n[None, :] < seqlen`): the scalar everywhere
        t = TensorType(i32, list(shape))
        splat = tile.SplatOp.build(operands=[em.index(p, at)], result_types=[t])
        return em.add(splat).result
    unit = [m for m in p.terms if any(isinstance(s, Range) for s in m)]
    if len(dims) != 1 or len(unit) != 1 or len(unit[0]) != 1 or p.terms[unit[0]] != 1:
        raise _error(f"a mask side {p} that is not one index range plus a scalar", at)
    (d,) = dims
    origin = p - Poly({unit[0]: 1})
    t = TensorType(i32, list(shape))
    return em.add(tile.IotaOp(d, em.index(origin, at), t)).result


def _is_data(op: Operation) -> bool:
    """An op on float tiles (or a float constant) the tile kernel keeps as it is."""
    if not op.results:
        return False
    if not _is_float(op.results[0]):
        return False
    if isinstance(op, arith.ConstantOp):
        return isinstance(op.value, DenseIntOrFPElementsAttr | FloatAttr)
    return op.dialect_name() in ("arith", "math")


def _is_f32(v: SSAValue) -> bool:
    return isinstance(_elem(v.type), Float32Type)


def _is_float(v: SSAValue) -> bool:
    return isinstance(_elem(v.type), AnyFloat)


def _on_expanded(em: _Emitter, op: Operation) -> int | None:
    """The axis where every tensor operand of an elementwise op is a vector given a unit
    dimension (`v[None, :]` then `.to(tl.float32)`, or a product of two such): the op
    then works on the vectors; None otherwise."""
    axes = {em.expanded[o][1] for o in op.operands if o in em.expanded}
    tensors = [o for o in op.operands if isinstance(o.type, TensorType)]
    if len(axes) != 1 or not all(o in em.expanded for o in tensors):
        return None
    return axes.pop()


def _expanded_math(em: _Emitter, op: Operation) -> None:
    """An elementwise op on vectors with a unit dimension, done on the vectors; its result
    keeps the unit dimension for the broadcast that reads it (`_broadcast`)."""
    axis = _on_expanded(em, op)
    assert axis is not None
    operands = [em.expanded[o][0] if o in em.expanded else em.get(o, op) for o in op.operands]
    types = []
    for r in op.results:
        t = r.type
        assert isinstance(t, TensorType)
        shape = [d for i, d in enumerate(t.get_shape()) if i != axis]
        types.append(TensorType(t.element_type, shape))
    new = type(op).create(
        operands=operands,
        result_types=types,
        properties=dict(op.properties),
        attributes=dict(op.attributes),
    )
    em.add(new)
    for r, v in zip(op.results, new.results, strict=True):
        em.expanded[r] = (v, axis)


def _broadcast(em: _Emitter, op: tt.BroadcastOp) -> None:
    """`v[None, :]` or `v[:, None]` broadcast to a 2-d tile: `tile.broadcast` of the
    vector along the result dimension it spans."""
    found = em.expanded.get(op.src)
    shape = op.result.type.get_shape()
    if found is None or len(shape) != 2:
        raise _error("a broadcast of a float tile other than a vector to 2-d", op)
    src, axis = found
    b = tile.BroadcastOp(src, 1 - axis, op.result.type)
    em.values[op.result] = em.add(b).result


#: Combining ops of `tt.reduce` and the `tile.reduce` kind each is.
_REDUCE_KINDS = {
    "arith.maxnumf": "max",
    "arith.maximumf": "max",
    "arith.addf": "sum",
}


def _reduce(em: _Emitter, op: tt.ReduceOp) -> None:
    """`tl.max(x, axis)` / `tl.sum(x, axis)` of a 2-d float tile -> `tile.reduce`."""
    comb = op.combiner()
    kind = _REDUCE_KINDS.get(comb.name) if comb is not None else None
    (src,) = op.srcs if len(op.srcs) == 1 else (None,)
    if kind is None or src is None or len(src.type.get_shape()) != 2:
        raise _error("a reduction other than tl.max or tl.sum of one 2-d tile", op)
    red = tile.ReduceOp(kind, em.get(src, op), op.axis.value.data, op.reduced[0].type)
    em.values[op.reduced[0]] = em.add(red).result


def _only_other(op: Operation) -> bool:
    """A constant used only as masked loads' `other` (the tile load's zero fill)."""
    uses = [u for r in op.results for u in r.uses]
    return bool(uses) and all(
        isinstance(u.operation, tt.LoadOp) and u.operation.other is r
        for r in op.results
        for u in r.uses
    )


def _is_index_work(op: Operation) -> bool:
    return isinstance(
        op,
        tt.SplatOp
        | tt.BroadcastOp
        | tt.ExpandDimsOp
        | tt.MakeRangeOp
        | tt.AddPtrOp
        | tt.GetProgramIdOp
        | tt.CmpiOp
        | arith.ConstantOp
        | arith.AddiOp
        | arith.SubiOp
        | arith.MuliOp
        | arith.DivSIOp
        | arith.RemSIOp
        | arith.MinSIOp
        | arith.MaxSIOp
        | arith.AndIOp
        | tt.ExtSIOp
        | tt.ExtUIOp
        | tt.TruncIOp
        | tt.MakeTensorDescOp,
    )


def _check_other(op: tt.LoadOp) -> None:
    if op.other is None:
        return
    c = op.other.owner
    ok = isinstance(c, arith.ConstantOp) and isinstance(c.value, DenseIntOrFPElementsAttr)
    if not ok or not c.value.is_splat() or float(c.value.get_values()[0]) != 0.0:
        raise _error("a masked load whose other value is not 0 (tile.load fills with 0)", op)


def _loop(em: _Emitter, loop: scf.ForOp) -> None:
    """`for k in range(cdiv(S, B))` -> `for kk in range(0, S, B)`, or `for i in
    range(lo, hi, B)` (bounds of the program ids, sizes and constants) -> the same over
    index; float data carried only (pointers and offsets are rebuilt from the plan)."""
    lb, ub, step, scale = _bounds(em, loop)
    keep = [j for j, a in enumerate(loop.iter_args) if _is_float(a)]
    inits = [em.get(loop.iter_args[j], loop) for j in keep]
    body = Block(arg_types=[IndexType(), *(v.type for v in inits)])
    new = scf.ForOp(lb, ub, em.const(step), inits, Region(body))
    em.add(new)
    inner = dataclasses.replace(
        em,
        block=body,
        values=dict(em.values),
        ivs=dict(em.ivs),
        expanded=dict(em.expanded),
        transposed=set(em.transposed),
    )
    inner.ivs[loop.body.block.args[0]] = (body.args[0], scale)
    for j, arg in zip(keep, body.args[1:], strict=True):
        inner.values[loop.body.block.args[1 + j]] = arg
    _body(inner, loop.body.block)
    yielded = loop.body.block.last_op.operands
    inner.add(scf.YieldOp(*[inner.get(yielded[j], loop) for j in keep]))
    for j, r in zip(keep, new.results, strict=True):
        em.values[loop.results[j]] = r


def _tiles(em: _Emitter, loop: scf.ForOp) -> None:
    """A persistent loop over tiles (`_grid_stride`): its body once, its tile id the
    program symbol the plan's block indices are computed from (tawac's grid visits each
    tile once; its own `persistent` pass makes the kernel persistent again)."""
    if any(_is_float(a) for a in loop.iter_args):
        raise _error("a persistent loop that carries data from one tile to the next", loop)
    for r in loop.results:
        if r.uses:
            raise _error("a value of a persistent loop used after it", loop)
    _body(em, loop.body.block)


def _bounds(em: _Emitter, loop: scf.ForOp) -> tuple[SSAValue, SSAValue, int, int]:
    """(lower bound, upper bound, step, B) of the new loop: a loop `0 to cdiv(S, B) step 1`
    runs `0 to S step B` (an old index k is the new one over B); any other loop with a
    constant step keeps its bounds (B = 1)."""
    counted = _count_of(em, loop)
    if counted is not None:
        size, step = counted
        return em.const(0), size, step, step
    try:
        lb, ub, step = (em.plan.reader.int_poly(v) for v in (loop.lb, loop.ub, loop.step))
    except PointerError as e:
        raise _error(e.message, e.op or loop) from None
    if set(step.terms) != {()} or step.terms[()] <= 0:
        raise _error("a loop whose step is not a positive constant", loop)
    return em.index(lb, loop), em.index(ub, loop), step.terms[()], 1


def _count_of(em: _Emitter, loop: scf.ForOp) -> tuple[SSAValue, int] | None:
    """(S as an index tensor dimension, B) of a loop `0 to (S + B - 1) / B step 1`."""
    ub = loop.ub.owner
    if not isinstance(ub, arith.DivSIOp) or not isinstance(ub.lhs.owner, arith.AddiOp):
        return None
    step = constant_int(ub.rhs)
    add = ub.lhs.owner
    if step is None or constant_int(add.rhs) != step - 1 or not isinstance(add.lhs, BlockArgument):
        return None
    if constant_int(loop.lb) != 0 or constant_int(loop.step) != 1:
        return None
    return _dim_of(em, add.lhs), step


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
