"""The test suite's own rules: `slow` gates on RUN_SLOW, and `make test` (CI) sets it."""

import re
import subprocess
import sys
from pathlib import Path

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


def test_slow_gates_on_run_slow(tmp_path):
    without = _collected(None, tmp_path)
    assert re.search(r"1 passed, 1 skipped", without), without
    assert "RUN_SLOW=1" in without
    assert re.search(r"2 passed", _collected("1", tmp_path))
