"""Reference interpreter of the `tile` dialect on torch, vectorized over program instances.

The kernel body runs once; every SSA value carries a leading batch axis with one entry per
program instance (P = grid x * grid y * grid z, x fastest):

- `index` / integer values: int64 tensors of shape (P,); `i1` values: bool (P,);
- `f32` scalars: float32 (P,);
- tiles `tensor<AxBxT>`: float32 tensors of shape (P, A, B).  Every float result whose
  declared element type is narrower than f32 (bf16, f16, f8E4M3FN, f8E5M2) is rounded to
  that type, so `arith.truncf` rounds and `arith.extf` is exact.

`tile.load` gathers with out-of-bounds elements read as zero, `tile.store` scatters with
out-of-bounds elements dropped, `tile.dot` is a batched fp32 matmul.  `scf.for` loops may
have different trip counts per instance: the loop runs to the largest one, and an instance
whose loop has ended keeps its loop-carried values and does not store (an `active` mask is
threaded through regions).  `scf.if` runs both branches under complementary masks.

The interpreter is the reference for `tawac run` and the GPU tests of user kernels.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import torch
from xdsl.dialects import arith, math, scf
from xdsl.dialects.builtin import (
    BFloat16Type,
    DenseIntOrFPElementsAttr,
    Float8E4M3FNType,
    Float8E5M2Type,
    Float16Type,
    Float32Type,
    Float64Type,
    FloatAttr,
    IntegerAttr,
    IntegerType,
    TensorType,
)
from xdsl.ir import Attribute, Block, Operation, SSAValue

from tawac.dialects import tile


def _spanned(rank: int, shape: tuple[int, ...], stack: int) -> tuple[int, ...]:
    """The extent of a tile of `shape` in each dimension of a tensor of `rank`: one
    element of the leading dimensions; a stacked tile (`stack` > 1) takes `stack`
    indices of the one before its rows, rows / stack rows each."""
    if stack > 1:
        rows, cols = shape
        return (1,) * (rank - 3) + (stack, rows // stack, cols)
    return (1,) * (rank - len(shape)) + shape


class InterpretError(RuntimeError):
    """The interpreter met an op or a value it does not support."""


Value = torch.Tensor


def _element_type(t: Attribute) -> Attribute:
    return t.element_type if isinstance(t, TensorType) else t


def _round_dtype(t: Attribute) -> torch.dtype | None:
    """The torch dtype to round results of type t to, or None when f32 (no rounding)."""
    et = _element_type(t)
    if isinstance(et, BFloat16Type):
        return torch.bfloat16
    if isinstance(et, Float16Type):
        return torch.float16
    if isinstance(et, Float8E4M3FNType):
        return torch.float8_e4m3fn
    if isinstance(et, Float8E5M2Type):
        return torch.float8_e5m2
    return None


def _is_float(t: Attribute) -> bool:
    return isinstance(
        _element_type(t),
        BFloat16Type | Float16Type | Float32Type | Float64Type | Float8E4M3FNType | Float8E5M2Type,
    )


def _round(x: Value, t: Attribute) -> Value:
    """x (float32) rounded to the element type of t, kept in float32."""
    dt = _round_dtype(t)
    if dt is None:
        return x
    return x.to(dt).to(torch.float32)


def _bcast(mask: Value, like: Value) -> Value:
    """A (P,) mask reshaped to broadcast against a (P, ...) value."""
    return mask.view(mask.shape[0], *([1] * (like.dim() - 1)))


def _safe_divisor(b: Value) -> Value:
    """Zero divisors (undefined behaviour, e.g. in inactive instances) replaced by 1."""
    return torch.where(b == 0, torch.ones_like(b), b)


def _ceildiv(a: Value, b: Value) -> Value:
    return -torch.div(-a, _safe_divisor(b), rounding_mode="floor")


_CMPI: dict[int, Callable[[Value, Value], Value]] = {
    0: torch.eq,
    1: torch.ne,
    2: torch.lt,
    3: torch.le,
    4: torch.gt,
    5: torch.ge,
    6: torch.lt,  # unsigned: index values are non-negative in practice
    7: torch.le,
    8: torch.gt,
    9: torch.ge,
}

_CMPF: dict[int, Callable[[Value, Value], Value]] = {
    0: lambda a, b: torch.zeros_like(a, dtype=torch.bool),
    1: torch.eq,
    2: torch.gt,
    3: torch.ge,
    4: torch.lt,
    5: torch.le,
    6: lambda a, b: (a != b) & ~a.isnan() & ~b.isnan(),
    7: lambda a, b: ~a.isnan() & ~b.isnan(),
    8: lambda a, b: (a == b) | a.isnan() | b.isnan(),
    9: lambda a, b: ~(a <= b),
    10: lambda a, b: ~(a < b),
    11: lambda a, b: ~(a >= b),
    12: lambda a, b: ~(a > b),
    13: torch.ne,
    14: lambda a, b: a.isnan() | b.isnan(),
    15: lambda a, b: torch.ones_like(a, dtype=torch.bool),
}

_INT_BINARY: dict[type[Operation], Callable[[Value, Value], Value]] = {
    arith.AddiOp: torch.add,
    arith.SubiOp: torch.sub,
    arith.MuliOp: torch.mul,
    arith.DivSIOp: lambda a, b: torch.div(a, _safe_divisor(b), rounding_mode="trunc"),
    arith.DivUIOp: lambda a, b: torch.div(a, _safe_divisor(b), rounding_mode="trunc"),
    arith.FloorDivSIOp: lambda a, b: torch.div(a, _safe_divisor(b), rounding_mode="floor"),
    arith.CeilDivSIOp: _ceildiv,
    arith.CeilDivUIOp: _ceildiv,
    arith.RemSIOp: lambda a, b: torch.fmod(a, _safe_divisor(b)),
    arith.RemUIOp: lambda a, b: torch.fmod(a, _safe_divisor(b)),
    arith.MinSIOp: torch.minimum,
    arith.MaxSIOp: torch.maximum,
    arith.MinUIOp: torch.minimum,
    arith.MaxUIOp: torch.maximum,
    arith.AndIOp: torch.bitwise_and,
    arith.OrIOp: torch.bitwise_or,
    arith.XOrIOp: torch.bitwise_xor,
}

_FLOAT_BINARY: dict[type[Operation], Callable[[Value, Value], Value]] = {
    arith.AddfOp: torch.add,
    arith.SubfOp: torch.sub,
    arith.MulfOp: torch.mul,
    arith.DivfOp: torch.div,
    arith.MaximumfOp: torch.maximum,
    arith.MinimumfOp: torch.minimum,
    arith.MaxnumfOp: torch.fmax,
    arith.MinnumfOp: torch.fmin,
    math.PowFOp: torch.pow,
}

_FLOAT_UNARY: dict[type[Operation], Callable[[Value], Value]] = {
    arith.NegfOp: torch.neg,
    arith.TruncFOp: lambda x: x,  # the rounding to the result type does the work
    arith.ExtFOp: lambda x: x,
    math.ExpOp: torch.exp,
    math.Exp2Op: torch.exp2,
    math.LogOp: torch.log,
    math.Log2Op: torch.log2,
    math.SqrtOp: torch.sqrt,
    math.RsqrtOp: torch.rsqrt,
    math.TanhOp: torch.tanh,
    math.AbsFOp: torch.abs,
    math.ErfOp: torch.erf,
}


@contextlib.contextmanager
def _full_fp32_matmul() -> Iterator[None]:
    """Disables TF32 inside matmuls (the reference must be exact fp32)."""
    saved = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = False
    try:
        yield
    finally:
        torch.backends.cuda.matmul.allow_tf32 = saved


class _Interpreter:
    """Holds the SSA environment of one vectorized run."""

    def __init__(self, grid: tuple[int, int, int], device: torch.device):
        self.grid = grid
        self.n = grid[0] * grid[1] * grid[2]
        self.device = device
        self.env: dict[SSAValue, Any] = {}
        self.dot_flops = 0

    # ---- helpers

    def get(self, v: SSAValue) -> Any:
        try:
            return self.env[v]
        except KeyError:
            raise InterpretError(f"value {v} used before it was defined") from None

    def full_index(self, value: int) -> Value:
        return torch.full((self.n,), value, dtype=torch.int64, device=self.device)

    def program_ids(self, axis: int) -> Value:
        pid = torch.arange(self.n, dtype=torch.int64, device=self.device)
        gx, gy, _ = self.grid
        if axis == 0:
            return pid % gx
        if axis == 1:
            return (pid // gx) % gy
        return pid // (gx * gy)

    def constant(self, op: arith.ConstantOp) -> Value:
        attr, t = op.value, op.result.type
        if isinstance(attr, DenseIntOrFPElementsAttr):
            assert isinstance(t, TensorType)
            shape = tuple(t.get_shape())
            dtype = torch.float32 if _is_float(t) else torch.int64
            if attr.is_splat():
                v = next(iter(attr.iter_values()))
                tile_v = torch.full(shape, v, dtype=dtype, device=self.device)
            else:
                tile_v = torch.tensor(
                    list(attr.get_values()), dtype=dtype, device=self.device
                ).reshape(shape)
            if dtype == torch.float32:
                tile_v = _round(tile_v, t)
            return tile_v.unsqueeze(0).expand(self.n, *shape)
        if isinstance(attr, FloatAttr):
            x = torch.full((self.n,), float(attr.value.data), device=self.device)
            return _round(x, t)
        if isinstance(attr, IntegerAttr):
            if isinstance(t, IntegerType) and t.width.data == 1:
                return torch.full((self.n,), attr.value.data != 0, device=self.device)
            return self.full_index(int(attr.value.data))
        raise InterpretError(f"arith.constant: unsupported value {attr}")

    def tile_indices(
        self, origins: Sequence[Value], shape: Sequence[int], sizes: Sequence[int]
    ) -> tuple[list[Value], Value]:
        """Element coordinates per dimension (broadcastable to (P, *shape)), in-bounds mask."""
        rank = len(shape)
        idx, mask = [], None
        for d, (o, n, size) in enumerate(zip(origins, shape, sizes, strict=True)):
            view = [self.n] + [1] * rank
            view[d + 1] = n
            i = (o.view(-1, 1) + torch.arange(n, device=self.device).view(1, -1)).view(view)
            ok = (i >= 0) & (i < size)
            mask = ok if mask is None else mask & ok
            idx.append(i)
        assert mask is not None
        return idx, mask.expand(self.n, *shape)

    # ---- tile ops

    def load(self, op: tile.LoadOp) -> Value:
        g = self.get(op.source)
        t = op.result.type
        assert isinstance(t, TensorType)
        shape = tuple(t.get_shape())
        if g.numel() == 0:
            return torch.zeros((self.n, *shape), device=self.device)
        # A tile of lower rank than the tensor spans one element of the leading dimensions
        # (a stacked one, `stack` of the dimension before its rows).
        full = _spanned(g.dim(), shape, tile.stack_of(op))
        idx, mask = self.tile_indices([self.get(i) for i in op.indices], full, g.shape)
        clamped = [i.clamp(0, size - 1) for i, size in zip(idx, g.shape, strict=True)]
        vals = g[tuple(clamped)].to(torch.float32)
        out = torch.where(mask, vals, torch.zeros((), device=self.device))
        return _round(out.reshape(self.n, *shape), t)

    def load_index(self, op: tile.LoadIndexOp) -> Value:
        """Each program's element of the i32 tensor as an index; -1 outside it."""
        t = self.get(op.source)
        coords = [self.get(i) for i in op.indices]
        inside = torch.ones(self.n, dtype=torch.bool, device=self.device)
        for d, c in enumerate(coords):
            inside &= (c >= 0) & (c < t.shape[d])
        clamped = tuple(c.clamp(0, max(0, t.shape[d] - 1)) for d, c in enumerate(coords))
        if t.numel() == 0:
            return self.full_index(-1)
        return torch.where(inside, t[clamped].to(torch.int64), -1)

    def store(self, op: tile.StoreOp, active: Value) -> None:
        g = self.get(op.dest)
        value = self.get(op.value)
        if op.transposed is not None:  # swap-ab's C^T: element (i, j) to (j, i)
            value = value.transpose(1, 2)
        shape = _spanned(g.dim(), tuple(value.shape[1:]), tile.stack_of(op))
        value = value.reshape(self.n, *shape)
        idx, mask = self.tile_indices([self.get(i) for i in op.indices], shape, g.shape)
        for i, bound in zip(idx, op.bounds, strict=False):
            b = self.get(bound).view(-1, *([1] * len(shape)))
            mask = mask & (i < b).expand(self.n, *shape)
        mask = mask & _bcast(active, mask)
        full = [i.expand(self.n, *shape)[mask] for i in idx]
        g[tuple(full)] = value[mask].to(g.dtype)

    def dot(self, op: tile.DotOp, active: Value) -> Value:
        m, n, k = op.mnk()
        self.dot_flops += 2 * m * n * k * int(active.sum())
        lhs, rhs, acc = self.get(op.lhs), self.get(op.rhs), self.get(op.acc)
        if op.transpose_lhs is not None:
            lhs = lhs.transpose(1, 2)
        if op.transpose_rhs is not None:
            rhs = rhs.transpose(1, 2)
        with _full_fp32_matmul():
            return acc + torch.bmm(lhs.float(), rhs.float())

    def splat(self, op: tile.SplatOp) -> Value:
        t = op.result.type
        assert isinstance(t, TensorType)
        shape = tuple(t.get_shape())
        v = self.get(op.value)
        return _round(v.view(self.n, *([1] * len(shape))).expand(self.n, *shape), t)

    def broadcast(self, op: tile.BroadcastOp) -> Value:
        t = op.result.type
        assert isinstance(t, TensorType)
        rows, cols = t.get_shape()
        v = self.get(op.source)
        if op.dim.data == 1:
            return v.unsqueeze(1).expand(self.n, rows, cols)
        return v.unsqueeze(2).expand(self.n, rows, cols)

    # ---- control flow

    def run_block(self, block: Block, active: Value) -> list[Any]:
        """Runs a block's ops; returns the values of its terminator's operands."""
        for op in block.ops:
            if isinstance(op, scf.YieldOp | tile.ReturnOp):
                return [self.get(v) for v in op.operands]
            self.run_op(op, active)
        return []

    def run_for(self, op: scf.ForOp, active: Value) -> None:
        lb, ub, step = self.get(op.lb), self.get(op.ub), self.get(op.step)
        if bool((step[active] <= 0).any()):
            raise InterpretError("scf.for: step must be positive")
        trips = _ceildiv(ub - lb, step).clamp(min=0)
        trips = torch.where(active, trips, torch.zeros_like(trips))
        carried = [self.get(v) for v in op.iter_args]
        iv_arg, *iter_block_args = op.body.block.args
        n_max = int(trips.max()) if trips.numel() else 0
        for i in range(n_max):
            live = active & (i < trips)
            self.env[iv_arg] = lb + i * step
            for a, v in zip(iter_block_args, carried, strict=True):
                self.env[a] = v
            new = self.run_block(op.body.block, live)
            carried = [
                torch.where(_bcast(live, n), n, c) for n, c in zip(new, carried, strict=True)
            ]
        for r, v in zip(op.results, carried, strict=True):
            self.env[r] = v

    def run_if(self, op: scf.IfOp, active: Value) -> None:
        cond = self.get(op.cond)
        then_vals = self.run_block(op.true_region.block, active & cond)
        if not op.results:
            if op.false_region.blocks:
                self.run_block(op.false_region.block, active & ~cond)
            return
        else_vals = self.run_block(op.false_region.block, active & ~cond)
        for r, a, b in zip(op.results, then_vals, else_vals, strict=True):
            self.env[r] = torch.where(_bcast(cond, a), a, b)

    # ---- dispatch

    def run_op(self, op: Operation, active: Value) -> None:
        result = self.eval_op(op, active)
        if result is None:
            return
        self.env[op.results[0]] = result

    def eval_op(self, op: Operation, active: Value) -> Value | None:
        """Evaluates one op; returns its single result (or None when it sets env itself)."""
        kind = type(op)
        if kind in _INT_BINARY:
            return _INT_BINARY[kind](self.get(op.operands[0]), self.get(op.operands[1]))
        if kind in _FLOAT_BINARY:
            r = _FLOAT_BINARY[kind](self.get(op.operands[0]), self.get(op.operands[1]))
            return _round(r, op.results[0].type)
        if kind in _FLOAT_UNARY:
            return _round(_FLOAT_UNARY[kind](self.get(op.operands[0])), op.results[0].type)
        if isinstance(op, arith.ConstantOp):
            return self.constant(op)
        if isinstance(op, arith.CmpiOp):
            pred = _CMPI[op.predicate.value.data]
            return pred(self.get(op.lhs), self.get(op.rhs))
        if isinstance(op, arith.CmpfOp):
            pred = _CMPF[op.predicate.value.data]
            return pred(self.get(op.lhs), self.get(op.rhs))
        if isinstance(op, arith.SelectOp):
            c, a, b = (self.get(v) for v in op.operands)
            return torch.where(_bcast(c, a) if c.dim() < a.dim() else c, a, b)
        if isinstance(op, arith.IndexCastOp | arith.ExtSIOp | arith.ExtUIOp | arith.TruncIOp):
            return self.get(op.operands[0])
        if isinstance(op, arith.SIToFPOp | arith.UIToFPOp):
            return _round(self.get(op.operands[0]).to(torch.float32), op.results[0].type)
        if isinstance(op, arith.FPToSIOp | arith.FPToUIOp):
            return self.get(op.operands[0]).to(torch.int64)
        if isinstance(op, math.FmaOp):
            a, b, c = (self.get(v) for v in op.operands)
            return _round(a * b + c, op.results[0].type)
        if isinstance(op, tile.ProgramIdOp):
            return self.program_ids(op.axis.data)
        if isinstance(op, tile.DimOp):
            return self.full_index(int(self.get(op.source).shape[op.dim.data]))
        if isinstance(op, tile.LoadIndexOp):
            return self.load_index(op)
        if isinstance(op, tile.LoadOp):
            return self.load(op)
        if isinstance(op, tile.StoreOp):
            self.store(op, active)
            return None
        if isinstance(op, tile.DotOp):
            return self.dot(op, active)
        if isinstance(op, tile.SplatOp):
            return self.splat(op)
        if isinstance(op, tile.BroadcastOp):
            return self.broadcast(op)
        if isinstance(op, tile.IotaOp):
            t = op.result.type
            assert isinstance(t, TensorType)
            rows, cols = t.get_shape()
            dim = op.dim.data
            size = rows if dim == 0 else cols
            ar = torch.arange(size, device=self.device)
            ar = ar.view(1, size, 1) if dim == 0 else ar.view(1, 1, size)
            off = self.get(op.offset).view(self.n, 1, 1)
            return (off + ar).expand(self.n, rows, cols)
        if isinstance(op, tile.CmpiOp):
            a, b = self.get(op.lhs), self.get(op.rhs)
            return {
                "eq": a == b,
                "ne": a != b,
                "slt": a < b,
                "sle": a <= b,
                "sgt": a > b,
                "sge": a >= b,
            }[op.predicate.data]
        if isinstance(op, tile.SelectOp):
            return torch.where(self.get(op.cond), self.get(op.true_value), self.get(op.false_value))
        if isinstance(op, tile.ReduceOp):
            v = self.get(op.source)
            dim = 1 + op.dim.data  # the batch of program instances is dimension 0
            if op.kind.data == "max":
                return v.amax(dim=dim)
            return _round(v.sum(dim=dim), op.result.type)
        if isinstance(op, scf.ForOp):
            self.run_for(op, active)
            return None
        if isinstance(op, scf.IfOp):
            self.run_if(op, active)
            return None
        raise InterpretError(f"the interpreter does not support {op.name}")


