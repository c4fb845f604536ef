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
threaded through regions).  `scf.if` runs both branches under complementary masks (not
one that no active instance takes).

A kernel with scalar atomics (`tile.atomic_cas`, `tile.atomic_xchg`: a lock) runs its
programs one after another, and `scf.while` runs in lockstep as `scf.for` does
(`tawac.runtime.atomics`).

`split-k`'s ops run as the programs of a split tile meet in global memory.  All instances
run each op in lockstep, so at a `tile.arrive` every arriving instance has made its earlier
stores (its partial); the arrivals at one counter take tickets in instance order, the one
whose ticket is count - 1 is the last and resets the counter (`_Interpreter.arrive`).
`tile.split_sum` and `tile.split_softmax` add the workspace's slices in split order, as the
GPU code does.  A stream-K kernel (`tile.split_info`) runs the programs `persistent` would
make of its tiles for a number of CTAs (`stream_k.stream_programs`).  The workspace buffers a pass
adds are kernel arguments: `workspace_args` allocates them as the launcher does,
`interpret_launch` runs a kernel from the caller's arguments alone (grid, workspace, and
the check that the counters are zero again).

The interpreter is the reference for `tawac run`, the GPU tests of user kernels and the
translation validation of the tile-level passes.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Mapping, Sequence
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

from tawac.analysis.grid import decomposition_of, infer_grid, workspace_of
from tawac.dialects import tile
from tawac.runtime import atomics, partitions, races
from tawac.runtime.arguments import WORKSPACE_DTYPES, LaunchError
from tawac.runtime.plans import compute_grid, workspace_shapes
from tawac.runtime.stream_k import StreamPrograms, default_stream_ctas, stream_programs


