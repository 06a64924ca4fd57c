import json

import pandas as pd
import pytest

from hf_real3d.cli import main
from hf_real3d.predictions import load_predictions
from hf_real3d.real3dqa import load_references, score_predictions
from hf_real3d.scoring import MetricInputError


@pytest.fixture(scope="module")
def release_refs(real_dir):
    return load_references(real_dir / "real3dqa")


def test_release_references(release_refs):
    refs = release_refs
    assert (refs.rotation_deg == 0).sum() == 750 + (1485 - 732)
    # 732 de-biased questions also have 3 rotated rows (the incomplete group is not one of them)
    assert refs.in_debiased.sum() == 1485 + 3 * 732
    assert refs.in_rotation.sum() == 750 * 4 - 1


def _official_files(real_dir, tmp_path, wrong_ids=()):
    """Perfect predictions written in the official format, one file per viewpoint."""
    files = []
    for k in (0, 90, 180, 270):
        items = json.loads((real_dir / f"real3dqa/rotation_{k}.json").read_text())["questions"]
        rows = [{"question_id": it["question_id"],
                 "response_gt": [a["answer"] for a in it["answers"]],
                 "response_pred": "wrong" if it["question_id"] in wrong_ids
                 else it["answers"][0]["answer"]} for it in items]
        f = tmp_path / f"preds_rotation_{k}.json"
        f.write_text(json.dumps(rows))
        files.append(str(f))
    return files


def test_perfect_predictions_score_100_on_release(real_dir, tmp_path, release_refs):
    files = _official_files(real_dir, tmp_path)
    deb = json.loads((real_dir / "real3dqa/de-biased_testset_with_question_type.json")
                     .read_text())["questions"]
    # de-biased ids not in the rotation set, as our JSONL format
    rot0 = {it["question_id"] for it in json.loads(
        (real_dir / "real3dqa/rotation_0.json").read_text())["questions"]}
    extra = tmp_path / "debiased_rest.jsonl"
    extra.write_text("\n".join(json.dumps({"question_id": it["question_id"], "rotation": 0,
                                           "prediction": it["answers"][0]["answer"]})
                               for it in deb if it["question_id"] not in rot0))
    out = tmp_path / "report"
    rc = main(["evaluate", "--dataset", str(real_dir / "real3dqa"), "--out", str(out),
               "--predictions", "perfect=" + ",".join(files + [str(extra)])])
    assert rc == 0
    m = json.loads((out / "metrics.json").read_text())[0]
    assert m["original"]["em"] == 100.0 and m["debiased"]["em_refined"] == 100.0
    rot = m["rotation"]
    assert rot["vrs"] == 100.0 and all(rot[f"p_at_least_{k}"] == 100.0 for k in range(1, 5))
    assert rot["groups"] == 749 and rot["incomplete_groups"] == 1
    assert rot["incomplete_ids"] == ["220602007663"]
    report = (out / "report.md").read_text()
    assert "1 incomplete rotation group(s) left out" in report and "| perfect |" in report
    assert (out / "pk.png").stat().st_size > 1000 and (out / "radar.png").stat().st_size > 1000


def test_one_wrong_viewpoint_lowers_p4(real_dir, tmp_path, release_refs):
    files = _official_files(real_dir, tmp_path, wrong_ids={22060200003501})  # id 220602000035 at 90
    preds = [load_predictions(f) for f in files]
    import pandas as pd

    df = pd.concat(preds, ignore_index=True)
    s = score_predictions(release_refs, df, allow_missing=True)
    rot = s.metrics["rotation"]
    assert rot["p_at_least_1"] == 100.0 and rot["p_at_least_3"] == 100.0
    assert rot["p_at_least_4"] == pytest.approx(100 * 748 / 749)


def test_prediction_errors(real_dir, tmp_path, release_refs):
    bad = tmp_path / "p.jsonl"
    bad.write_text(json.dumps({"question_id": 1, "prediction": "x"}))
    with pytest.raises(MetricInputError, match="match no reference, e.g. question_id 1"):
        score_predictions(release_refs, load_predictions(bad))
    bad.write_text(json.dumps({"question_id": 220602000035, "prediction": 3}))
    with pytest.raises(ValueError, match="is not a string"):
        load_predictions(bad)
    bad.write_text("\n".join([json.dumps({"question_id": 220602000035, "prediction": "x"}),
                              json.dumps({"question_id": 220602000035, "prediction": "y"})]))
    with pytest.raises(MetricInputError, match="duplicate prediction for question_id .* "
                                               "different answers"):
        score_predictions(release_refs, load_predictions(bad))
    bad.write_text(json.dumps({"question_id": 220602000035, "prediction": "x"}))
    with pytest.raises(MetricInputError,
                       match="no figure could be computed: .*predictions missing for"):
        score_predictions(release_refs, load_predictions(bad))


