"""The grid of programs a kernel's stores imply (docs/abi.md's grid form), and the
conversion between such plain data and attributes (the schedule's `program_grid`, the
launch ABI on `ptx.entry`)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from xdsl.dialects import arith
from xdsl.dialects.builtin import ArrayAttr, DictionaryAttr, IntAttr, IntegerAttr, StringAttr, i64
from xdsl.ir import Attribute, BlockArgument, SSAValue

from tawac.analysis.identity import argument_name
from tawac.analysis.scalars import constant_int
from tawac.dialects import hopper, tile
from tawac.support.diagnostics import CompileError


def to_attr(x: Any) -> Attribute:
    if isinstance(x, Attribute):
        return x
    if isinstance(x, bool | int):
        return IntegerAttr(int(x), i64)
    if isinstance(x, str):
        return StringAttr(x)
    if isinstance(x, list | tuple):
        return ArrayAttr(to_attr(v) for v in x)
    if isinstance(x, dict):
        return DictionaryAttr({k: to_attr(v) for k, v in x.items()})
    raise TypeError(x)


def from_attr(a: Attribute) -> Any:
    """Plain Python data from the attributes `_to_attr` makes."""
    if isinstance(a, IntAttr):
        return a.data
    if isinstance(a, IntegerAttr):
        return a.value.data
    if isinstance(a, StringAttr):
        return a.data
    if isinstance(a, ArrayAttr):
        return [from_attr(v) for v in a]
    if isinstance(a, DictionaryAttr):
        return {k: from_attr(v) for k, v in a.data.items()}
    raise TypeError(a)


def _pid_times(v: SSAValue) -> tuple[int, int] | None:
    """(axis, c) if v = program_id(axis) * c (or program_id(axis) itself: c = 1)."""
    op = v.owner
    if isinstance(op, tile.ProgramIdOp):
        return op.axis.data, 1
    if not isinstance(op, arith.MuliOp):
        return None
    for a, b in ((op.lhs, op.rhs), (op.rhs, op.lhs)):
        c = constant_int(b)
        if isinstance(a.owner, tile.ProgramIdOp) and c is not None:
            return a.owner.axis.data, c
    return None


#: The kernel attribute listing the workspace arguments a pass added, by argument name:
#: {dtype, zero, shape (a grid entry per dimension)} (`split-k`; docs/abi.md).
WORKSPACE_ATTR = "tawac.workspace"


#: The kernel attribute recording the work decomposition a pass chose (`split-k`):
#: {kind: "split_k", splits} or {kind: "stream_k", max_splits}.
DECOMPOSITION_ATTR = "tawac.decomposition"


#: The kernel attribute recording `group-heads`' decision: {group: G, rows_per_head}.
GROUP_ATTR = "tawac.group_heads"


#: The kernel attribute listing shape relations a launch must satisfy (`group-heads`:
#: H query heads = G times the K/V heads): {"arg", "dim", "equals": {"arg", "dim",
#: "times"}} each, copied into the sidecar's "checks" (docs/abi.md).
CHECKS_ATTR = "tawac.checks"


def checks_of(kernel: tile.KernelOp) -> list[dict[str, Any]]:
    """The kernel's launch checks (`CHECKS_ATTR`), [] where it has none; a located
    error where one is not of the form `{arg, dim, equals: {arg, dim, times} | {const}}`
    or `{arg, dim, at_most: {const}}` over the kernel's tensor arguments (a source may
    state its own), or `plan`'s `at_least` form."""
    attr = kernel.attributes.get(CHECKS_ATTR)
    if attr is None:
        return []
    ranks = {
        argument_name(a, kernel): a.type.rank
        for a in kernel.body.block.args
        if isinstance(a.type, tile.GlobalTensorType)
    }

    def tensor_dim(ref: Any) -> bool:
        return (
            isinstance(ref, dict)
            and ref.get("arg") in ranks
            and isinstance(ref.get("dim"), int)
            and 0 <= ref["dim"] < ranks[ref["arg"]]
        )

    try:
        checks = from_attr(attr)
    except TypeError:
        checks = None
    for c in checks if isinstance(checks, list) else [None]:
        other = c.get("equals") if isinstance(c, dict) else None
        least = c.get("at_least") if isinstance(c, dict) else None
        most = c.get("at_most") if isinstance(c, dict) else None
        constant = isinstance(other, dict) and isinstance(other.get("const"), int)
        bounded = isinstance(most, dict) and isinstance(most.get("const"), int)
        scaled = tensor_dim(other) and isinstance(other.get("times", 1), int)
        covers = (
            isinstance(least, dict)
            and tensor_dim(least.get("cdiv"))
            and isinstance(least.get("by"), int)
            and isinstance(c.get("by"), int)
        )
        if not (tensor_dim(c) and (constant or scaled or covers or bounded)):
            raise CompileError(
                f"{CHECKS_ATTR}: expected a list of {{arg, dim, equals = {{arg, dim, times}} "
                f"or {{const}}}} or {{arg, dim, at_most = {{const}}}} over the kernel's tensor "
                f"arguments, got {c}",
                kernel,
            )
    return checks


