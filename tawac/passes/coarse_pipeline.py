"""`coarse-pipeline`: expand the loop schedules of `#tawac.schedule` (Tawa section 4.7,
coarse-grained pipelining; FlashAttention-3's intra-warpgroup overlap; a general modulo
expansion).  Runs on the aref level, after `pipeline` (and `persistent`).

A loop schedule (`LoopPlan`) lists a main loop's scheduled ops (`tawac.analysis.loops`)
in issue order, each with a stage.  With S stages, body k of the expanded loop issues the
ops in that order, an op of stage s working on iteration k - s.  With T = ceildiv(ub -
lb, step) trips, computed at run time:

- S == 1 in body order: nothing to do.  S == 1 in another order: the body is rewritten in
  that order.
- S >= 2:

      if T >= S - 1:
        prologue: bodies k = 0 .. S-2, each the ops of stages s <= k (iteration k - s)
        steady loop: bodies k = S-1 .. T-1, every stage (its induction value minus s steps)
        epilogue: bodies k = T .. T+S-2, the ops of stages s >= k - T + 1 (induction values
                  counted back from lb + (T-1) * step)
      else:
        S == 2: the init values (T == 0); S > 2: the original loop (unpipelined)

  and the if's results replace the loop's.

Values crossing bodies.  A value of op P (stage p) read by op U (stage u) in the same
iteration is needed d = u - p bodies later; read through an iteration argument (yielded by
P), d = 1 + u - p.  d < 0, or d == 0 with U issued before P, cannot be applied.  For
d >= 1 the steady loop carries copies as extra iteration arguments (a shift register: copy
1 is the value of the previous body, copy m+1 copy m of the previous body), initialized
from the prologue (iteration -1 of an iteration argument is its init); the iteration
arguments of the original loop keep their positions (copy 1), the other copies follow in
the order the steady body first reads them.  Scalar index math is never carried: each
stage recomputes it from its own induction value (a clone of its `index_slice`, right
before the first op of the stage that needs it).  An `aref.get`'s tiles are never carried
(the slot would be held across bodies by a value that is not its user): a get and its
users have one stage; an `aref.consumed` is issued after its get and the get's users of
the same iteration.  Ops with regions (`scf.if` masking) are cloned whole.

MMA waits are in the schedule (`wait 1 pending P` entries, `tawac.schedule.waits` decides
them): a dot's wait has the dot's stage and is placed where the issue order lists it, in
every body that issues the dot; in a body where fewer MMAs were issued after the dot (a
prologue or epilogue body) it leaves only those in flight. A loop whose waits keep MMAs
in flight across iterations (a release lag) takes only a one-stage schedule in body
order (`plan` checks both).

The heuristic planner's two-stage schedule of attention (stage 1 = the rescale of O, the
get of V, O = P V + O * alpha and V's release; issued after S = Q K^T) gives

    prologue: S_0 = Q K_0^T; wait S_0 (pending 0); release K_0; softmax_0 -> P_0, alpha_0
    for j in 1 .. T-1:  (carrying O, m, l, alpha, P)
      S_j = Q K_j^T;  O = P_{j-1} V_{j-1} + O * alpha_{j-1}
      wait S_j (pending 1); release K_j; softmax_j -> P_j, alpha_j   (under P V)
      wait O (pending 0); release V_{j-1}
    epilogue: O = P_{T-1} V_{T-1} + O * alpha_{T-1}; wait O; release V_{T-1}

so each warp group's softmax of S_j runs while the tensor cores compute P_{j-1} V_{j-1};
V's slot j-1 is released one body later, so its ring needs two slots (the planner checks).
A loop is marked `expanded` in the schedule once done (running the pass again changes
nothing).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from xdsl.context import Context
from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import IndexType, ModuleOp
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from tawac import schedule
from tawac.analysis.loops import in_body, index_slice, main_loops, scheduled_ops
from tawac.analysis.scalars import SCALAR_OPS
from tawac.dialects import aref, hopper, tile
from tawac.dialects.schedule import LoopPlan, WaitPlan
from tawac.schedule.chain import chain_problem
from tawac.schedule.check import loop_error, op_name
from tawac.support.diagnostics import CompileError


def _inside(v: SSAValue, op: Operation) -> bool:
    """`v` is defined inside one of `op`'s regions."""
    return op.is_ancestor(v.owner)