def _bind_arg(arg_type: Attribute, value: Any, n: int, device: torch.device) -> Any:
    if isinstance(arg_type, tile.GlobalTensorType):
        if not isinstance(value, torch.Tensor):
            raise InterpretError(f"expected a tensor for {arg_type}, got {type(value)}")
        if value.dim() != arg_type.rank:
            raise InterpretError(f"expected rank {arg_type.rank}, got shape {tuple(value.shape)}")
        return value
    if isinstance(value, torch.Tensor):
        value = value.item()
    if isinstance(arg_type, Float32Type):
        return torch.full((n,), float(value), dtype=torch.float32, device=device)
    return torch.full((n,), int(value), dtype=torch.int64, device=device)


def interpret(
    kernel_op: tile.KernelOp,
    args: Sequence[torch.Tensor | float | int],
    grid: tuple[int, int, int],
) -> dict[str, int]:
    """Runs every program instance of `kernel_op` over `grid` at once.

    `args` follow the kernel's signature: torch tensors for `!tile.tensor` arguments
    (any float dtype, any device; stores write into them in place) and python numbers for
    scalars.  Loads read values as float32 after rounding them to the declared element
    type; stores convert to the destination tensor's dtype.

    Returns statistics: `{"dot_flops": 2*M*N*K summed over the tile.dot ops executed by
    live instances}` (tile-level: ragged edge tiles count in full).
    """
    block = kernel_op.body.block
    if len(args) != len(block.args):
        raise InterpretError(
            f"@{kernel_op.kernel_name} takes {len(block.args)} arguments, got {len(args)}"
        )
    grid = tuple(int(g) for g in grid)  # type: ignore[assignment]
    if len(grid) != 3:
        raise InterpretError(f"grid must have 3 entries, got {grid}")
    tensors = [a for a in args if isinstance(a, torch.Tensor)]
    device = tensors[0].device if tensors else torch.device("cpu")
    interp = _Interpreter(grid, device)
    if interp.n == 0:
        return {"dot_flops": 0}
    for ba, value in zip(block.args, args, strict=True):
        interp.env[ba] = _bind_arg(ba.type, value, interp.n, device)
    active = torch.ones(interp.n, dtype=torch.bool, device=device)
    interp.run_block(block, active)
    return {"dot_flops": interp.dot_flops}
