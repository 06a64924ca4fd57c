"""hf-real3d evaluate on prediction sets that score by the letter of the rules: warned."""

import sys
from pathlib import Path

from helpers.data import perfect_predictions

from hf_real3d.real3dqa import load_references, score_predictions

BIN = Path(sys.executable).parent
Q = "v1_balanced_questions_test_scannetv2.json"
A = "v1_balanced_sqa_annotations_test_scannetv2.json"


def test_degenerate_predictions_are_warned(real_dir, tmp_path):
    refs = load_references(real_dir / "sqa3d")
    orig = refs[refs.rotation_deg == 0]
    everything = " ".join(sorted({a for ans in orig.answers for a in ans}))
    for preds, words in (([""] * len(orig), "are empty"), (["yes"] * len(orig), "same answer"),
                         ([everything] * len(orig), "answer lists")):
        m = score_predictions(refs, orig.assign(prediction=preds)[
            ["question_id", "rotation_deg", "prediction"]], leo_compatible=True).metrics
        assert any(words in w for w in m["warnings"]), (words, m["warnings"])
    good = score_predictions(refs, perfect_predictions(refs)).metrics
    assert good["warnings"] == []
