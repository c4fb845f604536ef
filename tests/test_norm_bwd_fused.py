"""The norm backwards in one launch (`examples/rmsnorm_bwd_fused.mlir`,
`layernorm_bwd_fused.mlir`): dx and each program's partial weight sums as the one-read
form computes them, then the last program to arrive at the ticket adds the partials
(`tile.arrive`, `tile.split_sum`) and stores dw (and db) itself. On the CPU: the
interpreter against autograd at ragged sizes and program counts (one program; more
programs than row blocks; the most the launch check allows), the tile passes' meaning, the
launch checks, and the PTX of the sum (predicated 16-byte loads of every slice, no branch
around them); on the GPU: against autograd with poisoned outputs, twice on one ticket."""

from __future__ import annotations

import re

import pytest
from gpu_util import requires_gpu
from test_norm_examples import EXAMPLES, _backward, _check

from tawac.check import baseline, validate_pipeline
from tawac.compiler import compile_file, parse_file
from tawac.driver import kernel_op
from tawac.runtime.interpret import interpret_launch

FUSED = ["layernorm_bwd_fused", "rmsnorm_bwd_fused"]
#: The most programs the examples' launch check allows (their MAX_P).
MAX_P = 16


def _fused(name: str, m: int, n: int, p: int, device: str, seed: int, block_m: int = 1):
    """(the inputs, the NaN-poisoned outputs by name, torch's gradients, the ticket) of
    `name` at m x n with `p` programs (`part`'s first dimension) of `block_m` rows a
    step."""
    import torch

    args, outs, want = _backward(name.removesuffix("_fused"), m, n, device, seed)
    nan = float("nan")
    grads = {"dx": outs["dx"]}
    for g in ("dw", "db"):
        if g in want:
            grads[g] = torch.full((n,), nan, device=device).to(torch.bfloat16)
    shape = (p, 2, block_m, n) if "db" in want else (p, block_m, n)
    grads["part"] = torch.full(shape, nan, device=device)
    ticket = torch.zeros(1, dtype=torch.int32, device=device)
    return args, grads, want, ticket


@pytest.mark.parametrize(
    ("m", "n", "p", "block_m", "block_n"),
    [
        (1, 333, 1, 1, 512),  # one row, one program: the sum of one partial
        (5, 256, 9, 1, 256),  # more programs than rows: zero partials
        (130, 333, 7, 1, 512),  # more row blocks than programs
        (131, 333, 16, 2, 512),  # the most programs, an odd last block
        (16, 100, 8, 2, 128),  # a row shorter than a 16-byte vector's multiple
    ],
)
@pytest.mark.parametrize("name", FUSED)
def test_the_fused_backward_in_the_interpreter_agrees_with_autograd(
    name, m, n, p, block_m, block_n
):
    args, grads, want, ticket = _fused(name, m, n, p, "cpu", 13, block_m)
    kernel = kernel_op(EXAMPLES / f"{name}.mlir", params={"BLOCK_M": block_m, "BLOCK_N": block_n})
    interpret_launch(kernel, [*args, *grads.values(), ticket])
    _check(name, grads, want)
    assert ticket.tolist() == [0], "the last arrival sets the ticket back to 0"


@pytest.mark.parametrize("name", FUSED)
def test_the_tile_passes_keep_the_fused_backwards_meaning(name):
    module = parse_file(EXAMPLES / f"{name}.mlir", params={"BLOCK_N": 512})
    sizes = {"M": 130, "N": 333, "P": 7, "R": 1, "T": 1}
    if name.startswith("layernorm"):
        sizes["G"] = 2
    base = baseline(module, sizes)
    assert validate_pipeline(module, base, program=name)


@pytest.mark.parametrize("name", FUSED)
def test_the_fused_backward_refuses_more_programs_than_its_sum_reads(name):
    """More than MAX_P partials would be summed in part only: refused at launch, as is a
    `part` whose rows are not one a row of the step (and, for the layer norm, one block a
    gradient): the sums would read rows no program wrote."""
    from tawac.runtime.arguments import LaunchError, check_shapes

    res = compile_file(EXAMPLES / f"{name}.mlir", cubin=False)
    layer = name.startswith("layernorm")

    def shapes(p: int, extra: int = 0) -> dict:
        out = {}
        for a in res.sidecar["args"]:
            rank = a.get("rank")
            if a["name"] == "part":  # BLOCK_M = 1 rows (per gradient)
                out["part"] = (p, 2 + extra, 1, 4096) if layer else (p, 1 + extra, 4096)
            elif a["name"] == "ticket":
                out["ticket"] = (1,)
            else:
                out[a["name"]] = (8, 4096) if rank == 2 else (8,) if rank == 1 else ()
        return out

    check_shapes(res.sidecar["checks"], shapes(MAX_P), res.sidecar["args"])
    with pytest.raises(LaunchError, match=r"part.shape\[0\] \(P\) is 17"):
        check_shapes(res.sidecar["checks"], shapes(MAX_P + 1), res.sidecar["args"])
    with pytest.raises(LaunchError, match=r"part.shape\[1\]"):
        check_shapes(res.sidecar["checks"], shapes(MAX_P, 1), res.sidecar["args"])


