"""The compile cache on disk, a store only: where it lives, keys, entries, atomic writes,
info and clear. `tawac.driver` decides what a kernel's key holds and what its entry
stores (its one compile path consults this store and compiles on a miss); this module
imports nothing above the base layer (no driver, no parser, no xDSL).

A key (`make_key`) is the sha256 of canonical JSON: the fields the driver gives, the
entry `FORMAT`, the tawac version and a digest of tawac's own sources (an edited compiler
never reads an old kernel). `ptxas_version_of` memoises ptxas's version on disk, for the
keys of cubins.

`assemble` keeps ptxas's answers the same way: one entry per PTX text and ptxas version
(the compiler core's compiles; the driver stores whole kernels under its own keys).

One entry is one file, `kernels/<key>.tawac`: `MAGIC`, a line of JSON metadata (the
format, the key, the names and sizes of its parts and the sha256 of the payload), then
the payload: the parts, one after the other. An entry that does not check out (bad
magic, truncated, checksum mismatch, bad JSON, other parts) is removed with one
`CacheWarning` (`load` returns None: the caller rebuilds it). `store` writes through a
temporary file and a rename: readers, and other processes storing the same key at once,
see the old entry or a whole new one, never a part.

The cache lives in `$TAWAC_CACHE_DIR`, else `$XDG_CACHE_HOME/tawac`, else
`~/.cache/tawac` (the solver planner keeps its schedules in its `solver` folder);
`TAWAC_CACHE=0` turns the kernel cache off (every call compiles, nothing is read or
written). `tawac cache info` and `tawac cache clear` show and empty it.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import sys
import warnings
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from tawac.support.diagnostics import CompileError
from tawac.support.files import write_atomic
from tawac.support.ptxas import ptxas_version

__all__ = [
    "CacheWarning",
    "assemble",
    "cache_info",
    "cache_root",
    "clear_cache",
    "discard",
    "enabled",
    "entry_path",
    "load",
    "make_key",
    "ptxas_version_of",
    "store",
]

#: The layout of an entry and of its key; a change makes every old entry unreachable.
#: 2: named parts; PTX keyed without ptxas, cubins by the PTX's key and ptxas's version.
FORMAT = 2

#: The first bytes of every entry.
MAGIC = b"TAWAC-K\n"

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
    """A sha256 of tawac's own `.py` files, names and bytes, in the order of their paths'
    parts (once per process): a developer's edited compiler never reads a kernel the old
    one compiled."""
    global _source_digest
    if _source_digest is None:
        package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        h = hashlib.sha256()
        for parts in sorted(_python_files(package, ())):
            data = Path(package, *parts).read_bytes()
            h.update(f"{'/'.join(parts)}\0{len(data)}\0".encode())
            h.update(data)
        _source_digest = h.hexdigest()
    return _source_digest


def _python_files(folder: str, prefix: tuple[str, ...]) -> Iterator[tuple[str, ...]]:
    """The `.py` files under `folder`, as their paths' parts below it (`os.scandir`: a
    tenth of `Path.rglob`'s time, which a warm `tawac compile` would notice)."""
    with os.scandir(folder) as entries:
        for entry in entries:
            if entry.is_dir():
                yield from _python_files(entry.path, (*prefix, entry.name))
            elif entry.name.endswith(".py") and entry.is_file():
                yield (*prefix, entry.name)


def ptxas_version_of(exe: str, timeout: float = 10.0, write: bool = True) -> str | None:
    """`exe --version`, memoised on disk (with `write`) by the executable's path, size and
    mtime (a hit spawns no ptxas); None when it cannot say."""
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


def assemble(ptx_text: str, exe: str | None = None) -> tuple[bytes, str]:
    """ptxas's cubin and `-v` report of `ptx_text` (`tawac.support.ptxas.assemble`), from
    the store where the same ptxas assembled the same PTX before: ptxas runs once per
    distinct PTX text and ptxas version, for the compiler core's callers
    (`tawac.compiler.compile_module`, `compile_file`: the checker, the fuzzer, the tuner,
    the tests; the driver keys whole kernels itself). Off with the cache (`enabled`), and
    where ptxas does not say its version; nothing is stored for a PTX ptxas rejects."""
    from tawac.support.ptxas import assemble as run_ptxas
    from tawac.support.ptxas import find_ptxas

    exe = exe if exe is not None else find_ptxas()
    version = ptxas_version_of(exe) if enabled() else None
    if version is None:
        return run_ptxas(ptx_text, exe, verbose=True)
    key = make_key("assembled", {"ptx": ptx_text, "ptxas": version})
    found = load(key, ("cubin", "report"))
    if found is not None:
        try:
            return found["cubin"], found["report"].decode("utf-8")
        except UnicodeDecodeError:
            discard(key, "ptxas report does not decode")
    cubin, report = run_ptxas(ptx_text, exe, verbose=True)
    store(key, {"cubin": cubin, "report": report.encode("utf-8")}, {"ptxas": version})
    return cubin, report


