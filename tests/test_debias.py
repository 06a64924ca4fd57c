"""Test-set stress test and iterative bias pruning (hf_real3d.debias)."""

import json

import numpy as np
import pytest

from hf_real3d.debias import Items, PruneConfig, load_items, prune, stress_test
from hf_real3d.debias.stress import check_items

WORDS = "chair table lamp sofa bed desk door window shelf plant box rug".split()


def _items(n=400, shortcut=True, seed=0, groups=40, every=1):
    """Questions of random words; with ``shortcut`` the answer is written in every
    ``every``-th question ('... marked red' -> red), else drawn independently of the text."""
    rng = np.random.default_rng(seed)
    answers = ["red", "blue", "green", "white"]
    text, labels = [], []
    for i in range(n):
        a = answers[rng.integers(4)]
        words = " ".join(rng.choice(WORDS, 6))
        if shortcut and i % every == 0:
            text.append(f"what is near the {words} marked {a}")
        else:
            text.append(f"what colour is the {words}")
        labels.append(a if shortcut and i % every == 0 else answers[rng.integers(4)])
    ids = [str(i) for i in range(n)]
    grp = [f"scene{i % groups}" for i in range(n)]
    return Items(ids, text, labels, grp, ["color"] * n, "columns", "planted", "scene_id")


@pytest.mark.parametrize("diagnostic", ["rf", "logreg"])
def test_a_planted_text_shortcut_is_found(diagnostic):
    res = stress_test(_items(), diagnostic=diagnostic, folds=5)
    assert res.solvability > 90
    assert res.majority < 40
    top = [f for f, _ in res.features[:8]]
    assert any(w in " ".join(top) for w in ("red", "blue", "green", "white"))
    # s(x) is the held-out probability of the right answer
    assert ((res.score > 0.5) == res.correct).mean() > 0.9


def test_answers_independent_of_the_text_sit_near_chance():
    res = stress_test(_items(800, shortcut=False), folds=5)
    s = res.summary()
    assert s["chance"] == pytest.approx(25.0)
    assert abs(res.solvability - 25) < 8
    assert s["solvability"]["ci"][0] < 25 + 8


def test_a_group_never_spans_training_and_held_out_folds():
    from sklearn.model_selection import GroupKFold

    it = _items(300, groups=17)
    for train, test in GroupKFold(n_splits=5, shuffle=True, random_state=0).split(
            it.text, it.labels, it.groups):
        assert not {it.groups[i] for i in train} & {it.groups[i] for i in test}
    # and the stress test itself: an answer that is unique to one group cannot be learnt
    # from the other folds, so it is never predicted right
    it.labels = [f"only{g}" if i % 3 == 0 else a for i, (g, a) in
                 enumerate(zip(it.groups, it.labels))]
    it.text = [f"{t} tag{g}" if i % 3 == 0 else t for i, (t, g) in
               enumerate(zip(it.text, it.groups))]
    res = stress_test(it, folds=5)
    unique = np.array([lab.startswith("only") for lab in it.labels])
    assert res.correct[unique].sum() == 0 and (res.score[unique] == 0).all()


@pytest.mark.slow
def test_pruning_stops_within_the_margin_of_the_majority():
    it = _items(400, every=2)  # half the questions carry the shortcut
    keep, rounds, last = prune(it, PruneConfig(folds=5, round_fraction=0.1, margin=2.0))
    assert rounds[0]["solvability"] > 55
    assert rounds[-1]["solvability"] <= rounds[-1]["majority"] + 2.0
    # what it removed is the planted shortcut
    removed = set(range(400)) - set(keep)
    assert sum(i % 2 == 0 for i in removed) >= 0.8 * len(removed)
    assert "within 2 points" in rounds[-1]["stop"]
    assert [r["kept"] for r in rounds] == sorted((r["kept"] for r in rounds), reverse=True)
    assert all(b["removed"] - a["removed"] == 40 for a, b in zip(rounds, rounds[1:]))
    assert len(keep) == rounds[-1]["kept"] and last.solvability == rounds[-1]["solvability"]


@pytest.mark.slow
def test_pruning_stops_at_the_budget():
    keep, rounds, _ = prune(_items(400), PruneConfig(folds=5, round_fraction=0.05, budget=50))
    assert 400 - len(keep) == 50 and "budget" in rounds[-1]["stop"]


def test_folds_larger_than_the_groups_are_refused():
    with pytest.raises(ValueError, match="3 groups .* for 5 folds"):
        check_items(_items(30, groups=3), 5)


def _release(real_dir, tmp_path):
    from hf_real3d.real3dqa import import_release

    out = tmp_path / "release"
    import_release(real_dir / "real3dqa", out)
    return out


