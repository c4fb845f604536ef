"""Pointer arithmetic of a Triton kernel (TTIR, `tawac.dialects.tt`) read as blocks of
tensors: for each `tt.load` and `tt.store`, the pointer argument it
reads or writes, and per dimension of its tile the stride it walks and the origin of
the block along it.

A pointer tensor is `base + offset`, the base a pointer argument (`tt.splat` of it) and
the offset a polynomial (`Poly`) over:
- `Range(d)`: the element index along the tile's dimension `d` (a `tt.make_range`
  carried to its dimension through `tt.expand_dims` and `tt.broadcast`);
- scalar symbols: the kernel's integer arguments (sizes, strides), program ids, loop
  induction variables, and any other scalar (an opaque symbol: the `pid_m` of a grouped
  order is one);
built by `tt.splat`, `arith.addi`, `arith.subi`, `arith.muli`, the integer casts
(`arith.extsi` of `.to(tl.int64)`) and constants; `tt.addptr` adds offsets, to a pointer
tensor or to a scalar pointer that is then splat (a block pointer's base, as Triton 3.6
rewrites block pointers). `arith.remsi x, M` (the tutorial's `% M` wrap of row indices) is read as
`x`, with the wrap recorded: rows at or past `M` then read other rows' values, which
only the rows of the output masked off use (the conversion checks that).
A loop-carried pointer (`scf.for` iteration argument advanced by a loop-invariant
`tt.addptr` each iteration) or integer offset (advanced by `arith.addi`: a block
pointer's offset) is its initial value plus `iteration x increment`, the iteration
`(iv - lb) / step` of a loop with a constant step dividing the increment, so that the
product is `(iv - lb) x (increment / step)`.

A scalar pointer (`tl.store(Mean + row, mean)`, a lock's `tl.atomic_cas(Lock + i, 0, 1)`)
is a block of one element along a contiguous dimension (stride 1), its origin the
offset (`_element_access`).

`access(op)` splits the offset of a load's or store's pointer into, per tile dimension
`d`, the monomials with `Range(d)` (`Range(d) x stride_d`: the stride must be one
monomial without ranges) and the rest (the origin), then divides the origin by the
strides: `origin = sum_d origin_d x stride_d`; a monomial with one kernel argument that
no tile stride divides (`off_z x stride_qz`) makes an outer dimension of that stride
(`Access.outer`: one element along it). What does not fit raises
`PointerError(message, op)`: the conversion reports it at the op's Python line.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, IntegerAttr, IntegerType, TensorType
from xdsl.ir import Block, BlockArgument, Operation, SSAValue

from tawac.analysis.loops import in_body
from tawac.dialects import tt


class PointerError(Exception):
    """A pointer computation the analysis does not read as a block; `op` is where."""

    def __init__(self, message: str, op: Operation | None = None):
        super().__init__(message)
        self.message = message
        self.op = op


@dataclass(frozen=True)
class Range:
    """The element index along tile dimension `dim`; `wrap`: the scalar it was taken
    modulo (`(... + tl.arange(...)) % M`), if any."""

    dim: int
    wrap: SSAValue | None = None

    def __str__(self) -> str:
        return f"range{self.dim}"

    def moved(self, dim: int) -> Range:
        return Range(dim, self.wrap)


Symbol = Range | SSAValue


def _key(s: Symbol) -> tuple:
    if isinstance(s, Range):
        return (0, s.dim, _name(s.wrap) if s.wrap is not None else "")
    return (1, 0, _name(s))


def _has_dim(m: tuple, d: int) -> bool:
    return any(isinstance(s, Range) and s.dim == d for s in m)


def _name(v: SSAValue) -> str:
    if isinstance(v.owner, tt.GetProgramIdOp):
        return f"pid_{'xyz'[v.owner.axis_index]}"
    return v.name_hint or f"v{id(v) % 10000}"


@dataclass(frozen=True)
class Poly:
    """A polynomial with integer coefficients over `Symbol`s: monomial (a tuple of
    symbols, sorted) -> coefficient."""

    terms: Mapping[tuple, int] = field(default_factory=dict)

    @staticmethod
    def const(c: int) -> Poly:
        return Poly({(): c} if c else {})

    @staticmethod
    def sym(s: Symbol) -> Poly:
        return Poly({(s,): 1})

    def __add__(self, other: Poly) -> Poly:
        out = dict(self.terms)
        for m, c in other.terms.items():
            out[m] = out.get(m, 0) + c
            if out[m] == 0:
                del out[m]
        return Poly(out)

    def scale(self, k: int) -> Poly:
        return Poly({m: c * k for m, c in self.terms.items()} if k else {})

    def __sub__(self, other: Poly) -> Poly:
        return self + other.scale(-1)

    def __mul__(self, other: Poly) -> Poly:
        out: Poly = Poly()
        for m1, c1 in self.terms.items():
            for m2, c2 in other.terms.items():
                mono = tuple(sorted((*m1, *m2), key=_key))
                if sum(isinstance(s, Range) for s in mono) > 1:
                    raise PointerError("a product of two index ranges")
                out = out + Poly({mono: c1 * c2})
        return out

    def ranges(self) -> set[int]:
        return {s.dim for m in self.terms for s in m if isinstance(s, Range)}

    def __str__(self) -> str:
        if not self.terms:
            return "0"
        parts = []
        for m, c in sorted(self.terms.items(), key=lambda t: [_key(s) for s in t[0]]):
            names = [str(s) if isinstance(s, Range) else _name(s) for s in m]
            if not names:
                parts.append(str(c))
            elif c == 1:
                parts.append("*".join(names))
            else:
                parts.append("*".join([str(c), *names]))
        return " + ".join(parts)


@dataclass(frozen=True)
class Dim:
    """One tile dimension of an access: the stride it walks (elements between neighbours),
    the block's origin along it (in units of that stride), the bound the mask puts on the
    index (`origin + range < bound`; None: unmasked) and the scalar the index is taken
    modulo (None: none)."""

    stride: Poly
    origin: Poly
    bound: Poly | None = None
    wrap: SSAValue | None = None


@dataclass(frozen=True)
class Access:
    """A load's or store's block: the pointer argument, its dimensions (tile order), and
    the values whose `% size` wrap was read as the value itself."""

    op: Operation
    base: BlockArgument
    dims: tuple[Dim, ...]
    wraps: tuple[SSAValue, ...] = ()
    #: dimensions of the tensor outside the tile (a block of one element along each,
    #: unmasked), outermost first: `off_z x stride_qz` of a batch index
    outer: tuple[Dim, ...] = ()


@dataclass
class _Reader:
    """The expressions of one function, memoized by value."""

    memo: dict[SSAValue, Poly] = field(default_factory=dict)
    wraps: list[SSAValue] = field(default_factory=list)
    active: set[SSAValue] = field(default_factory=set)

    def int_poly(self, v: SSAValue) -> Poly:
        """An integer scalar or tensor as a polynomial (tensor dims: `Range`s)."""
        if v in self.memo:
            return self.memo[v]
        if v in self.active:  # only text that uses a value before defining it
            raise PointerError("a value computed from itself", _op_of(v))
        self.active.add(v)
        try:
            p = self._int_poly(v)
        finally:
            self.active.discard(v)
        self.memo[v] = p
        return p

    def _int_poly(self, v: SSAValue) -> Poly:
        op = v.owner
        if isinstance(op, arith.ConstantOp):
            value = op.value
            if isinstance(value, IntegerAttr):
                return Poly.const(value.value.data)
            if isinstance(value, DenseIntOrFPElementsAttr) and value.is_splat():
                return Poly.const(int(value.get_values()[0]))
            raise PointerError("a constant tensor that is not one value", op)
        if isinstance(op, tt.MakeRangeOp):
            if op.start.value.data != 0:
                return Poly.sym(Range(0)) + Poly.const(op.start.value.data)
            return Poly.sym(Range(0))
        if isinstance(op, tt.SplatOp | tt.ExtSIOp | tt.ExtUIOp | tt.TruncIOp):
            return self.int_poly(op.src)
        if isinstance(op, tt.BroadcastOp):
            return self.int_poly(op.src)
        if isinstance(op, tt.ExpandDimsOp):
            return _shift(self.int_poly(op.src), op.axis.value.data)
        if isinstance(op, arith.AddiOp):
            return self.int_poly(op.lhs) + self.int_poly(op.rhs)
        if isinstance(op, arith.SubiOp):
            return self.int_poly(op.lhs) - self.int_poly(op.rhs)
        if isinstance(op, arith.MuliOp):
            try:
                return self.int_poly(op.lhs) * self.int_poly(op.rhs)
            except PointerError as e:
                raise PointerError(e.message, op) from None
        if isinstance(op, arith.RemSIOp) and self.int_poly(op.rhs).ranges() == set():
            x = self.int_poly(op.lhs)
            size = _splat_source(op.rhs)
            if x.ranges() and size is not None:
                self.wraps.append(v)
                return _wrapped(x, size)
        if isinstance(v.type, TensorType):
            raise PointerError(f"an index tensor computed by {_op_name(op)}", _op_of(v))
        if isinstance(v, BlockArgument) and _is_iter_arg(v):
            return _carried_int(v, self)
        return Poly.sym(v)  # a scalar: a symbol of its own


def _op_name(op) -> str:
    return op.name if isinstance(op, Operation) else "a block argument"


def _op_of(v: SSAValue) -> Operation | None:
    return v.owner if isinstance(v.owner, Operation) else None


def _splat_source(v: SSAValue) -> SSAValue | None:
    """The scalar a `tt.splat` repeats (through broadcasts), or `v` if it is a scalar."""
    while isinstance(v.owner, tt.SplatOp | tt.BroadcastOp):
        v = v.owner.src
    return None if isinstance(v.type, TensorType) else v


def _wrapped(p: Poly, size: SSAValue) -> Poly:
    """`p` with its ranges marked as taken modulo `size`."""
    return Poly(
        {
            tuple(
                sorted((Range(s.dim, size) if isinstance(s, Range) else s for s in m), key=_key)
            ): c
            for m, c in p.terms.items()
        }
    )


def _shift(p: Poly, axis: int) -> Poly:
    """`p` with a new tile dimension at `axis` (later dimensions move up one)."""
    out: dict[tuple, int] = {}
    for m, c in p.terms.items():
        mono = tuple(
            sorted(
                (s.moved(s.dim + 1) if isinstance(s, Range) and s.dim >= axis else s for s in m),
                key=_key,
            )
        )
        out[mono] = c
    return Poly(out)


def pointer(v: SSAValue, reader: _Reader, depth: int = 0) -> tuple[BlockArgument, Poly]:
    """A pointer tensor's base argument and element offset."""
    if depth > 1000:  # a chain that never reaches an argument: a value from itself
        raise PointerError("a pointer computed from itself", _op_of(v))
    op = v.owner
    if isinstance(v, BlockArgument) and isinstance(v.type, tt.PointerType) and not _is_iter_arg(v):
        return v, Poly()  # a pointer argument of the kernel
    if isinstance(op, tt.SplatOp | tt.BroadcastOp):
        return pointer(op.src, reader, depth + 1)
    if isinstance(op, tt.AddPtrOp):
        base, off = pointer(op.ptr, reader, depth + 1)
        return base, off + reader.int_poly(op.offset)
    if isinstance(op, Block) and isinstance(v, BlockArgument):
        return _carried(v, reader)
    raise PointerError(f"a pointer computed by {_op_name(op)}", _op_of(v))


