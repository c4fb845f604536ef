"""`convert-ttir`: a Triton kernel (`tt.func`, read by `tawac.ttir`) to a tile kernel
(`tile.kernel`) in front of the default pipeline (issue 21, item 1).

The pointer analysis (`tawac.analysis.pointers`) reads every load and store as a block:
the pointer argument, per tile dimension its stride, origin, mask bound and `% size`
wrap. The conversion:

- **Arguments.** Each pointer argument becomes a `!tile.tensor` whose dimensions are the
  tile dimensions of its accesses, named after the scalar argument that bounds (mask) or
  wraps them (`["M", "K"]`); its last dimension is the contiguous one (stride 1 when
  launched). Scalar arguments that are only sizes and strides disappear (the tensor's
  shape and layout hold them); a float scalar stays; any other use of an integer argument
  is refused.
- **The grid.** The output store's origin along each dimension is its tile size times a
  function `q_d` of the program ids. When `q_d` is a program id itself, it is that
  program id; when the kernel has a one-dimensional grid and computes `(q_0, q_1)` from
  it (the tutorial's grouped order), the map is checked to be a bijection from
  `[0, P)` onto the tile grid at a set of sizes (evaluating the kernel's scalar code),
  and `q_d` becomes `tile.program_id` d: programs are independent, so a permutation of
  them computes the same result, and tawac chooses its own tile order.
- **Origins** of every access are rebuilt as index arithmetic from `q_d` and the loop's
  new induction variable; what else they would need is refused.
- **The loop** `for k in range(cdiv(S, B))` with pointers advanced by `B` elements each
  iteration becomes `scf.for %kk = 0 to S step B` over index (`k x B` is `%kk`); its
  pointer iteration arguments disappear.
- **Masks and wraps.** A mask that bounds a dimension by its size, and `other = 0`, is
  what `tile.load`'s zero fill and `tile.store`'s clipping already do; a `% size` wrap of
  a load's dimension is dropped when the output store masks that size (the wrapped rows
  reach only masked-off outputs), else refused.
- **Compute.** `tt.dot` -> `tile.dot`; `tt.reduce` by `maxnumf`/`maximumf`/`addf` of a 2-d
  tile -> `tile.reduce max/sum`; a float vector given a size-1 dimension and broadcast ->
  `tile.broadcast`; float arith and math ops are copied.

Errors are `CompileError`s at the op's Python line (`tawac.ttir.python_location`).
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Mapping
from dataclasses import dataclass, field

from xdsl.context import Context
from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import (
    AnyFloat,
    DenseIntOrFPElementsAttr,
    FloatAttr,
    IndexType,
    IntegerAttr,
    ModuleOp,
    TensorType,
)
from xdsl.ir import Block, BlockArgument, Operation, Region, SSAValue
from xdsl.passes import ModulePass

from tawac.analysis.pointers import Access, PointerError, Poly, Range, accesses
from tawac.diagnostics import CompileError
from tawac.dialects import tile, tt
from tawac.ttir import python_location

#: Sizes at which a computed program order is checked to cover the tile grid once.
CHECK_SIZES = (1, 63, 64, 127, 128, 129, 255, 256, 257, 1000, 1024, 3000)


def _error(message: str, op: Operation | None) -> CompileError:
    where = python_location(op) if op is not None else None
    return CompileError(f"convert-ttir: {message}", location=where)


# -- scalar evaluation (the grid check) ------------------------------------------------------


def _eval(v: SSAValue, env: Mapping[SSAValue, int], memo: dict) -> int:
    """The integer value of a scalar of the kernel's integer code at `env`."""
    if v in env:
        return env[v]
    if v in memo:
        if memo[v] is None:  # only text that uses a value before defining it
            raise PointerError("a program order computed from itself", _op(v))
        return memo[v]
    memo[v] = None
    op = v.owner
    if isinstance(op, arith.ConstantOp) and isinstance(op.value, IntegerAttr):
        out = op.value.value.data
    elif isinstance(op, arith.AddiOp | arith.SubiOp | arith.MuliOp | arith.DivSIOp):
        a, b = _eval(op.lhs, env, memo), _eval(op.rhs, env, memo)
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
        a, b = _eval(op.lhs, env, memo), _eval(op.rhs, env, memo)
        if b == 0:
            raise PointerError("a program order that takes a remainder by zero", op)
        out = a - b * int(a / b)
    elif isinstance(op, arith.MinSIOp):
        out = min(_eval(op.lhs, env, memo), _eval(op.rhs, env, memo))
    elif isinstance(op, arith.MaxSIOp):
        out = max(_eval(op.lhs, env, memo), _eval(op.rhs, env, memo))
    else:
        raise PointerError(f"a program order computed by {_name(op)}", _op(v))
    memo[v] = out
    return out


