"""The compiler driver: the one compile path of `tawac compile`, `run`, `tune` and
`tawac.torch`, through the compile cache.

`compile_cached` turns a request (a `.mlir` source, its kernel parameters, the pipeline
options, PTX or a cubin) into a key, and answers it from the cache (`tawac.support.cache`, a
store) or compiles it with the compiler core (`tawac.compiler`, which imports xDSL and
every pass) and stores it. A hit imports neither the core nor xDSL: a warm
`tawac compile` is a file read, a checksum and the output files.

- A PTX entry (the PTX and its launch sidecar) is keyed by the source text, the
  parameters, every pipeline option after defaults (the planner included), the tawac
  version and the digest of tawac's sources: compiling to PTX needs no ptxas.
- A cubin entry (the PTX, the sidecar, the cubin and ptxas's `-v` report) is keyed by the
  PTX entry's key and ptxas's version. A cubin missing from the cache whose PTX is there
  is only assembled.

A hit gives the bytes a miss gave: the sidecar is stored as the file's text and the ptxas
report as ptxas printed it. Nothing is stored for a request that failed. `use_cache=False`
(`--no-cache`) and `TAWAC_CACHE=0` turn the cache off.

The core's names (`compile_file`, `compile_source`, `compile_module`, `parse_text`,
`run_pipeline`, ...) are re-exported here, imported at their first use.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tawac.support import cache
from tawac.support.diagnostics import CompileError
from tawac.support.files import read_source
from tawac.support.options import DEFAULT_TIME_LIMIT, PipelineOptions
from tawac.support.ptxas import assemble, find_ptxas, locate_ptxas
from tawac.support.timelimit import TimeLimit, set_stage
from tawac.target import HOPPER

if TYPE_CHECKING:
    from xdsl.dialects.builtin import ModuleOp

    from tawac.dialects.tile import KernelOp

__all__ = [
    "CachedKernel",
    "TimeLimit",
    "assemble",
    "compile_cached",
    "find_ptxas",
    "kernel_op",
    "parse_source",
    "sidecar_text",
]

#: The compiler core's names this module re-exports (PEP 562: imported at first use).
CORE_NAMES = frozenset(
    {
        "PASSES",
        "CompileResult",
        "compile_file",
        "compile_module",
        "compile_source",
        "default_pipeline",
        "make_pipeline",
        "parse_file",
        "parse_text",
        "run_pipeline",
        "verify",
    }
)

#: The parts of a PTX entry and of a cubin entry.
PTX_PARTS = ("ptx", "sidecar")
CUBIN_PARTS = ("ptx", "sidecar", "cubin", "report")


def __getattr__(name: str) -> Any:
    if name not in CORE_NAMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from tawac import compiler

    return getattr(compiler, name)


def __dir__() -> list[str]:
    return sorted({*globals(), *CORE_NAMES})


@dataclass(frozen=True)
class CachedKernel:
    """A compiled kernel: its `ptx`, its launch `sidecar` as the `.json` file's text
    (`sidecar_text`) and as that text reads back (`sidecar`, on a hit and a miss alike),
    the `cubin` (None when only PTX was asked for) and ptxas's `-v` report.

    `key` names its cache entry ('' when the cache was off or the kernel could not be
    keyed: ptxas did not say its version); `cache` says "hit", "miss" or "off"."""

    ptx: str
    sidecar_text: str
    cubin: bytes | None
    ptxas_report: str
    key: str
    cache: str

    @property
    def hit(self) -> bool:
        """Whether the kernel was loaded from the cache."""
        return self.cache == "hit"

    @property
    def sidecar(self) -> dict:
        """The launch sidecar (a new dict on each read)."""
        return json.loads(self.sidecar_text)


def sidecar_text(sidecar: Mapping[str, Any]) -> str:
    """The text of a launch sidecar's `.json` file."""
    return json.dumps(sidecar, indent=2) + "\n"


def _ptx_key(text: str, params: Mapping[str, Any] | None, options: dict[str, Any]) -> str:
    """The key of the PTX of `text` with `params` and the full pipeline `options`."""
    fields = {
        "source": text,
        "params": dict(sorted((params or {}).items())),
        "options": options,
        "model": HOPPER.model_key,
    }
    return cache.make_key("ptx", fields)


def _cubin_key(ptx_key: str, exe: str | None) -> str:
    """The key of the cubin ptxas `exe` makes of the PTX keyed `ptx_key`; '' when there
    is no ptxas or it does not say its version."""
    if exe is None:
        return ""
    set_stage("asking ptxas its version")
    version = cache.ptxas_version_of(exe)
    if version is None:
        return ""
    return cache.make_key("cubin", {"ptx": ptx_key, "ptxas": version})


