"""The compile cache: the store on disk (`tawac.support.cache`: keys, entries, corruption, info,
clear, what it imports) and the driver's one compile path through it
(`tawac.driver.compile_cached`: PTX and cubin keys, hits, misses, the switch). CPU only:
most tests compile through a fake `driver._compile` and a fake ptxas (a shell script) for
speed; one compiles examples/gemm.mlir for real, through ptxas. Every test keeps its cache
in its own `tmp_path` (`TAWAC_CACHE_DIR`). The command line's use of the cache is in
tests/test_cli_cache.py."""

from __future__ import annotations

import ast
import dataclasses
import hashlib
import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
from click.testing import CliRunner

from tawac import driver
from tawac.driver import CachedKernel, compile_cached, sidecar_text
from tawac.support import cache
from tawac.support.cache import CacheWarning
from tawac.support.options import PipelineOptions

REPO = Path(__file__).resolve().parent.parent
GEMM = REPO / "examples" / "gemm.mlir"

TEXT = "tile.kernel @k() {\n  tile.return\n}\n"
SIDECAR = {"kernel": "k", "zeta": 1, "args": [{"name": "a"}], "alpha": [2, 3]}


def _fake_ptxas(path: Path, version: str) -> Path:
    """A ptxas that says `version` and counts its runs in `path`.log."""
    path.write_text(
        f"#!/bin/sh\necho run >> '{path}.log'\necho 'ptxas fake'\necho 'release {version}'\n"
    )
    path.chmod(0o755)
    return path


def _runs(ptxas: Path) -> int:
    log = Path(f"{ptxas}.log")
    return len(log.read_text().splitlines()) if log.exists() else 0


@pytest.fixture
def root(tmp_path, monkeypatch) -> Path:
    """A fresh cache folder, a fake ptxas, no switch, the default planner, no memos."""
    folder = tmp_path / "cache"
    monkeypatch.setenv("TAWAC_CACHE_DIR", str(folder))
    monkeypatch.delenv("TAWAC_CACHE", raising=False)
    monkeypatch.delenv("TAWAC_SCHEDULE", raising=False)
    ptxas = _fake_ptxas(tmp_path / "ptxas", "1.0")
    monkeypatch.setenv("TAWAC_PTXAS", str(ptxas))
    monkeypatch.setattr(cache, "_ptxas_versions", {})
    return folder


class FakeCompiler:
    """Stands in for `tawac.driver._compile` (the compiler core): records its calls and
    returns a kernel whose bytes say what it was compiled from."""

    def __init__(self) -> None:
        self.calls: list[dict] = []

    def __call__(self, text, source, *, params, cubin, ptxas, options):
        self.calls.append(
            {
                "text": text,
                "source": source,
                "params": params,
                "cubin": cubin,
                "ptxas": ptxas,
                **options,
            }
        )
        out = {"ptx": f"// ptx\n{text}", "sidecar": sidecar_text(SIDECAR)}
        if cubin:
            out["cubin"] = _cubin(text, params, options)
            out["report"] = "ptxas info    : Used 1 registers\n"
        return out


def _cubin(text: str, params, options: dict) -> bytes:
    what = json.dumps([text, dict(params or {}), options], sort_keys=True)
    return b"\x7fELF" + hashlib.sha256(what.encode()).digest() + bytes(range(256))


@pytest.fixture
def fake(monkeypatch) -> FakeCompiler:
    compiler = FakeCompiler()
    monkeypatch.setattr(driver, "_compile", compiler)
    return compiler


def _source(tmp_path: Path, text: str = TEXT) -> Path:
    path = tmp_path / "k.mlir"
    path.write_text(text)
    return path


def _entries(root: Path) -> list[str]:
    folder = root / "kernels"
    return sorted(os.listdir(folder)) if folder.exists() else []


def _check(k: CachedKernel, text: str = TEXT, params=None, cubin=True, **options) -> None:
    """`k` is the kernel the fake compiler makes of `text`."""
    full = dataclasses.asdict(PipelineOptions(**options))
    assert k.cubin == (_cubin(text, params, full) if cubin else None)
    assert k.ptxas_report == ("ptxas info    : Used 1 registers\n" if cubin else "")
    assert k.sidecar == SIDECAR
    assert list(k.sidecar) == list(SIDECAR)  # the sidecar's order is kept
    assert k.sidecar_text == json.dumps(SIDECAR, indent=2) + "\n"
    assert k.ptx == f"// ptx\n{text}"


# -- hits and misses --------------------------------------------------------------------------


