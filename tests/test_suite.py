"""The test suite's own rules: `slow` gates on RUN_SLOW, and `make test` (CI) sets it."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_make_test_runs_the_slow_tests():
    make = (ROOT / "Makefile").read_text()
    recipe = make[make.index("\ntest:"):].split("\n\n")[0]
    assert "RUN_SLOW=1" in recipe and "pytest" in recipe, recipe
    assert "make test" in (ROOT / ".ci/run").read_text()


def _collected(env_slow: str | None, tmp_path: Path) -> str:
    test = tmp_path / "test_gate.py"
    test.write_text("import pytest\n\n@pytest.mark.slow\ndef test_s():\n    pass\n\n"
                    "def test_f():\n    pass\n")
    (tmp_path / "conftest.py").write_text((ROOT / "tests/conftest.py").read_text())
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    if env_slow is not None:
        env["RUN_SLOW"] = env_slow
    out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider",
                          "-c", str(ROOT / "setup.cfg"), "--rootdir", str(tmp_path), str(test)],
                         capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)
    return out.stdout


@pytest.mark.slow
def test_slow_gates_on_run_slow(tmp_path):
    without = _collected(None, tmp_path)
    assert re.search(r"1 passed, 1 skipped", without), without
    assert "RUN_SLOW=1" in without
    assert re.search(r"2 passed", _collected("1", tmp_path))


@pytest.mark.slow
def test_a_test_that_trains_or_starts_a_browser_must_be_slow(tmp_path):
    """conftest refuses Trainer.train and Playwright's browser in a test without `slow`, so
    plain `pytest` stays a quick pass."""
    test = tmp_path / "test_trains.py"
    test.write_text("import transformers\n\ndef test_t():\n"
                    "    transformers.Trainer.train(None)\n\n"
                    "def test_b():\n    from playwright.sync_api import sync_playwright\n"
                    "    sync_playwright()\n")
    (tmp_path / "conftest.py").write_text((ROOT / "tests/conftest.py").read_text())
    out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                          "-c", str(ROOT / "setup.cfg"), "--rootdir", str(tmp_path), str(test)],
                         capture_output=True, text=True, cwd=tmp_path, timeout=300).stdout
    assert "2 failed" in out, out[-2000:]
    assert "test_t trains a model: mark it @pytest.mark.slow" in out
    assert "test_b starts a browser: mark it @pytest.mark.slow" in out


def test_no_test_file_imports_another():
    """Shared pieces live in conftest.py or helper modules (tiny_vlm, trainer_helpers, ...),
    never in a test file another imports."""
    bad = []
    for f in (ROOT / "tests").glob("test_*.py"):
        for line in f.read_text().splitlines():
            if re.match(r"\s*(from test_\w+ import|import test_\w+)", line):
                bad.append(f"{f.name}: {line.strip()}")
    assert not bad, bad


# tests of the project as a whole: its docs, layout, packaging (install), suite rules, study
PROJECT_TESTS = {"bench_smoke", "docs", "doctests", "install", "layout", "readme", "study",
                 "suite"}


def _module_names() -> set[str]:
    names = set()
    for f in (ROOT / "hf_real3d").rglob("*.py"):
        parts = [p.lstrip("_") for p in f.relative_to(ROOT / "hf_real3d").with_suffix("").parts
                 if p != "__init__"]
        for i in range(len(parts)):
            names.add("_".join(parts[i:]))
            names.add(parts[i])
    return names | {"metrics_modules"}


def test_test_files_mirror_the_modules_they_test():
    """tests/test_<module>[_<topic>].py: each test file is named after the module (or
    package) it tests, e.g. test_modes_family.py for training/modes.py's family modes."""
    names = _module_names()
    stray = []
    for f in sorted((ROOT / "tests").glob("test_*.py")):
        stem = f.stem.removeprefix("test_")
        words = stem.split("_")
        prefixes = {"_".join(words[:i]) for i in range(1, len(words) + 1)}
        if stem not in PROJECT_TESTS and not prefixes & names:
            stray.append(f.name)
    assert not stray, stray


def test_no_test_name_is_defined_twice():
    seen: dict[str, str] = {}
    twice = []
    for f in sorted((ROOT / "tests").glob("test_*.py")):
        for m in re.finditer(r"^def (test_\w+)\(", f.read_text(), flags=re.M):
            if m.group(1) in seen:
                twice.append(f"{m.group(1)}: {seen[m.group(1)]} and {f.name}")
            seen[m.group(1)] = f.name
    assert not twice, twice


def test_shared_helpers_live_in_the_helpers_package():
    """Helpers the tests share are the tests/helpers package: no test imports conftest (it
    holds fixtures only) and none edits sys.path to import a sibling."""
    offenders = []
    banned = re.compile(r"^\s*(?:from conftest import|import conftest\b|"
                        r"sys\.path\.(?:insert|append)\()", flags=re.M)
    for f in sorted((ROOT / "tests").rglob("*.py")):
        if banned.search(f.read_text()):
            offenders.append(str(f.relative_to(ROOT)))
    assert not offenders, offenders
