"""A reduced demo end to end: every report section and plot exists, and the report's
numbers equal the metrics recomputed from the saved prediction files."""

import re

import pandas as pd
import pytest

from hf_real3d.demo import DemoConfig, run_demo
from hf_real3d.predictions import load_predictions
from hf_real3d.real3dqa import load_references, score_predictions


@pytest.mark.slow
def test_reduced_demo(tmp_path):
    cfg = DemoConfig(out=str(tmp_path / "demo"), train_scenes=4, val_scenes=1, test_scenes=2,
                     questions_per_scene=24, epochs=1, srbench_scenes=4, progress=False)
    report = run_demo(cfg).read_text()
    for section in ("## Table 2", "## Table 3", "## Table 4", "## Table 6", "## Figure 5",
                    "## Figure 6", "## Findings", "## 3DSRBench"):
        assert section in report, section
    for png in ("pk.png", "radar.png", "topdown.png"):
        data = (tmp_path / "demo" / png).read_bytes()
        assert data[:4] == b"\x89PNG" and len(data) > 5000, png
    seed = tmp_path / "demo/seed0"
    refs = load_references(seed / "real3dqa")
    table2 = report[report.index("## Table 2"):report.index("## Table 3")]
    table3 = report[report.index("## Table 3"):report.index("## Table 4")]
    for name, slug in (("SFT", "sft"), ("Blind", "blind"), ("3DR-FT (paper)", "3drft_paper"),
                       ("3DR-FT (official)", "3drft_official")):
        preds = load_predictions(seed / "predictions" / f"{slug}.jsonl")
        m = score_predictions(refs, preds, name=name, allow_missing=True).metrics
        row = re.search(rf"^\| {re.escape(name)} \| (.*) \|$", table2, flags=re.M).group(1)
        got = [float(x) for x in row.split(" | ")]
        want = [m["original"]["em"], m["original"]["em_refined"], m["debiased"]["em"],
                m["debiased"]["em_refined"]]
        assert got == pytest.approx([round(w, 1) for w in want], abs=0.051), name
        row = re.search(rf"^\| {re.escape(name)} \| (.*) \|$", table3, flags=re.M).group(1)
        got = [float(x) for x in row.split(" | ")]
        want = [m["rotation"][f"p_at_least_{k}"] for k in range(1, 5)] + [m["rotation"]["vrs"]]
        assert got == pytest.approx([round(w, 1) for w in want], abs=0.051), name
    assert isinstance(pd.read_json(seed / "predictions/sft.jsonl", lines=True), pd.DataFrame)