def _reads(op: Operation) -> list[SSAValue]:
    """The values `op` and the ops nested in it read from outside `op`, in walk order."""
    out: list[SSAValue] = []
    for inner in op.walk():
        for v in inner.operands:
            if not _inside(v, op) and v not in out:
                out.append(v)
    return out


_Key = SSAValue | int
"""What a loop-carried copy holds: an op result, or (an int j) iteration argument j."""


@dataclass
class _Body:
    """One body of the expansion being emitted: straight-line body `k` of the prologue
    (`kind` "pro"), the steady loop's body, or epilogue body T + `k` ("epi")."""

    kind: str
    k: int
    block: Block
    ivs: dict[int, SSAValue]
    """Induction value per iteration offset o (the iteration is the body's k - o)."""
    produced: dict[SSAValue, SSAValue] = field(default_factory=dict)
    scalars: dict[tuple[SSAValue, int], SSAValue] = field(default_factory=dict)
    dots: list[tile.DotOp] = field(default_factory=list)
    """The dots issued so far in this body (originals), in order."""


class _Expansion:
    """The modulo expansion of one loop schedule (see the module docstring)."""

    def __init__(self, loop: scf.ForOp, plan: LoopPlan):
        self.loop, self.plan = loop, plan
        body = self.body = loop.body.block
        sched = scheduled_ops(body)
        # `plan` checked that the schedule lists the loop's ops and that its waits are
        # realizable (`tawac.schedule.check.check_loops`)
        self.order = [sched[o.index] for o in plan.ops]
        self.stages = plan.stages
        self.stage: dict[Operation, int] = {sched[o.index]: o.stage for o in plan.ops}
        self.pos: dict[Operation, int] = {op: n for n, op in enumerate(self.order)}
        yield_op = body.last_op
        assert isinstance(yield_op, scf.YieldOp)
        self.yield_op = yield_op
        self.inits: list[SSAValue] = list(loop.iter_args)
        """The iteration arguments' initial values (a chained loop's are its
        predecessor's results as the merged expansion computes them)."""
        self.in_order = plan.in_body_order
        if self.in_order:
            return  # `pipeline` placed its waits
        self.wait_of: dict[tile.DotOp, WaitPlan] = {}
        self.waits_at: dict[int, list[WaitPlan]] = {}
        for w in plan.waits:
            dot = sched[w.dot]
            assert isinstance(dot, tile.DotOp)
            self.wait_of[dot] = w
            self.waits_at.setdefault(w.at, []).append(w)
        self.dot_of = {w: sched[w.dot] for w in plan.waits}
        for op in self.order:
            if isinstance(op, tile.DotOp) and op not in self.wait_of:
                raise self.fail(f"the MMA {op_name(op)} must be awaited once in its body")
        self.producer: list[Operation] = []
        for j, y in enumerate(yield_op.operands):
            p = y.owner
            if not isinstance(p, Operation) or p not in self.stage:
                raise self.fail(f"iteration argument {j} is not computed by a scheduled op")
            if isinstance(p, aref.GetOp):
                raise self.fail(f"iteration argument {j} would carry a slot of an aref.get")
            self.producer.append(p)
        self._check_releases()
        self.copies: dict[_Key, int] = {}
        """The carried copies the steady loop needs of each key, in order of first need."""
        for op in self.order:
            for v in _reads(op):
                self._require(op, v)
        for j, p in enumerate(self.producer):
            if self.stage[p] == 0:
                self.copies[j] = max(self.copies.get(j, 0), 1)

    def fail(self, why: str) -> CompileError:
        return loop_error(self.loop, self.plan, why)

    def _check_releases(self) -> None:
        """An `aref.consumed` comes after the get of its aref and that get's users, in
        the same iteration."""
        for c in self.order:
            if not isinstance(c, aref.ConsumedOp):
                continue
            for g in self.order:
                if not (isinstance(g, aref.GetOp) and g.aref == c.aref):
                    continue
                users = {
                    self.body.find_ancestor_op_in_block(u.operation)
                    for r in g.results
                    for u in r.uses
                }
                for u in [g, *(x for x in users if x in self.stage)]:
                    if (self.stage[u], self.pos[u]) > (self.stage[c], self.pos[c]):
                        raise self.fail(
                            f"{op_name(c)} would release the slot before {op_name(u)} of the "
                            "same iteration"
                        )

    # -- how an op working on iteration k - o reads a value ------------------------------

    def resolve(self, v: SSAValue, o: int):
        """("out",) outside the loop; ("iv",) the induction variable; ("scalar",) index
        math recomputed; ("val", key, y, s) a value `y` of a scheduled op of stage `s`
        (`key` an int j: iteration argument j, which `y` of the previous iteration is)."""
        body = self.body
        if not in_body(v, body):
            return ("out",)
        if v is body.args[0]:
            return ("iv",)
        if isinstance(v.owner, Block):
            j = body.args.index(v) - 1
            y = self.yield_op.operands[j]
            return ("val", j, y, self.stage[self.producer[j]] - 1)
        top = body.find_ancestor_op_in_block(v.owner)
        assert top is not None
        if isinstance(top, SCALAR_OPS):
            return ("scalar",)
        return ("val", v, v, self.stage[top])

    def _require(self, user: Operation, v: SSAValue) -> None:
        o = self.stage[user]
        r = self.resolve(v, o)
        if r[0] == "scalar" and index_slice(v, self.body) is None:
            raise self.fail(
                f"the scalar {op_name(v.owner)} is not computed from the induction variable alone"
            )
        if r[0] != "val":
            return
        _, key, y, s = r
        d = o - s
        producer = y.owner
        assert isinstance(producer, Operation)
        stage = self.stage[producer]
        what = f"{op_name(user)} (stage {o}) reads {op_name(producer)} (stage {stage})"
        if isinstance(key, int):
            what += f" through iteration argument {key}"
        if d < 0 or (d == 0 and self.pos[user] < self.pos[producer]):
            raise self.fail(f"{what} before it is computed")
        if d >= 1 and isinstance(producer, aref.GetOp):
            raise self.fail(
                f"{what} {d} bod{'y' if d == 1 else 'ies'} later: a slot would be held "
                "across bodies by a value that is not its user"
            )
        if d >= 1:
            self.copies[key] = max(self.copies.get(key, 0), d)

    # -- emission -------------------------------------------------------------------------

    def lookup(self, b: _Body, v: SSAValue, o: int) -> SSAValue:
        r = self.resolve(v, o)
        if r[0] == "out":
            return v
        if r[0] == "iv":
            return b.ivs[o]
        if r[0] == "scalar":
            return self._scalar(b, v, o)
        _, key, y, s = r
        if isinstance(key, int) and b.kind == "pro" and b.k - o == 0:
            return self.inits[key]
        d = o - s
        if d == 0:
            return b.produced[y]
        if b.kind == "pro":
            return self.bodies[("pro", b.k - d)].produced[y]
        if b.kind == "steady":
            return self.steady_args[(key, d)]
        if b.k - d >= 0:
            return self.bodies[("epi", b.k - d)].produced[y]
        return self.steady_results[(key, d - b.k)]

    def _scalar(self, b: _Body, v: SSAValue, o: int) -> SSAValue:
        if (v, o) in b.scalars:
            return b.scalars[(v, o)]
        sl = index_slice(v, self.body)
        assert sl is not None
        mapping = {self.body.args[0]: b.ivs[o]}
        for op in sl:
            for x in op.results:
                if (x, o) in b.scalars:
                    mapping[x] = b.scalars[(x, o)]
            if all((x, o) in b.scalars for x in op.results):
                continue
            new = op.clone(mapping)
            b.block.add_op(new)
            for x, nx in zip(op.results, new.results, strict=True):
                b.scalars[(x, o)] = nx
                mapping[x] = nx
        return b.scalars[(v, o)]

    def _place(self, b: _Body, w: WaitPlan) -> None:
        """The wait `w` in body `b`, if its MMA was issued there: at most `w.pending` of
        the groups issued after the MMA in this body stay in flight; the MMA's readers
        read the wait's result."""
        dot = self.dot_of[w]
        if dot not in b.dots:
            return
        pending = min(w.pending, len(b.dots) - 1 - b.dots.index(dot))
        new = hopper.WgmmaWaitOp(b.produced[dot.result], pending)
        b.block.add_op(new)
        b.produced[dot.result] = new.result

    def emit(self, b: _Body, active: range, start: int = 0, stop: int | None = None) -> None:
        """Issue the ops of the stages in `active` in issue order, each MMA's wait where
        the schedule lists it; with `start` / `stop`, only the issue positions in
        [start, stop) (the waits listed before them included, those after the last op
        only when `stop` is None)."""
        for i, op in enumerate(self.order):
            if i < start or (stop is not None and i >= stop):
                continue
            for w in self.waits_at.get(i, []):
                self._place(b, w)
            o = self.stage[op]
            if o not in active:
                continue
            mapping = {v: self.lookup(b, v, o) for v in _reads(op)}
            new = op.clone(mapping)
            b.block.add_op(new)
            for x, nx in zip(op.results, new.results, strict=True):
                b.produced[x] = nx
            if isinstance(op, tile.DotOp):
                b.dots.append(op)
        if stop is not None:
            return
        for w in self.waits_at.get(len(self.order), []):
            self._place(b, w)

    # -- the expansion --------------------------------------------------------------------

    def _mult(self, block: Block, m: int) -> SSAValue:
        """m * step, computed in `block`."""
        if m == 1:
            return self.loop.step
        c = arith.ConstantOp.from_int_and_width(m, IndexType())
        mul = arith.MuliOp(c.result, self.loop.step)
        block.add_ops([c, mul])
        return mul.result

    def _copy_type(self, key: _Key):
        return self.yield_op.operands[key].type if isinstance(key, int) else key.type

    def _source(self, key: _Key) -> SSAValue:
        return self.yield_op.operands[key] if isinstance(key, int) else key

    def _steady(self, then: Block, start: SSAValue) -> scf.ForOp:
        s_n = self.stages
        slots: list[tuple[_Key, int]] = [
            (j, 1) for j in range(len(self.producer)) if self.copies.get(j, 0) >= 1
        ]
        for key, n in self.copies.items():
            slots += [(key, c) for c in range(1, n + 1) if (key, c) not in slots]
        block = Block(arg_types=[IndexType(), *(self._copy_type(k) for k, _ in slots)])
        self.steady_args = dict(zip(slots, block.args[1:], strict=True))
        ivs = {0: block.args[0]}
        for o in range(1, s_n):
            back = arith.SubiOp(block.args[0], self._mult(then, o))
            block.add_op(back)
            ivs[o] = back.result
        b = _Body("steady", s_n - 1, block, ivs)
        self.emit(b, range(s_n))
        outs = [
            b.produced[self._source(key)] if c == 1 else self.steady_args[(key, c - 1)]
            for key, c in slots
        ]
        block.add_op(scf.YieldOp(*outs))
        inits = []
        for key, c in slots:
            k = s_n - 1 - c
            if isinstance(key, int) and k - (self.stage[self.producer[key]] - 1) == 0:
                inits.append(self.inits[key])
            else:
                inits.append(self.bodies[("pro", k)].produced[self._source(key)])
        new = scf.ForOp(start, self.loop.ub, self.loop.step, inits, Region(block))
        self.steady_results = dict(zip(slots, new.results, strict=True))
        return new

    def _results(self, block: Block) -> list[SSAValue]:
        last = _Body("epi", self.stages - 1, block, {})
        return [self.lookup(last, arg, self.stages - 1) for arg in self.body.args[1:]]

    def apply(self) -> None:
        if self.in_order:
            return
        loop = self.loop
        lb = loop.lb
        s_n = self.stages
        self.bodies: dict[tuple[str, int], _Body] = {}
        if s_n == 1:
            holder = Block()
            new = self._steady(holder, lb)
            Rewriter.insert_op(new, InsertPoint.before(loop))
            results = self._results(holder)
            root: Operation = new
        else:
            head, trips, has = self.trips()
            Rewriter.insert_op(head, InsertPoint.before(loop))
            then = Block()
            last, start = self.bounds(then, trips, head[0].results[0])
            self.prologue(then)
            steady = self._steady(then, start)
            then.add_op(steady)
            self.epilogue(then, last)
            then.add_op(scf.YieldOp(*self._results(then)))
            if s_n == 2:
                otherwise = Block([scf.YieldOp(*loop.iter_args)])
            else:
                fallback = loop.clone()
                _await_at_once(fallback, loop, set(self.wait_of))
                otherwise = Block([fallback, scf.YieldOp(*fallback.results)])
            root = scf.IfOp(has, [r.type for r in loop.results], Region(then), Region(otherwise))
            Rewriter.insert_op(root, InsertPoint.before(loop))
            results = list(root.results)
        for old, new_v in zip(loop.results, results, strict=True):
            old.replace_all_uses_with(new_v)
        Rewriter.erase_op(loop, safe_erase=False)
        _drop_dead_index_ops(root)

    def trips(self) -> tuple[list[Operation], SSAValue, SSAValue]:
        """(ops, T, T >= S - 1): the trip count and whether the pipeline fills, computed
        from the loop's bounds (the ops start with the constant 1)."""
        lb, ub, step = self.loop.lb, self.loop.ub, self.loop.step
        s_n = self.stages
        one = arith.ConstantOp.from_int_and_width(1, IndexType())
        need = one if s_n == 2 else arith.ConstantOp.from_int_and_width(s_n - 1, IndexType())
        span = arith.SubiOp(ub, lb)
        trips = arith.CeilDivSIOp(span.result, step)
        has = arith.CmpiOp(trips.result, need.result, "sge")
        ops = [one, *([need] if need is not one else []), span, trips, has]
        return ops, trips.result, has.result

    def bounds(self, then: Block, trips: SSAValue, one: SSAValue) -> tuple[SSAValue, SSAValue]:
        """(the last induction value, the steady loop's start), computed in `then` from
        the trip count (`one`: the constant 1)."""
        lb, step = self.loop.lb, self.loop.step
        dec = arith.SubiOp(trips, one)
        back = arith.MuliOp(dec.result, step)
        last = arith.AddiOp(lb, back.result)
        then.add_ops([dec, back, last])
        start = arith.AddiOp(lb, self._mult(then, self.stages - 1))
        then.add_op(start)
        return last.result, start.result

    def prologue(self, then: Block) -> None:
        """The prologue bodies 0 .. S-2 (stages s <= k, induction values counted on from
        the lower bound)."""
        lb = self.loop.lb
        for k in range(self.stages - 1):
            ivs = {o: lb if k == o else self._add(then, lb, k - o) for o in range(k + 1)}
            b = self.bodies[("pro", k)] = _Body("pro", k, then, ivs)
            self.emit(b, range(k + 1))

    def epilogue(self, then: Block, last: SSAValue) -> None:
        """The epilogue bodies 0 .. S-2 (stages s >= e + 1, induction values counted back
        from `last`)."""
        s_n = self.stages
        for e in range(s_n - 1):
            ivs = {
                o: last if o == e + 1 else self._sub(then, last, o - e - 1)
                for o in range(e + 1, s_n)
            }
            b = self.bodies[("epi", e)] = _Body("epi", e, then, ivs)
            self.emit(b, range(e + 1, s_n))

    def _add(self, block: Block, base: SSAValue, m: int) -> SSAValue:
        op = arith.AddiOp(base, self._mult(block, m))
        block.add_op(op)
        return op.result

    def _sub(self, block: Block, base: SSAValue, m: int) -> SSAValue:
        op = arith.SubiOp(base, self._mult(block, m))
        block.add_op(op)
        return op.result


