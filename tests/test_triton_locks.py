"""Triton's tutorial 05 layer norm backward `_layer_norm_bwd_dx_fused` through tawac: its
spin lock (`while tl.atomic_cas(Lock, 0, 1) == 1: pass`, `tl.atomic_xchg(Lock, 0)`), the
count under it (`count = tl.load(Count)`, `if count == 0: tl.atomic_xchg(Count, 1)`) and
the partial dw/db buffers it guards (examples/triton/layer_norm.py, `DX_FUSED`).

- The converted kernel's ops: a `tile.atomic_cas` in an `scf.while`, the count as a
  `tile.load_index`, the `scf.if` with an exchange in one branch and loads in the other.
- The interpreter against torch autograd at ragged sizes, several rows contending for
  each lock (GROUP_SIZE_M smaller than the rows): dx, and the partial DW/DB buffers
  summed (what `_layer_norm_bwd_dwdb` reduces); the locks free again, the counts set.
- warp-specialize keeps the critical section's loads in the consumer; the PTX holds the
  atomics between barriers in order with the critical section's loads and stores.
- The locks tawac refuses, each at its Python line (tests/triton_lock_kernels.py).
- On the GPU (not run here): the kernel compiled from Python by `tawac.triton` against
  autograd, many rows per lock."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
import torch
from gpu_util import load_module, requires_gpu
from xdsl.dialects import scf

from tawac.compiler import compile_module, parse_file, parse_text, run_pipeline
from tawac.dialects import aref, tile
from tawac.runtime.interpret import interpret_launch
from tawac.support.diagnostics import CompileError, location_of
from tawac.triton import TritonKernel, kernel_abi

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = REPO / "examples" / "triton"
TESTS = Path(__file__).resolve().parent
SHIPPED = EXAMPLES / "layer_norm_bwd_dx_fused.ttir"


def _example():
    return load_module(EXAMPLES / "layer_norm.py", "layer_norm")


def _line(path: Path, function: str, text: str) -> int:
    """The line of `text`'s first occurrence in `function` of `path`."""
    lines = path.read_text().splitlines()
    start = next(i for i, s in enumerate(lines) if s.startswith(f"def {function}("))
    return next(i for i in range(start, len(lines)) if text in lines[i]) + 1


def _ttir(groups: int, block: int) -> str:
    """The dx kernel's TTIR with GROUP_SIZE_M `groups` locks and BLOCK_SIZE_N `block`."""
    pytest.importorskip("triton")
    from tawac.triton import ttir_of

    cfg = _example().DX_FUSED
    return ttir_of(cfg["kernel"], cfg["signature"], {"GROUP_SIZE_M": groups, "BLOCK_SIZE_N": block})


def _kernel_of(text: str, name: str) -> tile.KernelOp:
    return next(o for o in parse_text(text, name).walk() if isinstance(o, tile.KernelOp))


def _interpreted(text: str, name: str) -> TritonKernel:
    """The converted kernel called as Triton's is, run by the interpreter."""
    op = _kernel_of(text, name)
    abi = kernel_abi(text, name)
    return TritonKernel.from_abi(abi, lambda *a: interpret_launch(op, list(a)), None, name)


def _inputs(m: int, n: int, device: str = "cpu"):
    """The tutorial's test inputs (float16 x, w, b, dy) and the forward's mean and 1/std."""
    g = torch.Generator(device=device).manual_seed(m * 1000 + n)
    x = (-2.3 + 0.5 * torch.randn(m, n, generator=g, device=device)).half()
    w = torch.rand(n, generator=g, device=device).half()
    b = torch.rand(n, generator=g, device=device).half()
    dy = (0.1 * torch.randn(m, n, generator=g, device=device)).half()
    xf = x.float()
    mean = xf.mean(-1)
    rstd = 1 / torch.sqrt(xf.var(-1, unbiased=False) + 1e-5)
    return x, w, b, dy, mean, rstd


