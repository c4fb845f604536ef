"""`scripts/` holds the maintained tools only: at most 15 files, each with a usage line in
its header and each run by the README, CI, a test, a benchmark, the package or another
tool; `experiments/README.md` indexes every experiment in `experiments/`."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCRIPTS = sorted(p for p in (ROOT / "scripts").iterdir() if p.is_file())
EXPERIMENTS = ROOT / "experiments"


def _users() -> str:
    """The text of everything that may use a tool (not docs/perf's record, not experiments)."""
    files = [ROOT / "README.md", ROOT / ".ci" / "run", *ROOT.glob("docs/*.md")]
    files += ROOT.glob("docs/design/*.md")  # the design parts name the tools they describe
    for folder in ("tests", "benchmarks", "tawac", "examples"):
        files += (ROOT / folder).rglob("*.py")
    files += SCRIPTS
    return "\n".join(f"{p.relative_to(ROOT)}\0{p.read_text(errors='replace')}" for p in files)


def test_scripts_are_few():
    assert 0 < len(SCRIPTS) <= 15, [p.name for p in SCRIPTS]
    assert not [p for p in (ROOT / "scripts").iterdir() if p.is_dir()]


def test_each_script_has_a_usage_line():
    for p in SCRIPTS:
        head = "\n".join(p.read_text().splitlines()[:30])
        assert re.search(rf"(python3 |source |^#\s+)scripts/{re.escape(p.name)}", head, re.M), p


def test_each_script_is_used():
    users = _users()
    for p in SCRIPTS:
        ref = f"scripts/{p.name}"
        hits = [m.start() for m in re.finditer(re.escape(ref), users)]
        own = p.read_text()
        assert len(hits) > own.count(ref), f"{ref} is used by nothing outside itself"


def test_experiments_index_lists_every_experiment():
    index = (EXPERIMENTS / "README.md").read_text()
    listed = set(re.findall(r"^\| `([\w.]+)[` ]", index, re.M))
    files = {p.name for p in EXPERIMENTS.iterdir() if p.is_file() and p.name != "README.md"}
    assert files <= listed, sorted(files - listed)
    for name in listed & files:
        assert (EXPERIMENTS / name).exists()
