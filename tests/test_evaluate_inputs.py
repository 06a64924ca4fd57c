"""hf-real3d evaluate on inputs that score by the letter of the rules (warned), on folders it
cannot read as one thing (refused), and on checked subsets (what the figures rest on)."""

import json
import shutil
import sys
from pathlib import Path

from helpers.data import perfect_predictions
from helpers.errors import one_line_error

from hf_real3d.cli import main as cli
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


def _release_copy(real_dir, dst: Path) -> Path:
    shutil.copytree(real_dir / "real3dqa", dst)
    for p in dst.iterdir():
        p.chmod(0o644)
    return dst


def test_a_folder_that_is_two_things_or_a_looping_link(real_dir, tmp_path, capsys):
    """Issue 56: a release folder that also holds a saved dataset is ambiguous, named both
    ways, by every command that reads it; a rotation file linked to itself is a loop."""
    rel = _release_copy(real_dir, tmp_path / "rel")
    (rel / "dataset_dict.json").write_text('{"splits": ["test"]}')
    preds = tmp_path / "p.jsonl"
    preds.write_text(json.dumps({"question_id": 1, "prediction": "x"}))
    for argv in (["evaluate", "--dataset", str(rel), "--predictions", f"m={preds}"],
                 ["stress-test", "--dataset", str(rel)],
                 ["check-rotations", "--dataset", str(rel)]):
        assert cli([*argv, "--out", str(tmp_path / "out")]) == 2
        one_line_error(capsys, str(rel), "ambiguous", "release folder", "dataset_dict.json")
        assert not (tmp_path / "out").exists()
    (rel / "dataset_dict.json").unlink()
    (rel / "rotation_90.json").unlink()
    (rel / "rotation_90.json").symlink_to("rotation_90.json")
    for argv in (["evaluate", "--dataset", str(rel), "--predictions", f"m={preds}"],
                 ["import-real3dqa", "--release", str(rel)]):
        assert cli([*argv, "--out", str(tmp_path / "out")]) == 2
        one_line_error(capsys, str(rel / "rotation_90.json"), "symbolic link that loops")
        assert not (tmp_path / "out").exists()


def test_scores_on_a_checked_subset_say_what_they_rest_on(real_dir, tmp_path, capsys,
                                                         monkeypatch):
    """Issue 55 item 4: with --exclude-*, each model's P_k / VRS is said to rest on its
    complete groups, with VRS's bootstrap interval; under 30 groups, a one-line warning, in
    the report too."""
    rows = []
    for k in (0, 90, 180, 270):
        data = json.loads((real_dir / f"real3dqa/rotation_{k}.json").read_text())
        for it in data["questions"]:
            q = it["question_id"] // 100 if k in (90, 270) else it["question_id"]
            rows.append({"question_id": q, "rotation_deg": k,
                         "prediction": it["answers"][0]["answer"]})
    preds = tmp_path / "gold.jsonl"
    preds.write_text("\n".join(json.dumps(r) for r in rows))
    seen_few, scored = False, None
    for flags in (["--exclude-flagged"], ["--exclude-flagged", "--exclude-needs-scene"]):
        out = tmp_path / "-".join(flags)
        assert cli(["evaluate", "--dataset", str(real_dir / "real3dqa"), "--predictions",
                    f"gold={preds}", "--out", str(out), "--allow_missing", *flags]) == 0
        err = capsys.readouterr().err
        metrics = json.loads((out / "metrics.json").read_text())[0]
        if "rotation" not in metrics:  # no complete group left (round 5: no group passes)
            said = f"{' '.join(flags)} leaves no complete rotation group"
            assert any("warning" in x and said in x and "--exclude-flagged alone keeps" in x
                       for x in err.splitlines())
            assert said in " ".join((out / "report.md").read_text().split())
            continue
        rot = metrics["rotation"]
        n, (lo, hi) = rot["groups"], rot["vrs_ci"]
        scored = flags, n
        said = (f"{' '.join(flags)}: P_k and VRS rest on {n} complete rotation groups "
                f"(VRS 100.00, 95% bootstrap interval [{lo:.1f}, {hi:.1f}])")
        assert f"hf-real3d evaluate: note: gold: {said}" in err.splitlines()
        warned = [x for x in err.splitlines() if "warning" in x and "fewer than 30" in x]
        report = (out / "report.md").read_text()
        assert said in report and ("fewer than 30" in report) == (n < 30)
        assert len(warned) == (n < 30)
        seen_few |= n < 30
    if not seen_few:  # the release's sound groups were a handful; should they be more
        from hf_real3d.real3dqa import evaluate

        flags, n = scored
        monkeypatch.setattr(evaluate, "FEW_GROUPS", n + 1)
        assert cli(["evaluate", "--dataset", str(real_dir / "real3dqa"), "--predictions",
                    f"gold={preds}", "--out", str(tmp_path / "few"), "--allow_missing",
                    *flags]) == 0
        assert f"fewer than {n + 1}" in capsys.readouterr().err
