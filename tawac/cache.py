"""The compile cache on disk: a kernel compiled once (PTX, cubin, launch sidecar) loads
from `cache_root()/kernels` the next time, in any process.

`compile_cached` keys a kernel by everything that decides its bytes: the source text, the
parameter values, every pipeline option (after defaults, the planner included), the
tawac version and a digest of tawac's own sources (an edited compiler never reads an
old kernel), the ptxas version and the target. A hit imports neither xDSL nor
`tawac.driver` (a warm load is a file read and a checksum); a miss compiles through
`tawac.driver.compile_source` and writes the entry atomically.

One entry is one file, `kernels/<key>.tawac`: `MAGIC`, a line of JSON metadata (the
format, the key, the sizes of the three parts and the sha256 of the payload), then the
payload: the cubin, the sidecar JSON and the PTX. An entry that does not check out (bad
magic, truncated, checksum mismatch, bad JSON) is removed and rebuilt, with one
`CacheWarning`.

The cache lives in `$TAWAC_CACHE_DIR`, else `$XDG_CACHE_HOME/tawac`, else
`~/.cache/tawac` (the solver planner keeps its schedules in its `solver` folder);
`TAWAC_CACHE=0` turns the kernel cache off (every call compiles, nothing is read or
written). `tawac cache info` and `tawac cache clear` show and empty it.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
import shutil
import sys
import warnings
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tawac.files import write_atomic
from tawac.options import DEFAULT_TIME_LIMIT, PipelineOptions
from tawac.ptxas import locate_ptxas, ptxas_version

__all__ = [
    "CacheWarning",
    "CachedKernel",
    "cache_info",
    "cache_root",
    "clear_cache",
    "compile_cached",
    "enabled",
]

#: The layout of an entry and of its key; a change makes every old entry unreachable.
FORMAT = 1

#: The first bytes of every entry.
MAGIC = b"TAWAC-K\n"

#: The target every kernel is compiled for.
TARGET = "sm_90a"

#: The environment variables: the cache's folder, and the switch (`0` turns it off).
DIR_ENV = "TAWAC_CACHE_DIR"
SWITCH_ENV = "TAWAC_CACHE"

#: The longest metadata line an entry may have.
_MAX_HEADER = 1 << 16

_KERNEL_ENTRY = re.compile(r"[0-9a-f]{64}\.tawac")
_KERNEL_TEMP = re.compile(r"\.[0-9a-f]{64}\..+\.tmp")
_SOLVER_ENTRY = re.compile(r"[0-9a-f]{32}\.json")
_SOLVER_TEMP = re.compile(r"[0-9a-f]{32}\.\d+\.tmp")
_PTXAS_MEMO = "ptxas-versions.json"
_DIST_INFO = re.compile(r"tawac-([^-]+)\.dist-info", re.IGNORECASE)
_EGG_INFO = re.compile(r"tawac(-[^-]+)*\.egg-info", re.IGNORECASE)


class CacheWarning(UserWarning):
    """A cache entry that did not check out (it was rebuilt), or a cache that cannot be
    written (the kernel was compiled all the same)."""


@dataclass(frozen=True)
class CachedKernel:
    """A compiled kernel: `cubin`, its launch `sidecar` (as its JSON reads back, on a
    hit and on a miss alike) and `ptx`; `key` names its entry ('' when the kernel could
    not be keyed: ptxas did not say its version), `hit` says whether it was loaded."""

    cubin: bytes
    sidecar: dict
    ptx: str
    key: str
    hit: bool


def cache_root() -> Path:
    """The cache's folder: `$TAWAC_CACHE_DIR`, else `$XDG_CACHE_HOME/tawac`, else
    `~/.cache/tawac`."""
    root = os.environ.get(DIR_ENV)
    if root:
        return Path(root)
    xdg = os.environ.get("XDG_CACHE_HOME")
    if xdg:
        return Path(xdg) / "tawac"
    return Path.home() / ".cache" / "tawac"


def enabled() -> bool:
    """False when `$TAWAC_CACHE` is 0 (or false, no, off): compile every time."""
    value = os.environ.get(SWITCH_ENV, "").strip().lower()
    return value not in ("0", "false", "no", "off")


# -- the key --------------------------------------------------------------------------------

_tawac_version: str | None = None
_source_digest: str | None = None
_ptxas_versions: dict[tuple[str, int, int], str] = {}


def tawac_version() -> str:
    """The installed tawac's version, from its `.dist-info` or `.egg-info` folder on
    `sys.path` (once per process; importing `importlib.metadata` alone would take half
    of a warm load's time)."""
    global _tawac_version
    if _tawac_version is None:
        _tawac_version = _find_version() or "unknown"
    return _tawac_version


def _find_version() -> str | None:
    """The version in the first tawac `.dist-info` name or `.egg-info/PKG-INFO` on
    `sys.path` (where `importlib.metadata` would look)."""
    for entry in sys.path:
        try:
            names = sorted(os.listdir(entry or "."))
        except OSError:
            continue
        for name in names:
            dist = _DIST_INFO.fullmatch(name)
            if dist is not None:
                return dist.group(1)
            if _EGG_INFO.fullmatch(name):
                try:
                    lines = (Path(entry or ".") / name / "PKG-INFO").read_text().splitlines()
                except (OSError, UnicodeDecodeError):
                    continue
                for line in lines:
                    if line.startswith("Version:"):
                        return line.partition(":")[2].strip()
    return None


def source_digest() -> str:
    """A sha256 of tawac's own `.py` files, names and bytes (once per process): a
    developer's edited compiler never reads a kernel the old one compiled."""
    global _source_digest
    if _source_digest is None:
        package = Path(__file__).resolve().parent
        h = hashlib.sha256()
        for path in sorted(package.rglob("*.py")):
            data = path.read_bytes()
            h.update(f"{path.relative_to(package).as_posix()}\0{len(data)}\0".encode())
            h.update(data)
        _source_digest = h.hexdigest()
    return _source_digest


def _ptxas_version(exe: str, timeout: float, write: bool) -> str | None:
    """`exe --version`, memoised on disk by the executable's path, size and mtime (a hit
    spawns no ptxas); None when it cannot say."""
    resolved = shutil.which(exe)
    if resolved is None:
        return None
    path = os.path.realpath(resolved)
    try:
        st = os.stat(path)
    except OSError:
        return None
    stamp = (path, st.st_size, st.st_mtime_ns)
    if stamp in _ptxas_versions:
        return _ptxas_versions[stamp]
    memo_file = cache_root() / _PTXAS_MEMO
    memo = _read_json(memo_file)
    record = memo.get(path)
    if isinstance(record, dict) and (record.get("size"), record.get("mtime_ns")) == stamp[1:]:
        found = record.get("version")
        if isinstance(found, str) and found:
            _ptxas_versions[stamp] = found
            return found
    found = ptxas_version(resolved, timeout)
    if found is None:
        return None
    _ptxas_versions[stamp] = found
    if write:
        memo[path] = {"size": st.st_size, "mtime_ns": st.st_mtime_ns, "version": found}
        try:
            _write_atomic(memo_file, json.dumps(memo, sort_keys=True, indent=1).encode())
        except OSError:
            pass  # the next process asks ptxas again
    return found


def _read_json(path: Path) -> dict:
    """A JSON object from `path`; {} when it is missing or not one."""
    try:
        data = json.loads(path.read_bytes())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _key(text: str, params: Mapping[str, int] | None, options: dict, ptxas: str) -> str:
    fields = {
        "format": FORMAT,
        "source": text,
        "params": dict(sorted((params or {}).items())),
        "options": options,
        "tawac": tawac_version(),
        "code": source_digest(),
        "ptxas": ptxas,
        "target": TARGET,
    }
    canonical = json.dumps(fields, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()


# -- entries --------------------------------------------------------------------------------


class _Corrupt(Exception):
    """An entry that does not check out; the message says why."""


def _encode(key: str, cubin: bytes, sidecar: bytes, ptx: bytes, meta: dict) -> bytes:
    payload = cubin + sidecar + ptx
    header = {
        **meta,
        "format": FORMAT,
        "key": key,
        "sizes": [len(cubin), len(sidecar), len(ptx)],
        "sha256": hashlib.sha256(payload).hexdigest(),
    }
    return MAGIC + json.dumps(header, sort_keys=True).encode() + b"\n" + payload


def _decode(data: bytes, key: str) -> tuple[bytes, dict, str]:
    """(cubin, sidecar, ptx) of an entry's bytes; `_Corrupt` when they do not check out."""
    if not data.startswith(MAGIC):
        raise _Corrupt("bad magic")
    end = data.find(b"\n", len(MAGIC), len(MAGIC) + _MAX_HEADER)
    if end < 0:
        raise _Corrupt("no metadata line")
    try:
        meta = json.loads(data[len(MAGIC) : end])
    except ValueError:
        raise _Corrupt("metadata is not JSON") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT or meta.get("key") != key:
        raise _Corrupt("metadata does not name this format and key")
    sizes = meta.get("sizes")
    if (
        not isinstance(sizes, list)
        or len(sizes) != 3
        or not all(type(n) is int and n >= 0 for n in sizes)
    ):
        raise _Corrupt("bad sizes")
    payload = data[end + 1 :]
    if len(payload) != sum(sizes):
        raise _Corrupt(f"payload is {len(payload)} bytes, metadata says {sum(sizes)}")
    if hashlib.sha256(payload).hexdigest() != meta.get("sha256"):
        raise _Corrupt("checksum mismatch")
    a, b = sizes[0], sizes[0] + sizes[1]
    try:
        sidecar = json.loads(payload[a:b])
        ptx = payload[b:].decode("utf-8")
    except ValueError:
        raise _Corrupt("sidecar or PTX does not decode") from None
    if not isinstance(sidecar, dict):
        raise _Corrupt("sidecar is not a JSON object")
    return payload[:a], sidecar, ptx


def _write_atomic(path: Path, data: bytes) -> None:
    """Write through a temporary file in the same folder and `os.replace`: readers see
    the old file or the new one, never a part."""
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, data, prefix=f".{path.stem}.", suffix=".tmp")


def _load(path: Path, key: str) -> CachedKernel | None:
    """The entry at `path`; None when there is none, or it was corrupt (then removed, with
    a `CacheWarning`) or unreadable."""
    try:
        data = path.read_bytes()
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as e:
        warnings.warn(f"cannot read cache entry {path}: {e.strerror}", CacheWarning, stacklevel=3)
        return None
    try:
        cubin, sidecar, ptx = _decode(data, key)
    except _Corrupt as e:
        warnings.warn(f"corrupt cache entry {path} ({e}): rebuilt", CacheWarning, stacklevel=3)
        try:
            path.unlink()
        except OSError:
            pass  # the rebuilt entry replaces it
        return None
    return CachedKernel(cubin, sidecar, ptx, key, hit=True)


# -- compiling ------------------------------------------------------------------------------


def _read_text(source: str | Path) -> str:
    """The UTF-8 text of `source`; the driver's `CompileError` when it cannot be read."""
    try:
        return Path(source).read_bytes().decode("utf-8")
    except (OSError, UnicodeDecodeError):
        from tawac.parser import read_source  # imports xDSL: only on the way out

        return read_source(source)


def _compile(
    text: str,
    source: str,
    *,
    params: Mapping[str, int] | None,
    ptxas: str | None,
    time_limit: float | None,
    options: dict[str, Any],
):
    """The driver's `CompileResult` (with a cubin) for `text`; the cache's one import of
    `tawac.driver` (and xDSL)."""
    from tawac.driver import compile_source

    return compile_source(
        text, source, params=params, cubin=True, ptxas=ptxas, time_limit=time_limit, **options
    )


def compile_cached(
    source: str | Path,
    *,
    params: Mapping[str, int] | None = None,
    text: str | None = None,
    ptxas: str | None = None,
    time_limit: float | None = DEFAULT_TIME_LIMIT,
    **options: Any,
) -> CachedKernel:
    """`source` (a `.mlir` file; `text` its text when already read) compiled to a cubin
    with `params` and the pipeline `options` (`PipelineOptions` fields), from the cache
    when it holds the kernel, else compiled (under `time_limit` seconds) and stored.
    `CompileError`s propagate; nothing is stored for a kernel that failed."""
    if text is None:
        text = _read_text(source)
    full = dataclasses.asdict(PipelineOptions(**options))
    use = enabled()
    exe = ptxas if ptxas is not None else locate_ptxas()
    timeout = min(10.0, time_limit) if time_limit else 10.0
    version = _ptxas_version(exe, timeout, write=use) if exe is not None else None
    key = _key(text, params, full, version) if version is not None else ""
    path = cache_root() / "kernels" / f"{key}.tawac"
    if use and key:
        found = _load(path, key)
        if found is not None:
            return found
    res = _compile(text, str(source), params=params, ptxas=exe, time_limit=time_limit, options=full)
    cubin = res.cubin if res.cubin is not None else b""
    sidecar = json.dumps(res.sidecar).encode()
    ptx = res.ptx.encode()
    if use and key:
        meta = {"source": str(source), "tawac": tawac_version(), "ptxas": version}
        try:
            _write_atomic(path, _encode(key, cubin, sidecar, ptx, meta))
        except OSError as e:
            warnings.warn(
                f"cannot write the compile cache ({path.parent}): {e.strerror}",
                CacheWarning,
                stacklevel=2,
            )
    return CachedKernel(cubin, json.loads(sidecar), res.ptx, key, hit=False)


# -- looking after the cache ----------------------------------------------------------------


def _files(folder: Path, *patterns: re.Pattern[str]) -> Iterator[Path]:
    """The files in `folder` whose names match one of `patterns`."""
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return
    for name in names:
        path = folder / name
        if any(p.fullmatch(name) for p in patterns) and path.is_file():
            yield path


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def cache_info() -> dict:
    """Where the cache is, whether it is on, and its entries: `{"root", "enabled",
    "kernels": {"entries", "bytes"}, "solver": {"entries", "bytes"}}`."""
    root = cache_root()
    info: dict[str, Any] = {"root": str(root), "enabled": enabled()}
    for name, pattern in (("kernels", _KERNEL_ENTRY), ("solver", _SOLVER_ENTRY)):
        sizes = [_size(p) for p in _files(root / name, pattern)]
        info[name] = {"entries": len(sizes), "bytes": sum(sizes)}
    return info


def clear_cache() -> tuple[int, int]:
    """Remove every kernel and solver entry (and leftover temporary files, and the
    memo of ptxas versions); returns (files removed, bytes freed). Files tawac did not
    write stay."""
    root = cache_root()
    paths = [
        *_files(root / "kernels", _KERNEL_ENTRY, _KERNEL_TEMP),
        *_files(root / "solver", _SOLVER_ENTRY, _SOLVER_TEMP),
        *_files(root, re.compile(re.escape(_PTXAS_MEMO))),
    ]
    count = freed = 0
    for path in paths:
        size = _size(path)
        try:
            path.unlink()
        except FileNotFoundError:
            continue
        except OSError as e:
            from tawac.diagnostics import CompileError

            raise CompileError(f"cannot remove {path}: {e.strerror}") from None
        count += 1
        freed += size
    _ptxas_versions.clear()
    return count, freed


def format_bytes(n: int) -> str:
    """`n` bytes for people: 512 B, 1.5 kB, 12.3 MB."""
    if n < 1000:
        return f"{n} B"
    size = n / 1000
    for unit in ("kB", "MB"):
        if size < 1000:
            return f"{size:.1f} {unit}"
        size /= 1000
    return f"{size:.1f} GB"
