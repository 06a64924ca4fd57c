import json

import pandas as pd
import pytest

from hf_real3d.cli import main
from hf_real3d.real3dqa import load_references, score_predictions
from hf_real3d.real3dqa.predictions import load_predictions
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


def test_release_references_are_cached_and_never_stale(real_dir, tmp_path, monkeypatch):
    """Parsed once, reused while the files are unchanged, re-read after any edit."""
    import shutil

    from hf_real3d.real3dqa import references as r3_refs

    monkeypatch.setenv("HF_REAL3D_CACHE", str(tmp_path / "cache"))
    rel = tmp_path / "release"
    shutil.copytree(real_dir / "real3dqa", rel)
    calls = []
    real_read = r3_refs.read_release
    monkeypatch.setattr(r3_refs, "read_release", lambda f: calls.append(f) or real_read(f))
    first = load_references(rel)
    again = load_references(rel)
    assert len(calls) == 1 and len(list((tmp_path / "cache").glob("*.npz"))) == 1
    pd.testing.assert_frame_equal(first, again)
    assert again.attrs["report"] == first.attrs["report"]
    # an edit (another answer in rotation_90) must be seen
    f = rel / "rotation_90.json"
    data = json.loads(f.read_text())
    data["questions"][0]["answers"][0]["answer"] = "edited answer"
    f.write_text(json.dumps(data))
    edited = load_references(rel)
    assert len(calls) == 2
    assert "edited answer" in {a for ans in edited.answers for a in ans}
    load_references(rel, cache=False)
    assert len(calls) == 3


def test_prediction_rows_fast_and_checked_paths_agree(tmp_path):
    rows = [{"question_id": 5, "prediction": "left", "rotation_deg": 90},
            {"question_id": 6, "prediction": "two"}]
    f = tmp_path / "p.jsonl"
    f.write_text("\n".join(json.dumps(r) for r in rows))
    fast = load_predictions(f)
    slow_rows = [*rows, {"question_id": 7, "prediction": ["a", "b"], "rotation_deg": 180.0}]
    f2 = tmp_path / "p2.jsonl"
    f2.write_text("\n".join(json.dumps(r) for r in slow_rows))
    slow = load_predictions(f2)
    assert fast.question_id.tolist() == [5, 6] and fast.rotation_deg.tolist() == [90, 0]
    assert slow.iloc[:2][["question_id", "rotation_deg", "prediction"]].values.tolist() == \
        fast[["question_id", "rotation_deg", "prediction"]].values.tolist()
    assert slow.rotation_deg.tolist()[-1] == 180
    f2.write_text(json.dumps({"question_id": 8, "prediction": "x", "rotation_deg": "ninety"}))
    with pytest.raises(Exception, match="line 1: question_id 8: rotation_deg 'ninety' is not a "
                                        "whole number"):
        load_predictions(f2)


def test_read_json_parses_what_json_does_and_names_the_line(tmp_path):
    from hf_real3d._io import FormatError, read_json

    f = tmp_path / "a.json"
    f.write_text('{"a": NaN, "big": 123456789012345678901234567890}')
    out = read_json(f)
    assert out["big"] == 123456789012345678901234567890 and out["a"] != out["a"]
    f.write_text('[\n{"a": 1},\n{"a": }\n]')
    with pytest.raises(FormatError, match="line 3, column 7"):
        read_json(f)


def test_columns_and_frames_score_alike(real_dir, tmp_path, release_refs):
    """score_predictions on DataFrames (the public tables) and on columns (what the CLI
    reads) give the same metrics and aligned rows."""
    from hf_real3d.real3dqa import references as r3_refs
    from hf_real3d.real3dqa.predictions import read_model_prediction_columns

    files = _official_files(real_dir, tmp_path, wrong_ids={22060200003501, 220602000035})
    spec = "m=" + ",".join(files)
    cols = read_model_prediction_columns(spec)
    frame = pd.concat([load_predictions(f) for f in files], ignore_index=True)
    a = score_predictions(r3_refs.reference_columns(real_dir / "real3dqa"), cols,
                          allow_missing=True)
    b = score_predictions(release_refs, frame, name="m", allow_missing=True)
    assert a.metrics == b.metrics and a.metrics["rotation"]["p_at_least_4"] < 100
    pd.testing.assert_frame_equal(a.rows, b.rows)
    wrong = a.rows[~a.rows.em_refined]
    assert sorted(map(tuple, wrong[["question_id", "rotation_deg"]].values.tolist())) == \
        [(220602000035, 0), (220602000035, 90), (220602000035, 180)]  # 180 keeps the id
    assert list(a.rows.columns) == ["question_id", "rotation_deg", "prediction", "log_prob",
                                    "answers", "question_type", "in_debiased", "in_rotation",
                                    "em", "em_refined"]
    assert r3_refs.ReferenceColumns.from_frame(release_refs).to_frame().equals(release_refs)