def _is_iter_arg(v: BlockArgument) -> bool:
    """`v` is an iteration argument of an `scf.for` (not its induction variable)."""
    return isinstance(v.owner.parent_op(), scf.ForOp) and v.index > 0


def _carried(v: BlockArgument, reader: _Reader) -> tuple[BlockArgument, Poly]:
    """A loop's pointer iteration argument: its initial value plus the iteration count
    times the loop-invariant increment its yield adds (`tt.addptr`)."""
    block = v.owner
    loop = block.parent_op()
    if not isinstance(loop, scf.ForOp) or v.index == 0:
        raise PointerError("a pointer that is an argument of no loop", None)
    base, init = pointer(loop.iter_args[v.index - 1], reader)
    inc = _increment(v, reader, "pointer", tt.AddPtrOp, lambda op: (op.offset, op.ptr))
    return base, init + _advanced(loop, inc, reader)


def _carried_int(v: BlockArgument, reader: _Reader) -> Poly:
    """A loop's integer iteration argument (a block pointer's offset, as Triton rewrites
    them): its initial value plus the iteration count times the loop-invariant increment
    its yield adds (`arith.addi`)."""
    loop = v.owner.parent_op()
    assert isinstance(loop, scf.ForOp)
    init = reader.int_poly(loop.iter_args[v.index - 1])

    def split(op: arith.AddiOp) -> tuple[SSAValue, SSAValue]:
        if op.lhs is v or isinstance(op.lhs.owner, arith.AddiOp):
            return op.rhs, op.lhs
        return op.lhs, op.rhs

    inc = _increment(v, reader, "offset", arith.AddiOp, split)
    return init + _advanced(loop, inc, reader)