def record_checks(kernel: tile.KernelOp, checks: list[dict[str, Any]]) -> None:
    """Adds `checks` to the kernel's launch checks (`CHECKS_ATTR`), after those it has."""
    if not checks:
        return
    stated = checks_of(kernel)
    kernel.attributes[CHECKS_ATTR] = to_attr(stated + [c for c in checks if c not in stated])


def decomposition_of(kernel: tile.KernelOp) -> dict[str, Any]:
    """The kernel's work decomposition (`DECOMPOSITION_ATTR`); `{"kind":
    "data_parallel"}` (one program per output tile) where no pass recorded one."""
    attr = kernel.attributes.get(DECOMPOSITION_ATTR)
    return from_attr(attr) if attr is not None else {"kind": "data_parallel"}


def workspace_of(kernel: tile.KernelOp) -> dict[str, Any]:
    """The kernel's workspace arguments (`WORKSPACE_ATTR`), {} where it has none."""
    attr = kernel.attributes.get(WORKSPACE_ATTR)
    return from_attr(attr) if attr is not None else {}


#: The kernel attribute fixing the grid where its stores no longer imply it (a pass that
#: folds splits into a program id: `split-k` of attention, a query block's splits along
#: x): the grid entries, which `infer_grid` returns as they are.
GRID_ATTR = "tawac.grid"


def times(entry: dict[str, Any], n: int) -> dict[str, Any]:
    """A grid entry n times as large (`{"const": c}` or a "cdiv" with `"times"`)."""
    if "const" in entry:
        return {"const": int(entry["const"]) * n}
    return {**entry, "times": int(entry.get("times", 1)) * n}