def test_unreadable_reference_cache_is_rebuilt(real_dir, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_REAL3D_CACHE", str(tmp_path / "cache"))
    first = load_references(real_dir / "real3dqa")
    (table,) = (tmp_path / "cache").glob("*.npz")
    table.write_bytes(b"not a zip file")
    again = load_references(real_dir / "real3dqa")
    pd.testing.assert_frame_equal(first, again)
    assert table.stat().st_size > 1000  # written again


def test_typed_and_general_prediction_readers_agree(tmp_path, monkeypatch):
    """JSON lists are decoded by type (msgspec) when they are well-formed; the general
    reader gives the same columns, and takes over (naming the bad row) otherwise."""
    from hf_real3d.real3dqa import predictions as P

    cases = {
        "a.json": [{"question_id": 1, "answer": "x", "rotation_deg": 90, "log_prob": -1.5},
                   {"question_id": "2", "answer": ["y", "z"], "response_gt": ["y"]}],
        "d_rot180.json": [{"question_id": 1, "pred": "x", "rotation": 270},
                          {"question_id": 2, "pred": "x"}],
        "official_90.json": [{"question_id": 22060200003501, "response_pred": "left",
                              "response_gt": ["left"]}],
        "mapping.json": {"7": "x"},
        "floats.json": [{"question_id": 1, "prediction": "x", "rotation_deg": 90.0}],
    }
    typed_ok = {"a.json", "d_rot180.json", "official_90.json"}
    for name, rows in cases.items():
        f = tmp_path / name
        f.write_text(json.dumps(rows))
        assert (P._typed_rows(f) is not None) == (name in typed_ok), name
        typed = P.read_prediction_columns(f)
        monkeypatch.setattr(P, "_DECODER", False)  # as without msgspec
        general = P.read_prediction_columns(f)
        monkeypatch.setattr(P, "_DECODER", None)
        pd.testing.assert_frame_equal(typed.to_frame(), general.to_frame(), check_dtype=False)
        assert typed.official == general.official == (name == "official_90.json")
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps([{"question_id": 1, "prediction": "x"},
                               {"question_id": 2, "prediction": 3}]))
    with pytest.raises(ValueError, match=r"row 1: question_id 2: prediction 3 is not a string"):
        P.read_prediction_columns(bad)


def test_evaluate_report_has_a_legend_and_says_what_orig_holds(real_dir, tmp_path):
    from hf_real3d.real3dqa.evaluate import evaluate_files
    from hf_real3d.real3dqa.references import load_references as load_refs

    refs = load_refs(real_dir / "real3dqa")
    preds = tmp_path / "p.jsonl"
    preds.write_text("\n".join(json.dumps({"question_id": int(q), "rotation_deg": int(d),
                                           "prediction": a[0]})
                               for q, d, a in zip(refs.question_id, refs.rotation_deg,
                                                  refs.answers)))
    evaluate_files(real_dir / "real3dqa", [f"m={preds}"], tmp_path / "ev")
    report = (tmp_path / "ev/report.md").read_text()
    assert "Legend: **EM**" in report and "**VRS** = the mean of P_k" in report
    assert "EM (orig) is over all 1503 questions at 0 degrees: the 1485 of the de-biased set " \
           "and 18 that only the rotation groups hold" in report


def test_vrs_on_the_groups_whose_answer_changes_with_the_turn(real_dir, tmp_path, release_refs):
    """VRS is also given on the groups whose reference answer differs between viewpoints: a
    model that answers viewpoint 0's answer at every viewpoint is consistent on the others,
    whatever it understands of the turn."""
    from hf_real3d.answers import normalize_answer

    rows = []
    for k in (0, 90, 180, 270):
        for it in json.loads((real_dir / f"real3dqa/rotation_{k}.json").read_text())[
                "questions"]:
            rows.append({"question_id": it["question_id"] // 100 if k in (90, 270)
                         else it["question_id"], "rotation_deg": k,
                         "prediction": it["answers"][0]["answer"]})
    answers = {}
    for r in rows:
        answers.setdefault(r["question_id"], []).append(normalize_answer(r["prediction"]))
    constant = sum(len(a) == 4 and len(set(a)) == 1 for a in answers.values())
    assert 0 < constant < 749
    v0 = {r["question_id"]: r["prediction"] for r in rows if r["rotation_deg"] == 0}
    scores = {}
    for name, got in (("perfect", rows), ("still", [dict(r, prediction=v0[r["question_id"]])
                                                    for r in rows])):
        f = tmp_path / f"{name}.jsonl"
        f.write_text("\n".join(json.dumps(r) for r in got))
        scores[name] = score_predictions(release_refs, load_predictions(f), name=name,
                                         allow_missing=True).metrics["rotation"]
    ch = scores["perfect"]["answer_changes"]
    assert ch["groups"] == 749 - constant and ch["vrs"] == 100.0
    still = scores["still"]
    assert still["answer_changes"]["groups"] == ch["groups"]
    assert still["answer_changes"]["vrs"] < still["vrs"]
    # (a few groups' answers differ only in words refined EM forgives: "left" / "left side")
    assert still["answer_changes"]["p_at_least_4"] < min(5.0, still["p_at_least_4"])
