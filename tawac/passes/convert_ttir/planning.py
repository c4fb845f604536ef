"""The plan of a conversion (`plan`): the accesses the pointer analysis reads, the tensors,
the output store and its grid, the integer arguments kept as scalars, and `_Canon`, the
scalars up to equal computation."""

from __future__ import annotations

from dataclasses import dataclass, field

from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import Float32Type, IntegerAttr, IntegerType, TensorType
from xdsl.ir import BlockArgument, Operation, SSAValue

from tawac.analysis import pointers
from tawac.analysis.pointers import Access, PointerError, Poly, Range, accesses, origin_arguments
from tawac.dialects import tt
from tawac.passes.convert_ttir.common import _error
from tawac.passes.convert_ttir.grid import _grid, _output
from tawac.passes.convert_ttir.scalars import (
    _arguments_of,
    _grid_stride,
    _program_axis,
    _single_symbol,
)
from tawac.passes.convert_ttir.strided import grid_stride_rows
from tawac.passes.convert_ttir.tensors import _is_store, _Tensor, _tensors, scalar_atomic


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


def plan(func: tt.FuncOp) -> _Plan:
    _refuse_atomics(func)
    r = pointers.reader()
    try:
        acc = accesses(func, r)
    except PointerError as e:
        raise _error(e.message, e.op) from None
    if not any(_is_store(a.op) for a in acc):
        raise _error("a kernel that stores nothing", func)
    acc = grid_stride_rows(func, acc, _output(acc))
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


#: `tt.atomic_rmw`'s operations by the Triton function that makes each.
_RMW = {"exch": "tl.atomic_xchg", "add": "tl.atomic_add", "fadd": "tl.atomic_add",
        "max": "tl.atomic_max", "umax": "tl.atomic_max", "min": "tl.atomic_min",
        "umin": "tl.atomic_min", "and": "tl.atomic_and", "or": "tl.atomic_or",
        "xor": "tl.atomic_xor"}  # fmt: skip


def atomic_add(op: Operation) -> bool:
    """Whether `op` is a `tl.atomic_add` a tile program has (`tile.atomic_add`): `fadd`
    of an f32 tile through a tile of pointers, its result unused (the mask, as a store's,
    must bound the tensor: the pointer analysis checks it)."""
    if not isinstance(op, tt.AtomicRmwOp) or op.words.data[0].data != "fadd":
        return False
    t = op.rest[0].type if op.rest else None
    tile_of_f32 = isinstance(t, TensorType) and isinstance(t.element_type, Float32Type)
    return tile_of_f32 and isinstance(op.ptr.type, TensorType) and not op.result.uses


def _refuse_atomics(func: tt.FuncOp) -> None:
    """The first atomic of the kernel but an f32 `tl.atomic_add` whose result is unused
    (`atomic_add`) and a `tl.atomic_cas` / `tl.atomic_xchg` of one i32 element at GPU or
    CTA scope (`scalar_atomic`; a CTA-scope one becomes GPU-scope, which orders more),
    refused where it is: a tile program has no other atomic read-modify-write of global
    memory."""
    for op in func.walk():
        if atomic_add(op):
            continue
        if isinstance(op, tt.AtomicCasOp):
            what = "tl.atomic_cas"
        elif isinstance(op, tt.AtomicRmwOp):
            what = _RMW.get(op.words.data[0].data, f"an atomic {op.words.data[0].data}")
        else:
            continue
        if scalar_atomic(op):
            scope = op.words.data[-1].data
            if scope not in ("gpu", "cta"):
                raise _error(f"{what} at {scope} scope (tawac's atomics are GPU-scope)", op)
            continue
        raise _error(
            f"{what} ({op.name}): a tile program has no atomic read-modify-write of global "
            "memory but tl.atomic_add of f32 tiles and the compare-and-swap and exchange of "
            "one i32 element (a lock's)",
            op,
        )


def _scalars(p: _Plan) -> list[BlockArgument]:
    """The integer arguments that loop bounds or block origins read and no tensor
    dimension is sized by (the `K` of a K loop over descriptor loads; the `N_CTX` of a
    head's first row `off_hz * N_CTX` in a tensor whose rows are a constexpr long): the
    tile kernel takes them as `index`."""
    sized = {a for t in p.tensors.values() for a in t.sizes if a is not None}
    found: set[BlockArgument] = set()
    for loop in p.func.walk():
        if not isinstance(loop, scf.ForOp) or _grid_stride(loop) is not None:
            continue
        for v in (loop.lb, loop.ub, loop.step):
            found |= {a for a in _arguments_of(v) if isinstance(a.type, IntegerType)}
    found |= {a for a in origin_arguments(p.accesses.values()) if isinstance(a.type, IntegerType)}
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
