"""The names the schedule calls arefs and stores by: an aref is named after the kernel
arguments its payload is loaded from (`a_b` for GEMM's A and B tiles, `k`, `v`), a
consumer's store after the argument it writes (`c`); a name taken already is numbered
from its second occurrence (`a_b_2`). `warp-specialize` names what it creates; `plan`
names what hand-written IR left unnamed, by the same rule."""

from __future__ import annotations

from collections.abc import Iterable

from xdsl.dialects.builtin import StringAttr
from xdsl.ir import BlockArgument, SSAValue

from tawac.dialects import aref, tile


def argument_name(v: SSAValue, kernel: tile.KernelOp) -> str:
    """The kernel argument `v`'s name (`arg<i>` where it has none; `tensor` when `v` is
    not an argument)."""
    if not isinstance(v, BlockArgument) or v.block is not kernel.body.block:
        return "tensor"
    return v.name_hint or f"arg{v.index}"


def joined(values: Iterable[SSAValue], kernel: tile.KernelOp) -> str:
    """The distinct argument names of `values`, in order, joined with '_'."""
    return "_".join(dict.fromkeys(argument_name(v, kernel) for v in values))


def unique_names(names: Iterable[str], taken: Iterable[str] = ()) -> list[str]:
    """`names`, each numbered (`a_b_2`, `a_b_3`) where it is taken already (by `taken` or
    an earlier one)."""
    used = set(taken)
    out: list[str] = []
    for name in names:
        candidate, n = name, 1
        while candidate in used:
            n += 1
            candidate = f"{name}_{n}"
        used.add(candidate)
        out.append(candidate)
    return out


def aref_sources(create: aref.CreateOp) -> list[SSAValue]:
    """The tensors the aref's payload is loaded from (the loads its puts write)."""
    out: list[SSAValue] = []
    for use in create.result.uses:
        put = use.operation
        if not isinstance(put, aref.PutOp):
            continue
        out += [v.owner.source for v in put.values if isinstance(v.owner, tile.LoadOp)]
    return out


def name_unnamed(kernel: tile.KernelOp) -> None:
    """Name the kernel's arefs and consumer stores that have no identity yet."""
    creates = [o for o in kernel.walk() if isinstance(o, aref.CreateOp)]
    todo = [c for c in creates if c.ident is None]
    taken = [c.ident for c in creates if c.ident is not None]
    for c, name in zip(
        todo,
        unique_names([joined(aref_sources(c), kernel) or "aref" for c in todo], taken),
        strict=True,
    ):
        c.id = StringAttr(name)
    stores = [
        o
        for p in kernel.body.block.ops
        if isinstance(p, aref.PartitionOp) and p.role.data == "consumer"
        for o in p.walk()
        if isinstance(o, tile.StoreOp)
    ]
    todo_st = [st for st in stores if st.ident is None]
    taken_st = [st.ident for st in stores if st.ident is not None]
    names = unique_names([argument_name(st.dest, kernel) for st in todo_st], taken_st)
    for st, name in zip(todo_st, names, strict=True):
        st.attributes[tile.STORE_ID] = StringAttr(name)