def test_miss_then_hit(root, fake, tmp_path):
    src = _source(tmp_path)
    first = compile_cached(src)
    assert not first.hit
    assert len(fake.calls) == 1
    assert fake.calls[0]["text"] == TEXT and fake.calls[0]["source"] == str(src)
    assert _entries(root) == [f"{first.key}.tawac"]
    second = compile_cached(src)
    assert second.hit and second.cache == "hit" and first.cache == "miss"
    assert len(fake.calls) == 1
    assert second == dataclasses.replace(first, cache="hit")
    _check(second)


def test_ptx_miss_then_hit(root, fake, tmp_path):
    """PTX alone: its own entry, no ptxas asked."""
    src = _source(tmp_path)
    first = compile_cached(src, cubin=False)
    assert not first.hit and fake.calls[0]["cubin"] is False
    second = compile_cached(src, cubin=False)
    assert second.hit and second == dataclasses.replace(first, cache="hit")
    _check(second, cubin=False)
    assert _entries(root) == [f"{first.key}.tawac"]
    assert _runs(Path(os.environ["TAWAC_PTXAS"])) == 0


def test_ptx_needs_no_ptxas(root, fake, tmp_path, monkeypatch):
    """The PTX key does not hold ptxas's version: with no ptxas at all, PTX is still
    cached, under the key it has with one."""
    with_ptxas = compile_cached(_source(tmp_path), cubin=False)
    monkeypatch.setenv("TAWAC_PTXAS", str(tmp_path / "no-such-ptxas"))
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    k = compile_cached(_source(tmp_path), cubin=False)
    assert k.hit and k.key == with_ptxas.key
    monkeypatch.setenv("TAWAC_PTXAS", str(_fake_ptxas(tmp_path / "ptxas2", "2.0")))
    assert compile_cached(_source(tmp_path), cubin=False).key == with_ptxas.key
    assert len(fake.calls) == 1


def test_cubin_of_cached_ptx_is_only_assembled(root, fake, tmp_path, monkeypatch):
    """A cubin whose PTX is in the cache: ptxas runs, the compiler does not; the cubin's
    entry is stored and hit next time."""
    assembled = []

    def assemble(ptx, exe, verbose=False):
        assembled.append((ptx, exe, verbose))
        return b"\x7fELF assembled", "ptxas info    : report\n"

    monkeypatch.setattr(driver, "assemble", assemble)
    src = _source(tmp_path)
    ptx = compile_cached(src, cubin=False)
    k = compile_cached(src)
    assert not k.hit and len(fake.calls) == 1
    assert assembled == [(ptx.ptx, os.environ["TAWAC_PTXAS"], True)]
    assert (k.ptx, k.sidecar_text) == (ptx.ptx, ptx.sidecar_text)
    assert (k.cubin, k.ptxas_report) == (b"\x7fELF assembled", "ptxas info    : report\n")
    again = compile_cached(src)
    assert again == dataclasses.replace(k, cache="hit")
    assert len(assembled) == 1
    assert sorted(_entries(root)) == sorted([f"{ptx.key}.tawac", f"{k.key}.tawac"])


def test_text_argument_is_used(root, fake, tmp_path):
    """`text` given: the file is not read (it does not even exist)."""
    k = compile_cached(tmp_path / "missing.mlir", text=TEXT)
    assert not k.hit
    _check(k)
    assert compile_cached(tmp_path / "missing.mlir", text=TEXT).hit


def test_options_reach_the_compiler_in_full(root, fake, tmp_path):
    """The compiler gets every option after defaults (the planner named), as keyed."""
    compile_cached(_source(tmp_path), params={"N": 2}, stages=3)
    call = fake.calls[0]
    assert call["params"] == {"N": 2} and call["cubin"] is True
    assert call["ptxas"] == os.environ["TAWAC_PTXAS"]
    full = dataclasses.asdict(PipelineOptions(stages=3))
    assert {k: call[k] for k in full} == full


def _key(tmp_path, text=TEXT, params=None, **options) -> str:
    return compile_cached(_source(tmp_path, text), params=params, **options).key


def _other(field: dataclasses.Field):
    default = getattr(PipelineOptions(), field.name)
    if isinstance(default, bool):
        return not default
    if isinstance(default, int):
        return default + 1
    other = {"heuristic": "solver", "solver": "heuristic", "auto": "heuristic", "1x1": "2x1"}
    return other[default]


@pytest.mark.parametrize("field", dataclasses.fields(PipelineOptions), ids=lambda f: f.name)
def test_key_changes_with_each_option(root, fake, tmp_path, field):
    base = _key(tmp_path)
    changed = _key(tmp_path, **{field.name: _other(field)})
    assert changed != base
    assert _key(tmp_path, **{field.name: getattr(PipelineOptions(), field.name)}) == base


