"""The grid: per output tensor dimension its block index `q_d` and the `tile.program_id`
axis it takes; dimensions one program id is split into are checked to cover their block
grid once over the programs (`_Check`)."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

from xdsl.ir import BlockArgument

from tawac.analysis.pointers import Access, PointerError, Poly, Range
from tawac.dialects import tt
from tawac.passes.convert_ttir.common import _error
from tawac.passes.convert_ttir.scalars import (
    _arguments_of,
    _direct,
    _eval,
    _loop_indices,
    _pid_axes,
    _poly_value,
    _program_symbols,
    _rem_count,
    _rem_size,
    _single_symbol,
    _Source,
    _Unsupported,
)
from tawac.passes.convert_ttir.tensors import (
    _is_store,
    _Tensor,
    scalar_atomic,
    tensor_dims,
    tile_shape,
)
from tawac.support.diagnostics import CompileError

#: Sizes at which a computed program order is checked to cover the tile grid once.
CHECK_SIZES = (1, 63, 64, 127, 128, 129, 255, 256, 257, 1000, 1024, 3000)


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
    shape = tile_shape(store.op)
    dims = tensor_dims(store)
    q: list[Poly] = []
    for d, tile_index in dims:
        t = 1 if tile_index is None else shape[tile_index]
        programs = _program_part(d.origin, store.op)
        if any(c % t for c in programs.terms.values()):
            raise _error(f"the output's origin along a dimension is no multiple of {t}", store.op)
        q.append(Poly({m: c // t for m, c in programs.terms.items()}))
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
        # a program id is its own block index; a grid-stride loop's row is checked
        # (`_Check`: its row count is the output's block count)
        direct = [i for i in members if _direct(q[i]) == axis and not _loop_row(q[i])]
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


def _loop_row(qd: Poly) -> bool:
    """The block index is a grid-stride loop's row (not a program id)."""
    return any(isinstance(s, BlockArgument) for s in _single_symbol(qd))


def _program_part(origin: Poly, at) -> Poly:
    """The terms of an output origin that say which program writes the block: all but
    those of a loop's index inside the program (`for off in range(0, N, BLOCK)`: each
    program writes every block its loop walks); a term of both is refused."""
    out: dict[tuple, int] = {}
    for m, c in origin.terms.items():
        walked = [s for s in m if not isinstance(s, Range) and _loop_indices(s)]
        if not walked:
            out[m] = c
        elif any(_program_symbols(s) for s in m if not isinstance(s, Range)):
            raise _error(f"an output origin term {Poly({m: c})} of a program and a loop index", at)
    return Poly(out)


#: Counts tried for an output dimension no size argument bounds.
FREE_COUNTS = (1, 2, 3, 5)

_TILES = "the persistent loop's tile count is not the output's tile grid at "
_PERMUTATION = "the program order is not a permutation of the tile grid at "


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
        order: _Order | None = None
        for n, combo in enumerate(itertools.product(*self._choices())):
            env = {s: v for s, v, _ in combo if s is not None}
            env |= {a: env[b] for a, b in tie.items()}
            counts = [c for _, _, c in combo]
            total = 1
            for c in counts:
                total *= c
            where = ", ".join(f"{s.name_hint}={v}" for s, v, _ in combo if s is not None)
            where = where or f"block counts {tuple(counts)}"
            if n == 0:
                order = _Order.build(self, pid, loop, list(env))
            if order is None or not order.walk(env, counts, total, where, changes):
                self._walk(pid, loop, env, counts, total, where, changes)
        return changes

    def _walk(self, pid, loop, env, counts, total, where, changes) -> None:
        """One combination of sizes checked by evaluating the order at each point
        (`_eval`); what `_Order.walk` computes, and the reference for its errors."""
        if loop is not None and self._value(loop.ub, env) != total:
            raise _error(_TILES + where, loop)
        seen, last = set(), None
        for p in range(total):
            env[pid] = p
            point = tuple(self._value(self.q[i], env) for i in self.members)
            bad = any(not 0 <= x < c for x, c in zip(point, counts, strict=True))
            if point in seen or bad:
                raise _error(_PERMUTATION + where, self.store.op)
            seen.add(point)
            if last is not None:
                for i, a, b in zip(self.members, last, point, strict=True):
                    changes[i] += a != b
            last = point

    def _value(self, x, env) -> int:
        memo: dict = {}
        try:
            if isinstance(x, Poly):
                return _poly_value(x, env, memo, self.reader)
            return _eval(x, env, memo, self.reader)
        except PointerError as e:
            raise _error(e.message, e.op) from None


