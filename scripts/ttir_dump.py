"""A Triton kernel's TTIR, as tawac reads it: compile a `.py` of
`examples/triton/` with Triton's front end (no GPU needed) and write the `.ttir` beside
it, its source paths relative to the repository:

    python3 scripts/ttir_dump.py examples/triton/matmul.py     # -> examples/triton/matmul.ttir

The `.py` defines `TTIR = {"kernel": fn, "signature": {...}, "constexprs": {...}}`
(Triton's `ASTSource` arguments), and may define `TTIR_VARIANTS`, other configurations
by the stem of the `.ttir` each writes. Needs `tawac[triton]` (triton 3.6).
"""

from __future__ import annotations

import argparse
import importlib.util
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def configs(path: Path) -> dict[str, dict]:
    """The `.py`'s TTIR configurations by output stem: `TTIR` under the file's own stem,
    and `TTIR_VARIANTS` (stem -> configuration) where it has them."""
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return {path.stem: module.TTIR, **getattr(module, "TTIR_VARIANTS", {})}


def ttir_of(cfg: dict) -> str:
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    src = ASTSource(fn=cfg["kernel"], signature=cfg["signature"], constexprs=cfg["constexprs"])
    text = triton.compile(src, target=GPUTarget("cuda", 90, 32)).asm["ttir"]
    text = text.replace(f"{ROOT}/", "")
    # Triton's own library by its package path, not this machine's
    return re.sub(r'"[^"]*/site-packages/(triton/[^"]*)"', r'"\1"', text)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("sources", nargs="+")
    args = ap.parse_args(argv)
    for s in args.sources:
        path = Path(s).resolve()
        for stem, cfg in configs(path).items():
            out = path.with_name(f"{stem}.ttir")
            out.write_text(ttir_of(cfg))
            print(f"{out.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
