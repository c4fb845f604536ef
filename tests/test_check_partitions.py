"""Translation validation through the passes of the warp-specialized kernel
(`tawac.runtime.partitions`, `tawac.check.validate.PARTITION_STOP`): every corpus program
and Triton kernel computes in the interpreter, after `warp-specialize` to
`reread-slots`, what it computed as written (a program of each family under the option
sets that change what those passes do); and a partition pass broken on purpose is caught
(a slot read after its release, a slot never released), naming the pass."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_check import PROGRAMS, TRITON

from tawac.check import ValidationError, baseline, validate_pipeline
from tawac.check.validate import PARTITION_STOP
from tawac.compiler import parse_file
from tawac.support.diagnostics import CompileError

REPO = Path(__file__).resolve().parent.parent

#: The option sets that change the warp-specialized kernel's passes (a refusal, a located
#: error, is fine but for the defaults).
CONFIGS = {
    "default": {},
    "stages-2": {"stages": 2},
    "consumer-wg-1": {"consumer_warp_groups": 1},
    "no-coarse-pipeline": {"coarse_pipeline": False},
    "no-chain-loops": {"chain_loops": False},
    "no-reuse-slots": {"reuse_slots": False},
    "no-persistent": {"persistent": False},
    "overlap-epilogue": {"overlap_epilogue": True},
    "split-k": {"split_k": 3},
    "stream-k": {"stream_k": 2},
}


#: A program of each family, checked under every option set of `CONFIGS` (the others
#: under the defaults: the check of all 92 under all ten takes a quarter of an hour).
FAMILIES = {
    "gemm_bf16_128x256",
    "gemm_grouped_bf16",
    "gemm_two_accumulators",
    "mlp_b2b_bf16_128x128",
    "attention_d128_128x128",
    "attention_causal_d64_128x64",
    "attention_decode_gqa8",
    "attention_gqa_causal_g4_d128_128x128",
    "softmax_bf16",
    "layernorm_bf16",
    "rmsnorm_bwd_bf16",
    "layernorm_bwd_rows_bf16",
}


def _check(entry, configs) -> list[str]:
    """Validates `entry` through the partition passes under each option set; returns the
    ones refused (with a located error)."""
    module = parse_file(REPO / entry["source"], params=entry["defines"] or None)
    base = baseline(module, entry["check_sizes"], indices=entry.get("indices"))
    known: set[object] = set()
    refused = []
    for name, options in configs.items():
        label = f"{entry['name']} [{name}]"
        try:
            done = validate_pipeline(
                module, base, program=label, known=known, stop=PARTITION_STOP, **options
            )
        except CompileError as e:
            assert ":" in str(e), f"{label}: refusal without a location: {e}"
            refused.append(name)
            continue
        if name == "default":
            assert any(v.pass_name == "warp-specialize" and v.changed for v in done)
    return refused


@pytest.mark.parametrize("entry", PROGRAMS, ids=[p["name"] for p in PROGRAMS])
def test_partition_passes_keep_the_meaning_of_every_corpus_program(entry):
    configs = CONFIGS if entry["name"] in FAMILIES else {"default": {}}
    assert "default" not in _check(entry, configs)


@pytest.mark.parametrize("path", sorted(TRITON))
def test_partition_passes_keep_the_meaning_of_every_triton_kernel(path):
    """Triton's kernels as their authors wrote them (the tutorial's layer norm backward
    with its lock runs its CTAs one after another, each alone)."""
    entry = {"name": path, "source": path, "defines": None, "check_sizes": TRITON[path]}
    assert "default" not in _check(entry, {"default": {}})


def test_the_families_are_corpus_programs():
    assert FAMILIES <= {p["name"] for p in PROGRAMS}


def test_a_release_of_an_earlier_transfer_before_a_read_is_no_breach():
    """coarse-pipeline's expanded loop releases transfer j after getting j + 1 and before
    reducing it (the fuzz campaign's seed 30, `column_sum.mlir` at BLOCK_M 1): the read
    is of a transfer still held. A check that paired each release with the get before it
    in its block took this for a read after the release."""
    module = parse_file(REPO / "examples" / "column_sum.mlir", params={"BLOCK_M": 1})
    done = validate_pipeline(
        module, baseline(module, {"N": 333, "P": 130}), program="cs", stop=PARTITION_STOP
    )
    assert {v.pass_name for v in done if v.changed} >= {"coarse-pipeline", "persistent"}


# ---- a broken partition pass is caught

ROWS = REPO / "examples" / "rmsnorm_bwd_rows.mlir"
ROWS_PARAMS = {"BLOCK_M": 1, "BLOCK_N": 8192}  # the slots are read again (reread-slots)
ROWS_SIZES = {"M": 13, "N": 8000, "P": 4}  # 3 CTAs, 4-5 rows each: past the ring's 4


def _validate_rows():
    module = parse_file(ROWS, params=ROWS_PARAMS)
    return validate_pipeline(  # one warp group a row (over two, nothing is read again)
        module,
        baseline(module, ROWS_SIZES),
        program="rows",
        stop=PARTITION_STOP,
        spread_rows=False,
    )


def test_the_slot_rereads_are_validated():
    done = {v.pass_name: v for v in _validate_rows()}
    assert done["reread-slots"].changed
    assert done["reread-slots"].outputs == ["dw_part", "dx"]
    assert done["reread-slots"].max_error == 0.0  # the same ops on the same values


def test_a_release_before_the_second_read_is_caught(monkeypatch):
    """reread-slots broken on purpose: each slot released right after its second get,
    before the cast that reads the payload."""
    from tawac.analysis import remat

    monkeypatch.setattr(remat, "last_reader", lambda get: get)
    with pytest.raises(ValidationError) as info:
        _validate_rows()
    err = info.value
    assert err.pass_name == "reread-slots" and err.program == "rows"
    assert "reads the payload of aref.get" in str(err) and "after its release" in str(err)


def test_a_slot_never_released_is_caught(monkeypatch):
    """reread-slots broken on purpose: the moved release of x dropped, so the producer's
    fifth row waits for a slot nobody frees."""
    from tawac.analysis import remat
    from tawac.dialects import aref

    apply = remat.apply

    def drop(r):
        apply(r)
        for op in list(r.block.ops):
            if isinstance(op, aref.ConsumedOp) and op.aref.owner.ident == "x":
                op.detach()
                op.erase()

    monkeypatch.setattr(remat, "apply", drop)
    with pytest.raises(ValidationError) as info:
        _validate_rows()
    assert info.value.pass_name == "reread-slots"
    assert "aref x: transfer 4 is put into the slot of transfer 0" in str(info.value)
    assert "never released" in str(info.value)


def test_a_read_without_a_wait_of_a_transfer_not_received_is_caught():
    """A get marked `again` (no wait: lower-aref emits no mbarrier wait for it) where no
    earlier get received the transfer would read a slot the producer may not have
    filled: the interpreter refuses it."""
    from xdsl.dialects.builtin import UnitAttr

    from tawac.check.validate import kernel_of, run
    from tawac.compiler import run_pipeline
    from tawac.dialects import aref
    from tawac.runtime.partitions import ProtocolError
    from tawac.support.options import PipelineOptions

    module = parse_file(ROWS, params=ROWS_PARAMS)
    base = baseline(module, ROWS_SIZES)
    run_pipeline(module, PipelineOptions().pipeline(stop=PARTITION_STOP))
    kernel = kernel_of(module)
    assert run(kernel, base.inputs).keys() == {"dx", "dw_part"}
    first = next(
        g
        for g in kernel.walk()
        if isinstance(g, aref.GetOp) and g.again is None and g.aref.owner.ident == "x"
    )
    first.properties["again"] = UnitAttr()
    with pytest.raises(ProtocolError, match="again .without waiting., but no get received it"):
        run(kernel, base.inputs)


# ---- rows longer than the ring: their first tiles keep their slots (`hold`)

#: 8 x 64 tiles (1 KiB), a ring of 6: at 2 KiB of streamed slots, 4 held and 2 streamed
#: (the shipped 64 KiB would hold none in so small a ring); 40 rows over 5 programs, on 3
#: CTAs where persistent.
HELD_PARAMS = {"BLOCK_M": 8, "BLOCK_N": 64}


def _validate_held(name: str, n: int, **options):
    module = parse_file(REPO / "examples" / f"{name}.mlir", params=HELD_PARAMS)
    return validate_pipeline(
        module,
        baseline(module, {"M": 40, "N": n}),
        program=name,
        stop=PARTITION_STOP,
        stages=6,
        **options,
    )


@pytest.fixture
def small_streams(monkeypatch):
    from tawac.schedule import planner

    monkeypatch.setattr(planner, "HOLD_STREAM_BYTES", 2048)


@pytest.mark.parametrize("persistent", [True, False])
@pytest.mark.parametrize("n", [300, 700, 1111])  # 5 tiles (fit), 11 and 18 (do not)
@pytest.mark.parametrize("name", ["softmax", "layernorm"])  # 2 and 3 loops
def test_held_slots_keep_the_meaning(name, n, persistent, small_streams):
    """`reuse-slots` with a hold: where the row fits, the whole-row numbering; where not,
    4 tiles held over the loops and the rest streamed through 2 slots, each slot's
    transfers one use after the other, released in an order the producer can wait for
    (the interpreter replays both partitions against the ring)."""
    from tawac.check.validate import kernel_of
    from tawac.compiler import run_pipeline
    from tawac.schedule import of
    from tawac.support.options import PipelineOptions

    done = {v.pass_name: v for v in _validate_held(name, n, persistent=persistent)}
    assert done["reuse-slots"].changed
    module = parse_file(REPO / "examples" / f"{name}.mlir", params=HELD_PARAMS)
    run_pipeline(module, PipelineOptions(stages=6, persistent=persistent).pipeline(stop="pipeline"))
    (x,) = [a for a in of(kernel_of(module)).arefs if a.resident]
    assert (x.depth, x.hold) == (6, 4)


def test_a_held_slot_numbered_a_phase_ahead_is_caught(monkeypatch, small_streams):
    """reuse-slots broken on purpose: a held slot's transfers numbered 2D apart a program
    (a use skipped), so that its barriers' phases would not match: the interpreter
    refuses the put whose slot's previous transfer was never put."""
    from tawac.passes import reuse_slots

    values = reuse_slots._held_values

    def skip(loop, loops, depth, hold):
        v = values(loop, loops, depth, hold)
        two = reuse_slots.arith.AddiOp(v.held_base, v.held_base)
        reuse_slots.Rewriter.insert_op(two, reuse_slots.InsertPoint.before(loop))
        v.held_base = two.result
        return v

    monkeypatch.setattr(reuse_slots, "_held_values", skip)
    with pytest.raises(ValidationError) as info:
        _validate_held("softmax", 700)
    assert info.value.pass_name in ("reuse-slots", "persistent")
    assert "which was never put" in str(info.value)


def test_a_ring_the_partitions_wait_on_each_other_in_is_caught(monkeypatch):
    """reuse-slots broken on purpose: a row of D + 1 tiles taken to fit in the ring of D
    (the test off by one), so the producer's last put of the first loop waits for a
    slot the consumer releases only in the last loop, which waits for that put. Every
    transfer is put and released once, and the producer-first run computes the right
    values; only replaying the two partitions against the ring's waits shows it."""
    from xdsl.dialects import arith
    from xdsl.dialects.builtin import IndexType

    from tawac.passes import persistent, reuse_slots

    def off_by_one(trips, depth):
        d = arith.ConstantOp.from_int_and_width(depth + 1, IndexType())
        return [d, arith.CmpiOp(trips, d.result, "sle")]

    monkeypatch.setattr(reuse_slots, "stays_in_ring", off_by_one)
    monkeypatch.setattr(persistent, "stays_in_ring", off_by_one)
    with pytest.raises(ValidationError) as info:
        _validate_held("softmax", 64 * 7, hold_slots=False)  # 7 tiles, a ring of 6
    assert info.value.pass_name == "reuse-slots"
    assert "the partitions wait on each other" in str(info.value)