class _Order:
    """`_Check`'s program order compiled to Python (`_Source`): the persistent loop's tile
    count, and the walk over one combination's points, which computes each point, checks
    it is in the grid and new, and counts the changes of each member's block index from
    one point to the next, as `_Check._walk` does."""

    def __init__(self, check: _Check, keys: list, loop, tiles, points):
        self.check = check
        self.keys = keys
        self.loop = loop
        self.tiles = tiles
        self.points = points

    @staticmethod
    def build(check: _Check, pid, loop, keys: list) -> _Order | None:
        """The order of `check` for sizes given as `keys` (an `env`'s); None where
        `_eval` raises an error whatever the sizes (left to `_Check._walk`, which raises
        it where `_eval` meets it)."""
        params = {k: f"e{j}" for j, k in enumerate(keys)}
        if pid in params:
            return None
        try:
            tiles = None if loop is None else _tiles(params, loop.ub, check.reader)
            src = _Source(params | {pid: "P"}, {pid}, check.reader)
            members = [src.poly(check.q[i])[0] for i in check.members]
        except (_Unsupported, RecursionError):
            return None
        lines = _points_source(src, members)
        args = [*params.values(), "total", *(f"c{j}" for j in range(len(members)))]
        return _Order(check, keys, loop, tiles, _function("_points", args, lines, src.names))

    def walk(self, env, counts, total, where, changes) -> bool:
        """`_Check._walk` of one combination; False where the values computed once per
        combination raised (the first point, evaluated by `_Check._walk`, raises what
        `_eval` meets first)."""
        args = [env[k] for k in self.keys]
        try:
            tiles = self.tiles(*args) if self.tiles is not None else total
            found = self.points(*args, total, *counts) if tiles == total else ()
        except PointerError as e:
            raise _error(e.message, e.op) from None
        if tiles != total:
            raise _error(_TILES + where, self.loop)
        if found is None:
            return False
        if found is False:
            raise _error(_PERMUTATION + where, self.check.store.op)
        for i, n in zip(self.check.members, found, strict=True):
            changes[i] += n
        return True


def _tiles(params: dict, ub, reader):
    """`_tiles(e...)`: the persistent loop's upper bound `ub` at the sizes `params`."""
    src = _Source(params, set(), reader)
    x, _ = src.value(ub)
    return _function("_tiles", list(params.values()), [*src.fixed, f"return {x}"], src.names)


def _points_source(src: _Source, members: list[str]) -> list[str]:
    """The body of `_points(e..., total, c...)`: None where a value computed once per
    combination raises, False at the first point outside the grid or seen before, else
    per member the count of changes of its block index from one point to the next."""
    k = len(members)
    m = [f"m{j}" for j in range(k)]
    inside = " and ".join(f"0 <= {m[j]} < c{j}" for j in range(k))
    index = m[0]
    for j in range(1, k):
        index = f"({index}) * c{j} + {m[j]}"
    lines = ["try:", *(f"    {x}" for x in src.fixed), "    pass"]
    lines += ["except (PointerError, ArithmeticError):", "    return None"]
    lines += ["seen = set()", *(f"h{j} = l{j} = 0" for j in range(k))]
    lines += ["for P in range(total):", *(f"    {x}" for x in src.body)]
    lines += [f"    {m[j]} = {members[j]}" for j in range(k)]
    lines += [f"    if not ({inside}):", "        return False", f"    k = {index}"]
    lines += ["    if k in seen:", "        return False", "    seen.add(k)", "    if P:"]
    lines += [f"        h{j} += l{j} != {m[j]}" for j in range(k)]
    lines += [f"    l{j} = {m[j]}" for j in range(k)]
    return lines + [f"return ({', '.join(f'h{j}' for j in range(k))},)"]


def _function(name: str, args: list[str], lines: list[str], names: dict):
    """The Python function `name(args)` whose body is `lines`, over `names`."""
    source = f"def {name}({', '.join(args)}):\n" + "".join(f"    {x}\n" for x in lines)
    scope = dict(names)
    exec(compile(source, f"<program order {name}>", "exec"), scope)
    return scope[name]


def _output(acc: list[Access]) -> Access:
    """The store whose blocks the programs partition: the last of the largest rank, of
    those before the kernel's first lock (`scalar_atomic`), where there are any (a store
    under a lock writes a block that several programs share)."""
    lock = next((i for i, a in enumerate(acc) if scalar_atomic(a.op)), len(acc))
    writes = [(i, a) for i, a in enumerate(acc) if _is_store(a.op) and not scalar_atomic(a.op)]
    stores = [a for i, a in writes if i < lock] or [a for _, a in writes]
    if not stores:
        raise _error("a kernel that stores nothing", None)
    rank = max(len(a.dims) for a in stores)
    return [a for a in stores if len(a.dims) == rank][-1]