def _scaled(entry: dict[str, Any], by: int) -> dict[str, Any]:
    """A workspace dimension's grid entry divided by `by` (tiles of `by` along it)."""
    if "const" in entry:
        return {"const": -(-int(entry["const"]) // by)}
    return {"cdiv": entry["cdiv"], "by": int(entry["by"]) * by}


def infer_grid(kernel: tile.KernelOp) -> list[dict[str, Any]]:
    """The grid of programs (`GRID_ATTR` where a pass fixed it), else from the stores: a
    store at `program_id(a) * T` along dimension d of tensor X means axis a spans
    ceil(size(X, d) / T) programs (the launch
    ABI's grid form, docs/abi.md); a `tile.atomic_add` places an axis as a store does. An
    axis no store places is sized by an index tensor it reads at `program_id(a) * T`
    (`tile.load_index`), the same way; in a kernel that adds atomically, by the tiles it
    loads there (the programs along such an axis meet in their adds: a column sum's
    row blocks)."""
    fixed = kernel.attributes.get(GRID_ATTR)
    if fixed is not None:
        return from_attr(fixed)
    names = _arg_names(kernel)
    workspace = workspace_of(kernel)
    grid: list[dict[str, Any] | None] = [None, None, None]
    used = {op.axis.data for op in kernel.walk() if isinstance(op, tile.ProgramIdOp)}
    for name, d, axis, by in _placing_stores(kernel):
        entry = {"cdiv": {"arg": name, "dim": d}, "by": by}
        sized = workspace.get(name)
        if sized is not None:
            entry = _scaled(sized["shape"][d], by)
        if grid[axis] is None:
            grid[axis] = entry
    # An axis no store places: the elements of an index tensor it reads one each (a
    # grouped GEMM's row blocks, whose rows come from the tensor, not the program id).
    for ld in kernel.walk():
        if not isinstance(ld, tile.LoadIndexOp) or not isinstance(ld.source, BlockArgument):
            continue
        for d, idx in enumerate(ld.indices):
            found = _pid_times(idx)
            if found is not None and grid[found[0]] is None:
                grid[found[0]] = {"cdiv": {"arg": names[ld.source.index], "dim": d}, "by": found[1]}
    if any(isinstance(o, tile.AtomicAddOp) for o in kernel.walk()):
        _placed_by_loads(kernel, names, grid)
    out: list[dict[str, Any]] = []
    for axis in range(3):
        g = grid[axis]
        if g is not None:
            out.append(g)
            continue
        if axis in used:
            raise CompileError(
                f"cannot infer the launch grid along axis {'xyz'[axis]}: store a tile at "
                f"coordinate program_id {'xyz'[axis]} * <tile size>",
                kernel,
            )
        out.append({"const": 1})
    return out


def coverage_checks(kernel: tile.KernelOp) -> list[dict[str, Any]]:
    """The launch checks that every program's stores land: a store at `program_id(a) *
    T'` along dimension d' of tensor X' beside the store that sizes axis a (`infer_grid`:
    ceil(size(X, d) / T) programs) drops the tiles of the programs past ceil(size(X', d')
    / T'), a result lost without a trace (a norm backward's partial sums, one row a
    program, given fewer rows than programs). Each such store gives `{"arg": X', "dim":
    d', "by": T', "at_least": {"cdiv": {"arg": X, "dim": d}, "by": T}}`: ceil(size(X',
    d') / T') >= ceil(size(X, d) / T), which the launcher checks (docs/abi.md). None where
    a pass fixed the grid (`GRID_ATTR`) or for a workspace a pass sizes itself."""
    if GRID_ATTR in kernel.attributes:
        return []
    grid = infer_grid(kernel)
    workspace = workspace_of(kernel)
    out: list[dict[str, Any]] = []
    for name, d, axis, by in _placing_stores(kernel):
        g = grid[axis]
        if name in workspace or set(g) != {"cdiv", "by"}:
            continue
        if (g["cdiv"], g["by"]) == ({"arg": name, "dim": d}, by):
            continue
        check = {"arg": name, "dim": d, "by": by, "at_least": {"cdiv": g["cdiv"], "by": g["by"]}}
        if check not in out:
            out.append(check)
    return out


def split_sum_checks(kernel: tile.KernelOp) -> list[dict[str, Any]]:
    """The launch checks that every `tile.split_sum` reads all the slices it is asked to:
    it reads at most `max` of them, so a count that is a dimension of an argument (`%P =
    tile.dim %part[0]`, a program's own partials) gives `{"arg": X, "dim": d, "at_most":
    {"const": max}}`; past it the launch is refused rather than summing the first `max`.
    None for a workspace a pass sizes itself, nor where the count is computed (the pass
    or the program that computes it bounds it)."""
    workspace = workspace_of(kernel)
    out: list[dict[str, Any]] = []
    for op in kernel.walk():
        if not isinstance(op, tile.SplitSumOp):
            continue
        dim = op.count.owner
        if not isinstance(dim, tile.DimOp):
            continue
        src = dim.source
        if not isinstance(src, BlockArgument) or src.block is not kernel.body.block:
            continue
        name = argument_name(src, kernel)
        if name in workspace:
            continue
        check = {"arg": name, "dim": dim.dim.data, "at_most": {"const": op.max.data}}
        if check not in out:
            out.append(check)
    return out


def _arg_names(kernel: tile.KernelOp) -> list[str]:
    return [a.name_hint or f"arg{i}" for i, a in enumerate(kernel.body.block.args)]


def _placing_stores(kernel: tile.KernelOp) -> Iterator[tuple[str, int, int, int]]:
    """(argument name, dimension, axis, T) of each store (or atomic add) coordinate at
    `program_id(axis) * T`, in program order: the stores that place the grid's axes."""
    names = _arg_names(kernel)
    for st in kernel.walk():
        if not isinstance(st, tile.StoreOp | hopper.TmaStoreOp | tile.AtomicAddOp):
            continue
        dest = st.dest
        assert isinstance(dest, BlockArgument)
        for d, idx in enumerate(st.indices):
            found = _pid_times(idx)
            if found is not None:
                yield names[dest.index], d, *found


def _placed_by_loads(
    kernel: tile.KernelOp, names: list[str], grid: list[dict[str, Any] | None]
) -> None:
    """Sizes each axis still unplaced in `grid` by a tile load of a kernel argument at
    `program_id(a) * T` along dimension d (before or after `lower-aref`)."""
    loads = (tile.LoadOp, hopper.TmaLoadOp, hopper.TmaLoadMulticastOp)
    for ld in kernel.walk():
        if not isinstance(ld, loads) or not isinstance(ld.source, BlockArgument):
            continue
        for d, idx in enumerate(ld.indices):
            found = _pid_times(idx)
            if found is not None and grid[found[0]] is None:
                grid[found[0]] = {"cdiv": {"arg": names[ld.source.index], "dim": d}, "by": found[1]}


def axis_extents(kernel: tile.KernelOp, sizes: Mapping[str, int] | None) -> list[int | None]:
    """Programs along each axis of the grid (`infer_grid`) at the dimension sizes `sizes`
    (by the kernel arguments' dimension names, "M" -> 4096); None where a size is not
    given (or without sizes)."""
    args = {a.name_hint: a for a in kernel.body.block.args if a.name_hint}
    out: list[int | None] = []
    for g in infer_grid(kernel):
        if "const" in g:
            out.append(int(g["const"]))
            continue
        cdiv = g.get("cdiv")
        arg = args.get(cdiv["arg"]) if isinstance(cdiv, dict) else None
        size = dim_size(arg, cdiv["dim"], sizes) if arg is not None else None
        by = int(g["by"])
        out.append(None if size is None else -(-size // by) * int(g.get("times", 1)))
    return out


def dim_size(arg: SSAValue, dim: int, sizes: Mapping[str, int] | None) -> int | None:
    """Dimension `dim` of the tensor argument `arg` at `sizes` (by its dimension names);
    None where not given."""
    t = arg.type
    if not sizes or not isinstance(t, tile.GlobalTensorType) or dim >= len(t.dim_names):
        return None
    size = sizes.get(t.dim_names.data[dim].data)
    return None if size is None else int(size)


def lone_axes(kernel: tile.KernelOp, sizes: Mapping[str, int] | None) -> frozenset[int]:
    """The program-id axes along which the grid (`infer_grid`) has one program at the
    dimension sizes `sizes` (`axis_extents`); none without sizes, or where a size is not
    given. A tile that only such an axis would share is read by one program
    (`tawac.analysis.program_ids.read_by_one_program`)."""
    problem = problem_at(kernel, sizes)
    return problem.lone if problem is not None else frozenset()


@dataclass(frozen=True)
class Problem:
    """A kernel's grid at one problem's dimension sizes, as the cost model reads it:
    `sizes` by dimension name, `extents` the programs along each axis (None: unknown)."""

    sizes: Mapping[str, int]
    extents: tuple[int | None, ...]

    @property
    def lone(self) -> frozenset[int]:
        """The axes with one program (`lone_axes`)."""
        return frozenset(a for a, n in enumerate(self.extents) if n == 1)

    @property
    def programs(self) -> int | None:
        """The programs of the grid; None where an extent is unknown."""
        total = 1
        for n in self.extents:
            if n is None:
                return None
            total *= n
        return total

    def size(self, arg: SSAValue, dim: int) -> int | None:
        """Dimension `dim` of the tensor argument `arg` at these sizes (None: unknown)."""
        return dim_size(arg, dim, self.sizes)


def problem_at(kernel: tile.KernelOp, sizes: Mapping[str, int] | None) -> Problem | None:
    """The kernel's `Problem` at `sizes`; None without sizes."""
    if not sizes:
        return None
    return Problem(dict(sizes), tuple(axis_extents(kernel, sizes)))