@pytest.mark.slow
def test_real_release_through_the_cli(real_dir, tmp_path, capsys):
    """The real Real-3DQA release: solvability, per type, a plot, the scores as a config,
    and after pruning a real3dqa_tst config with the rotation groups of the kept items."""
    from hf_real3d.cli import main
    from hf_real3d.hub import card_configs, load_local

    folder = _release(real_dir, tmp_path)
    out = tmp_path / "st"
    assert main(["stress-test", "--dataset", str(folder), "--out", str(out), "--prune",
                 "--round_fraction", "0.2", "--budget", "0.4", "--type_as_feature"]) == 0
    s = json.loads((out / "stress_test.json").read_text())
    assert s["n"] == 1485 and s["group_by"] == "scene_id" and s["folds"] == 5
    # the README's figures (tests/data/stress_test_real.json) are this run's first fit
    from pathlib import Path

    rec = json.loads((Path(__file__).parent / "data/stress_test_real.json").read_text())
    assert s["solvability"] == rec["real3dqa_debiased"]["solvability"]
    assert s["majority"] == rec["real3dqa_debiased"]["majority"]
    assert s["type_as_feature"] is rec["real3dqa_debiased"]["type_as_feature"] is True
    assert "is one of the diagnostic's inputs" in (out / "report.md").read_text()
    assert s["solvability"]["overall"] > s["majority"] + 5  # the set is still text-solvable
    assert s["solvability"]["ci"][0] <= s["solvability"]["overall"] <= s["solvability"]["ci"][1]
    assert set(s["solvability"]["per_type"]) >= {"number", "navigation", "spatial relation"}
    assert [r["removed"] for r in s["rounds"]][:3] == [0, 297, 594]
    assert s["final"]["kept"] == 1485 - 594 and s["final"]["solvability"] < \
        s["solvability"]["overall"]
    assert (out / "stress_test.png").stat().st_size > 5000
    assert {"stress_test", "real3dqa_tst", "rotations_tst"} <= set(card_configs(folder))
    kept = {r["question_id"] for r in load_local(folder, "real3dqa_tst")}
    assert len(kept) == s["final"]["kept"]
    assert {r["question_id"] for r in load_local(folder, "rotations_tst")} <= kept
    assert "Iterative bias pruning removed 594 of 1485" in (folder / "README.md").read_text()
    _pruned_config_is_selectable(folder, kept, tmp_path)


def _pruned_config_is_selectable(folder, kept, tmp_path):
    """`evaluate --pruned`, the lmms-eval tasks and the explorer select real3dqa_tst."""
    from hf_real3d import app as A
    from hf_real3d.cli import main
    from hf_real3d.hub import load_local
    from hf_real3d.lmms import write_lmms_tasks

    answers = {(r["question_id"], 0): r["answers"][0] for r in load_local(folder, "real3dqa")}
    answers.update({(r["question_id"], r["rotation_deg"]): r["answers"][0]
                    for r in load_local(folder, "rotations")})
    preds = tmp_path / "oracle.jsonl"
    preds.write_text("".join(json.dumps({"question_id": q, "rotation_deg": d, "prediction": a})
                             + "\n" for (q, d), a in answers.items()))
    out = tmp_path / "ev"
    assert main(["evaluate", "--dataset", str(folder), "--predictions", f"oracle={preds}",
                 "--pruned", "--out", str(out)]) == 0
    m = json.loads((out / "metrics.json").read_text())[0]
    assert m["debiased"]["n"] == len(kept) and m["debiased"]["em_refined"] == 100.0
    names = write_lmms_tasks(tmp_path / "tasks", real3dqa=str(folder))
    assert {"hf_real3d_real3dqa_tst", "hf_real3d_real3dqa_debiased_tst"} <= set(names)
    qd = A.load_questions(folder)
    assert set(A.filtered_ids(qd, "all", "all", A.PRUNED)) == kept


def test_bad_inputs_name_the_problem(real_dir, tmp_path, capsys):
    from hf_real3d.cli import main

    folder = _release(real_dir, tmp_path)
    out = tmp_path / "st"
    assert main(["stress-test", "--dataset", str(folder), "--out", str(out), "--group_by",
                 "room"]) == 2
    assert "no column 'room' for the groups" in capsys.readouterr().err
    assert main(["stress-test", "--dataset", str(folder), "--out", str(out), "--folds",
                 "100"]) == 2
    assert "groups (scene_id) for 100 folds" in capsys.readouterr().err
    assert not out.exists()  # nothing written


def test_scanqa_test_split_without_answers_is_refused(tmp_path):
    rows = [{"question_id": "q1", "question": "What is it?", "scene_id": "s1",
             "answers": []}]
    from hf_real3d.debias.items import _from_rows

    with pytest.raises(Exception, match="no answer"):
        _from_rows(rows, "scanqa_test", kind="scanqa", question=("question",),
                   answer="answers", group="scene_id", qtype=None, id_col="question_id")


