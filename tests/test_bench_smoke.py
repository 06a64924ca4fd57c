"""Benchmarks run end to end at a tiny size (their figures are checked by `make bench`, not
here): a benchmark that breaks when the library changes fails the suite."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_train_step_bench_runs(tmp_path):
    p = subprocess.run([sys.executable, str(ROOT / "bench/train_step.py"), "--steps", "5",
                        "--scenes", "2", "--questions", "40"], capture_output=True, text=True,
                       timeout=600, cwd=tmp_path)
    assert p.returncode == 0, p.stderr[-3000:]
    rows = [json.loads(line[6:]) for line in p.stdout.splitlines() if line.startswith("BENCH ")]
    assert [r["name"] for r in rows] == ["3DR-FT paper / SFT step time",
                                         "3DR-FT official / SFT step time",
                                         "3DR-FT paper with live reference / SFT"]
    assert all(r["value"] > 0 for r in rows)
