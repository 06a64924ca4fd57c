"""The registry of reweighting modes is the one list: the config's choices and help, the
trainer's dispatch and the model card all read it; each mode declares its own
hyperparameters."""

import dataclasses
import inspect

import pytest
import torch

from hf_real3d.training import ReweightedConfig, ReweightingArguments
from hf_real3d.training.card import write_model_card
from hf_real3d.training.losses import weighted_loss_from_logprobs
from hf_real3d.training.modes import (
    MODES,
    LossInputs,
    Mode,
    family,
    mode,
    register,
)


def _field(name):
    return next(f for f in dataclasses.fields(ReweightingArguments) if f.name == name)


def test_config_choices_and_help_come_from_the_registry():
    f = _field("reweighting")
    assert f.metadata["choices"] == list(MODES)
    for m in MODES.values():
        assert f"'{m.name}' ({m.summary})" in f.metadata["help"]


def test_an_unknown_mode_is_refused_naming_the_registered_ones(tmp_path):
    with pytest.raises(ValueError, match="paper_normalised"):
        ReweightedConfig(output_dir=str(tmp_path), reweighting="papr", report_to=[])
    with pytest.raises(ValueError, match="already registered"):
        register(MODES["none"])


def test_family_is_the_modes_with_weights():
    assert family() == ("cal", "prior", "excess", "paper_normalised")
    assert family() == tuple(n for n, m in MODES.items() if m.weights is not None)


@pytest.mark.parametrize("name", list(MODES))
def test_each_mode_declares_the_settings_its_loss_takes(name):
    """A mode's loss (and its weights) take exactly the settings it declares, each read from
    a config field of that name: nothing arrives unread."""
    m = mode(name)
    fields = {f.name for f in dataclasses.fields(ReweightingArguments)}
    assert set(m.params) <= fields, set(m.params) - fields
    fn = m.weights if m.weights is not None else m.loss
    keywords = {p.name for p in inspect.signature(fn).parameters.values()
                if p.kind is p.KEYWORD_ONLY} - {"text_logp", "blind_logp"}
    assert keywords == set(m.params.values()), (keywords, m.params)
    assert not any(p.kind is p.VAR_KEYWORD for p in inspect.signature(fn).parameters.values())
    args = ReweightingArguments(reweighting=name, weight_clip=3.0, cal_max=4.0)
    assert m.settings(args) == {kw: getattr(args, f) for f, kw in m.params.items()}


@pytest.mark.parametrize("name", list(MODES))
def test_every_mode_loss_runs_on_the_inputs_it_declares(name):
    m = mode(name)
    mask = torch.tensor([[True, True, False]])
    logp = torch.tensor([[-0.5, -1.5, 0.0]], requires_grad=True)
    x = LossInputs(logp, mask,
                   text_logp=torch.tensor([[-1.0, -2.0, 0.0]]) if m.needs_text_only else None,
                   blind_logp=torch.tensor([[-0.2, -3.0, 0.0]]) if m.needs_blind else None,
                   groups=torch.tensor([0]) if m.needs_groups else None)
    args = ReweightingArguments(reweighting=name, excess_ratio=1.0)
    loss, _ = m.loss(x, **m.settings(args))
    loss.backward()
    assert torch.isfinite(loss) and logp.grad is not None


def test_equal_weights_mode_is_sft():
    mask = torch.tensor([[True, True, False]])
    logp = torch.tensor([[-0.5, -1.5, 0.0]])
    loss, w = mode("none").loss(LossInputs(logp, mask))
    assert w is None and float(loss) == pytest.approx(1.0)
    assert float(loss) == float(weighted_loss_from_logprobs(logp, mask, 1.0))


def test_a_new_entry_reaches_the_card(tmp_path, monkeypatch):
    entry = Mode("test_only", summary="a test", card="a card line from the registry",
                 needs_blind=False, needs_text_only=False, loss=MODES["none"].loss)
    monkeypatch.setitem(MODES, "test_only", entry)
    info = {"model": {"model_name_or_path": None, "lm_path": None, "hidden_size": 8,
                      "num_layers": 1, "blind": False, "max_objects": 2,
                      "points_per_object": 4, "max_length": 16},
            "source": {"dataset_name": str(tmp_path), "config": "default",
                       "train_split": "train", "train_rows": 3, "fingerprint": "f"},
            "training": {"reweighting": "test_only", "num_train_epochs": 1, "max_steps": -1,
                         "learning_rate": 1e-3, "lr_scheduler_type": "linear",
                         "per_device_train_batch_size": 2, "gradient_accumulation_steps": 1,
                         "seed": 0, "text_only_mode": "auto"},
            "metrics": {}}
    write_model_card(tmp_path, info)
    assert "a card line from the registry" in (tmp_path / "README.md").read_text()
    # a mode's own settings are listed, from the training signature
    info["training"].update(reweighting="cal", cal_min=1.5, cal_max=4.0, nan_policy="raise")
    write_model_card(tmp_path, info)
    assert "- cal settings: cal_min 1.5, cal_max 4.0, nan_policy raise." in \
        (tmp_path / "README.md").read_text()