def test_key_changes_with_text_and_params(root, fake, tmp_path):
    base = _key(tmp_path)
    keys = {
        base,
        _key(tmp_path, text=TEXT + "\n"),
        _key(tmp_path, params={"N": 64}),
        _key(tmp_path, params={"N": 128}),
        _key(tmp_path, params={"M": 64}),
    }
    assert len(keys) == 5
    assert _key(tmp_path, params={}) == base
    assert _key(tmp_path, params=None) == base
    assert _key(tmp_path, params={"N": 1, "M": 2}) == _key(tmp_path, params={"M": 2, "N": 1})
    assert len(fake.calls) == 6  # the five above, and {M: 2, N: 1} once


def test_params_none_and_empty_share_an_entry(root, fake, tmp_path):
    compile_cached(_source(tmp_path), params=None)
    assert compile_cached(_source(tmp_path), params={}).hit
    assert len(fake.calls) == 1


def test_key_follows_the_planner_environment(root, fake, tmp_path, monkeypatch):
    """The default planner comes from $TAWAC_SCHEDULE: it is part of the key."""
    base = _key(tmp_path)
    monkeypatch.setenv("TAWAC_SCHEDULE", "solver")
    solver = _key(tmp_path)
    assert solver != base
    assert solver == _key(tmp_path, schedule="solver")
    assert fake.calls[-1]["schedule"] == "solver"


def test_cubin_key_changes_with_the_ptxas_version(root, fake, tmp_path, monkeypatch):
    base = _key(tmp_path)
    other = _fake_ptxas(tmp_path / "ptxas2", "2.0")
    assert _key(tmp_path, ptxas=str(other)) != base
    same = _fake_ptxas(tmp_path / "ptxas3", "1.0")
    assert _key(tmp_path, ptxas=str(same)) == base  # the version counts, not the path
    # the same ptxas updated in place (another size): asked again
    _fake_ptxas(tmp_path / "ptxas", "1.0.1")
    assert _key(tmp_path) != base


@pytest.mark.parametrize("cubin", [True, False], ids=["cubin", "ptx"])
def test_key_changes_with_tawac_sources_and_version(root, fake, tmp_path, monkeypatch, cubin):
    base = _key(tmp_path, cubin=cubin)
    assert cache.source_digest() == cache.source_digest()
    monkeypatch.setattr(cache, "_source_digest", "0" * 64)
    edited = _key(tmp_path, cubin=cubin)
    assert edited != base
    monkeypatch.setattr(cache, "_tawac_version", "9.9.9")
    assert _key(tmp_path, cubin=cubin) not in (base, edited)


def test_ptx_and_cubin_keys_differ(root, fake, tmp_path):
    assert _key(tmp_path) != _key(tmp_path, cubin=False)
    assert cache.make_key("ptx", {"a": 1}) != cache.make_key("cubin", {"a": 1})
    assert cache.make_key("ptx", {"a": 1}) != cache.make_key("ptx", {"a": 2})
    assert cache.make_key("ptx", {"a": 1, "b": 2}) == cache.make_key("ptx", {"b": 2, "a": 1})


def test_source_digest_covers_the_package():
    package = Path(cache.__file__).resolve().parent.parent  # tawac/, not tawac/support/
    h = hashlib.sha256()
    for path in sorted(package.rglob("*.py"), key=lambda p: p.relative_to(package).parts):
        data = path.read_bytes()
        h.update(f"{path.relative_to(package).as_posix()}\0{len(data)}\0".encode())
        h.update(data)
    assert cache.source_digest() == h.hexdigest()


def test_tawac_version():
    from importlib.metadata import version

    assert cache.tawac_version() == version("tawac")


# -- ptxas ------------------------------------------------------------------------------------


def test_ptxas_version_is_memoised_on_disk(root, fake, tmp_path, monkeypatch):
    ptxas = Path(os.environ["TAWAC_PTXAS"])
    assert not compile_cached(_source(tmp_path)).hit
    assert _runs(ptxas) == 1
    assert (root / "ptxas-versions.json").is_file()
    monkeypatch.setattr(cache, "_ptxas_versions", {})  # a new process
    assert compile_cached(_source(tmp_path)).hit
    assert _runs(ptxas) == 1


def test_ptxas_without_a_version_bypasses_the_cache(root, fake, tmp_path, monkeypatch):
    """A ptxas whose --version fails: the kernel compiles (the driver reports any ptxas
    error), nothing is stored, the key is empty."""
    bad = tmp_path / "bad-ptxas"
    bad.write_text("#!/bin/sh\nexit 1\n")
    bad.chmod(0o755)
    monkeypatch.setenv("TAWAC_PTXAS", str(bad))
    k = compile_cached(_source(tmp_path))
    assert (k.key, k.hit) == ("", False)
    assert fake.calls[0]["ptxas"] == str(bad)
    assert not compile_cached(_source(tmp_path)).hit
    assert len(fake.calls) == 2
    assert _entries(root) == []