def _autograd(x, w, b, dy):
    """dx, dw, db of `layer_norm` in float32 (the tutorial's reference)."""
    xr, wr, br = (t.float().clone().requires_grad_() for t in (x, w, b))
    y = torch.nn.functional.layer_norm(xr, (x.shape[-1],), wr, br, 1e-5)
    y.backward(dy.float())
    return xr.grad, wr.grad, br.grad


def _run(kernel, m: int, n: int, groups: int, device: str = "cpu"):
    """One launch on fresh buffers (NaN-poisoned outputs, free locks, zero counts): dx,
    the partial DW and DB buffers, the locks and counts, and the autograd reference."""
    x, w, b, dy, mean, rstd = _inputs(m, n, device)
    dx = torch.full_like(x, float("nan"))
    dw, db = (torch.full((groups, n), float("nan"), device=device).half() for _ in range(2))
    lock = torch.zeros(2 * groups, dtype=torch.int32, device=device)
    launch = kernel if device == "cpu" else kernel[(m,)]
    launch(dx, dy, dw, db, x, w, mean, rstd, lock, x.stride(0), n)
    return dx, dw, db, lock, _autograd(x, w, b, dy)


def _check(dx, dw, db, lock, ref, m: int, groups: int, dx_tol: float) -> None:
    ref_dx, ref_dw, ref_db = (r.to(dx.device) for r in ref)
    assert (dx.float() - ref_dx).abs().max().item() < dx_tol
    used = min(groups, m)
    for part, want in ((dw, ref_dw), (db, ref_db)):
        got = part[:used].float().sum(0)
        assert (got - want).abs().max().item() <= 1e-2 * max(1.0, want.abs().max().item())
        assert part[used:].isnan().all()  # a group no row has is never written
    assert lock[:groups].eq(0).all()  # every lock released
    counts = lock[groups:].tolist()
    assert counts == [1] * used + [0] * (groups - used)


# ---- what the conversion makes


def test_the_lock_converts_to_a_spin_on_a_compare_and_swap():
    """The spin is an `scf.while` (no carried values) around the compare-and-swap and its
    `== 1`; the count a `tile.load_index` after it; the `if count == 0` an `scf.if`
    yielding the partial sums, the exchange of the count in one branch and the loads of
    DW and DB in the other; the release the last op. The memory orders are Triton's
    (`acq_rel`), the spin at the `while`'s Python line."""
    op = next(o for o in parse_file(SHIPPED).walk() if isinstance(o, tile.KernelOp))
    body = list(op.body.block.ops)
    (spin,) = [o for o in body if isinstance(o, scf.WhileOp)]
    assert not spin.arguments and not spin.res
    before = list(spin.before_region.block.ops)
    (cas,) = [o for o in before if isinstance(o, tile.AtomicCasOp)]
    assert cas.order.data == "acq_rel" and cas.acquires and cas.releases
    assert isinstance(before[-1], scf.ConditionOp)
    line = _line(EXAMPLES / "layer_norm.py", "_layer_norm_bwd_dx_fused", "while tl.atomic_cas")
    assert location_of(spin) == f"examples/triton/layer_norm.py:{line}:4"
    after = body[body.index(spin) + 1 :]
    count = next(o for o in after if isinstance(o, tile.LoadIndexOp))
    (branch,) = [o for o in after if isinstance(o, scf.IfOp)]
    assert body.index(count) < body.index(branch)
    then_ops = list(branch.true_region.block.ops)
    else_ops = list(branch.false_region.block.ops)
    assert [o.name for o in then_ops if isinstance(o, tile.AtomicXchgOp)] == ["tile.atomic_xchg"]
    loads = [o for o in else_ops if isinstance(o, tile.LoadOp)]
    assert [ld.source.name_hint for ld in loads] == ["DW", "DB"]
    assert [str(r.type) for r in branch.results] == ["tensor<1024xf32>"] * 2
    release = body[-2]
    assert isinstance(release, tile.AtomicXchgOp) and release.target.name_hint == "Lock"
    names = {a.name_hint: [n.data for n in a.type.dim_names] for a in op.body.block.args}
    assert names["DW"] == ["DW0", "N"] and names["Lock"] == ["Lock0"]


