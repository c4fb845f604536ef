"""`scripts/sass_runs.py`: the runs of HGMMA, MUFU.EX2 and waits it reads from a SASS
listing (whether ptxas spread a softmax's exponentials between an MMA's wgmmas)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "sass_runs.py"


def _module():
    spec = importlib.util.spec_from_file_location("sass_runs", SCRIPT)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_runs_of_an_interleaved_and_a_back_to_back_listing():
    runs = _module().runs
    lines = [
        "        /*0100*/  SYNCS.PHASECHK.TRANS64.TRYWAIT P1, [R25+URZ], R24 ;",
        "        /*0110*/  WARPGROUP.ARRIVE ;",
        "        /*0120*/  HGMMA.64x128x16.F32.BF16 R24, gdesc[UR8], RZ, !UPT ;",
        "        /*0130*/  MUFU.EX2 R4, R136 ;",
        "        /*0140*/  MUFU.EX2 R5, R5 ;",
        "        /*0150*/  FFMA R1, R2, R3, R4 ;",
        "        /*0160*/  HGMMA.64x128x16.F32.BF16 R24, gdesc[UR4], R24 ;",
        "        /*0170*/  HGMMA.64x128x16.F32.BF16 R24, gdesc[UR4], R24, gsb0 ;",
        "        /*0180*/  WARPGROUP.DEPBAR.LE gsb0, 0x0 ;",
    ]
    assert runs("\n".join(lines)) == [
        ("WAIT", 1),
        ("HGMMA.64x128x16", 1),
        ("EX2", 2),
        ("HGMMA.64x128x16", 2),
        ("DEPBAR", 1),
    ]
    assert runs("") == []