def test_driver_reexports_the_core():
    """The names tests, scripts and benchmarks import from `tawac.driver` still work:
    the light ones directly, the compiler core's at first use."""
    import tawac.compiler
    import tawac.support.ptxas
    import tawac.support.timelimit

    assert driver.find_ptxas is tawac.support.ptxas.find_ptxas
    assert driver.assemble is tawac.support.ptxas.assemble
    assert driver.TimeLimit is tawac.support.timelimit.TimeLimit
    for name in driver.CORE_NAMES:
        assert getattr(driver, name) is getattr(tawac.compiler, name), name
    from tawac.driver import compile_file, compile_module, parse_text, run_pipeline  # noqa: F401

    assert "compile_file" in dir(driver)
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        driver.nothing  # noqa: B018


def test_find_ptxas_error(monkeypatch):
    from tawac.support.diagnostics import CompileError
    from tawac.support.ptxas import find_ptxas

    monkeypatch.setattr("tawac.support.ptxas.locate_ptxas", lambda: None)
    with pytest.raises(CompileError, match="ptxas not found"):
        find_ptxas()


# -- corrupt entries --------------------------------------------------------------------------


def _flip_payload_byte(data: bytes) -> bytes:
    """One bit of the cubin flipped: only the checksum can tell."""
    i = data.index(b"\n", len(cache.MAGIC)) + 10
    return data[:i] + bytes([data[i] ^ 1]) + data[i + 1 :]


def _bad_sidecar(data: bytes) -> bytes:
    """A sidecar that is not JSON, under a matching checksum and sizes."""
    end = data.index(b"\n", len(cache.MAGIC))
    meta = json.loads(data[len(cache.MAGIC) : end])
    parts = cache.decode(data, meta["key"], tuple(name for name, _ in meta["parts"]))
    parts["sidecar"] = b"{" * len(parts["sidecar"])
    return cache.encode(meta["key"], parts, {})


def _other_parts(data: bytes) -> bytes:
    """The entry of another kind (a PTX entry's parts) under this key, checksum right."""
    end = data.index(b"\n", len(cache.MAGIC))
    meta = json.loads(data[len(cache.MAGIC) : end])
    return cache.encode(meta["key"], {"ptx": b"// ptx", "sidecar": b"{}"}, {})