# ---- the interpreter against autograd


@pytest.mark.parametrize(
    ("groups", "block", "m", "n"),
    [(4, 256, 13, 200), (3, 1024, 10, 1000), (4, 256, 2, 1), (1, 256, 7, 256)],
)
def test_dx_fused_matches_autograd(groups, block, m, n):
    """Several rows per lock (13 rows on 4 locks, 7 on one), rows past the block's end
    masked, fewer rows than locks: dx, the partial sums, the locks and counts."""
    kernel = _interpreted(_ttir(groups, block), "dx_fused.ttir")
    dx, dw, db, lock, ref = _run(kernel, m, n, groups)
    _check(dx, dw, db, lock, ref, m, groups, dx_tol=4e-3)


def test_the_shipped_kernel_matches_autograd():
    """examples/triton/layer_norm_bwd_dx_fused.ttir as shipped (256 locks, 1024 columns)."""
    kernel = _interpreted(SHIPPED.read_text(), str(SHIPPED))
    dx, dw, db, lock, ref = _run(kernel, 5, 700, 256)
    _check(dx, dw, db, lock, ref, 5, 256, dx_tol=4e-3)


# ---- warp specialization and the PTX


def test_the_critical_section_stays_in_the_consumer():
    """The producer streams x, dy and w (loaded before the lock); the count and the
    partial sums are read by the consumer after its spin, not by the producer's TMA."""
    module = parse_file(SHIPPED)
    run_pipeline(module, "canonicalize,warp-specialize")
    parts = [o for o in module.walk() if isinstance(o, aref.PartitionOp)]
    producer, consumer = parts
    streamed = [o.source.name_hint for o in producer.walk() if isinstance(o, tile.LoadOp)]
    assert streamed == ["X", "DY", "W"]
    assert not any(isinstance(o, tile.LoadIndexOp | tile.AtomicCasOp) for o in producer.walk())
    ops = list(consumer.walk())
    spin = next(i for i, o in enumerate(ops) if isinstance(o, scf.WhileOp))
    reads = [
        i
        for i, o in enumerate(ops)
        if isinstance(o, tile.LoadIndexOp)
        or (isinstance(o, tile.LoadOp) and o.source.name_hint in ("DW", "DB"))
    ]
    assert len(reads) == 3 and min(reads) > spin


def test_the_ptx_holds_the_lock_around_the_critical_section():
    """The spin (`atom.acq_rel.gpu.global.cas.b32` between two barriers of the consumer,
    branching back while the old value is 1), then the count's and the partial sums'
    loads, their stores, and the release (`atom...exch.b32` after a barrier); no TMA
    and no mbarrier wait in between; ptxas without spills."""
    result = compile_module(parse_file(SHIPPED))
    lines = result.ptx.splitlines()
    at = {
        "cas": [i for i, s in enumerate(lines) if "atom.acq_rel.gpu.global.cas.b32" in s],
        "exch": [i for i, s in enumerate(lines) if "atom.acq_rel.gpu.global.exch.b32" in s],
        "spin_end": [i for i, s in enumerate(lines) if re.match(r"\$L_spin_end_\d+:", s)],
    }
    assert len(at["cas"]) == 1 and len(at["exch"]) == 2 and len(at["spin_end"]) == 1
    cas, spin_end, release = at["cas"][0], at["spin_end"][0], at["exch"][-1]
    assert cas < spin_end < release
    section = lines[spin_end:release]
    assert sum("ld.global.s32" in s for s in section) == 1  # the count
    assert sum("ld.global" in s and "v2.f32" in s for s in section) >= 2  # DW, DB
    assert sum("st.global" in s for s in section) >= 2
    assert not any("cp.async" in s or "mbarrier" in s for s in section)
    for i in (cas, release):
        before = [s for s in lines[i - 30 : i] if "bar.sync" in s]
        after = [s for s in lines[i : i + 8] if "bar.sync" in s]
        assert before and after, lines[i - 30 : i + 8]
    from tawac.support.ptxas import assemble, locate_ptxas

    ptxas = locate_ptxas()
    if ptxas is not None:
        _, report = assemble(result.ptx, ptxas, verbose=True)
        assert "0 bytes spill stores, 0 bytes spill loads" in report, report


