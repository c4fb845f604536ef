"""`tuning.pick_entry`'s wave model: at a GEMM size no entry was tuned at, the
tile-filling entry whose tile leaves the fewest idle slots in the last wave (its
measured time scaled by whole waves x tile work) wins over the nearest entry; exact
sizes, small (decode) sizes, other decompositions and non-GEMM tables keep the nearest
entry. Measured on the H100 (docs/perf/2026-11-27.md): 7168 x 2048 x 4096 ran 206 us
with its nearest entry's 192 x 192 tiles and 171 with 256 x 160, which the model picks."""

from __future__ import annotations

from tawac.schedule.tuning import nearest_entry, pick_entry, predicted_ms

ARGS = [
    {"name": n, "kind": "tensor", "dtype": "bf16", "rank": 2, "dims": d, "access": acc}
    for n, d, acc in (
        ("a", ["M", "K"], "read"),
        ("b", ["N", "K"], "read"),
        ("c", ["M", "N"], "write"),
    )
]


def _entry(bucket, sizes, bm, bn, ms, **options):
    return {
        "bucket": dict(zip("MNK", bucket, strict=True)),
        "sizes": dict(zip("MNK", sizes, strict=True)) if sizes else None,
        "params": {"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": 64},
        "options": options,
        "time_ms": ms,
    }


# Entries as the shipped table holds them (times measured on the H100 at their sizes).
WIDE = _entry((4096, 8192, 4096), (2304, 4608, 3072), 256, 160, 0.0895)
SQUARE = _entry((8192, 4096, 4096), (6144, 3072, 4096), 192, 192, 0.2203)
TALL = _entry((4096, 8192, 2048), (3072, 7168, 2048), 192, 128, 0.1290)
DECODE = _entry((16, 4096, 4096), None, 16, 64, 0.02, swap_ab=True)
TABLE = {"args": ARGS, "entries": [WIDE, SQUARE, TALL, DECODE]}
SIZE = {"M": 7168, "N": 2048, "K": 4096}


def test_the_wave_model_beats_the_nearest_tile():
    assert nearest_entry(TABLE, SIZE) is SQUARE
    assert pick_entry(TABLE, SIZE, 132) is WIDE
    # 256 x 160: 28 x 13 = 364 tiles, 3 waves; 192 x 192: 38 x 11 = 418 tiles, 4 waves
    wide = predicted_ms(WIDE, SIZE, ("M", "N"), 132)
    square = predicted_ms(SQUARE, SIZE, ("M", "N"), 132)
    assert wide is not None and square is not None and wide < square
    assert abs(square - 0.2203) < 1e-9  # 4 waves of the same tiles at the same depth


def test_without_an_sm_count_the_nearest_entry_applies():
    assert pick_entry(TABLE, SIZE) is SQUARE


def test_an_entry_tuned_at_these_sizes_applies_as_it_is():
    assert pick_entry(TABLE, {"M": 6144, "N": 3072, "K": 4096}, 132) is SQUARE
    bucket_only = _entry((2048, 2048, 2048), None, 128, 128, 0.03)
    table = {"args": ARGS, "entries": [bucket_only, WIDE]}
    assert pick_entry(table, {"M": 2048, "N": 2048, "K": 2048}, 132) is bucket_only


def test_less_than_a_wave_keeps_the_nearest_entry():
    """A decode size (one row of tiles) is not the wave model's: its nearest entry (a
    swap-AB tile) stays, and a decode entry never calibrates the model."""
    assert pick_entry(TABLE, {"M": 16, "N": 4096, "K": 4096}, 132) is DECODE
    small = {"M": 1024, "N": 1024, "K": 1024}  # 16 tiles of 256 x 160
    assert pick_entry(TABLE, small, 132) is nearest_entry(TABLE, small)
    assert predicted_ms(DECODE, SIZE, ("M", "N"), 132) is None


def test_entries_without_their_sizes_do_not_calibrate():
    old = _entry((8192, 8192, 8192), None, 128, 256, 0.665)  # a time without its sizes
    assert predicted_ms(old, SIZE, ("M", "N"), 132) is None


def test_a_table_that_is_not_a_gemm_keeps_the_nearest_entry():
    attn_args = [
        {"name": "q", "kind": "tensor", "dims": ["B", "H", "L", "D"], "access": "read"},
        {"name": "o", "kind": "tensor", "dims": ["B", "H", "L", "D"], "access": "write"},
    ]
    table = {"args": attn_args, "entries": [WIDE, SQUARE, TALL]}
    assert pick_entry(table, SIZE, 132) is SQUARE


def test_a_row_kernels_table_keeps_the_nearest_entry():
    """A row kernel's table (the softmax's, the RMS norm's: y [M, N] written from x
    [M, N]) names no contracted dimension: its programs are bands of whole rows, not
    BLOCK_M x BLOCK_N tiles, so the wave model's tile count does not apply, even to
    entries tuned at sizes of their own."""
    from tawac.schedule.tuning import output_dims

    rows_args = [
        {"name": "x", "kind": "tensor", "dims": ["M", "N"], "access": "read"},
        {"name": "w", "kind": "tensor", "dims": ["N"], "access": "read"},
        {"name": "y", "kind": "tensor", "dims": ["M", "N"], "access": "write"},
    ]
    two = [
        {"bucket": {"M": 4096, "N": 4096}, "sizes": {"M": 3000, "N": 4000}, "time_ms": 0.03,
         "params": {"BLOCK_M": 8, "BLOCK_N": 1024}, "options": {}},
        {"bucket": {"M": 16, "N": 131072}, "sizes": {"M": 20, "N": 100000}, "time_ms": 0.001,
         "params": {"BLOCK_M": 1, "BLOCK_N": 4096}, "options": {}},
    ]  # fmt: skip
    table = {"args": rows_args, "entries": two}
    assert output_dims(table) is None and output_dims({"args": ARGS}) == ("M", "N")
    size = {"M": 2000, "N": 4096}
    # counted as tiles, the one-row entry would win (what the table chose before)
    tiles = [predicted_ms(e, size, ("M", "N"), 132) for e in two]
    assert tiles[1] < tiles[0]
    assert pick_entry(table, size, 132) is nearest_entry(table, size) is two[0]


