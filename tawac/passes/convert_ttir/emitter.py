"""The emitter: the tile kernel's block being built, what each TTIR value became in it, and
the index arithmetic it rebuilds from the plan's polynomials (`_Emitter.index`)."""

from __future__ import annotations

from dataclasses import dataclass, field

from xdsl.dialects import arith
from xdsl.dialects.builtin import IndexType, IntegerAttr
from xdsl.ir import Block, Operation, SSAValue

from tawac.analysis.pointers import PointerError, Poly
from tawac.analysis.scalars import constant_int
from tawac.dialects import tile, tt
from tawac.passes.convert_ttir.common import _error
from tawac.passes.convert_ttir.planning import _Plan
from tawac.passes.convert_ttir.scalars import _single_symbol


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

    def scalar(self, v: SSAValue, at: Operation) -> SSAValue:
        """An integer scalar of the kernel as index: a value the conversion made (an
        atomic's old value, one i32 element loaded), else its polynomial rebuilt
        (`index`)."""
        found = self.values.get(v)
        if found is not None:
            return found
        try:
            p = self.plan.reader.int_poly(v)
        except PointerError as e:
            raise _error(e.message, e.op or at) from None
        return self.index(p, at)

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
                    d = self._remainder(s, at)
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
        return self._by_constant(s, at, (arith.DivSIOp, arith.DivUIOp), arith.DivUIOp)

    def _remainder(self, s, at: Operation) -> SSAValue | None:
        """`a % c` of a scalar tawac can rebuild and a positive constant (the layer norm
        backward's lock of a row, `row % GROUP_SIZE_M`): `arith.remui` over index."""
        return self._by_constant(s, at, (arith.RemSIOp, arith.RemUIOp), arith.RemUIOp)

    def _by_constant(self, s, at: Operation, kinds: tuple, make: type) -> SSAValue | None:
        """`s`, an op of `kinds` of a scalar tawac can rebuild and a positive constant,
        as `make` of the rebuilt scalar and the constant; None for another `s`."""
        op = s.owner if isinstance(s, SSAValue) else None
        if not isinstance(op, kinds):
            return None
        c = constant_int(op.rhs)
        if c is None or c <= 0:
            return None
        try:
            num = self.plan.reader.int_poly(op.lhs)
        except PointerError:
            return None
        return self.add(make(self.index(num, at), self.const(c))).result

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