def _load(key: str, names: tuple[str, ...]) -> dict[str, Any] | None:
    """The entry `key` decoded (PTX and report as text); None on a miss or when it does
    not decode (then removed: rebuilt)."""
    parts = cache.load(key, names)
    if parts is None:
        return None
    try:
        out: dict[str, Any] = {
            name: data if name == "cubin" else data.decode("utf-8") for name, data in parts.items()
        }
        if not isinstance(json.loads(out["sidecar"]), dict):
            raise ValueError("not a JSON object")
    except ValueError as e:  # UnicodeDecodeError and JSONDecodeError too
        cache.discard(key, f"sidecar or PTX does not decode: {e}")
        return None
    return out


def _compile(
    text: str,
    source: str,
    *,
    params: Mapping[str, Any] | None,
    cubin: bool,
    ptxas: str | None,
    options: dict[str, Any],
) -> dict[str, Any]:
    """Compile `text` with the compiler core (the driver's one import of it, and of
    xDSL): {"ptx", "sidecar" (the file's text), and with `cubin`, "cubin", "report"}."""
    from tawac.compiler import compile_source

    set_stage("parsing")
    res = compile_source(text, source, params=params, cubin=False, **options)
    out = {"ptx": res.ptx, "sidecar": sidecar_text(res.sidecar)}
    if cubin:  # assembled here: the caller stores the whole kernel under its own key
        out["cubin"], out["report"] = assemble(res.ptx, ptxas, verbose=True)
    return out


def compile_cached(
    source: str | Path,
    *,
    params: Mapping[str, Any] | None = None,
    text: str | None = None,
    cubin: bool = True,
    ptxas: str | None = None,
    time_limit: float | None = DEFAULT_TIME_LIMIT,
    use_cache: bool = True,
    **options: Any,
) -> CachedKernel:
    """`source` (a `.mlir` file; `text` its text when already read) compiled with
    `params` and the pipeline `options` (`PipelineOptions` fields) to PTX and, with
    `cubin`, a cubin (by `ptxas`, default: `find_ptxas`): from the cache when it holds
    the kernel, else compiled and stored. The whole request takes at most `time_limit`
    seconds; `CompileError`s propagate and nothing is stored for a request that failed.
    `use_cache=False` or `TAWAC_CACHE=0`: neither read nor write the cache."""
    use = use_cache and cache.enabled()
    with TimeLimit(time_limit):
        set_stage("reading the source")
        if text is None:
            text = read_source(source)
        full = dataclasses.asdict(PipelineOptions(**options))
        if not use:
            built = _compile(
                text, str(source), params=params, cubin=cubin, ptxas=ptxas, options=full
            )
            return _kernel(built, "", "off")
        set_stage("looking up the cache")
        ptx_key = _ptx_key(text, params, full)
        exe = None
        key = ptx_key
        if cubin:
            exe = ptxas if ptxas is not None else locate_ptxas()
            key = _cubin_key(ptx_key, exe)
        names = CUBIN_PARTS if cubin else PTX_PARTS
        found = _load(key, names) if key else None
        if found is not None:
            return _kernel(found, key, "hit")
        built = _load(ptx_key, PTX_PARTS) if cubin and key else None
        if built is not None:
            built["cubin"], built["report"] = assemble(built["ptx"], exe, verbose=True)
        else:
            built = _compile(text, str(source), params=params, cubin=cubin, ptxas=exe, options=full)
        if key:
            meta = {"source": str(source), "tawac": cache.tawac_version()}
            cache.store(key, {n: _bytes(built[n]) for n in names}, meta)
        return _kernel(built, key, "miss")


def _bytes(part: str | bytes) -> bytes:
    return part if isinstance(part, bytes) else part.encode("utf-8")


def _kernel(parts: Mapping[str, Any], key: str, status: str) -> CachedKernel:
    return CachedKernel(
        ptx=parts["ptx"],
        sidecar_text=parts["sidecar"],
        cubin=parts.get("cubin"),
        ptxas_report=parts.get("report", ""),
        key=key,
        cache=status,
    )


def parse_source(
    source: str | Path, *, params: Mapping[str, Any] | None = None, text: str | None = None
) -> ModuleOp:
    """The parsed and verified module of `source` (`text`: its text when already read)
    with its kernel parameters set from `params`, read as `compile_cached` reads it (the
    path of `tawac explain` and of the reference interpreter's kernel)."""
    from tawac.compiler import parse_text

    if text is None:
        text = read_source(source)
    return parse_text(text, str(source), params=params)


def kernel_op(
    source: str | Path, *, params: Mapping[str, Any] | None = None, text: str | None = None
) -> KernelOp:
    """The `tile.kernel` of `source` with `params` set, unlowered (what the reference
    interpreter runs)."""
    from tawac.dialects import tile

    module = parse_source(source, params=params, text=text)
    kernels = [op for op in module.body.block.ops if isinstance(op, tile.KernelOp)]
    if len(kernels) != 1:
        raise CompileError(f"expected exactly one tile.kernel, found {len(kernels)}")
    return kernels[0]