CORRUPTIONS = {
    "flipped payload byte": _flip_payload_byte,
    "truncated": lambda d: d[: len(d) // 2],
    "cut in the header": lambda d: d[:20],
    "empty": lambda d: b"",
    "garbage header": lambda d: cache.MAGIC + b"{not json\n" + d[d.index(b"\n", 8) + 1 :],
    "bad magic": lambda d: b"XXXXXXXX" + d[8:],
    "appended bytes": lambda d: d + b"\0",
    "bad sidecar JSON": _bad_sidecar,
    "other parts": _other_parts,
}


@pytest.mark.parametrize("corrupt", CORRUPTIONS.values(), ids=CORRUPTIONS.keys())
def test_corrupt_entry_is_warned_removed_and_rebuilt(root, fake, tmp_path, corrupt):
    src = _source(tmp_path)
    first = compile_cached(src, stages=2)
    entry = root / "kernels" / f"{first.key}.tawac"
    good = entry.read_bytes()
    entry.write_bytes(corrupt(good))
    with pytest.warns(CacheWarning, match="corrupt cache entry") as caught:
        rebuilt = compile_cached(src, stages=2)
    assert len(caught) == 1
    assert not rebuilt.hit
    assert len(fake.calls) == 2
    _check(rebuilt, stages=2)
    assert entry.read_bytes() == good
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        again = compile_cached(src, stages=2)
    assert again.hit
    _check(again, stages=2)


def test_entry_under_another_key_is_not_used(root, fake, tmp_path):
    """An entry renamed to another kernel's key does not pass for that kernel."""
    a = compile_cached(_source(tmp_path), stages=2)
    b = compile_cached(_source(tmp_path), stages=3)
    kernels = root / "kernels"
    (kernels / f"{b.key}.tawac").write_bytes((kernels / f"{a.key}.tawac").read_bytes())
    with pytest.warns(CacheWarning):
        k = compile_cached(_source(tmp_path), stages=3)
    _check(k, stages=3)


# -- failures, the switch, an unwritable cache ------------------------------------------------


def test_failed_compile_writes_nothing(root, tmp_path):
    """A real compilation that fails: the driver's error, unchanged; no entry, no temp."""
    from tawac.support.diagnostics import CompileError

    src = _source(tmp_path, "tile.kernel @k( {\n")
    with pytest.raises(CompileError) as err:
        compile_cached(src)
    assert str(src) in str(err.value)
    assert not (root / "kernels").exists() or _entries(root) == []


def test_failed_fake_compile_writes_nothing(root, tmp_path, monkeypatch):
    from tawac.support.diagnostics import CompileError

    def fail(*args, **kwargs):
        raise CompileError("boom", location="k.mlir:1:1")

    monkeypatch.setattr(driver, "_compile", fail)
    (root / "kernels").mkdir(parents=True)
    with pytest.raises(CompileError, match="k.mlir:1:1: error: boom"):
        compile_cached(_source(tmp_path))
    assert _entries(root) == []


def test_unreadable_source(root, fake, tmp_path):
    from tawac.support.diagnostics import CompileError

    with pytest.raises(CompileError, match="cannot read"):
        compile_cached(tmp_path / "missing.mlir")
    bad = tmp_path / "bad.mlir"
    bad.write_bytes(b"tile.kernel \xff")
    with pytest.raises(CompileError, match=r"bad.mlir:1:13: error: input is not UTF-8"):
        compile_cached(bad)
    assert fake.calls == []


def test_failed_assembly_writes_nothing(root, fake, tmp_path, monkeypatch):
    """PTX in the cache, ptxas fails on it: the error, and no cubin entry."""
    from tawac.support.diagnostics import CompileError

    def fail(ptx, exe, verbose=False):
        raise CompileError("ptxas failed (exit 1): boom")

    monkeypatch.setattr(driver, "assemble", fail)
    ptx = compile_cached(_source(tmp_path), cubin=False)
    with pytest.raises(CompileError, match="ptxas failed"):
        compile_cached(_source(tmp_path))
    assert _entries(root) == [f"{ptx.key}.tawac"]


@pytest.mark.parametrize("value", ["0", "off", "false"])
def test_switch_off(root, fake, tmp_path, monkeypatch, value):
    monkeypatch.setenv("TAWAC_CACHE", value)
    src = _source(tmp_path)
    k = compile_cached(src)
    assert (k.hit, k.cache, k.key) == (False, "off", "")
    _check(k)
    assert not compile_cached(src).hit
    assert len(fake.calls) == 2
    assert not root.exists()  # not even the ptxas memo
    monkeypatch.setenv("TAWAC_CACHE", "1")
    compile_cached(src)
    assert compile_cached(src).hit


def test_switch_off_does_not_read(root, fake, tmp_path, monkeypatch):
    compile_cached(_source(tmp_path))
    monkeypatch.setenv("TAWAC_CACHE", "0")
    assert not compile_cached(_source(tmp_path)).hit
    assert len(fake.calls) == 2


@pytest.mark.parametrize("cubin", [True, False], ids=["cubin", "ptx"])
def test_use_cache_false(root, fake, tmp_path, cubin):
    """`use_cache=False` (`--no-cache`): compiled, neither read nor written."""
    compile_cached(_source(tmp_path), cubin=cubin)
    before = {p: p.read_bytes() for p in root.rglob("*") if p.is_file()}
    k = compile_cached(_source(tmp_path), cubin=cubin, use_cache=False)
    assert (k.cache, k.key) == ("off", "")
    _check(k, cubin=cubin)
    assert len(fake.calls) == 2
    assert {p: p.read_bytes() for p in root.rglob("*") if p.is_file()} == before


def test_unwritable_cache_still_compiles(root, fake, tmp_path, monkeypatch):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv("TAWAC_CACHE_DIR", str(blocker))
    with pytest.warns(CacheWarning, match="cannot write the compile cache"):
        k = compile_cached(_source(tmp_path))
    _check(k)


def test_write_is_atomic(root, fake, tmp_path, monkeypatch):
    """A write that fails half way leaves neither the entry nor a temporary file."""

    def broken(src, dst):
        raise OSError(28, "No space left on device")

    src = _source(tmp_path)
    with monkeypatch.context() as m, pytest.warns(CacheWarning, match="No space left"):
        m.setattr(cache.os, "replace", broken)
        k = compile_cached(src)
    _check(k)
    assert os.listdir(root / "kernels") == []


# -- a fresh process --------------------------------------------------------------------------

PROBE = """
import json, sys, time
start = time.perf_counter()
from tawac.driver import compile_cached
k = compile_cached(sys.argv[1])
print(json.dumps({
    "hit": k.hit,
    "key": k.key,
    "cubin": k.cubin.hex(),
    "ms": (time.perf_counter() - start) * 1e3,
    "xdsl": sorted(m for m in sys.modules if m == "xdsl" or m.startswith("xdsl.")),
    "compiler": "tawac.compiler" in sys.modules,
}))
"""


def _probe(src: Path) -> dict:
    # a process: what a fresh interpreter imports and runs on a hit is the subject
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, str(src)],
        capture_output=True,
        text=True,
        timeout=300,
        env=dict(os.environ),
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_hit_in_a_fresh_process_imports_no_xdsl(root, fake, tmp_path):
    """An entry written through the cache's writer (fake compiler, fake ptxas) is a hit
    in a new process, which imports neither xDSL nor the compiler core and runs no
    ptxas."""
    src = _source(tmp_path)
    k = compile_cached(src)
    ptxas = Path(os.environ["TAWAC_PTXAS"])
    runs = _runs(ptxas)
    out = _probe(src)
    assert out["hit"] and out["key"] == k.key
    assert bytes.fromhex(out["cubin"]) == k.cubin
    assert out["xdsl"] == [] and not out["compiler"]
    assert _runs(ptxas) == runs