def test_official_files_load_out_of_the_box(real_dir, tmp_path, release_refs, capsys):
    """The five official files of one model (de-biased + 4 rotations) need no flag; the
    rotation files alone give P_k/VRS and say which figures they cannot give."""
    files = _official_files(real_dir, tmp_path)
    deb = json.loads((real_dir / "real3dqa/de-biased_testset_with_question_type.json")
                     .read_text())["questions"]
    deb_file = tmp_path / "preds_debiased.json"
    deb_file.write_text(json.dumps([{"question_id": it["question_id"],
                                     "response_gt": [a["answer"] for a in it["answers"]],
                                     "response_pred": it["answers"][0]["answer"]}
                                    for it in deb]))
    out = tmp_path / "five"
    assert main(["evaluate", "--dataset", str(real_dir / "real3dqa"), "--out", str(out),
                 "--predictions", "m=" + ",".join([str(deb_file), *files])]) == 0
    m = json.loads((out / "metrics.json").read_text())[0]
    assert m["debiased"]["em_refined"] == 100.0 and m["rotation"]["vrs"] == 100.0
    assert any("counted once" in n for n in m["notices"])
    # rotation files alone: P_k and VRS, and a note on the figures that need other rows
    out = tmp_path / "rot"
    assert main(["evaluate", "--dataset", str(real_dir / "real3dqa"), "--out", str(out),
                 "--predictions", "m=" + ",".join(files)]) == 0
    m = json.loads((out / "metrics.json").read_text())[0]
    assert m["rotation"]["vrs"] == 100.0 and "debiased" not in m and "original" not in m
    assert any(n.startswith("de-biased EM / refined EM not computed") for n in m["notices"])
    assert "de-biased EM / refined EM not computed" in (out / "report.md").read_text()
    assert "note: m: de-biased EM" in capsys.readouterr().err
    # with allow_missing every figure counts the missing rows as wrong, the same way
    s = score_predictions(release_refs, pd.concat([load_predictions(f) for f in files]),
                          allow_missing=True).metrics
    n_deb = s["debiased"]["n"]
    assert s["debiased"]["missing"] == n_deb - 732
    assert s["debiased"]["em_refined"] == pytest.approx(100 * 732 / n_deb)
    # original view only: no P_k/VRS, and a note saying so
    s = score_predictions(release_refs, pd.concat([load_predictions(deb_file)]),
                          allow_missing=True).metrics
    assert "rotation" not in s and any("P_k and VRS not computed" in n for n in s["notices"])


def test_3d_llm_answer_files(real_dir, tmp_path, release_refs):
    """LEO-style rows ({question_id, answer}), {question_id: answer} objects and rows
    with `pred` score the same as our JSONL format."""
    deb = json.loads((real_dir / "real3dqa/de-biased_testset_with_question_type.json")
                     .read_text())["questions"]
    ours = tmp_path / "ours.jsonl"
    ours.write_text("\n".join(json.dumps({"question_id": it["question_id"],
                                          "prediction": it["answers"][0]["answer"]})
                              for it in deb))
    leo = tmp_path / "leo.json"
    leo.write_text(json.dumps([{"question_id": it["question_id"], "answer":
                                it["answers"][0]["answer"], "source": "scannet"} for it in deb]))
    mapping = tmp_path / "mapping.json"
    mapping.write_text(json.dumps({str(it["question_id"]): it["answers"][0]["answer"]
                                   for it in deb}))
    pred = tmp_path / "pred.jsonl"
    pred.write_text("\n".join(json.dumps({"question_id": it["question_id"], "pred":
                                          it["answers"][0]["answer"], "answer": "wrong gt"})
                              for it in deb))
    want = score_predictions(release_refs, load_predictions(ours),
                             allow_missing=True).metrics["debiased"]
    for f in (leo, mapping, pred):
        got = score_predictions(release_refs, load_predictions(f),
                                allow_missing=True).metrics["debiased"]
        assert got["em_refined"] == want["em_refined"] == 100.0, f.name
