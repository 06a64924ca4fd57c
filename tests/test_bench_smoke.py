"""Benchmarks run end to end at a tiny size (their figures are checked by `make bench`, not
here): a benchmark that breaks when the library changes fails the suite."""

import json
import subprocess
import sys

import pytest
from helpers.bench import bench_module
from helpers.paths import ROOT


def _bench_rows(tmp_path, script: str, *args: str) -> list[dict]:
    """Run ``bench/<script>`` in ``tmp_path`` and return its BENCH rows (it must succeed)."""
    p = subprocess.run([sys.executable, str(ROOT / "bench" / script), *args],
                       capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert p.returncode == 0, p.stderr[-3000:]
    return [json.loads(line[6:]) for line in p.stdout.splitlines() if line.startswith("BENCH ")]


@pytest.mark.slow
def test_train_step_bench_runs(tmp_path):
    rows = _bench_rows(tmp_path, "train_step.py", "--steps", "5", "--scenes", "2",
                       "--questions", "40")
    assert [r["name"] for r in rows] == [
        f"3DR-FT {v} / SFT step time, {route}" for route in ("SceneLM", "LLaVA (VLM)")
        for v in ("paper", "official", "paper+frozen ref")]
    assert all(r["value"] > 0 for r in rows)


def test_official_baseline_cleans_as_the_library_does():
    # the bench restates the official script's cleaning (re.sub with pattern strings, its
    # cost); it must give the library's normalisation, string for string
    clean_answer = bench_module("_official_vrs").clean_answer
    from hf_real3d.answers import normalize_answer

    texts = ["The chair on my LEFT ", "2", "a table", "mat2 is  there", "none", "tv oclock",
             "backwards.  Go", "23 chairs", "rigth, behine the chai", "o'  clock", "an apple"]
    assert [clean_answer(t) for t in texts] == [normalize_answer(t) for t in texts]
    assert clean_answer(texts) == [normalize_answer(t) for t in texts]


@pytest.mark.slow
def test_evaluate_e2e_bench_runs(tmp_path):
    rows = _bench_rows(tmp_path, "evaluate_e2e.py", "--groups", "3000")
    assert len(rows) == 4 and all(r["identical"] for r in rows), rows


@pytest.mark.slow
def test_explore_bench_runs(tmp_path):
    rows = _bench_rows(tmp_path, "explore.py", "--switches", "3", "--results", "2")
    assert [r["name"].split(":")[0] for r in rows] == ["explore"] * 3
    assert all(r["value"] > 0 for r in rows) and "baseline" in rows[0]