def _name(op) -> str:
    return op.name if isinstance(op, Operation) else "a block argument"


def _op(v: SSAValue) -> Operation | None:
    return v.owner if isinstance(v.owner, Operation) else None


def _poly_value(p: Poly, env: Mapping[SSAValue, int], memo: dict) -> int:
    total = 0
    for m, c in p.terms.items():
        term = c
        for s in m:
            term *= _eval(s, env, memo)
        total += term
    return total


# -- the plan ---------------------------------------------------------------------------------


@dataclass
class _Plan:
    func: tt.FuncOp
    accesses: dict[Operation, Access]
    args: dict[BlockArgument, tuple[str, ...]]  # pointer argument -> dimension names
    q: list[Poly]  # per output dimension, its tile index as a polynomial


def _size_name(d, at: Operation) -> BlockArgument:
    """The scalar argument a dimension's mask bound or wrap names."""
    for cand in (d.wrap, *([] if d.bound is None else _single_symbol(d.bound))):
        if isinstance(cand, BlockArgument):
            return cand
    raise _error(
        "a dimension whose size is bounded by no mask and no % wrap of a size argument "
        "(tawac describes each tensor to TMA by its sizes)",
        at,
    )


def _single_symbol(p: Poly) -> list[SSAValue]:
    if len(p.terms) == 1:
        ((m, c),) = p.terms.items()
        if c == 1 and len(m) == 1 and not isinstance(m[0], Range):
            return [m[0]]
    return []


def _arguments(acc: list[Access]) -> dict[BlockArgument, tuple[str, ...]]:
    out: dict[BlockArgument, tuple[str, ...]] = {}
    strides: dict[BlockArgument, tuple[str, ...]] = {}
    for a in acc:
        names = tuple(_size_name(d, a.op).name_hint or "?" for d in a.dims)
        st = tuple(str(d.stride) for d in a.dims)
        if a.base in out and (out[a.base] != names or strides[a.base] != st):
            raise _error(
                f"argument {a.base.name_hint} is accessed with two layouts "
                f"({', '.join(out[a.base])} / {', '.join(names)})",
                a.op,
            )
        out[a.base], strides[a.base] = names, st
    return out


