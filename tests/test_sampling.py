"""The group-aware sampler keeps a question's viewpoints in one batch; the viewpoint_dro
objective weights them (closed form) and refuses batches without groups."""

import pytest
import torch

from hf_real3d.training import ReweightedConfig, ReweightingArguments
from hf_real3d.training.losses import viewpoint_dro_weights, weighted_loss_from_logprobs
from hf_real3d.training.modes import LossInputs, check_groups, mode
from hf_real3d.training.sampling import ViewpointGroupSampler


def test_batches_hold_whole_questions_and_the_order_changes_with_the_epoch():
    groups = [q for q in range(10) for _ in range(4)]  # 10 questions x 4 viewpoints
    s = ViewpointGroupSampler(groups, batch_size=8, seed=3)
    first = list(s)
    assert sorted(first) == list(range(40))
    for b in range(0, 40, 8):  # every batch of 8 is two whole questions
        batch = {groups[i] for i in first[b:b + 8]}
        assert len(batch) == 2 and all(sum(groups[i] == q for i in first[b:b + 8]) == 4
                                       for q in batch)
    s.set_epoch(1)
    assert list(s) != first
    s.set_epoch(0)
    assert list(s) == first  # seeded


def test_questions_alone_are_bundled_and_groups_stay_whole():
    groups = [0] * 4 + [1] * 4 + [2, 3, 4, 5, 6] + [7] * 4
    s = ViewpointGroupSampler(groups, batch_size=4, seed=1)
    order = list(s)
    assert sorted(order) == list(range(len(groups)))
    for b in range(0, len(order), 4):
        batch = [groups[i] for i in order[b:b + 4]]
        multi = [g for g in batch if groups.count(g) > 1]
        assert all(batch.count(g) == 4 for g in multi)  # a whole question, or none of it


def test_sampler_refusals_name_the_fix():
    with pytest.raises(ValueError, match="not a multiple of the 4 viewpoints.*batch_size 4"):
        ViewpointGroupSampler([0] * 4 + [1] * 4, batch_size=6)
    with pytest.raises(ValueError, match=r"questions hold \[3, 4\] viewpoints"):
        ViewpointGroupSampler([0] * 4 + [1] * 3, batch_size=4)


def test_weights_in_closed_form():
    loss = torch.tensor([1.0, 2.0, 3.0, 4.0, 0.5, 0.5])
    groups = torch.tensor([0, 0, 0, 0, 1, 1])
    w = viewpoint_dro_weights(loss, groups, temperature=2.0)
    e = torch.exp(loss[:4] / 2)
    assert torch.allclose(w[:4], 4 * e / e.sum())
    assert torch.allclose(w[4:], torch.ones(2))  # equal losses: weight 1
    assert float(w[:4].mean()) == pytest.approx(1.0) and not w.requires_grad
    # a very high temperature gives equal weights
    assert torch.allclose(viewpoint_dro_weights(loss, groups, temperature=1e9), torch.ones(6))
    with pytest.raises(ValueError, match="temperature > 0"):
        viewpoint_dro_weights(loss, groups, temperature=0.0)


def test_equal_weights_give_sfts_loss_exactly():
    mask = torch.tensor([[True, True, False], [True, True, True]])
    logp = torch.tensor([[-0.5, -0.5, 0.0], [-0.5, -0.5, -0.5]], requires_grad=True)
    args = ReweightingArguments(reweighting="viewpoint_dro")
    m = mode("viewpoint_dro")
    loss, w = m.loss(LossInputs(logp, mask, groups=torch.tensor([3, 3])), **m.settings(args))
    assert torch.equal(w, torch.ones(2))
    assert float(loss.detach()) == float(weighted_loss_from_logprobs(logp, mask, 1.0).detach())
    loss.backward()
    assert logp.grad is not None


def test_the_worst_viewpoint_is_weighted_up():
    mask = torch.ones(2, 2, dtype=torch.bool)
    logp = torch.tensor([[-0.1, -0.1], [-2.0, -2.0]])
    args = ReweightingArguments(reweighting="viewpoint_dro", viewpoint_temperature=0.5)
    m = mode("viewpoint_dro")
    loss, w = m.loss(LossInputs(logp, mask, groups=torch.tensor([1, 1])), **m.settings(args))
    assert w[1] > 1 > w[0] and float(w.mean()) == pytest.approx(1.0)
    assert float(loss) > float(weighted_loss_from_logprobs(logp, mask, 1.0))


def test_batches_without_groups_are_refused_naming_the_column(tmp_path):
    with pytest.raises(ValueError, match="needs viewpoint groups in the batch.*'viewpoint_group'"):
        check_groups("viewpoint_dro", None, "viewpoint_group")
    with pytest.raises(ValueError, match="no question has two viewpoints.*rotation_augment"):
        ViewpointGroupSampler([1, 2, 3], batch_size=4)
    with pytest.raises(ValueError, match="viewpoint_temperature > 0"):
        ReweightedConfig(output_dir=str(tmp_path), reweighting="viewpoint_dro",
                         viewpoint_temperature=0.0, report_to=[])