def _first_dot_end(e: _Expansion, stage: int) -> int | None:
    """The issue position just after `e`'s first MMA of `stage`."""
    for i, op in enumerate(e.order):
        if isinstance(op, tile.DotOp) and e.stage[op] == stage:
            return i + 1
    return None


def _chain(e1: _Expansion, e2: _Expansion) -> None:
    """Expand `e1.loop; e2.loop` (two two-stage schedules, the second carrying on the
    first's results) as one pipeline across the boundary where both run:

        if T1 >= 1 and T2 >= 1:
          prologue 1; steady loop 1
          boundary: loop 2's first stage of its iteration 0 beside loop 1's second stage
                    of its iteration T1 - 1, as a steady body would issue them (loop 2's
                    first MMA, loop 1's second, then the rest of each; the waits count
                    the MMAs of both)
          steady loop 2; epilogue 2
        else:
          both loops, each expanded alone

    so the drain of loop 1 and the fill of loop 2 overlap (the causal attention's
    off-diagonal and diagonal key loops, as Triton's tutorial writes them)."""
    l1, l2 = e1.loop, e2.loop
    op = l1.next_op
    while op is not l2:
        assert op is not None
        nxt = op.next_op
        op.detach()
        Rewriter.insert_op(op, InsertPoint.before(l1))
        op = nxt
    head1, trips1, has1 = e1.trips()
    head2, trips2, has2 = e2.trips()
    both = arith.AndIOp(has1, has2)
    Rewriter.insert_op([*head1, *head2, both], InsertPoint.before(l1))
    e1.bodies, e2.bodies = {}, {}
    then = Block()
    last1, start1 = e1.bounds(then, trips1, head1[0].results[0])
    e1.prologue(then)
    then.add_op(e1._steady(then, start1))
    last2, start2 = e2.bounds(then, trips2, head2[0].results[0])
    # loop 2's iteration 0 reads loop 1's results: those of its first stage are the
    # steady loop's, the others (read only by loop 2's second stage) the boundary's
    index = {r: j for j, r in enumerate(l1.results)}
    early = _Body("epi", 1, then, {})
    for j, init in enumerate(l2.iter_args):
        m = index.get(init)
        if m is not None and e1.stage[e1.producer[m]] == 0:
            e2.inits[j] = e1.lookup(early, l1.body.block.args[m + 1], 1)
    b1 = e1.bodies[("epi", 0)] = _Body("epi", 0, then, {1: last1})
    b2 = e2.bodies[("pro", 0)] = _Body("pro", 0, then, {0: l2.lb})
    b2.dots = b1.dots  # one body: the waits count the MMAs of both loops
    cut1, cut2 = _first_dot_end(e1, 1), _first_dot_end(e2, 0)
    assert cut1 is not None and cut2 is not None  # `chain_problem` found both MMAs
    e2.emit(b2, range(1), stop=cut2)
    e1.emit(b1, range(1, 2), stop=cut1)
    e2.emit(b2, range(1), start=cut2)
    e1.emit(b1, range(1, 2), start=cut1)
    results1 = e1._results(then)
    for j, init in enumerate(l2.iter_args):
        m = index.get(init)
        if m is not None:
            e2.inits[j] = results1[m]
    then.add_op(e2._steady(then, start2))
    e2.epilogue(then, last2)
    then.add_op(scf.YieldOp(*e2._results(then)))
    c1 = l1.clone()
    c2 = l2.clone(value_mapper=dict(zip(l1.results, c1.results, strict=True)))
    otherwise = Block([c1, c2, scf.YieldOp(*c2.results)])
    root = scf.IfOp(both.result, [r.type for r in l2.results], Region(then), Region(otherwise))
    Rewriter.insert_op(root, InsertPoint.before(l1))
    for old, new_v in zip(l2.results, root.results, strict=True):
        old.replace_all_uses_with(new_v)
    Rewriter.erase_op(l2, safe_erase=False)
    Rewriter.erase_op(l1, safe_erase=False)
    _Expansion(c1, e1.plan).apply()
    _Expansion(c2, e2.plan).apply()
    _drop_dead_index_ops(root)