def _read_json(path: Path) -> dict:
    """A JSON object from `path`; {} when it is missing or not one."""
    try:
        data = json.loads(path.read_bytes())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def make_key(kind: str, fields: Mapping[str, Any]) -> str:
    """The key of an entry of `kind` ("ptx", "cubin") whose bytes `fields` decide (the
    caller names them all: source, parameters, options, ...), to which the entry format,
    the tawac version and the digest of tawac's sources are added: the sha256 of their
    canonical JSON."""
    stamped = {
        **fields,
        "kind": kind,
        "format": FORMAT,
        "tawac": tawac_version(),
        "code": source_digest(),
    }
    canonical = json.dumps(stamped, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()


# -- entries --------------------------------------------------------------------------------


class Corrupt(Exception):
    """An entry that does not check out; the message says why."""


def encode(key: str, parts: Mapping[str, bytes], meta: Mapping[str, Any]) -> bytes:
    """The bytes of the entry `key` holding `parts` (in their order) and the metadata
    `meta` (for people: the source's name, the versions)."""
    payload = b"".join(parts.values())
    header = {
        **meta,
        "format": FORMAT,
        "key": key,
        "parts": [[name, len(data)] for name, data in parts.items()],
        "sha256": hashlib.sha256(payload).hexdigest(),
    }
    return MAGIC + json.dumps(header, sort_keys=True).encode() + b"\n" + payload


def decode(data: bytes, key: str, names: tuple[str, ...]) -> dict[str, bytes]:
    """The parts (by name) of an entry's bytes, which must be the entry `key` holding the
    parts `names`; `Corrupt` when they do not check out."""
    if not data.startswith(MAGIC):
        raise Corrupt("bad magic")
    end = data.find(b"\n", len(MAGIC), len(MAGIC) + _MAX_HEADER)
    if end < 0:
        raise Corrupt("no metadata line")
    try:
        meta = json.loads(data[len(MAGIC) : end])
    except ValueError:
        raise Corrupt("metadata is not JSON") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT or meta.get("key") != key:
        raise Corrupt("metadata does not name this format and key")
    parts = meta.get("parts")
    if (
        not isinstance(parts, list)
        or [p[0] if isinstance(p, list) and len(p) == 2 else None for p in parts] != list(names)
        or not all(type(p[1]) is int and p[1] >= 0 for p in parts)
    ):
        raise Corrupt(f"parts are not {', '.join(names)}")
    payload = data[end + 1 :]
    total = sum(p[1] for p in parts)
    if len(payload) != total:
        raise Corrupt(f"payload is {len(payload)} bytes, metadata says {total}")
    if hashlib.sha256(payload).hexdigest() != meta.get("sha256"):
        raise Corrupt("checksum mismatch")
    out: dict[str, bytes] = {}
    start = 0
    for name, size in parts:
        out[name] = payload[start : start + size]
        start += size
    return out


def _write_atomic(path: Path, data: bytes) -> None:
    """Write through a temporary file in the same folder and `os.replace`: readers see
    the old file or the new one, never a part."""
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, data, prefix=f".{path.stem}.", suffix=".tmp")


def entry_path(key: str) -> Path:
    """The file of the entry `key`."""
    return cache_root() / "kernels" / f"{key}.tawac"


def load(key: str, names: tuple[str, ...]) -> dict[str, bytes] | None:
    """The parts of the entry `key`, which holds the parts `names`; None when there is
    none, or it was corrupt (then removed, with a `CacheWarning`) or unreadable."""
    path = entry_path(key)
    try:
        data = path.read_bytes()
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as e:
        warnings.warn(f"cannot read cache entry {path}: {e.strerror}", CacheWarning, stacklevel=2)
        return None
    try:
        return decode(data, key, names)
    except Corrupt as e:
        discard(key, str(e))
        return None


def discard(key: str, why: str) -> None:
    """Remove the entry `key`, which did not check out because of `why`, with a
    `CacheWarning` (its kernel is rebuilt)."""
    path = entry_path(key)
    warnings.warn(f"corrupt cache entry {path} ({why}): rebuilt", CacheWarning, stacklevel=3)
    try:
        path.unlink()
    except OSError:
        pass  # the rebuilt entry replaces it


def store(key: str, parts: Mapping[str, bytes], meta: Mapping[str, Any]) -> bool:
    """Write the entry `key` (see `encode`) atomically; False, with a `CacheWarning`, when
    the cache cannot be written (the caller has its kernel all the same)."""
    path = entry_path(key)
    try:
        _write_atomic(path, encode(key, parts, meta))
    except OSError as e:
        warnings.warn(
            f"cannot write the compile cache ({path.parent}): {e.strerror}",
            CacheWarning,
            stacklevel=2,
        )
        return False
    return True


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