@pytest.mark.parametrize("name", FUSED)
def test_the_last_programs_sum_is_a_loop_over_the_slices_of_predicated_vectors(name):
    """After the ticket (`atom` then `bar.red.or`), each sum is one loop over the slices
    (`$L_slices_*`, branched back to while the slice is below the count) whose body reads
    every run of the thread's once with a predicated `ld.global.cg.v4.f32` (none
    branched around: a slice's loads are in flight together), and `part` is 16-byte
    aligned for them; ptxas spills nothing (unrolled over the 16 slices, it did)."""
    res = compile_file(EXAMPLES / f"{name}.mlir")
    ptx = res.ptx
    tail = ptx[ptx.index("bar.red.or.pred") :]
    loads = re.findall(r"^\s*(@%p\d+ )?ld\.global\.cg\.(v4\.)?f32", tail, re.M)
    assert loads and all(pred and vec for pred, vec in loads), loads[:4]
    sums = 2 if name.startswith("layernorm") else 1
    # 4096 columns over 128 threads: 32 f32 a thread, 8 vectors a slice
    assert len(loads) == sums * 8
    loops = re.findall(r"^(\$L_slices_\d+):", tail, re.M)
    assert len(loops) == sums
    for label in loops:
        assert re.search(rf"bra\.uni {re.escape(label)};", tail), label
    assert not re.search(r"\$L_skip_\d+:\s*\n\s*add\.f32", tail), "a load branched around"
    part = next(p for p in res.sidecar["params"] if p.get("arg") == "part" and "align" in p)
    assert part["align"] == 16
    assert " 0 bytes spill stores" in res.ptxas_report, res.ptxas_report


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize(
    ("n", "block_m", "block_n"),
    [(333, 1, 512), (4096, 1, 4096), (8192, 1, 8192), (333, 2, 512), (4096, 2, 4096)],
)
@pytest.mark.parametrize("m", [1, 16, 77, 128])
@pytest.mark.parametrize("name", FUSED)
def test_the_fused_backward_matches_autograd_on_the_gpu(name, m, n, block_m, block_n):
    """Poisoned outputs and partials, P = the row blocks up to MAX_P, two launches on one
    ticket (the first sets it back to 0 for the second), against autograd in float32."""
    import torch

    import tawac.torch

    kernel = tawac.torch.kernel(
        EXAMPLES / f"{name}.mlir", params={"BLOCK_M": block_m, "BLOCK_N": block_n}
    )
    p = min(-(-m // block_m), MAX_P)
    args, grads, want, ticket = _fused(name, m, n, p, "cuda", m * 7 + n, block_m)
    for _ in range(2):
        for t in grads.values():
            t.fill_(float("nan"))
        kernel(*args, *grads.values(), ticket)
        torch.cuda.synchronize()
        for key in want:
            assert not torch.isnan(grads[key].float()).any(), (name, key)
        _check(name, grads, want)
        assert ticket.item() == 0


@pytest.mark.parametrize("name", FUSED)
def test_explain_names_the_ticket_and_what_the_last_program_adds(name):
    from tawac.support.options import PipelineOptions
    from tawac.tools.explain import explain_module, tickets_text

    info = explain_module(parse_file(EXAMPLES / f"{name}.mlir"), PipelineOptions())
    assert info["tickets"] == [{"counter": "ticket", "sums": ["part"]}]
    assert tickets_text(info["tickets"]).startswith(
        "tickets: the last program to arrive at ticket (tile.arrive in the source) adds up "
        "part in program order"
    )
    split = explain_module(parse_file(EXAMPLES / "gemm.mlir"), PipelineOptions(split_k=2))
    assert split["decomposition"]["kind"] == "split_k"
    assert "tickets" not in split, "a pass's own tickets are its decomposition's"


def test_a_split_sum_over_an_arguments_rows_is_bounded_at_launch_without_a_stated_check(
    tmp_path,
):
    """The example without its own `at_most` check on part's rows: `plan` records it from
    the split sum (`split_sum_checks`: count = part.shape[0], max MAX_P), so a launch with
    more partials than the sum reads is refused, not summed in part."""
    from tawac.runtime.arguments import LaunchError, check_shapes

    text = (EXAMPLES / "rmsnorm_bwd_fused.mlir").read_text()
    stated = '{arg = "part", dim = 0, at_most = {const = $MAX_P}}, '
    assert stated in text
    src = tmp_path / "unchecked.mlir"
    src.write_text(text.replace(stated, ""))
    res = compile_file(src, cubin=False)
    assert {"arg": "part", "dim": 0, "at_most": {"const": MAX_P}} in res.sidecar["checks"]
    shapes = {a["name"]: (8, 4096) if a.get("rank") == 2 else (8,) for a in res.sidecar["args"]}
    shapes.update(part=(MAX_P + 1, 1, 4096), ticket=(1,))
    with pytest.raises(LaunchError, match=r"part.shape\[0\] \(P\) is 17"):
        check_shapes(res.sidecar["checks"], shapes, res.sidecar["args"])