def _await_at_once(clone: scf.ForOp, loop: scf.ForOp, awaited: set[tile.DotOp]) -> None:
    """`clone` of the original `loop`, run unpipelined when there are fewer trips than
    stages: each MMA the schedule awaits (`awaited`, dots of `loop`) is awaited right
    after it (pending 0: nothing runs beside it in body order)."""
    sched = scheduled_ops(clone.body.block)
    for dot, original in zip(sched, scheduled_ops(loop.body.block), strict=True):
        if original not in awaited:
            continue
        assert isinstance(dot, tile.DotOp)
        wait = hopper.WgmmaWaitOp(dot.result, 0)
        dot.result.replace_all_uses_with(wait.result)
        wait.operands = [dot.result]
        Rewriter.insert_op(wait, InsertPoint.after(dot))


def _drop_dead_index_ops(root: Operation) -> None:
    """Remove the index math the split left without uses (the slot indices stage B now
    computes itself)."""
    changed = True
    while changed:
        changed = False
        for op in list(root.walk()):
            if isinstance(op, SCALAR_OPS) and all(not r.uses for r in op.results):
                Rewriter.erase_op(op)
                changed = True


@dataclass(frozen=True)
class CoarsePipelinePass(ModulePass):
    """Applies the loop schedules of `#tawac.schedule` that are not expanded yet (two
    `chained` ones as one pipeline), and marks them expanded."""

    name = "coarse-pipeline"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for kernel in [o for o in op.walk() if isinstance(o, tile.KernelOp)]:
            plan = schedule.of(kernel)
            todo = [lp for lp in plan.loops if not lp.expanded]
            if not todo:
                continue
            parts = [p for p in kernel.body.block.ops if isinstance(p, aref.PartitionOp)]
            # Every plan's loop is found before any is expanded: an expansion of three or
            # more stages adds loops of its own, which would shift the later loops' numbers.
            loops = {}
            for lp in todo:
                part = next(p for p in parts if p.role.data == lp.role)
                loops[(lp.role, lp.loop)] = main_loops(part)[lp.loop]  # `plan` checked it
            chained: set[tuple[str, int]] = set()
            for lp in todo:
                if not lp.chained:
                    continue
                first = loops[(lp.role, lp.loop)]
                nxt = next((n for n in todo if (n.role, n.loop) == (lp.role, lp.loop + 1)), None)
                if nxt is None:
                    raise loop_error(first, lp, "it is chained to a loop already expanded")
                _chain_loops(first, lp, loops[(nxt.role, nxt.loop)], nxt)
                chained |= {(lp.role, lp.loop), (nxt.role, nxt.loop)}
            done = []
            for lp in plan.loops:
                if lp.expanded:
                    done.append(lp)
                    continue
                if (lp.role, lp.loop) not in chained:
                    _Expansion(loops[(lp.role, lp.loop)], lp).apply()
                done.append(dataclasses.replace(lp, expanded=True))
            schedule.update(kernel, loops=tuple(done))


def _chain_loops(first: scf.ForOp, lp1: LoopPlan, second: scf.ForOp, lp2: LoopPlan) -> None:
    """Expand the loops the schedule chains (`plan` checked the pair; `pipeline` and
    `persistent` keep what it checked, which is checked again here)."""
    problem = chain_problem(first, lp1, second, lp2)
    if problem is not None:
        raise loop_error(first, lp1, f"it is chained to the next loop, but {problem}")
    _chain(_Expansion(first, lp1), _Expansion(second, lp2))