def test_sqa3d_folder_and_exclusion(real_dir, tmp_path):
    from hf_real3d.debias.run import exclude_ids

    sqa = load_items(real_dir / "sqa3d")
    assert len(sqa) == 3519 and len(set(sqa.groups)) == 67
    assert set(sqa.types) == {"what", "is", "how", "can", "which", "other"}
    removed = exclude_ids(sqa, _release(real_dir, tmp_path))
    assert len(removed) == 3519 - 1485


def test_3dsrbench_items_are_the_unshifted_unmirrored_questions(tmp_path):
    """A 3DSRBench TSV (and folder): one item per question, the text is the question and
    its options, predicted among the options, chance 1/options."""

    from helpers.data import three_question_srbench

    folder = three_question_srbench(tmp_path / "srb", export_tsv=True)
    for source in (folder / "tsv" / "synthetic_common.tsv", folder):
        it = load_items(source)
        assert len(it) == 4 and it.kind == "srbench"  # 3 questions + 1 complementary
        assert all(len(q) == 8 for q in it.ids)
        assert all("Options:" in t for t in it.text)
        assert all(lab in opts for lab, opts in zip(it.labels, it.options))
    # the diagnostic picks among each item's options; chance is 1/options
    rep = Items(it.ids * 10, it.text * 10, it.labels * 10, [f"g{i}" for i in range(40)],
                it.types * 10, "srbench", "x", "qid", it.options * 10)
    res = stress_test(rep, folds=4)
    assert all(p in o for p, o in zip(res.predicted, rep.options))
    assert res.summary()["chance"] == pytest.approx(50.0)


# --- the language-model diagnostic (--diagnostic lm) ----------------------------------------


@pytest.mark.slow
def test_the_lm_diagnostic_finds_a_planted_shortcut_and_no_more():
    """A small Llama built from config, fine-tuned per fold through ReweightedTrainer: it
    learns to read the planted answer off the question, and sits near chance where the
    answer is independent of the text."""
    from hf_real3d.debias.lm import LMDiagnostic

    lm = LMDiagnostic(epochs=4, min_steps=120)  # 100% by then (250 steps: the same figures)
    res = stress_test(_items(240, groups=24), diagnostic="lm", folds=3, lm=lm)
    assert res.solvability > 90 and res.majority < 40
    assert ((res.score > 0.5) == res.correct).mean() > 0.9
    assert all("marked" in text for text, _ in res.features[:5])  # the items it is surest of
    flat = stress_test(_items(240, shortcut=False, groups=24), diagnostic="lm", folds=3,
                       lm=LMDiagnostic(epochs=4, min_steps=100))
    assert abs(flat.solvability - 25) < 12


@pytest.mark.slow
def test_the_lm_diagnostic_takes_a_local_checkpoint_and_a_saved_scenelm(tmp_path, capsys):
    """--lm_path: any local causal LM (with its tokenizer), or a saved SceneLM whose language
    model and tokenizer are taken; each fold starts from the checkpoint. Through the CLI on a
    columns dataset."""
    from datasets import Dataset
    from transformers import LlamaConfig, LlamaForCausalLM

    from hf_real3d.cli import main
    from hf_real3d.modeling import SceneLM, SceneLMConfig, train_tokenizer

    it = _items(120, groups=12)
    tok = train_tokenizer([*it.text, *it.labels, "answer:"])
    lm_dir = tmp_path / "llama"
    cfg = LlamaConfig(vocab_size=len(tok), hidden_size=32, intermediate_size=64,
                      num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=2,
                      max_position_embeddings=128, pad_token_id=tok.pad_token_id,
                      bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id)
    LlamaForCausalLM(cfg).save_pretrained(lm_dir)
    tok.save_pretrained(lm_dir)
    scene_dir = tmp_path / "scenelm"
    SceneLM(SceneLMConfig(text_config=cfg, blind=True)).save_pretrained(scene_dir)
    tok.save_pretrained(scene_dir)
    data = tmp_path / "cols"
    Dataset.from_dict({"q": it.text, "a": it.labels, "room": it.groups}).save_to_disk(data)
    for path in (lm_dir, scene_dir):
        out = tmp_path / f"st_{path.name}"
        assert main(["stress-test", "--dataset", str(data), "--out", str(out),
                     "--question_column", "q", "--answer_column", "a", "--group_by", "room",
                     "--folds", "3", "--diagnostic", "lm", "--lm_path", str(path),
                     "--lm_epochs", "1"]) == 0, capsys.readouterr().err
        s = json.loads((out / "stress_test.json").read_text())
        assert s["diagnostic"] == "lm" and s["n"] == 120 and s["folds"] == 3
        assert "surest of" in (out / "report.md").read_text()
    assert main(["stress-test", "--dataset", str(data), "--out", str(tmp_path / "x"),
                 "--question_column", "q", "--answer_column", "a", "--group_by", "room",
                 "--diagnostic", "lm", "--lm_path", str(tmp_path / "nowhere")]) == 2
    assert "--lm_path" in capsys.readouterr().err and not (tmp_path / "x").exists()