def _grid(func: tt.FuncOp, store: Access) -> list[Poly]:
    """Per output dimension its tile index polynomial `q_d`."""
    shape = store.op.value.type.get_shape()
    q: list[Poly] = []
    for d, dim in enumerate(store.dims):
        t = shape[d]
        if any(c % t for c in dim.origin.terms.values()):
            raise _error(f"the output's origin along dimension {d} is no multiple of {t}", store.op)
        q.append(Poly({m: c // t for m, c in dim.origin.terms.items()}))
    pids = [o for o in func.walk() if isinstance(o, tt.GetProgramIdOp)]
    direct = [_single_symbol(p) for p in q]
    if all(s and isinstance(s[0].owner, tt.GetProgramIdOp) for s in direct):
        if len({s[0].owner.axis_index for s in direct}) == len(direct):
            return q
    if len({p.axis_index for p in pids}) != 1 or pids[0].axis_index != 0:
        raise _error("a program order from more than program id x", store.op)
    _check_bijection(store, q, list(shape), pids[0].result)
    return q


def _check_bijection(store: Access, q: list[Poly], tiles: list[int], pid) -> None:
    sizes = [_size_name(d, store.op) for d in store.dims]
    for values in itertools.product(CHECK_SIZES, repeat=len(sizes)):
        env = dict(zip(sizes, values, strict=True))
        counts = [-(-v // t) for v, t in zip(values, tiles, strict=True)]
        total = 1
        for c in counts:
            total *= c
        seen = set()
        for p in range(total):
            memo: dict = {}
            env[pid] = p
            try:
                point = tuple(_poly_value(x, env, memo) for x in q)
            except PointerError as e:
                raise _error(e.message, e.op) from None
            if point in seen or any(not 0 <= x < c for x, c in zip(point, counts, strict=True)):
                raise _error(
                    f"the program order is not a permutation of the tile grid at "
                    f"{dict((s.name_hint, v) for s, v in zip(sizes, values, strict=True))}",
                    store.op,
                )
            seen.add(point)


def plan(func: tt.FuncOp) -> _Plan:
    try:
        acc = accesses(func)
    except PointerError as e:
        raise _error(e.message, e.op) from None
    stores = [a for a in acc if isinstance(a.op, tt.StoreOp)]
    if not stores:
        raise _error("a kernel that stores nothing", func)
    args = _arguments(acc)
    q = _grid(func, stores[-1])
    _check_wraps(acc, stores[-1])
    return _Plan(func, {a.op: a for a in acc}, args, q)


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
    pids: list[SSAValue] = field(default_factory=list)
    ivs: dict[SSAValue, tuple[SSAValue, int]] = field(default_factory=dict)  # k -> (kk, B)
    #: float tiles given a size-1 dimension (`x[None, :]`): the new value and the axis
    expanded: dict[SSAValue, tuple[SSAValue, int]] = field(default_factory=dict)

    def get(self, v: SSAValue, at: Operation) -> SSAValue:
        """What `v` became in the tile kernel; an error where `at` reads a value the
        conversion does not carry (an index tensor, a pointer, a value from later)."""
        found = self.values.get(v)
        if found is None:
            what = v.owner.name if isinstance(v.owner, Operation) else "a block argument"
            raise _error(f"{at.name} reads a value of {what} that tawac does not convert", at)
        return found

    def add(self, op: Operation) -> Operation:
        self.block.add_op(op)
        return op

    def const(self, c: int) -> SSAValue:
        op = self.add(arith.ConstantOp(IntegerAttr(c, IndexType())))
        return op.result

    def index(self, p: Poly, at: Operation) -> SSAValue:
        """An origin polynomial as index arithmetic over the program ids and loops."""
        rest = p
        total: SSAValue | None = None

        def plus(v: SSAValue) -> None:
            nonlocal total
            total = v if total is None else self.add(arith.AddiOp(total, v)).result

        for d, qd in enumerate(self.plan.q):
            rest, k = _take(rest, qd)
            if k:
                plus(self._scaled(self.pids[d], k))
        for iv, (kk, step) in self.ivs.items():
            c = rest.terms.get((iv,), 0)
            if c:
                if c % step:
                    raise _error(f"an offset of {c} per iteration, not a multiple of {step}", at)
                plus(self._scaled(kk, c // step))
                rest = rest - Poly({(iv,): c})
        c0 = rest.terms.get((), 0)
        rest = rest - Poly.const(c0)
        if rest.terms:
            raise _error(f"a block origin with the term {rest} tawac cannot rebuild", at)
        if c0 or total is None:
            plus(self.const(c0))
        assert total is not None
        return total

    def _scaled(self, v: SSAValue, k: int) -> SSAValue:
        return v if k == 1 else self.add(arith.MuliOp(v, self.const(k))).result


def _take(p: Poly, q: Poly) -> tuple[Poly, int]:
    """`p - k q` for the `k` that removes `q`'s monomials from `p` (0 when absent)."""
    if not q.terms:
        return p, 0
    m, c = next(iter(q.terms.items()))
    if m not in p.terms or p.terms[m] % c:
        return p, 0
    k = p.terms[m] // c
    return p - q.scale(k), k


def _kernel_args(p: _Plan) -> tuple[list, list[BlockArgument | None]]:
    types, source = [], []
    for a in p.func.body.block.args:
        if a in p.args:
            pointee = a.type.pointee
            names = p.args[a]
            types.append(tile.GlobalTensorType([tile.DYNAMIC] * len(names), pointee, names))
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
    em.pids = [em.add(tile.ProgramIdOp(d)).result for d in range(len(p.q))]
    _body(em, func.body.block)
    kernel = tile.KernelOp(func.sym_name.data, types, Region(block))
    return kernel


def _dim_of(em: _Emitter, name: str) -> SSAValue:
    for a, names in em.plan.args.items():
        if name in names:
            return em.add(tile.DimOp(em.get(a, a.owner.parent_op()), names.index(name))).result
    raise _error(f"no tensor has a dimension {name}", None)


def _body(em: _Emitter, block: Block) -> None:
    for op in block.ops:
        if isinstance(op, tt.LoadOp):
            a = em.plan.accesses[op]
            _check_other(op)
            idx = [em.index(d.origin, op) for d in a.dims]
            em.values[op.result] = em.add(
                tile.LoadOp(em.get(a.base, op), idx, op.result.type)
            ).result
        elif isinstance(op, tt.StoreOp):
            a = em.plan.accesses[op]
            idx = [em.index(d.origin, op) for d in a.dims]
            em.add(tile.StoreOp(em.get(op.value, op), em.get(a.base, op), idx))
        elif isinstance(op, tt.DotOp):
            v = [em.get(x, op) for x in (op.a, op.b, op.c)]
            em.values[op.result] = em.add(tile.DotOp(*v)).result
        elif isinstance(op, tt.ExpandDimsOp) and _is_float(op.result):
            em.expanded[op.result] = (em.get(op.src, op), op.axis.value.data)
        elif isinstance(op, tt.BroadcastOp) and _is_float(op.result):
            _broadcast(em, op)
        elif isinstance(op, tt.ReduceOp):
            _reduce(em, op)
        elif isinstance(op, scf.ForOp):
            _loop(em, op)
        elif isinstance(op, tt.ReturnOp):
            em.add(tile.ReturnOp())
        elif isinstance(op, scf.YieldOp):
            continue
        elif _is_data(op) and not _only_other(op):
            clone = op.clone(value_mapper={o: em.get(o, op) for o in op.operands})
            em.add(clone)
            em.values.update(dict(zip(op.results, clone.results, strict=True)))
        elif _is_index_work(op):
            continue  # pointers, index tensors, masks, program order: rebuilt from the plan
        else:
            raise _error(f"{op.name} is not supported", op)


def _is_data(op: Operation) -> bool:
    """An op on float tiles (or a float constant) the tile kernel keeps as it is."""
    if not op.results:
        return False
    if not _is_float(op.results[0]):
        return False
    if isinstance(op, arith.ConstantOp):
        return isinstance(op.value, DenseIntOrFPElementsAttr | FloatAttr)
    return op.dialect_name() in ("arith", "math")


def _is_float(v: SSAValue) -> bool:
    t = v.type
    elem = t.element_type if isinstance(t, TensorType) else t
    return isinstance(elem, AnyFloat)


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
        | arith.AndIOp,
    )


def _check_other(op: tt.LoadOp) -> None:
    if op.other is None:
        return
    c = op.other.owner
    ok = isinstance(c, arith.ConstantOp) and isinstance(c.value, DenseIntOrFPElementsAttr)
    if not ok or not c.value.is_splat() or float(c.value.get_values()[0]) != 0.0:
        raise _error("a masked load whose other value is not 0 (tile.load fills with 0)", op)


def _loop(em: _Emitter, loop: scf.ForOp) -> None:
    """`for k in range(cdiv(S, B))` -> `for kk in range(0, S, B)`, data carried only."""
    size, step = _count_of(em, loop)
    keep = [j for j, a in enumerate(loop.iter_args) if not _is_pointer(a.type)]
    inits = [em.get(loop.iter_args[j], loop) for j in keep]
    body = Block(arg_types=[IndexType(), *(v.type for v in inits)])
    new = scf.ForOp(em.const(0), size, em.const(step), inits, Region(body))
    em.add(new)
    inner = dataclasses.replace(
        em, block=body, values=dict(em.values), ivs=dict(em.ivs), expanded=dict(em.expanded)
    )
    inner.ivs[loop.body.block.args[0]] = (body.args[0], step)
    for j, arg in zip(keep, body.args[1:], strict=True):
        inner.values[loop.body.block.args[1 + j]] = arg
    _body(inner, loop.body.block)
    yielded = loop.body.block.last_op.operands
    inner.add(scf.YieldOp(*[inner.get(yielded[j], loop) for j in keep]))
    for j, r in zip(keep, new.results, strict=True):
        em.values[loop.results[j]] = r


def _is_pointer(t) -> bool:
    return isinstance(t, tt.PointerType) or (
        isinstance(t, TensorType) and isinstance(t.element_type, tt.PointerType)
    )


def _count_of(em: _Emitter, loop: scf.ForOp) -> tuple[SSAValue, int]:
    """(S as an index tensor dimension, B) of a loop `0 to (S + B - 1) / B step 1`."""
    ub = loop.ub.owner
    fail = _error("a loop that is not `for k in range(tl.cdiv(S, B))`", loop)
    if not isinstance(ub, arith.DivSIOp) or not isinstance(ub.lhs.owner, arith.AddiOp):
        raise fail
    step = _const(ub.rhs)
    add = ub.lhs.owner
    if step is None or _const(add.rhs) != step - 1 or not isinstance(add.lhs, BlockArgument):
        raise fail
    if _const(loop.lb) != 0 or _const(loop.step) != 1:
        raise fail
    return _dim_of(em, add.lhs.name_hint or "?"), step


def _const(v: SSAValue) -> int | None:
    op = v.owner
    if isinstance(op, arith.ConstantOp) and isinstance(op.value, IntegerAttr):
        return op.value.value.data
    return None


class ConvertTtir(ModulePass):
    """Every `tt.func` of the module replaced by its tile kernel."""

    name = "convert-ttir"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for func in [o for o in op.body.block.ops if isinstance(o, tt.FuncOp)]:
            kernel = convert(func)
            op.body.block.insert_op_before(kernel, func)
            func.detach()
            func.erase(safe_erase=False)


__all__ = ["ConvertTtir", "convert", "plan"]