@pytest.mark.slow
def test_viewpoint_dro_trains_scenelm_with_whole_questions_per_batch(tiny_training, tmp_path):
    """A SceneLM trained with viewpoint_dro: the trainer packs the group ids, every batch
    holds whole questions, the logged weights have mean 1, and a set without the group column
    is refused before training."""
    from datasets import Dataset
    from helpers.models import tiny_model

    from hf_real3d.modeling import collator_for
    from hf_real3d.training import ReweightedTrainer

    tok, bank = tiny_training["tokenizer"], tiny_training["bank"]
    rows = []
    for r in tiny_training["rows"][:12]:  # two "viewpoints" of each question
        for text in (r["situation"], r["situation"] + " I turned around."):
            rows.append({**r, "situation": text, "viewpoint_group": str(r["question_id"])})
    model = tiny_model(tok)
    seen = []
    collator = collator_for(model, tok, bank)
    args = ReweightedConfig(output_dir=str(tmp_path / "o"), reweighting="viewpoint_dro",
                            per_device_train_batch_size=4, max_steps=3, logging_steps=1,
                            report_to=[], use_cpu=True, save_strategy="no",
                            remove_unused_columns=False, learning_rate=1e-2)
    trainer = ReweightedTrainer(model=model, args=args, train_dataset=Dataset.from_list(rows),
                                data_collator=collator, processing_class=tok)
    packing = trainer.data_collator  # the library's collator, with the group ids added

    def spy(batch_rows):
        seen.append([r["viewpoint_group"] for r in batch_rows])
        batch = packing(batch_rows)
        g, c = [str(r["viewpoint_group"]) for r in batch_rows], batch["viewpoint_group"].tolist()
        assert all((g[i] == g[j]) == (c[i] == c[j]) for i in range(len(g)) for j in range(len(g)))
        return batch

    trainer.data_collator = spy
    before = {k: v.clone() for k, v in model.state_dict().items()}
    trainer.train()
    assert any(not torch.equal(before[k], model.state_dict()[k]) for k in before)
    assert seen and all(b.count(g) == 2 for b in seen for g in b)  # whole questions
    logs = [h for h in trainer.state.log_history if "weight_mean" in h]
    assert logs and all(h["weight_mean"] == pytest.approx(1.0) for h in logs)
    flat = Dataset.from_list([{k: v for k, v in r.items() if k != "viewpoint_group"}
                              for r in rows])
    with pytest.raises(ValueError, match="needs a 'viewpoint_group' column in the training "
                                         r"set .*\(`rotation_augment` all"):
        ReweightedTrainer(model=tiny_model(tok), args=args, train_dataset=flat,
                          data_collator=collator_for(model, tok, bank), processing_class=tok)


@pytest.mark.slow
def test_viewpoint_dro_trains_a_transformers_vlm_with_its_own_collator(tmp_path):
    """A model we did not write: a tiny LLaVA from configs with its processor and the
    library's VLM collator, which knows nothing of the groups; the trainer adds them."""

    from datasets import Dataset
    from helpers.tiny_vlm import build_tiny_llava
    from helpers.trainer import trainer_args, vlm_rows

    from hf_real3d.training import ReweightedTrainer
    from hf_real3d.training.vlm import VLMCollator

    model, proc = build_tiny_llava()
    rows = [{**r, "prompt": p, "viewpoint_group": r["question_id"]}
            for r in vlm_rows(6) for p in (r["prompt"], r["prompt"] + " after a turn")]
    before = {k: v.clone() for k, v in model.state_dict().items()}
    trainer = ReweightedTrainer(
        model=model, args=trainer_args(tmp_path, reweighting="viewpoint_dro",
                                       remove_unused_columns=False),
        train_dataset=Dataset.from_list(rows), data_collator=VLMCollator(proc),
        processing_class=proc)
    trainer.train()
    assert any(not torch.equal(before[k], model.state_dict()[k]) for k in before)
    logs = [h for h in trainer.state.log_history if "weight_mean" in h]
    assert logs and all(h["weight_mean"] == pytest.approx(1.0) for h in logs)


def test_the_viewpoint_diagnosis_summarises_the_weights_per_viewpoint():
    import pandas as pd

    from hf_real3d.training.diagnostics import viewpoint_summary

    loss = torch.tensor([1.0, 2.0, 3.0, 4.0, 2.0, 2.0, 2.0, 2.0, 5.0])
    groups = torch.tensor([0, 0, 0, 0, 1, 1, 1, 1, 2])
    w = viewpoint_dro_weights(loss, groups)
    df = pd.DataFrame({"group": groups.numpy().astype(str), "loss": loss.numpy(),
                       "rotation_deg": [0, 90, 180, 270] * 2 + [0], "weight": w.numpy()})
    out = viewpoint_summary(df)
    assert out["questions"] == 2  # the question alone is not a viewpoint group
    views = out["viewpoints"]
    assert list(views) == ["0", "90", "180", "270"]
    assert all(v["row_share"] == 0.25 for v in views.values())
    e = torch.exp(loss[:4])
    # viewpoint 270: question 0's worst (4 e^4 / sum e) and question 1's equal share (1)
    assert views["270"]["weight_share"] == pytest.approx(float((4 * e[3] / e.sum() + 1) / 8))
    assert views["0"]["mean_loss"] == pytest.approx(1.5)
    assert out["top_share"] == pytest.approx(float((e[3] / e.sum() + 0.25) / 2))
