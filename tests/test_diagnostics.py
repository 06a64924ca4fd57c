"""3DR-FT weight diagnostics and per-kind accuracy: the figures the demo's diagnosis shows."""

import numpy as np
import pandas as pd
import pytest
from datasets import Dataset
from helpers.models import tiny_model

from hf_real3d.demo.flips import accuracy_by
from hf_real3d.modeling import SceneQACollator
from hf_real3d.training import precompute_blind_logprobs
from hf_real3d.training.diagnostics import token_weights, weight_summary


def _rows(tiny):
    kinds = ("scene", "prior", "counter_prior")
    return [dict(r, prior_kind=kinds[i % 3]) for i, r in enumerate(tiny["rows"])]


def test_token_weights_agree_with_the_training_blind_column(tiny_training):
    tok, bank = tiny_training["tokenizer"], tiny_training["bank"]
    rows = _rows(tiny_training)
    model, blind = tiny_model(tok), tiny_model(tok, blind=True, seed=1)
    w = token_weights(model, blind, tok, bank, rows, clip=None)
    # the blind log-probs the trainer would read, through its own code path
    col = precompute_blind_logprobs(Dataset.from_list(rows), blind,
                                    SceneQACollator(tok, bank))["blind_logprobs"]
    assert len(w) == sum(len(c) for c in col)
    for (qid, g), c in zip(w.groupby("question_id", sort=False), col):
        # paper = blind / text-only per token; official = 1 / mean(-text-only) per question
        text = np.asarray(c) / g.paper.to_numpy()
        assert -text.mean() == pytest.approx(1 / g.official.iloc[0], rel=1e-4), qid
        assert g.eos.sum() == 1 and g.eos.iloc[-1]
    assert set(w.group) == {"scene", "prior", "counter_prior"}


def test_a_reference_equal_to_the_text_only_model_gives_weight_one(tiny_training):
    tok, bank = tiny_training["tokenizer"], tiny_training["bank"]
    model = tiny_model(tok)
    w = token_weights(model, model, tok, bank, _rows(tiny_training))
    assert np.allclose(w.paper, 1.0, atol=1e-5)


def test_token_weights_errors(tiny_training):
    tok, bank = tiny_training["tokenizer"], tiny_training["bank"]
    model = tiny_model(tok)
    with pytest.raises(ValueError, match="no 'prior_kind' field"):
        token_weights(model, model, tok, bank, tiny_training["rows"])
    with pytest.raises(ValueError, match="no rows"):
        token_weights(model, model, tok, bank, [])


def test_weight_summary_shares_and_histograms():
    w = pd.DataFrame({"question_id": [1, 1, 2, 2, 3, 3],
                      "group": ["a", "a", "b", "b", "b", "b"],
                      "eos": [False, True, False, True, False, True],
                      "paper": [10.0, 1.0, 1.0, 1.0, 3.0, 1.0],
                      "official": [0.5, 0.5, 2.0, 2.0, 1.5, 1.5]})
    s = weight_summary(w, clip=10.0, bins=10)
    g = s["groups"]
    assert g["all"]["tokens"] == 3 and g["a"]["tokens"] == 1 and g["b"]["questions"] == 2
    assert g["a"]["paper_loss_share"] == pytest.approx(10 / 14)
    assert g["a"]["token_share"] == pytest.approx(1 / 3)
    assert g["a"]["clipped_share"] == 1.0 and g["b"]["up_share"] == 0.5
    assert g["b"]["official_loss_share"] == pytest.approx(3.5 / 4.0)
    assert sum(g["b"]["paper_log10_hist"]) == 2 and g["a"]["paper_log10_hist"][-1] == 1
    assert len(s["paper_log10_edges"]) == 11 and sum(g["all"]["official_log10_hist"]) == 3


def test_accuracy_by_kind_and_subset():
    refs = pd.DataFrame({"question_id": [1, 2, 3, 4, 1], "rotation_deg": [0, 0, 0, 0, 90],
                         "answers": [["red"], ["two"], ["left"], ["lamp"], ["right"]]})
    pred = pd.DataFrame({"question_id": [1, 2, 3, 4, 1], "rotation_deg": [0, 0, 0, 0, 90],
                         "prediction": ["red", "three", "left", "the lamp", "left"]})
    kinds = {1: "prior", 2: "scene", 3: "scene", 4: "counter_prior"}
    out = accuracy_by(refs, pred, kinds)
    assert out == {"counter_prior": {"n": 1, "em_refined": 100.0},
                   "prior": {"n": 1, "em_refined": 100.0},
                   "scene": {"n": 2, "em_refined": 50.0}}
    assert accuracy_by(refs, pred, kinds, keep={2}) == {"scene": {"n": 1, "em_refined": 0.0}}
    with pytest.raises(ValueError, match="question 4"):
        accuracy_by(refs, pred[pred.question_id != 4], kinds)