def _increment(v: BlockArgument, reader: _Reader, what: str, kind: type, split) -> Poly:
    """What the chain of `kind` ops from the loop's yield back to its iteration argument
    `v` adds per iteration; `split(op)` is (the amount an op adds, the value it adds to)."""
    loop = v.owner.parent_op()
    step = loop.body.block.last_op.operands[v.index - 1]
    inc = Poly()
    for _ in range(1000):
        if step is v:
            return inc
        if not isinstance(step.owner, kind):
            raise PointerError(f"a loop-carried {what} not advanced by {kind.name}", _op_of(step))
        delta, step = split(step.owner)
        inc = inc + reader.int_poly(delta)
    raise PointerError(f"a loop-carried {what} computed from itself", loop)


def _advanced(loop: scf.ForOp, inc: Poly, reader: _Reader) -> Poly:
    """`iterations x inc`, the iteration count `(iv - lb) / step` of a loop whose step is
    a constant dividing `inc` (a loop from 0 by 1: the induction variable itself)."""
    block = loop.body.block
    if any(in_body(s, block) for m in inc.terms for s in m if not isinstance(s, Range)):
        raise PointerError("a loop-carried pointer advanced by a loop-variant offset", loop)
    lb, step = reader.int_poly(loop.lb), reader.int_poly(loop.step)
    if set(step.terms) != {()} or step.terms[()] <= 0:
        raise PointerError("a loop-carried pointer in a loop of no constant step", loop)
    c = step.terms[()]
    if any(k % c for k in inc.terms.values()):
        raise PointerError(f"a loop-carried pointer advanced by {inc}, not a multiple of {c}", loop)
    per = Poly({m: k // c for m, k in inc.terms.items()})
    return (Poly.sym(block.args[0]) - lb) * per


def mask_of(op: Operation) -> SSAValue | None:
    """The mask of a load, a store or an atomic add (`tt.atomic_rmw`'s operand after its
    value), None where it has none: a compare-and-swap has none, and the `true` mask
    Triton gives an atomic of one element (`tl.atomic_xchg(Lock, 0)`) masks nothing."""
    if isinstance(op, tt.AtomicCasOp):
        return None
    if isinstance(op, tt.AtomicRmwOp):
        mask = op.rest[1] if len(op.rest) > 1 else None
        if mask is not None and not isinstance(op.ptr.type, TensorType) and _true(mask):
            return None
        return mask
    return op.mask


def _true(v: SSAValue) -> bool:
    """`v` is the constant `true`."""
    op = v.owner
    return (
        isinstance(op, arith.ConstantOp)
        and isinstance(op.value, IntegerAttr)
        and isinstance(op.result.type, IntegerType)
        and op.result.type.width.data == 1
        and op.value.value.data != 0
    )


def access(
    op: tt.LoadOp | tt.StoreOp | tt.AtomicRmwOp | tt.AtomicCasOp, reader: _Reader | None = None
) -> Access:
    """The block `op` loads, stores or changes atomically (module docstring);
    `PointerError` otherwise."""
    reader = reader if reader is not None else _Reader()
    before = len(reader.wraps)
    try:
        base, offset = pointer(op.ptr, reader)
    except PointerError as e:
        raise PointerError(e.message, e.op or op) from None
    t = op.ptr.type
    if not isinstance(t, TensorType):
        return _element_access(op, base, offset, tuple(reader.wraps[before:]))
    rank = len(t.get_shape())
    strides: list[Poly] = []
    rest = Poly({m: c for m, c in offset.terms.items() if not any(isinstance(s, Range) for s in m)})
    wraps: list[SSAValue | None] = []
    for d in range(rank):
        stride = Poly(
            {
                tuple(s for s in m if not (isinstance(s, Range) and s.dim == d)): c
                for m, c in offset.terms.items()
                if _has_dim(m, d)
            }
        )
        found = {s.wrap for m in offset.terms for s in m if isinstance(s, Range) and s.dim == d}
        wraps.append(next(iter(found)) if len(found) == 1 else None)
        if not stride.terms:
            raise PointerError(f"dimension {d} of the pointer tile does not move", op)
        if len(stride.terms) != 1:
            raise PointerError(f"dimension {d} has the stride {stride}, not one term", op)
        strides.append(stride)
    if offset.ranges() - set(range(rank)):
        raise PointerError("an index range of another shape", op)
    origins, outer = _divide(rest, strides, op)
    mask = mask_of(op)
    bounds = _mask_bounds(mask, origins, reader, op) if mask is not None else {}
    dims = tuple(
        Dim(s, o, bounds.get(d), w)
        for d, (s, o, w) in enumerate(zip(strides, origins, wraps, strict=True))
    )
    return Access(op, base, dims, tuple(reader.wraps[before:]), outer)


def _element_access(
    op: Operation, base: BlockArgument, offset: Poly, wraps: tuple[SSAValue, ...]
) -> Access:
    """The access of a scalar pointer (`tl.store(Mean + row, mean)`): a block of one
    element along a contiguous dimension (stride 1), its origin the offset (a term with
    one kernel argument, `row x stride_m`, is an outer dimension, as for a tile); a mask
    on one element is refused."""
    if mask_of(op) is not None:
        raise PointerError("a masked load or store of one element", op)
    origins, outer = _divide(offset, [Poly.const(1)], op)
    return Access(op, base, (Dim(Poly.const(1), origins[0]),), wraps, outer)


def _mask_bounds(mask: SSAValue, origins: list[Poly], reader: _Reader, at) -> dict[int, Poly]:
    """Per tile dimension, the bound a mask puts on the index along it: the mask an
    `arith.andi` of `arith.cmpi slt, L, R` (through broadcasts), each `L` one range with
    unit coefficient plus scalars `l`: `origin + range < R - l + origin`; and of `L >= 0`,
    which bounds nothing (tile accesses clip at index 0)."""
    op = mask.owner
    if isinstance(op, tt.BroadcastOp):
        return _mask_bounds(op.src, origins, reader, at)
    if isinstance(op, arith.AndIOp):
        left = _mask_bounds(op.lhs, origins, reader, at)
        right = _mask_bounds(op.rhs, origins, reader, at)
        if set(left) & set(right):
            raise PointerError("a mask that bounds one dimension twice", op)
        return left | right
    if isinstance(op, tt.CmpiOp) and op.predicate_name == "slt":
        lhs, rhs = reader.int_poly(op.lhs), reader.int_poly(op.rhs)
        dims = lhs.ranges()
        if len(dims) != 1 or rhs.ranges():
            raise PointerError("a mask comparison that is not one index against a scalar", op)
        (d,) = dims
        unit = [m for m in lhs.terms if _has_dim(m, d)]
        if len(unit) != 1 or len(unit[0]) != 1 or lhs.terms[unit[0]] != 1:
            raise PointerError("a mask on a scaled index", op)
        scalar = Poly({m: c for m, c in lhs.terms.items() if not _has_dim(m, d)})
        return {d: rhs - scalar + origins[d]}
    if isinstance(op, tt.CmpiOp) and op.predicate_name == "sge":
        # `index >= 0` (a block pointer's boundary check, as Triton 3 lowers it): every
        # tile access reads zeros and drops stores before index 0, so it bounds nothing
        lhs, rhs = reader.int_poly(op.lhs), reader.int_poly(op.rhs)
        if len(lhs.ranges()) != 1 or rhs.terms:
            raise PointerError("a mask's lower bound other than index >= 0", op)
        return {}
    raise PointerError(f"a mask computed by {_op_name(op)}", _op_of(mask) or at)


def _is_argument(s: Symbol) -> bool:
    """`s` is an integer argument of the kernel (a size or a stride)."""
    return isinstance(s, BlockArgument) and isinstance(s.owner.parent_op(), tt.FuncOp)


def origin_arguments(accesses: Iterable[Access]) -> set[BlockArgument]:
    """The kernel's integer arguments that the blocks' origins read (`off_hz * N_CTX`: a
    head's first row in rows of a constexpr length)."""
    return {
        x
        for a in accesses
        for d in (*a.dims, *a.outer)
        for m in d.origin.terms
        for x in m
        if _is_argument(x)
    }


def _divide(rest: Poly, strides: list[Poly], op) -> tuple[list[Poly], tuple[Dim, ...]]:
    """`rest` as `sum_d origin_d x stride_d`: each monomial goes to the dimension whose
    stride (a monomial) divides it; a monomial with one kernel argument no tile stride
    has (`off_z x stride_qz`) to an outer dimension of that stride; the rest to the unit
    stride. The outer dimensions come outermost first (by their stride argument's
    position, Triton's `stride_z, stride_h, ...` order)."""
    origins = [Poly() for _ in strides]
    outer: dict[BlockArgument, Poly] = {}
    units = [i for i, s in enumerate(strides) if set(s.terms) == {()}]
    for m, c in rest.terms.items():
        placed = False
        for i, s in enumerate(strides):
            ((sm, sc),) = s.terms.items()
            if not sm or c % sc:
                continue
            left = list(m)
            if all(x in left and (left.remove(x) or True) for x in sm):
                origins[i] = origins[i] + Poly({tuple(left): c // sc})
                placed = True
                break
        if placed:
            continue
        consts = [(s.terms.get((), 0), i) for i, s in enumerate(strides) if set(s.terms) == {()}]
        fit = max(((sc, i) for sc, i in consts if sc > 1 and c % sc == 0), default=None)
        if fit is not None:  # a constant stride (a constexpr row length) dividing it
            sc, i = fit
            origins[i] = origins[i] + Poly({m: c // sc})
            continue
        args = [x for x in m if _is_argument(x)]
        if len(args) == 1:
            left = list(m)
            left.remove(args[0])
            outer[args[0]] = outer.get(args[0], Poly()) + Poly({tuple(left): c})
            continue
        if len(units) == 1 and not args and c % next(iter(strides[units[0]].terms.values())) == 0:
            sc = next(iter(strides[units[0]].terms.values()))
            origins[units[0]] = origins[units[0]] + Poly({m: c // sc})
            continue
        raise PointerError(f"an offset term {Poly({m: c})} along no dimension's stride", op)
    dims = tuple(Dim(Poly.sym(a), o) for a, o in sorted(outer.items(), key=lambda t: t[0].index))
    return origins, dims


def descriptor_parts(desc: BlockArgument) -> tuple[list[BlockArgument], list[BlockArgument]]:
    """The shape (`i32`) and stride (`i64`) arguments that follow a host-side tensor
    descriptor argument, as Triton's launcher passes them."""
    t = desc.type
    assert isinstance(t, tt.TensorDescType)
    rank = t.block.get_num_dims()
    args = list(desc.owner.args)
    parts = args[desc.index + 1 : desc.index + 1 + 2 * rank]
    if len(parts) != 2 * rank or any(not isinstance(a.type, IntegerType) for a in parts):
        raise PointerError(
            f"tensor descriptor {desc.name_hint}: not followed by its {rank} sizes and "
            f"{rank} strides (the arguments Triton's launcher passes for a host-side "
            "descriptor)",
            None,
        )
    return parts[:rank], parts[rank:]


def descriptor_access(
    op: tt.DescriptorLoadOp | tt.DescriptorStoreOp, reader: _Reader | None = None
) -> Access:
    """The block a descriptor load or store moves: per dimension the descriptor's stride
    and size arguments and the index as the origin (elements along it)."""
    reader = reader if reader is not None else _Reader()
    desc = op.desc
    made = desc.owner
    if isinstance(made, tt.MakeTensorDescOp):
        base, sizes, strides = _made_descriptor(made, reader)
    elif isinstance(desc, BlockArgument) and isinstance(desc.owner.parent_op(), tt.FuncOp):
        try:
            args = descriptor_parts(desc)
        except PointerError as e:
            raise PointerError(e.message, op) from None
        base = desc
        sizes, strides = ([Poly.sym(a) for a in part] for part in args)
    else:
        raise PointerError(f"a tensor descriptor computed by {_op_name(made)}", op)
    dims = []
    for i, size, stride in zip(op.indices, sizes, strides, strict=True):
        try:
            origin = reader.int_poly(i)
        except PointerError as e:
            raise PointerError(e.message, e.op or op) from None
        if origin.ranges():
            raise PointerError("a descriptor index that is a tensor", op)
        dims.append(Dim(stride, origin, size))
    return Access(op, base, tuple(dims))


def _made_descriptor(
    made: tt.MakeTensorDescOp, reader: _Reader
) -> tuple[BlockArgument, list[Poly], list[Poly]]:
    """The pointer argument, sizes and strides of `tl.make_tensor_descriptor(ptr, shape,
    strides)`: the pointer an argument itself, each size an argument, each stride one
    term (an argument or a constant)."""
    base, offset = pointer(made.base, reader)
    if offset.terms:
        raise PointerError(f"a tensor descriptor of a pointer moved by {offset}", made)
    sizes, strides = [], []
    for v in made.shape:
        p = reader.int_poly(v)
        if len(p.terms) != 1 or next(iter(p.terms.values())) != 1:
            raise PointerError(f"a tensor descriptor's size {p} that is not an argument", made)
        sizes.append(p)
    for v in made.strides:
        p = reader.int_poly(v)
        if len(p.terms) != 1:
            raise PointerError(f"a tensor descriptor's stride {p} of more than one term", made)
        strides.append(p)
    return base, sizes, strides


_ACCESSES = (tt.LoadOp, tt.StoreOp, tt.DescriptorLoadOp, tt.DescriptorStoreOp)


def accesses(func: tt.FuncOp, reader: _Reader | None = None) -> list[Access]:
    """Every load's, store's and atomic's block (pointers or descriptors), in walk order;
    the first that does not read as a block raises its `PointerError`."""
    reader = reader if reader is not None else _Reader()
    out = []
    for o in func.walk():
        if isinstance(o, tt.LoadOp | tt.StoreOp | tt.AtomicRmwOp | tt.AtomicCasOp):
            out.append(access(o, reader))
        elif isinstance(o, tt.DescriptorLoadOp | tt.DescriptorStoreOp):
            out.append(descriptor_access(o, reader))
    return out


def reader() -> _Reader:
    """A fresh reader of integer expressions (`_Reader.int_poly`), memoized by value."""
    return _Reader()


__all__ = [
    "Access",
    "Dim",
    "PointerError",
    "Poly",
    "Range",
    "access",
    "accesses",
    "descriptor_access",
    "descriptor_parts",
    "mask_of",
    "reader",
]