def _rows_table(*entries):
    args = [
        {"name": "x", "kind": "tensor", "dims": ["M", "N"], "access": "read"},
        {"name": "y", "kind": "tensor", "dims": ["M", "N"], "access": "write"},
    ]
    return {"args": args, "entries": list(entries)}


def _band(m, n, bm, bn):
    return {"bucket": {"M": m, "N": n}, "params": {"BLOCK_M": bm, "BLOCK_N": bn}, "options": {}}


def test_thin_bands_where_the_nearest_entry_leaves_most_sms_idle():
    """The softmax's table at 128 x 4096: its nearest bucket (4096 x 4096) has 8-row
    programs, 16 of them here (11.7 us on the H100); an entry of one row a program
    (tuned at long rows) keeps 128 SMs busy (7.4 us): it is taken. At 1000 rows the
    8-row bands keep 125 busy: they stay. Where the nearest keeps half the SMs busy or
    more, or without the SM count, the nearest stands; of entries that keep half busy,
    the thickest bands win."""
    from tawac.schedule.tuning import program_rows

    eight, one, sixteen = (
        _band(4096, 4096, 8, 1024),
        _band(16, 131072, 1, 4096),
        _band(4096, 8192, 16, 512),
    )
    table = _rows_table(eight, one, sixteen)
    assert program_rows(table) == "M"
    assert pick_entry(table, {"M": 128, "N": 4096}, 132) is one
    assert pick_entry(table, {"M": 128, "N": 4096}) is eight  # no SM count
    assert pick_entry(table, {"M": 1000, "N": 4096}, 132) is eight
    assert pick_entry(table, {"M": 4096, "N": 4096}, 132) is eight  # its own bucket
    # 600 rows: the nearest 16-row bands keep 38 busy; 8-row ones 75 (half), one-row 132
    assert pick_entry(_rows_table(sixteen, eight, one), {"M": 600, "N": 8192}, 132) is eight
    # the layer norm's table (y, mean and rstd written) is a row kernel's too
    stats = [{"name": n, "kind": "tensor", "dims": ["M"], "access": "write"} for n in ("m", "r")]
    assert program_rows({"args": table["args"] + stats}) == "M"
    assert program_rows({"args": ARGS}) is None  # a GEMM's


MISALIGNED = _entry((4096, 8192, 4096), (4000, 6000, 3000), 256, 128, 0.2531, cluster="1x2")


def test_rows_of_16_but_not_32_bytes_are_timed_apart():
    """K = 3000 in bf16 (6000-byte rows) ran 1.5-1.6x slower than K = 3008 at the same
    tiles: an entry timed at such rows predicts only such sizes, and the others only
    aligned ones."""
    from tawac.schedule.tuning import rows_aligned

    table = {"args": ARGS, "entries": [WIDE, SQUARE, TALL, MISALIGNED]}
    assert rows_aligned(table, {"M": 1, "N": 1, "K": 3008})
    assert not rows_aligned(table, {"M": 1, "N": 1, "K": 3000})
    assert pick_entry(table, {"M": 2000, "N": 8000, "K": 3000}, 132) is MISALIGNED
    assert pick_entry(table, SIZE, 132) is WIDE  # the misaligned entry is not a candidate


def test_row_alignment_reads_the_sidecar_dtypes():
    """The element sizes are the launch ABI's (`tawac.target.dtypes`), fp8 included: an fp8 row
    of 3000 bytes is not 32-byte aligned, one of 3008 is (a table of its own had misnamed
    the fp8 dtypes and called every fp8 row aligned)."""
    from tawac.schedule.tuning import rows_aligned

    a = {"name": "a", "kind": "tensor", "dtype": "f8E4M3FN", "dims": ["M", "K"], "access": "read"}
    c = {"name": "c", "kind": "tensor", "dtype": "bf16", "dims": ["M", "N"], "access": "write"}
    fp8 = {"args": [a, c]}
    assert not rows_aligned(fp8, {"M": 64, "N": 64, "K": 3000})
    assert rows_aligned(fp8, {"M": 64, "N": 64, "K": 3008})


def test_explain_says_why_a_row_kernel_took_thinner_bands():
    from pathlib import Path

    from cli_inprocess import tawac

    # the layer norm at 900 x 4096: the nearest entry is 4096 x 4096's 16-row bands
    path = Path(__file__).resolve().parents[1] / "examples" / "layernorm.mlir"
    out = tawac(["explain", str(path), "--size", "M=900,N=4096"], check=True).stdout
    want = "chosen over the nearest entry's 16-row programs, which keep 57 of 132 SMs busy"
    assert want in " ".join(out.split())