def _spanned(rank: int, shape: tuple[int, ...], stack: int) -> tuple[int, ...]:
    """The extent of a tile of `shape` in each dimension of a tensor of `rank`: one
    element of the leading dimensions; a stacked tile (`stack` > 1) takes `stack`
    indices of the one before its rows, rows / stack rows each."""
    if stack > 1 and len(shape) == 1:  # a stacked row statistic (split keys' m, l)
        return (1,) * (rank - 2) + (stack, shape[0] // stack)
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
    arith.ShLIOp: torch.bitwise_left_shift,
    arith.ShRSIOp: torch.bitwise_right_shift,
    arith.ShRUIOp: torch.bitwise_right_shift,  # index values are non-negative in practice
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

    def __init__(
        self,
        grid: tuple[int, int, int],
        device: torch.device,
        programs: StreamPrograms | None = None,
    ):
        self.grid = grid
        self.n = grid[0] * grid[1] * grid[2] if programs is None else programs.n
        self.device = device
        self.env: dict[SSAValue, Any] = {}
        self.dot_flops = 0
        self.pids: tuple[Value, Value, Value] | None = None
        """Per instance, its tile's program ids (stream-K's programs); None: the grid's."""
        self.share: tuple[Value, Value, Value] | None = None
        """Per instance, (n, z, base) of `tile.split_info` (stream-K); None without."""
        if programs is not None:
            self.pids = tuple(torch.as_tensor(v, device=device) for v in programs.pids)
            self.share = tuple(torch.as_tensor(v, device=device) for v in programs.share)
        self.places: dict[tuple, Any] = {}  # `addresses`
        self.sources: dict[tuple, tuple[Value, int, Value]] = {}  # `source`
        self.aliased = False  # arguments share memory: `source` keeps no copy
        self.borrowed: dict[SSAValue, Any] = {}  # a get's payload: `partitions.check_reads`
        self.writers = races.Writers(device)  # races between programs

    # ---- helpers

    def get(self, v: SSAValue) -> Any:
        try:
            return self.env[v]
        except KeyError:
            raise InterpretError(f"value {v} used before it was defined") from None

    def full_index(self, value: int) -> Value:
        return torch.full((self.n,), value, dtype=torch.int64, device=self.device)

    def program_ids(self, axis: int) -> Value:
        if self.pids is not None:
            return self.pids[axis]
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
        flat, _, coords = self.addresses(origins, shape, sizes)
        return coords, flat < torch.Size(sizes).numel()

    def addresses(
        self, origins: Sequence[Value], shape: Sequence[int], sizes: Sequence[int]
    ) -> tuple[Value, bool, list[Value]]:
        """The tile of `shape` at `origins` in a tensor of `sizes` in every instance: (P,
        *shape) row-major indices, the size for an element outside; whether none is; the
        coordinates per dimension (broadcastable). The latest 16 are kept by (origins,
        shape, sizes): a store often writes the tile a load read."""
        key = (tuple(id(o) for o in origins), tuple(shape), tuple(sizes))
        hit = self.places.get(key)
        if hit is not None and all(a is b for a, b in zip(hit[0], origins, strict=True)):
            return hit[1]
        rank, numel = len(shape), torch.Size(sizes).numel()
        flat, coords, full = None, [], True
        index = torch.int32 if (rank + 1) * numel < 2**31 else torch.int64  # adds in half
        for d, (o, n, size) in enumerate(zip(origins, shape, sizes, strict=True)):
            view = [self.n] + [1] * rank
            view[d + 1] = n
            i = (o.view(-1, 1) + torch.arange(n, device=self.device)).view(view)
            ok = (i >= 0) & (i < size)
            term = i * torch.Size(sizes[d + 1 :]).numel()
            if not bool(ok.all()):
                full = False
                term = torch.where(ok, term, numel)
            coords.append(i)
            flat = term.to(index) if flat is None else flat + term.to(index)
        found = (flat if full else flat.clamp_(max=numel), full, coords)
        if len(self.places) >= 16:
            del self.places[next(iter(self.places))]
        self.places[key] = (list(origins), found)
        return found

    def source(self, g: Value, padding: float, t: Attribute | None) -> Value:
        """`g` read as 1-d in float32, rounded to the element type of `t`, with `padding`
        (rounded) appended: kept until a store changes `g` (its version; an inference
        tensor has none, nor do arguments that share memory: those are read again)."""
        key = (id(g), _round_dtype(t) if t is not None else None, repr(padding))
        hit = self.sources.get(key)
        version = None if g.is_inference() else g._version
        if hit and hit[0] is g and version is not None and hit[1] == version and not self.aliased:
            return hit[2]
        flat = torch.cat([g.reshape(-1).float(), torch.full((1,), padding, device=self.device)])
        flat = flat if t is None else _round(flat, t)
        self.sources[key] = (g, version, flat)
        return flat

    # ---- tile ops

    def values(
        self,
        g: Value,
        origins: Sequence[Value],
        shape: tuple[int, ...],
        stack: int = 1,
        padding: float = 0.0,
        t: Attribute | None = None,
    ) -> Value:
        """The tile of `shape` of tensor `g` at `origins` (one coordinate per dimension) in
        every instance, float32 (P, *shape), `padding` outside the tensor, rounded to `t`'s
        element type where given. A tile of lower rank than the tensor spans one element of
        the leading dimensions (a stacked one, `stack` of the dimension before its rows)."""
        flat, full, _ = self.addresses(origins, _spanned(g.dim(), shape, stack), g.shape)
        numel = g.numel()
        if full and (t is None or _round_dtype(t) is None):
            vals = g.reshape(-1).index_select(0, flat.view(-1)).to(torch.float32)
        elif numel <= 8 * flat.numel():  # the rounded copy costs less than the tiles
            vals = self.source(g, padding, t).index_select(0, flat.view(-1))
        else:
            vals = g.reshape(-1).index_select(0, flat.clamp(max=numel - 1).view(-1))
            vals = torch.where(flat.view(-1) < numel, vals.to(torch.float32), padding)
            vals = vals if t is None else _round(vals, t)
        return vals.view(self.n, *shape)

    def gather(
        self, g: Value, origins: Sequence[Value], shape: tuple[int, ...], stack: int = 1
    ) -> tuple[Value, Value]:
        """`values` (zero outside the tensor) and the mask of the elements inside it."""
        flat, _, _ = self.addresses(origins, _spanned(g.dim(), shape, stack), g.shape)
        inside = (flat < g.numel()).view(self.n, *shape)
        return self.values(g, origins, shape, stack), inside

    def load(self, op: tile.LoadOp) -> Value:
        t = op.result.type
        assert isinstance(t, TensorType)
        origins, shape = [self.get(i) for i in op.indices], tuple(t.get_shape())
        stack, source = tile.stack_of(op), self.get(op.source)
        return self.values(source, origins, shape, stack, op.padding_value, t)

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

    # ---- split-k's ops (the programs of a split tile meet in global memory)

    def arrive(self, op: tile.ArriveOp, active: Value) -> Value:
        """`tile.arrive`: every active instance whose counter lies inside the tensor
        arrives, in program order (instance index: x fastest, then y, then z) among those
        arriving at the same counter in this execution of the op (in lockstep, all of them
        have made their earlier stores).  An arrival takes the counter's value as its
        ticket and adds 1; the one whose ticket is its `count` - 1 is the last, and sets
        the counter back to 0 (as the lowering's `atom.add` and store of 0).  Outside
        the tensor, or inactive: false, nothing counted."""
        t = self.get(op.counters)
        coords = [self.get(i) for i in op.indices]
        inside = active.clone()
        for d, c in enumerate(coords):
            inside &= (c >= 0) & (c < t.shape[d])
        last = torch.zeros(self.n, dtype=torch.bool, device=self.device)
        who = inside.nonzero().flatten()
        if who.numel() == 0:
            return last
        at = [c[who] for c in coords]
        keys = list(zip(*(a.tolist() for a in at), strict=True))
        before = t[tuple(at)].tolist()
        counts = self.get(op.count)[who].tolist()
        value: dict[tuple[int, ...], int] = {}
        lasts = []
        for i, key, old, count in zip(who.tolist(), keys, before, counts, strict=True):
            ticket = value.get(key, int(old))
            value[key] = ticket + 1
            if ticket + 1 == count:
                lasts.append(i)
                value[key] = 0
        if lasts:
            last[lasts] = True
        places = list(value)
        index = tuple(
            torch.tensor([k[d] for k in places], dtype=torch.int64, device=t.device)
            for d in range(len(coords))
        )
        t[index] = torch.tensor(list(value.values()), dtype=t.dtype, device=t.device)
        return last

    def slice_counts(self, op: tile.SplitSumOp | tile.SplitSoftmaxOp, active: Value) -> Value:
        """The op's `count` per instance, checked against its `max` where active."""
        count = self.get(op.count)
        most = op.max.data
        over = active & (count > most)
        if bool(over.any()):
            bad = int(count[over][0])
            raise InterpretError(f"{op.name}: count {bad} past its max {most}")
        return count

    def split_sum(self, op: tile.SplitSumOp, active: Value) -> Value:
        """`tile.split_sum`: slices 0 .. count - 1 (from the first coordinate on) added
        left to right, in f32; a slice at or past the count adds nothing, an element
        outside the tensor reads as zero."""
        g = self.get(op.source)
        t = op.result.type
        assert isinstance(t, TensorType)
        shape = tuple(t.get_shape())
        count = self.slice_counts(op, active)
        first, *rest = (self.get(i) for i in op.indices)
        total: Value | None = None
        for s in range(op.max.data):
            part = self.values(g, [first + s, *rest], shape)
            part = torch.where(_bcast(s < count, part), part, torch.zeros((), device=self.device))
            total = part if total is None else total + part
        assert total is not None
        return total

    def split_softmax(self, op: tile.SplitSoftmaxOp, active: Value) -> None:
        """`tile.split_softmax`: M = max_s m_s, w_s = base(m_s - M) (0 where m_s is
        -inf, also where M is: a row no slice has), O = sum_s w_s O_s and L = sum_s w_s l_s added in
        split order; slices at or past the count, and elements outside the tensors, read
        as O = 0, m = -inf, l = 0."""
        ot = op.out.type
        assert isinstance(ot, TensorType)
        shape = tuple(ot.get_shape())
        rows = (shape[0],)
        stack = tile.stack_of(op)
        count = self.slice_counts(op, active)
        first, *rest = (self.get(i) for i in op.indices)
        maxes_t, sums_t = self.get(op.row_maxes), self.get(op.row_sums)
        neg = torch.tensor(float("-inf"), device=self.device)
        zero = torch.zeros((), device=self.device)
        ms, parts = [], []
        for s in range(op.max.data):
            live = s < count
            coords = [first + s, *rest]
            m, inside = self.gather(maxes_t, coords[:-1], rows, stack)
            m = torch.where(inside & _bcast(live, inside), m, neg)
            ms.append(m)
            parts.append(live)
        big = torch.stack(ms).amax(dim=0)
        exp = torch.exp2 if op.base.data == "exp2" else torch.exp
        out = torch.zeros((self.n, *shape), device=self.device)
        total = torch.zeros((self.n, *rows), device=self.device)
        for s, (m, live) in enumerate(zip(ms, parts, strict=True)):
            coords = [first + s, *rest]
            w = torch.where(m == neg, zero, exp(m - big))  # NaN (unwritten) shows
            o = self.values(self.get(op.partials), coords, shape, stack)
            l_ = self.values(sums_t, coords[:-1], rows, stack)
            o = torch.where(_bcast(live, o), o, zero)
            l_ = torch.where(_bcast(live, l_), l_, zero)
            out = out + w.unsqueeze(-1) * o
            total = total + w * l_
        self.env[op.out] = out
        self.env[op.row_max] = big
        self.env[op.row_sum] = total

    def split_info(self, op: tile.SplitInfoOp) -> None:
        """`tile.split_info`: this program's share of its tile under the stream-K
        programs the run simulates (`stream_k.stream_programs`)."""
        if self.share is None:
            raise InterpretError(
                "tile.split_info: the run has no stream-K programs (interpret() simulates "
                "them for a kernel decomposed by split-k{stream=...})"
            )
        for r, v in zip(op.results, self.share, strict=True):
            self.env[r] = v

    def store(self, op: tile.StoreOp, active: Value) -> None:
        g = self.get(op.dest)
        value = self.get(op.value)
        if op.transposed is not None:  # swap-ab's C^T: element (i, j) to (j, i)
            value = value.transpose(1, 2)
        shape = _spanned(g.dim(), tuple(value.shape[1:]), tile.stack_of(op))
        value = value.reshape(self.n, *shape)
        flat, full, coords = self.addresses([self.get(i) for i in op.indices], shape, g.shape)
        mask = None if full else flat < g.numel()
        for i, bound in zip(coords, op.bounds, strict=False):
            ok = i < self.get(bound).view(-1, *([1] * len(shape)))
            if not bool(ok.all()):
                mask = ok if mask is None else mask & ok
        if not bool(active.all()):
            mask = _bcast(active, value) if mask is None else mask & _bcast(active, value)
        flat, value = flat.reshape(-1), value.reshape(-1)
        inst = torch.arange(self.n, device=self.device).view(self.n, *([1] * len(shape)))
        inst = inst.expand(self.n, *shape).reshape(-1)
        if mask is not None:  # one linear index per element, compacted in element order
            chosen = mask.expand(self.n, *shape).reshape(-1).nonzero().view(-1)
            flat, value = flat.index_select(0, chosen), value.index_select(0, chosen)
            inst = inst.index_select(0, chosen)
        index = (flat,) if g.is_contiguous() else torch.unravel_index(flat, g.shape)
        value = value.to(g.dtype)
        try:
            self.writers.claim(op.dest, g, flat, index, value, inst, self.n)
        except races.RaceError as e:
            raise InterpretError(str(e)) from None
        (g.view(-1) if g.is_contiguous() else g).index_put_(index, value)

    def atomic_add(self, op: tile.AtomicAddOp, active: Value) -> None:
        """`tile.atomic_add`: every active program's elements inside the tensor added to
        it, the adds of several programs to one element all summed (`index_put_` with
        `accumulate`, in one order on the CPU: deterministic, so two runs of a kernel and
        its transformed version compare; the GPU adds in another order, so its result
        agrees within f32 rounding only)."""
        g = self.get(op.dest)
        value = self.get(op.value)
        shape = _spanned(g.dim(), tuple(value.shape[1:]), 1)
        value = value.reshape(self.n, *shape)
        idx, mask = self.tile_indices([self.get(i) for i in op.indices], shape, g.shape)
        mask = mask & _bcast(active, mask)
        full = tuple(i.expand(self.n, *shape)[mask] for i in idx)
        g.index_put_(full, value[mask].to(g.dtype), accumulate=True)

    def dot(self, op: tile.DotOp, active: Value) -> Value:
        m, n, k = op.mnk()
        self.dot_flops += 2 * m * n * k * int(active.sum())
        lhs, rhs, acc = self.get(op.lhs), self.get(op.rhs), self.get(op.acc)
        if op.transpose_lhs is not None:
            lhs = lhs.transpose(1, 2)
        if op.transpose_rhs is not None:
            rhs = rhs.transpose(1, 2)
        with _full_fp32_matmul():
            product = torch.bmm(lhs.float(), rhs.float())
            return torch.add(acc, product, out=product)  # acc + product, in place

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
            if bool(live.all()):  # else an instance whose loop has ended keeps its values
                carried = new
                continue
            carried = [
                torch.where(_bcast(live, n), n, c) for n, c in zip(new, carried, strict=True)
            ]
        for r, v in zip(op.results, carried, strict=True):
            self.env[r] = v

    def run_if(self, op: scf.IfOp, active: Value) -> None:
        """Runs each branch under its mask; one that no active instance takes is skipped
        (the other's values serve: inactive instances' values are never stored)."""
        cond = self.get(op.cond)
        on_then, on_else = active & cond, active & ~cond
        has_else = bool(op.false_region.blocks)
        run_else = has_else and bool(on_else.any())
        run_then = bool(on_then.any()) or not run_else
        then_vals = self.run_block(op.true_region.block, on_then) if run_then else []
        else_vals = self.run_block(op.false_region.block, on_else) if run_else else []
        for i, r in enumerate(op.results):
            a, b = then_vals[i] if run_then else None, else_vals[i] if run_else else None
            self.env[r] = b if a is None else a if b is None else torch.where(_bcast(cond, a), a, b)

    # ---- dispatch

    def run_op(self, op: Operation, active: Value) -> None:
        if self.borrowed:
            partitions.check_reads(self, op)
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
        if isinstance(op, tile.AtomicAddOp):
            self.atomic_add(op, active)
            return None
        if isinstance(op, tile.DotOp):
            return self.dot(op, active)
        if isinstance(op, tile.ArriveOp):
            return self.arrive(op, active)
        if isinstance(op, tile.SplitSumOp):
            return self.split_sum(op, active)
        if isinstance(op, tile.SplitSoftmaxOp):
            self.split_softmax(op, active)
            return None
        if isinstance(op, tile.SplitInfoOp):
            self.split_info(op)
            return None
        if isinstance(op, tile.SplatOp):
            return self.splat(op)
        if isinstance(op, tile.BroadcastOp):
            return self.broadcast(op)
        if isinstance(op, tile.IotaOp):
            t = op.result.type
            assert isinstance(t, TensorType)
            off = self.get(op.offset).view(self.n, 1)
            if t.get_num_dims() == 1:
                return off + torch.arange(t.get_shape()[0], device=self.device).view(1, -1)
            rows, cols = t.get_shape()
            dim = op.dim.data
            size = rows if dim == 0 else cols
            ar = torch.arange(size, device=self.device)
            ar = ar.view(1, size, 1) if dim == 0 else ar.view(1, 1, size)
            return (off.view(self.n, 1, 1) + ar).expand(self.n, rows, cols)
        if isinstance(op, tile.CmpiOp):
            pred = tile.CMPI_PREDICATES.index(op.predicate.data)  # in _CMPI's order
            return _CMPI[pred](self.get(op.lhs), self.get(op.rhs))
        if isinstance(op, tile.SelectOp):
            return torch.where(self.get(op.cond), self.get(op.true_value), self.get(op.false_value))
        if isinstance(op, tile.ReduceOp):
            v = self.get(op.source)
            dim = 1 + op.dim.data  # the batch of program instances is dimension 0
            if op.kind.data == "max":
                return v.amax(dim=dim)
            if op.kind.data == "min":
                return v.amin(dim=dim)
            return _round(v.sum(dim=dim), op.result.type)
        if isinstance(op, scf.ForOp):
            self.run_for(op, active)
            return None
        if isinstance(op, scf.IfOp):
            self.run_if(op, active)
            return None
        if isinstance(op, tile.SCALAR_ATOMICS):
            return atomics.exchange(self, op, active)
        if isinstance(op, scf.WhileOp):
            try:
                atomics.run_while(self, op, active)
            except atomics.NeverEnds as e:
                raise InterpretError(str(e)) from None
            return None
        if isinstance(op, partitions.OPS):
            return partitions.eval_op(self, op, active)
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


def _stream_ctas(
    kernel_op: tile.KernelOp, args: Sequence[Any], tiles: int, sm_count: int | None
) -> int:
    """The CTAs of a stream-K run: `sm_count`, which the workspace buffers sized in
    multiprocessors (`{"sms": k}`) must hold; without it, the count they were allocated
    for (`workspace_args`); without such buffers, `default_stream_ctas`."""
    workspace = workspace_of(kernel_op)
    names = [a.name_hint for a in kernel_op.body.block.args]
    sized = [
        (name, d, int(entry["sms"]), args[names.index(name)].shape[d])
        for name, w in workspace.items()
        if name in names
        for d, entry in enumerate(w["shape"])
        if "sms" in entry
    ]
    if sm_count is None:
        if not sized:
            return default_stream_ctas(tiles, _max_splits(kernel_op))
        ctas = min(size // k for _, _, k, size in sized)
        if ctas < 1:
            raise InterpretError("stream-K: the workspace holds no CTA's slots")
        return ctas
    for name, d, k, size in sized:
        if size < k * sm_count:
            raise InterpretError(
                f"stream-K: workspace buffer {name!r} has {size} elements along dimension "
                f"{d}, too few for {sm_count} CTAs ({k} each): allocate it with "
                f"workspace_args(kernel, shapes, sm_count={sm_count})"
            )
    if sm_count < 1:
        raise InterpretError(f"stream-K needs at least one CTA, got sm_count={sm_count}")
    return sm_count


def _max_splits(kernel_op: tile.KernelOp) -> int:
    """Stream-K's most programs per tile (the kernel's `tawac.decomposition`)."""
    decision = decomposition_of(kernel_op)
    if decision.get("kind") != "stream_k":
        raise InterpretError(
            "tile.split_info needs the kernel's stream-K decomposition (tawac.decomposition "
            f'= {{kind = "stream_k", max_splits}}), got {decision}'
        )
    return int(decision["max_splits"])


def interpret(
    kernel_op: tile.KernelOp,
    args: Sequence[torch.Tensor | float | int],
    grid: tuple[int, int, int],
    *,
    sm_count: int | None = None,
) -> dict[str, int]:
    """Runs every program instance of `kernel_op` over `grid` at once.

    `args` follow the kernel's signature: torch tensors for `!tile.tensor` arguments
    (any float dtype, any device; stores write into them in place) and python numbers for
    scalars.  Loads read values as float32 after rounding them to the declared element
    type; stores convert to the destination tensor's dtype.  The workspace buffers a pass
    added (`tawac.workspace`: split-k's partials and tickets) are arguments too, at their
    places in the signature: `workspace_args` allocates them as the launcher does, and
    `launch_args` / `interpret_launch` put them in place.

    A stream-K kernel (`tile.split_info`, `split-k{stream=S}`) runs the programs
    `persistent` would make of the tiles of `grid` (the grid its stores imply,
    `infer_grid`) on `sm_count` CTAs (`stream_k.stream_programs`); without `sm_count`, on as many
    CTAs as its workspace was allocated for (`{"sms": k}` dimensions: size / k). A kernel
    with a scalar atomic (a lock) runs its programs one after another, each alone
    (`tawac.runtime.atomics`).

    Returns statistics: `{"dot_flops": 2*M*N*K summed over the tile.dot ops executed by
    live instances}` (tile-level: ragged edge tiles count in full), `"programs"`: the
    program instances run (stream-K's programs, or the grid's).
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
    programs = None
    tiles = grid[0] * grid[1] * grid[2]
    if tiles and any(isinstance(o, tile.SplitInfoOp) for o in kernel_op.walk()):
        ctas = _stream_ctas(kernel_op, args, tiles, sm_count)
        programs = stream_programs(grid, ctas, _max_splits(kernel_op))
    aliased = len({t.untyped_storage().data_ptr() for t in tensors}) < len(tensors)
    serial = atomics.serial(kernel_op)
    if serial and programs is not None:
        raise InterpretError("a stream-K kernel with scalar atomics is not supported")
    stats = {"dot_flops": 0, "programs": 0}
    for pids in atomics.one_by_one(grid, device) if serial else [None]:
        interp = _Interpreter(grid, device, programs)
        if pids is not None:  # one program alone (a kernel with scalar atomics)
            interp.n, interp.pids = 1, pids
        interp.aliased = aliased
        if interp.n == 0:
            continue
        for ba, value in zip(block.args, args, strict=True):
            interp.env[ba] = _bind_arg(ba.type, value, interp.n, device)
        interp.run_block(block, torch.ones(interp.n, dtype=torch.bool, device=device))
        partitions.finish(interp)
        stats["dot_flops"] += interp.dot_flops
        stats["programs"] += interp.n
    return stats


# ---- launching as the launcher does: the grid and the workspace from the argument shapes

#: What a workspace buffer that need not be zero holds before the launch: garbage that
#: shows (NaN; -7 for counters), since the launcher allocates it uninitialised.
_POISON = {"f32": float("nan"), "i32": -7}


def user_arguments(kernel_op: tile.KernelOp) -> list[str]:
    """The names of the arguments a caller passes (the sidecar's "args", in the kernel's
    order): all but the workspace buffers a pass added."""
    workspace = workspace_of(kernel_op)
    names = [a.name_hint or f"arg{i}" for i, a in enumerate(kernel_op.body.block.args)]
    return [n for n in names if n not in workspace]


def launch_grid(
    kernel_op: tile.KernelOp, shapes: Mapping[str, Sequence[int]]
) -> tuple[int, int, int]:
    """The grid `interpret` runs at these argument shapes (by name): the one the kernel's
    stores imply (`infer_grid`) or a pass fixed, evaluated as the launcher does."""
    try:
        return compute_grid(infer_grid(kernel_op), shapes)
    except LaunchError as e:
        raise InterpretError(str(e)) from None


def workspace_args(
    kernel_op: tile.KernelOp,
    shapes: Mapping[str, Sequence[int]],
    sm_count: int | None = None,
    device: torch.device | str | None = None,
) -> dict[str, torch.Tensor]:
    """The kernel's workspace buffers (`tawac.analysis.grid.workspace_of`), by name in
    the kernel's order, allocated at these argument shapes (by name) as the launcher
    allocates them (`tawac.runtime.plans.workspace_shapes`): a "zero" buffer (the
    tickets) zeroed, the others poisoned (NaN, -7: the launcher leaves them
    uninitialised). A dimension sized in multiprocessors (`{"sms": k}`, stream-K's) takes
    k * `sm_count`; without `sm_count`, `default_stream_ctas` of the launch's tiles, the
    count `interpret` then simulates."""
    workspace = workspace_of(kernel_op)
    if not workspace:
        return {}
    buffers = [{"name": n, **w} for n, w in workspace.items()]
    if sm_count is None and any("sms" in e for w in buffers for e in w["shape"]):
        gx, gy, gz = launch_grid(kernel_op, shapes)
        tiles = gx * gy * gz
        sm_count = default_stream_ctas(tiles, _max_splits(kernel_op))
    try:
        sizes = workspace_shapes(buffers, shapes, sm_count)
    except LaunchError as e:
        raise InterpretError(str(e)) from None
    out = {}
    for w, shape in zip(buffers, sizes, strict=True):
        dtype = getattr(torch, WORKSPACE_DTYPES[w["dtype"]][0])
        fill = 0 if w.get("zero", False) else _POISON[w["dtype"]]
        out[w["name"]] = torch.full(shape, fill, dtype=dtype, device=device)
    return out


def _shapes_of(kernel_op: tile.KernelOp, args: Sequence[Any]) -> dict[str, tuple[int, ...]]:
    names = user_arguments(kernel_op)
    if len(args) != len(names):
        raise InterpretError(
            f"@{kernel_op.kernel_name} takes {len(names)} arguments besides its workspace "
            f"({', '.join(names)}), got {len(args)}"
        )
    return {
        n: tuple(a.shape) for n, a in zip(names, args, strict=True) if isinstance(a, torch.Tensor)
    }


def launch_args(
    kernel_op: tile.KernelOp, args: Sequence[Any], sm_count: int | None = None
) -> list[Any]:
    """The kernel's full argument list: `args` (the caller's, `user_arguments` order) with
    freshly allocated workspace buffers (`workspace_args`, on the device of the first
    tensor) at their places."""
    shapes = _shapes_of(kernel_op, args)
    tensors = [a for a in args if isinstance(a, torch.Tensor)]
    device = tensors[0].device if tensors else None
    workspace = workspace_args(kernel_op, shapes, sm_count, device)
    given = iter(args)
    names = [a.name_hint or f"arg{i}" for i, a in enumerate(kernel_op.body.block.args)]
    return [workspace[n] if n in workspace else next(given) for n in names]


def interpret_launch(
    kernel_op: tile.KernelOp, args: Sequence[Any], *, sm_count: int | None = None
) -> dict[str, int]:
    """`interpret` as a launch: `args` are the caller's (`user_arguments` order, no
    workspace), the grid is `launch_grid`'s, the workspace is allocated
    (`launch_args`); afterwards every "zero" workspace buffer must be zero again (the
    launcher zeroes it once, at its allocation: a ticket left counting breaks the next
    launch), else an `InterpretError`. Returns `interpret`'s statistics."""
    full = launch_args(kernel_op, args, sm_count)
    grid = launch_grid(kernel_op, _shapes_of(kernel_op, args))
    stats = interpret(kernel_op, full, grid, sm_count=sm_count)
    names = [a.name_hint for a in kernel_op.body.block.args]
    for name, w in workspace_of(kernel_op).items():
        buf = full[names.index(name)]
        if w.get("zero", False) and bool(buf.count_nonzero()):
            raise InterpretError(
                f"@{kernel_op.kernel_name}: workspace buffer {name} is not zero after the "
                f"launch ({int(buf.count_nonzero())} elements), which the next launch "
                "reads as its start"
            )
    return stats