# ---- refusals, each at its Python line

_SIGNATURE = {
    "x_ptr": "*fp32",
    "y_ptr": "*fp32",
    "z_ptr": "*fp32",
    "lock_ptr": "*i32",
    "m": "i32",
    "n": "i32",
}
_BLOCK = {"BLOCK": 256}
REFUSED = {
    # kernel: (constexprs, the line's text, the message)
    "cas_tile": (_BLOCK, "tl.atomic_cas(", "tl.atomic_cas (tt.atomic_cas): a tile program has no"),
    "xchg_system": (_BLOCK, "tl.atomic_xchg(", "tl.atomic_xchg at sys scope"),
    "spin_counting": (_BLOCK, "while tl.atomic_cas", "a while loop that carries values"),
    "spin_on_load": (_BLOCK, "while tl.load", "a while loop whose condition reads no atomic"),
    "barrier_between": (_BLOCK, "tl.debug_barrier()", "other than right before a lock's atomic"),
    "locked_block": (
        {"BLOCK_M": 64, "BLOCK_N": 64},
        "while tl.atomic_cas",
        "warp-specialize: tile.atomic_cas in a kernel with 2-d tiles is not supported yet",
    ),
}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_the_locks_tawac_refuses_at_their_python_line(name):
    pytest.importorskip("triton")
    sys.path.insert(0, str(TESTS))
    import triton_lock_kernels as kernels

    from tawac.triton import ttir_of

    constexprs, text, expected = REFUSED[name]
    fn = getattr(kernels, name)
    ttir = ttir_of(fn, {k: _SIGNATURE[k] for k in fn.arg_names if k in _SIGNATURE}, constexprs)
    with pytest.raises(CompileError) as info:
        compile_module(parse_text(ttir, f"{name}.ttir"))
    message = str(info.value)
    assert "\n" not in message
    line = _line(TESTS / "triton_lock_kernels.py", name, text)
    assert f"triton_lock_kernels.py:{line}:" in message, message
    assert expected in message, message


# ---- on the GPU, from Python


def _compiled(groups: int, block: int):
    import tawac.triton

    cfg = _example().DX_FUSED
    constexprs = {"GROUP_SIZE_M": groups, "BLOCK_SIZE_N": block}
    return tawac.triton.compile(cfg["kernel"], signature=cfg["signature"], constexprs=constexprs)


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize(
    ("groups", "block", "m", "n"),
    [(8, 1024, 1151, 781), (256, 1024, 4000, 1000), (3, 256, 997, 200), (64, 1024, 63, 1024)],
)
def test_dx_fused_on_the_gpu(groups, block, m, n):
    """Many programs contend for each lock (1151 rows on 8 locks, 997 on 3); 4000 rows
    on the tutorial's 256; fewer rows than locks."""
    pytest.importorskip("triton")
    kernel = _compiled(groups, block)
    dx, dw, db, lock, ref = _run(kernel, m, n, groups, device="cuda")
    torch.cuda.synchronize()
    _check(dx, dw, db, lock, ref, m, groups, dx_tol=1e-2)


@pytest.mark.gpu
@requires_gpu
def test_dx_fused_on_the_gpu_twice():
    """Two launches with their own counts (the second starts from zeros) agree with the
    reference each time: the lock leaves no state behind but the counts."""
    pytest.importorskip("triton")
    kernel = _compiled(4, 1024)
    for _ in range(2):
        dx, dw, db, lock, ref = _run(kernel, 2049, 1000, 4, device="cuda")
        torch.cuda.synchronize()
        _check(dx, dw, db, lock, ref, 2049, 4, dx_tol=1e-2)
