"""3DSRBench TSV rows: a repeated qid and option sets differing within a circular group are
refused, by one rule for the evaluator, the metric module and the builder."""

import copy
import sys
from pathlib import Path

import pytest
from helpers.data import srb_rows
from helpers.errors import one_line_error

from hf_real3d._io import FormatError
from hf_real3d.cli import main as cli
from hf_real3d.scoring import MetricInputError
from hf_real3d.srbench import read_tsv, score_rows, write_tsv

BIN = Path(sys.executable).parent
Q = "v1_balanced_questions_test_scannetv2.json"
A = "v1_balanced_sqa_annotations_test_scannetv2.json"


def test_tsv_with_a_repeated_qid_is_an_error(tmp_path):
    rows = srb_rows(tmp_path)
    write_tsv(rows + [rows[0]], tmp_path / "dup.tsv")
    with pytest.raises(FormatError, match=r"qid 'Q0000000' repeats row 0"):
        read_tsv(tmp_path / "dup.tsv", decode_images=False)


def test_one_rule_for_option_sets(tmp_path):
    """The evaluator and the circular_eval module reject the same rows."""
    rows = srb_rows(tmp_path)
    bad = copy.deepcopy(rows)
    shifted = next(i for i, r in enumerate(bad) if r["shift"] == 1 and not r["flipped"])
    bad[shifted]["options"] = ["yes", "maybe"]
    with pytest.raises(MetricInputError, match="every shift must permute the same options"):
        score_rows(bad, ["A"] * len(bad))
    import evaluate

    import hf_real3d

    module = evaluate.load(hf_real3d.metric_path("circular_eval"))
    plain = [r for r in bad if not r["flipped"]]
    with pytest.raises(Exception, match="every shift must permute the same options"):
        module.compute(predictions=["A"] * len(plain), references=[r["answer"] for r in plain],
                       group_ids=[r["circular_group"] for r in plain],
                       shifts=[r["shift"] for r in plain], options=[r["options"] for r in plain],
                       categories=[r["category"] for r in plain])
    # a mirrored row without its original (VLMEvalKit stops on a KeyError there)
    unpaired = [r for r in rows if r["flipped"] or r["base_qid"] != "Q0000001"]
    with pytest.raises(MetricInputError, match=r"flipped qid 'Q0000001-flip' has no original"):
        score_rows(unpaired, ["A"] * len(unpaired))


def test_tsv_circular_group_with_different_options_is_refused_at_build(tmp_path, capsys):
    rows = srb_rows(tmp_path)
    shifted = next(i for i, r in enumerate(rows) if r["shift"] == 1 and not r["flipped"])
    rows[shifted]["options"] = ["yes", "maybe"]
    rows[shifted]["A"], rows[shifted]["B"] = "maybe", "yes"
    rows[shifted]["answer"] = "B"
    import base64
    import io

    from PIL import Image

    png = io.BytesIO()
    Image.new("RGB", (8, 8)).save(png, format="PNG")
    for r in rows:
        r["image"] = base64.b64encode(png.getvalue()).decode()
    write_tsv(rows, tmp_path / "bad.tsv")
    with pytest.raises(FormatError, match="bad.tsv: circular group 'Q0000000'.*same options"):
        read_tsv(tmp_path / "bad.tsv", decode_images=False)
    assert cli(["build-3dsrbench", "--tsv", str(tmp_path / "bad.tsv"), "--scenes", "2", "--out",
                str(tmp_path / "out")]) == 2
    one_line_error(capsys, "bad.tsv", "circular group 'Q0000000'")
    assert not (tmp_path / "out").exists()