def test_real_compile_and_fresh_hit(tmp_path, monkeypatch):
    """examples/gemm.mlir compiled for real (PTX, ptxas, cubin), then loaded in a fresh
    process without xDSL. (A tawac source edited meanwhile makes that load a miss: run
    it on a tree nobody is editing.)"""
    monkeypatch.setenv("TAWAC_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("TAWAC_CACHE", raising=False)
    monkeypatch.delenv("TAWAC_SCHEDULE", raising=False)
    if driver.locate_ptxas() is None:
        pytest.skip("no ptxas")
    from tawac.driver import compile_file

    src = tmp_path / "gemm.mlir"
    src.write_bytes(GEMM.read_bytes())
    first = compile_cached(src)
    assert not first.hit
    assert first.cubin.startswith(b"\x7fELF")
    assert ".entry" in first.ptx and first.sidecar["target"] == "sm_90a"
    direct = compile_file(src)
    assert (first.ptx, first.sidecar) == (direct.ptx, json.loads(json.dumps(direct.sidecar)))
    assert first.sidecar_text == json.dumps(direct.sidecar, indent=2) + "\n"
    assert first.ptxas_report.startswith("ptxas info")
    assert compile_cached(src).hit
    out = _probe(src)
    assert out["hit"] and out["key"] == first.key, out
    assert bytes.fromhex(out["cubin"]) == first.cubin
    assert out["xdsl"] == [] and not out["compiler"]


# -- the folder, info, clear, the CLI ---------------------------------------------------------


def test_cache_root(monkeypatch, tmp_path):
    monkeypatch.setenv("TAWAC_CACHE_DIR", str(tmp_path / "a"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "x"))
    assert cache.cache_root() == tmp_path / "a"
    monkeypatch.delenv("TAWAC_CACHE_DIR")
    assert cache.cache_root() == tmp_path / "x" / "tawac"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache.cache_root() == tmp_path / "home" / ".cache" / "tawac"


def test_solver_cache_dir_is_in_the_cache_root(root, monkeypatch, tmp_path):
    from tawac.schedule.solver import cache_dir

    assert cache_dir() == cache.cache_root() / "solver" == root / "solver"
    monkeypatch.delenv("TAWAC_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "x"))
    assert cache_dir() == tmp_path / "x" / "tawac" / "solver"


def _fill(root: Path, fake_tmp: Path) -> dict[str, Path]:
    """Two kernel entries, a leftover temporary file, two solver entries, and files
    tawac did not write."""
    compile_cached(_source(fake_tmp), stages=1)
    compile_cached(_source(fake_tmp), stages=2)
    kernels, solver = root / "kernels", root / "solver"
    (kernels / f".{'a' * 64}.x1y2.tmp").write_bytes(b"partial")
    solver.mkdir()
    (solver / f"{'b' * 32}.json").write_text('{"interval": 1}')
    (solver / f"{'c' * 32}.json").write_text('{"infeasible": "no"}')
    mine = {
        "kernel note": kernels / "README.txt",
        "solver note": solver / "notes.json",
        "root note": root / "keep.txt",
    }
    for path in mine.values():
        path.write_text("mine")
    return mine


def test_info_and_clear(root, fake, tmp_path):
    mine = _fill(root, tmp_path)
    info = cache.cache_info()
    assert info["root"] == str(root) and info["enabled"] is True
    kernel_bytes = sum(p.stat().st_size for p in (root / "kernels").glob("*.tawac"))
    assert info["kernels"] == {"entries": 2, "bytes": kernel_bytes}
    assert info["solver"] == {"entries": 2, "bytes": 15 + 20}
    memo = (root / "ptxas-versions.json").stat().st_size
    files, freed = cache.clear_cache()
    assert files == 2 + 1 + 2 + 1  # entries, the temporary file, solver, the ptxas memo
    assert freed == kernel_bytes + len("partial") + 35 + memo
    assert all(p.read_text() == "mine" for p in mine.values())
    assert cache.cache_info()["kernels"] == {"entries": 0, "bytes": 0}
    assert cache.cache_info()["solver"] == {"entries": 0, "bytes": 0}
    assert not compile_cached(_source(tmp_path), stages=1).hit
    assert cache.clear_cache()[0] == 2  # the new entry and the ptxas memo


def test_info_and_clear_on_a_missing_folder(root):
    assert cache.cache_info()["kernels"] == {"entries": 0, "bytes": 0}
    assert cache.clear_cache() == (0, 0)


def test_cli_cache_info_and_clear(root, fake, tmp_path, monkeypatch):
    from tawac.tools.cli import main

    mine = _fill(root, tmp_path)
    runner = CliRunner()
    res = runner.invoke(main, ["cache", "info"])
    assert res.exit_code == 0, res.output
    lines = res.output.splitlines()
    assert lines[0] == f"root: {root}"
    assert lines[1].startswith("kernels: 2 entries, ")
    assert lines[2] == "solver: 2 entries, 35 B"
    assert lines[3] == "kernel cache: on"
    res = runner.invoke(main, ["cache", "clear"])
    assert res.exit_code == 0, res.output
    assert res.output.startswith("removed 6 files (")
    assert all(p.exists() for p in mine.values())
    res = runner.invoke(main, ["cache", "info"])
    assert "kernels: 0 entries, 0 B" in res.output
    monkeypatch.setenv("TAWAC_CACHE", "0")
    assert "kernel cache: off" in runner.invoke(main, ["cache", "info"]).output


def test_cli_cache_clear_error_is_one_line(root, fake, tmp_path, monkeypatch):
    """A file that cannot be removed: one diagnostic line, exit 1, no traceback."""
    from tawac.tools.cli import main

    compile_cached(_source(tmp_path))

    def refuse(self, missing_ok=False):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(Path, "unlink", refuse)
    res = CliRunner().invoke(main, ["cache", "clear"])
    assert res.exit_code == 1
    assert "Traceback" not in res.output
    assert res.output.count("\n") == 1
    assert "error: cannot remove" in res.output and "Permission denied" in res.output


def test_format_bytes():
    assert [cache.format_bytes(n) for n in (0, 999, 1000, 1_500_000, 12 * 10**9)] == [
        "0 B",
        "999 B",
        "1.0 kB",
        "1.5 MB",
        "12.0 GB",
    ]


# -- the store alone --------------------------------------------------------------------------


def test_entry_round_trip_and_parts(root):
    parts = {"ptx": b"// ptx\n", "sidecar": b"{}", "cubin": b"\x7fELF\0\1", "report": b""}
    data = cache.encode("k" * 64, parts, {"source": "x.mlir"})
    assert data.startswith(cache.MAGIC)
    assert cache.decode(data, "k" * 64, tuple(parts)) == parts
    with pytest.raises(cache.Corrupt, match="parts are not ptx, sidecar"):
        cache.decode(data, "k" * 64, ("ptx", "sidecar"))
    with pytest.raises(cache.Corrupt, match="format and key"):
        cache.decode(data, "j" * 64, tuple(parts))
    key = "a" * 64
    assert cache.load(key, ("ptx",)) is None
    assert cache.store(key, {"ptx": b"x"}, {})
    assert cache.load(key, ("ptx",)) == {"ptx": b"x"}
    assert cache.entry_path(key) == root / "kernels" / f"{key}.tawac"
    with pytest.warns(CacheWarning, match="corrupt cache entry"):
        assert cache.load(key, ("ptx", "sidecar")) is None
    assert not cache.entry_path(key).exists()


#: The modules `tawac.support.cache` may import: the standard library and tawac's base layer.
BASE = {
    "tawac.support.diagnostics",
    "tawac.support.files",
    "tawac.support.options",
    "tawac.support.ptxas",
    "tawac.target",
}


def _imports(path: Path) -> set[str]:
    """Every module `path` imports, at module level or in a function."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module is not None:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def test_cache_is_a_store_only():
    """`tawac/support/cache.py` imports nothing above the base layer: no driver, compiler,
    parser, dialects or xDSL (an AST check of its imports, lazy ones included)."""
    imported = _imports(Path(cache.__file__))
    ours = {n for n in imported if n == "tawac" or n.startswith("tawac.")}
    modules = {n for n in ours if n in BASE or n.rsplit(".", 1)[0] not in BASE}
    assert modules <= BASE, modules - BASE
    assert not any(n.split(".")[0] == "xdsl" for n in imported)


def test_store_and_driver_import_no_xdsl():
    """In a fresh process the store and the driver load no xDSL, no compiler core, no
    rich (the warm `tawac compile` path)."""
    probe = (
        "import sys, json; import tawac.support.cache, tawac.driver; "
        "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('xdsl', 'rich', 'tawac'))))"
    )
    # a process: what a fresh interpreter imports is the subject
    proc = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True
    )
    loaded = set(json.loads(proc.stdout))
    from test_layering import layer

    assert not {m for m in loaded if m.split(".")[0] in ("xdsl", "rich")}, loaded
    # only base-layer modules of tawac besides the driver itself (no compiler core)
    assert {m for m in loaded if m != "tawac.driver" and layer(m) != 0} == set(), loaded
    assert {"tawac.support.cache", "tawac.driver"} <= loaded


# -- ptxas's answers (`cache.assemble`, the compiler core's compiles) --------------------------


def _assembling_ptxas(path: Path, version: str, fail: bool = False) -> Path:
    """A ptxas that says `version`, counts its assemblies in `path`.log and writes a cubin
    naming the PTX's first line (or rejects every PTX with `fail`)."""
    path.write_text(
        "#!/bin/sh\n"
        f"case \"$1\" in --version) echo 'ptxas fake'; echo 'release {version}'; exit 0;; esac\n"
        f"echo run >> '{path}.log'\n"
        + ("echo 'ptxas fatal : rejected' >&2; exit 1\n" if fail else "")
        + 'src=""; out=""\n'
        'while [ $# -gt 0 ]; do case "$1" in -o) out="$2"; shift;; *.ptx) src="$1";; esac; '
        "shift; done\n"
        'head -n 1 "$src" > "$out"\n'
        "echo 'ptxas info    : 0 bytes spill stores, 0 bytes spill loads'\n"
    )
    path.chmod(0o755)
    return path


def test_ptxas_runs_once_per_distinct_ptx(root, tmp_path):
    ptxas = str(_assembling_ptxas(tmp_path / "asm", "2.0"))
    first = cache.assemble("// one\n", ptxas)
    assert first == (b"// one\n", "ptxas info    : 0 bytes spill stores, 0 bytes spill loads\n")
    assert cache.assemble("// one\n", ptxas) == first
    assert _runs(Path(ptxas)) == 1
    assert cache.assemble("// two\n", ptxas)[0] == b"// two\n"
    assert _runs(Path(ptxas)) == 2


def test_another_ptxas_version_assembles_again(root, tmp_path):
    cache.assemble("// one\n", str(_assembling_ptxas(tmp_path / "a", "2.0")))
    other = _assembling_ptxas(tmp_path / "b", "2.1")
    assert cache.assemble("// one\n", str(other))[0] == b"// one\n"
    assert _runs(other) == 1


def test_assemble_without_the_cache_runs_ptxas_each_time(root, tmp_path, monkeypatch):
    monkeypatch.setenv("TAWAC_CACHE", "0")
    ptxas = _assembling_ptxas(tmp_path / "asm", "2.0")
    for _ in range(2):
        cache.assemble("// one\n", str(ptxas))
    assert _runs(ptxas) == 2
    assert not root.exists() or not any(root.rglob("*.tawac"))


def test_a_rejected_ptx_is_not_stored(root, tmp_path):
    from tawac.support.diagnostics import CompileError

    ptxas = _assembling_ptxas(tmp_path / "asm", "2.0", fail=True)
    for _ in range(2):
        with pytest.raises(CompileError, match="rejected"):
            cache.assemble("// one\n", str(ptxas))
    assert _runs(ptxas) == 2


def test_the_core_assembles_through_the_store(root, tmp_path, monkeypatch):
    """`compile_module(cubin=True)` twice on one kernel: one ptxas run."""
    from tawac.compiler import compile_module, parse_text

    ptxas = _assembling_ptxas(tmp_path / "asm", "2.0")
    monkeypatch.setenv("TAWAC_PTXAS", str(ptxas))
    text = (REPO / "tests" / "data" / "single_k_tile.mlir").read_text()
    results = [
        compile_module(parse_text(text, "k.mlir"), cubin=True, ptxas=str(ptxas)) for _ in range(2)
    ]
    assert results[0].cubin == results[1].cubin == results[0].ptx.splitlines()[0].encode() + b"\n"
    assert _runs(ptxas) == 1
