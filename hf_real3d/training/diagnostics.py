"""What 3DR-FT's reweighting does to a model's training signal, measured before training.

:func:`token_weights` runs a model (full and text-only) and the blind reference over
question rows and returns the weights both 3DR-FT variants would give: ``paper`` per answer
token (blind log-prob / the model's text-only log-prob, clipped as in training) and
``official`` per question (1 / the model's text-only answer loss). :func:`weight_summary`
groups them by a row field (e.g. ``prior_kind``): mean weight, share of tokens up- or
down-weighted, share of the total loss weight each group receives against its share of
tokens (what plain SFT gives it), and histograms. This is the diagnosis when 3DR-FT does
not beat SFT: which questions the weights lean on. With ``family=`` the weights of the
reweighting family (``cal``, ``prior``, ``excess``, ``paper_normalised``) are added, each
rescaled to mean 1 over a chunk of ``batch_size`` questions as training rescales per batch.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
import torch

from hf_real3d.errors import InputError
from hf_real3d.modeling.data import SceneBank, collator_for
from hf_real3d.modeling.scene_lm import SCENE_INPUT_NAMES
from hf_real3d.training.losses import (
    paper_weights,
    per_sample_nll,
    token_logprobs,
    viewpoint_dro_weights,
)
from hf_real3d.training.modes import family as family_modes
from hf_real3d.training.modes import family_weights, mode

__all__ = ["token_weights", "weight_summary", "viewpoint_weights", "viewpoint_summary"]


def token_weights(model, blind_model, tokenizer, bank: SceneBank, rows: Sequence[dict], *,
                  group_field: str = "prior_kind", clip: float | None = 10.0,
                  eps: float = 1e-4, batch_size: int = 64, family: Sequence[str] = ()
                  ) -> pd.DataFrame:
    """One row per answer token of ``rows``: ``question_id``, ``group`` (the row's
    ``group_field``), ``eos`` (the end-of-answer token, which training keeps at weight 1 by
    default), ``paper`` (the token weight) and ``official`` (its question's factor).

    ``model`` is the model 3DR-FT would fine-tune (its text-only pass drops the 3D inputs, as
    ``ReweightedTrainer`` does by default); ``blind_model`` the blind reference.
    """
    if not rows:
        raise InputError("token_weights: no rows given")
    bad = [m for m in family if m not in family_modes()]
    if bad:
        raise InputError(f"token_weights: family weighting {bad[0]!r} is not one of "
                         f"{family_modes()}")
    missing = [i for i, r in enumerate(rows) if group_field not in r]
    if missing:
        raise InputError(f"token_weights: row {missing[0]} has no {group_field!r} field; pass "
                         "group_field= one the rows carry")
    collator = collator_for(model, tokenizer, bank)
    eos = tokenizer.eos_token_id
    cols: dict[str, list] = {"question_id": [], "group": [], "eos": [], "paper": [],
                             "official": [], **{m: [] for m in family}}
    model.eval()
    blind_model.eval()
    with torch.no_grad():
        for start in range(0, len(rows), batch_size):
            chunk = rows[start:start + batch_size]
            enc = collator(chunk)
            labels = enc.pop("labels")
            text = {k: v for k, v in enc.items() if k not in SCENE_INPUT_NAMES}
            text_logits = model(**text).logits
            text_logp, mask = token_logprobs(text_logits, labels)
            blind_logp, _ = token_logprobs(
                blind_model(input_ids=enc["input_ids"],
                            attention_mask=enc["attention_mask"]).logits, labels)
            w = paper_weights(blind_logp, text_logp, mask, eps=eps, clip=clip,
                              nan_policy="zero")
            # as official_loss: 1 / the text-only answer loss, floored at eps
            factor = 1.0 / per_sample_nll(text_logits, labels).clamp_min(eps)
            per_row = mask.sum(1).numpy()
            cols["question_id"].append(np.repeat([int(r["question_id"]) for r in chunk],
                                                 per_row))
            cols["group"].append(np.repeat([str(r[group_field]) for r in chunk], per_row))
            cols["eos"].append(labels[:, 1:].eq(eos)[mask].numpy())
            cols["paper"].append(w[mask].numpy())
            cols["official"].append(np.repeat(factor.numpy(), per_row))
            if family:  # the full pass too: cal reads the gain from the 3D input
                full_logp, _ = token_logprobs(model(**enc).logits, labels)
                # each mode's own settings among these; its others keep their defaults
                common = {"eps": eps, "clip": clip, "nan_policy": "zero"}
                for name in family:
                    takes = mode(name).params.values()
                    fw = family_weights(name, full_logp, mask, text_logp=text_logp,
                                        blind_logp=blind_logp,
                                        **{k: v for k, v in common.items() if k in takes})
                    cols[name].append(fw[mask].numpy())
    return pd.DataFrame({k: np.concatenate(v) for k, v in cols.items()})


def weight_summary(weights: pd.DataFrame, *, clip: float | None = 10.0,
                   bins: int = 20) -> dict[str, Any]:
    """Per group (and ``all``), from :func:`token_weights`: ``tokens``, ``paper_mean``,
    ``up_share`` / ``down_share`` (tokens weighted above / below 1), ``clipped_share``,
    ``token_share`` (the group's share of answer tokens: its share of the loss under SFT),
    ``paper_loss_share`` (its share of the summed paper weights), ``official_mean`` and
    ``official_loss_share`` (per question); plus histograms of log10 paper weights (answer
    content tokens, ``eos`` excluded; from 1e-3, lower ones in the first bin, to the clip)
    and of log10 official factors."""
    content = weights[~weights.eos]
    per_q = weights.drop_duplicates("question_id")
    hi = clip if clip is not None else float(max(content.paper.max(), 1.0))
    # weights span orders of magnitude: log10 bins from 1e-3 (and below) to the clip
    edges = np.linspace(-3.0, np.log10(hi), bins + 1)
    log_f = np.log10(per_q.official.clip(lower=1e-6))
    f_edges = np.linspace(np.floor(log_f.min()), np.ceil(log_f.max()) + 1e-9, bins + 1) \
        if len(per_q) else np.linspace(0, 1, bins + 1)
    total_w, total_t = content.paper.sum(), len(content)
    total_f = per_q.official.sum()
    groups: dict[str, Any] = {}
    for name, g in [("all", content), *sorted(content.groupby("group"))]:
        q = per_q if name == "all" else per_q[per_q.group == name]
        groups[str(name)] = {
            "tokens": int(len(g)), "questions": int(len(q)),
            "paper_mean": float(g.paper.mean()) if len(g) else None,
            "up_share": float((g.paper > 1).mean()) if len(g) else None,
            "down_share": float((g.paper < 1).mean()) if len(g) else None,
            "clipped_share": float((g.paper >= hi - 1e-6).mean()) if len(g) else None,
            "token_share": float(len(g) / total_t) if total_t else None,
            "paper_loss_share": float(g.paper.sum() / total_w) if total_w > 0 else None,
            "official_mean": float(q.official.mean()) if len(q) else None,
            "official_loss_share": float(q.official.sum() / total_f) if total_f > 0 else None,
            "paper_log10_hist": np.histogram(np.log10(g.paper.clip(1e-3, hi)),
                                             edges)[0].tolist(),
            "official_log10_hist": np.histogram(
                np.log10(q.official.clip(lower=1e-6)), f_edges)[0].tolist(),
        }
        for fam in (m for m in family_modes() if m in content):  # the family's, if computed
            total = content[fam].sum()
            groups[str(name)][f"{fam}_mean"] = float(g[fam].mean()) if len(g) else None
            groups[str(name)][f"{fam}_loss_share"] = \
                float(g[fam].sum() / total) if total > 0 else None
    return {"paper_log10_edges": edges.tolist(), "official_log10_edges": f_edges.tolist(),
            "clip": clip, "groups": groups}


def viewpoint_weights(model, tokenizer, bank: SceneBank, rows: Sequence[dict], *,
                      temperature: float = 1.0, group_field: str = "viewpoint_group",
                      batch_size: int = 64) -> pd.DataFrame:
    """One row per question row of ``rows`` (a rotation-augmented split): ``group``,
    ``rotation_deg``, ``kind`` (when the rows carry it), the model's mean answer loss
    ``loss`` and the weight ``weight`` the viewpoint objective (``viewpoint_dro`` at
    ``temperature``) gives it. Batches of training keep groups whole, so these are the
    weights training at this model's state would use."""
    if not rows:
        raise InputError("viewpoint_weights: no rows given")
    missing = [i for i, r in enumerate(rows) if group_field not in r]
    if missing:
        raise InputError(f"viewpoint_weights: row {missing[0]} has no {group_field!r} field; "
                         "augment the rows first (hf_real3d.training.augment.rotation_augment)")
    collator = collator_for(model, tokenizer, bank)
    losses = []
    model.eval()
    with torch.no_grad():
        for start in range(0, len(rows), batch_size):
            enc = collator(list(rows[start:start + batch_size]))
            labels = enc.pop("labels")
            losses.append(per_sample_nll(model(**enc).logits, labels))
    loss = torch.cat(losses)
    codes: dict[str, int] = {}
    groups = torch.tensor([codes.setdefault(str(r[group_field]), len(codes)) for r in rows])
    w = viewpoint_dro_weights(loss, groups, temperature=temperature)
    return pd.DataFrame({"group": [str(r[group_field]) for r in rows],
                         "rotation_deg": [int(r.get("rotation_deg", 0)) for r in rows],
                         "kind": [str(r.get("kind", "")) for r in rows],
                         "loss": loss.numpy(), "weight": w.numpy()})


def viewpoint_summary(weights: pd.DataFrame) -> dict[str, Any]:
    """Per viewpoint (rotation in degrees) of the questions that were turned, from
    :func:`viewpoint_weights`: ``rows``, ``mean_loss``, ``mean_weight`` and ``weight_share``
    (the viewpoint's share of the summed weights; SFT gives each its row share,
    ``row_share``); and ``top_share``, the mean of each question's largest weight over the
    group size (1 / n: equal weights; 1: the worst viewpoint alone)."""
    sizes = weights.groupby("group").group.transform("size")
    turned = weights[sizes > 1]
    if turned.empty:
        return {"viewpoints": {}, "top_share": None, "questions": 0}
    total_w, total_n = turned.weight.sum(), len(turned)
    views = {str(k): {"rows": int(len(g)), "mean_loss": float(g.loss.mean()),
                      "mean_weight": float(g.weight.mean()),
                      "row_share": float(len(g) / total_n),
                      "weight_share": float(g.weight.sum() / total_w)}
             for k, g in sorted(turned.groupby("rotation_deg"))}
    per_q = turned.groupby("group").weight
    top = float((per_q.max() / per_q.size()).mean())
    return {"viewpoints": views, "top_share": top, "questions": int(turned.group.nunique())}
