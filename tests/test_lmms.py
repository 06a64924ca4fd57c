"""lmms-eval integration: the task YAMLs written by `hf-real3d lmms-tasks` load with
lmms-eval's TaskManager and score a stub model's answers with this library's metrics."""

import json

import pytest

from hf_real3d.cli import main


def _need_lmms_eval():
    pytest.importorskip("lmms_eval",
                        reason="lmms-eval is not installed (make install puts it in .venv)")


def _stub_model(answer):
    """An lmms-eval model whose reply for each document is ``answer(task, doc)``."""
    from lmms_eval.api.model import lmms

    class Stub(lmms):
        def generate_until(self, requests):
            out = []
            for req in requests:
                *_, doc_id, task, split = req.args
                out.append(answer(task, self.task_dict[task][split][doc_id]))
            return out

        def loglikelihood(self, requests):
            raise NotImplementedError

        def generate_until_multi_round(self, requests):
            raise NotImplementedError

    return Stub()


@pytest.fixture(scope="module")
def task_folder(real_dir, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("lmms")
    assert main(["import-real3dqa", "--release", str(real_dir / "real3dqa"),
                 "--out", str(tmp / "r3")]) == 0
    assert main(["check-rotations", "--dataset", str(tmp / "r3"), "--out",
                 str(tmp / "checks")]) == 0
    from helpers.data import three_question_srbench

    three_question_srbench(tmp / "srb")
    assert main(["lmms-tasks", "--out", str(tmp / "tasks"), "--real3dqa", str(tmp / "r3"),
                 "--srbench", str(tmp / "srb")]) == 0
    return tmp


@pytest.mark.slow
def test_tasks_load_with_the_task_manager(task_folder):
    _need_lmms_eval()
    from lmms_eval.tasks import TaskManager

    tm = TaskManager(include_path=str(task_folder / "tasks"))
    names = set(tm.all_tasks)
    assert {"hf_real3d_real3dqa", "hf_real3d_real3dqa_debiased",
            "hf_real3d_3dsrbench_synthetic_common",
            "hf_real3d_3dsrbench_synthetic_uncommon"} <= names
    assert "hf_real3d_3dsrbench_real" not in names  # the folder has no real config
    assert "hf_real3d_real3dqa_checked" in names  # check-rotations wrote rotations_checked


@pytest.mark.slow
def test_checked_task_scores_as_evaluate_exclude_flagged(task_folder, tmp_path):
    """The task on `rotations_checked` gives the P_k and VRS of `hf-real3d evaluate
    --exclude-flagged` for the same answers."""
    _need_lmms_eval()
    from lmms_eval.evaluator import simple_evaluate
    from lmms_eval.tasks import TaskManager

    from hf_real3d.real3dqa import load_folder_references
    from hf_real3d.real3dqa.evaluate import evaluate_files

    def right(doc):  # right at 0 and 90 degrees, and at 180 for odd ids
        return doc["rotation_deg"] in (0, 90) or (doc["rotation_deg"] == 180 and
                                                  doc["question_id"] % 2)

    tm = TaskManager(include_path=str(task_folder / "tasks"))
    res = simple_evaluate(model=_stub_model(lambda t, d: d["answers"][0] if right(d) else "zzz"),
                          tasks=["hf_real3d_real3dqa_checked"], task_manager=tm,
                          bootstrap_iters=0, log_samples=False)
    got = res["results"]["hf_real3d_real3dqa_checked"]
    refs = load_folder_references(task_folder / "r3")
    preds = tmp_path / "p.jsonl"
    preds.write_text("\n".join(json.dumps({
        "question_id": int(q), "rotation_deg": int(d),
        "prediction": a[0] if right({"rotation_deg": d, "question_id": q}) else "zzz"})
        for q, d, a in zip(refs.question_id, refs.rotation_deg, refs.answers)))
    want = evaluate_files(task_folder / "r3", [f"m={preds}"], tmp_path / "ev",
                          allow_missing=True, exclude_flagged=True).results[0]["rotation"]
    checks = json.loads((task_folder / "checks/check.json").read_text())
    assert want["groups"] == checks["complete_groups"] - checks["complete_group_verdicts"][
        "defect"]
    for k in ("p_at_least_1", "p_at_least_3", "p_at_least_4", "vrs"):
        assert got[f"{k},none"] == pytest.approx(want[k]), k


@pytest.mark.slow
def test_stub_model_scores_match_the_library(task_folder):
    _need_lmms_eval()
    from lmms_eval.evaluator import simple_evaluate
    from lmms_eval.tasks import TaskManager

    from hf_real3d.real3dqa import load_folder_references
    from hf_real3d.scoring import vrs

    # right at 0 and 90 degrees, wrong at 180 / 270; 3DSRBench: always "A"
    def answer(task, doc):
        if task.startswith("hf_real3d_real3dqa"):
            return doc["answers"][0] if doc.get("rotation_deg", 0) in (0, 90) else "zzz"
        return "A"

    tm = TaskManager(include_path=str(task_folder / "tasks"))
    res = simple_evaluate(model=_stub_model(answer), tasks=[
        "hf_real3d_real3dqa", "hf_real3d_real3dqa_debiased",
        "hf_real3d_3dsrbench_synthetic_common"], task_manager=tm, bootstrap_iters=0,
        log_samples=False)
    r = res["results"]
    rot = r["hf_real3d_real3dqa"]
    # the same figures from the library directly, on the built folder's rows
    refs = load_folder_references(task_folder / "r3")
    refs = refs[refs.in_rotation]
    ok = refs.rotation_deg.isin([0, 90]).to_numpy()
    want = vrs(ok, refs.question_id.tolist(), refs.rotation_deg.tolist(), incomplete="drop")
    assert rot["p_at_least_2,none"] == pytest.approx(want["p_at_least_2"]) == 100.0
    assert rot["p_at_least_3,none"] == pytest.approx(want["p_at_least_3"]) == 0.0
    assert rot["vrs,none"] == pytest.approx(want["vrs"]) == 50.0
    assert rot["em_refined,none"] == pytest.approx(ok.mean() * 100, abs=1e-9)
    assert r["hf_real3d_real3dqa_debiased"]["em,none"] == 100.0
    srb = r["hf_real3d_3dsrbench_synthetic_common"]
    # lmms-eval's own 3dsrbench_circular names and values: always-"A" over 3 questions (+1
    # complementary), each circularly shifted and mirrored, read by lmms-eval's extraction
    from hf_real3d.srbench import load_rows
    from hf_real3d.srbench.rules import lmms_eval_choice, lmms_eval_metrics

    rows = load_rows(task_folder / "srb", "synthetic_common")
    want = lmms_eval_metrics([x["qid"] for x in rows],
                             [float(lmms_eval_choice("A") == x["answer"]) for x in rows],
                             [x["category"] for x in rows])
    for m in ("vanilla_accuracy", "flip_accuracy", "circular_accuracy",
              "flip_circular_accuracy", "height_accuracy", "location_accuracy",
              "orientation_accuracy", "multi_object_accuracy"):
        assert srb[f"{m},none"] == want[m], m
    # every circular group has an order whose answer is not A
    assert srb["circular_accuracy,none"] == 0.0 and srb["flip_circular_accuracy,none"] == 0.0
    assert 0.0 < srb["vanilla_accuracy,none"] < 1.0
    json.dumps(res["results"])  # plain numbers, as lmms-eval writes them


def test_task_writer_names_what_is_missing(tmp_path):
    from hf_real3d.lmms import write_lmms_tasks

    with pytest.raises(ValueError, match="real3dqa, srbench and/or real_scanqa"):
        write_lmms_tasks(tmp_path / "t")
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match="no rotations/ or real3dqa/ config"):
        write_lmms_tasks(tmp_path / "t", real3dqa=str(tmp_path / "empty"))
    assert not (tmp_path / "t").exists()  # nothing half-written
    names = write_lmms_tasks(tmp_path / "t", real3dqa="org/real3dqa", srbench="org/3dsrbench")
    assert names == ["hf_real3d_real3dqa", "hf_real3d_real3dqa_debiased",
                     "hf_real3d_3dsrbench_real", "hf_real3d_3dsrbench_synthetic_common",
                     "hf_real3d_3dsrbench_synthetic_uncommon"]
    text = (tmp_path / "t/hf_real3d_real3dqa.yaml").read_text()
    assert "dataset_path: org/real3dqa" in text and "dataset_name: rotations" in text
    assert (tmp_path / "t/utils.py").is_file()
