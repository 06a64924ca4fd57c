"""Precompute the blind model's answer-token log-probs once, as a dataset column."""

from __future__ import annotations

import hashlib
from typing import Any

import torch
from datasets.fingerprint import Hasher

from hf_real3d.errors import InputError
from hf_real3d.training.routes import HFModelRoute

__all__ = ["precompute_blind_logprobs", "model_digest", "pad_logprobs", "BlindColumnCollator"]


def model_digest(model: torch.nn.Module) -> str:
    """A short hash of a model's parameters (for dataset fingerprints)."""
    h = hashlib.sha256()
    for name, p in sorted(model.state_dict().items()):
        h.update(name.encode())
        h.update(p.detach().cpu().float().numpy().tobytes())
    return h.hexdigest()[:16]


def _device_of(model: torch.nn.Module) -> torch.device:
    try:
        return next(model.parameters()).device
    except StopIteration:
        return torch.device("cpu")


def _digest(obj: Any) -> str:
    """A fingerprint of a collator / route: its hashable state, else its type."""
    try:
        return Hasher.hash(obj)
    except Exception:  # noqa: BLE001 - an object datasets cannot hash: its class only
        return f"{type(obj).__module__}.{type(obj).__qualname__}"


def precompute_blind_logprobs(dataset, blind_model, collator, *, column: str = "blind_logprobs",
                              batch_size: int = 64, text_only_mode: str = "auto",
                              route: Any = None) -> Any:
    """Add ``column``: for each row, the blind model's log-prob of every answer token, in
    order (the route's text-only pass), so 3DR-FT ``paper`` costs about what SFT costs.

    Works on any route (:mod:`hf_real3d.training.routes`): ``collator`` turns rows into the
    batch the route reads; the default route is ``HFModelRoute(text_only_mode)``. Runs
    ``datasets.map`` (batched, with a progress bar) with a fingerprint made of the dataset's
    fingerprint, the blind model's weights, the collator and the route, so a cached result
    is reused only for the same inputs.
    """
    route = route if route is not None else HFModelRoute(text_only_mode=text_only_mode)
    blind_model.eval()
    device = _device_of(blind_model)
    tok = getattr(collator, "tok", None)
    coll_fp = ([sorted(tok.get_vocab().items()), getattr(collator, "max_length", None)]
               if tok is not None else _digest(collator))
    fp = Hasher.hash([dataset._fingerprint, model_digest(blind_model), coll_fp,
                      _digest(vars(route)), column, "packed-v2"])

    def fn(batch: dict[str, list]) -> dict[str, list]:
        rows = [dict(zip(batch, vals)) for vals in zip(*batch.values())]
        enc = collator(rows)
        enc = {k: v.to(device) if torch.is_tensor(v) else v for k, v in enc.items()}
        with torch.no_grad():
            s = route(blind_model, enc, text_only=True)
        if not s.per_token:
            raise InputError("precompute_blind_logprobs needs token log-probs; this route "
                             "gives a per-sample loss (ModuleRoute(per_sample=True))")
        return {column: [lp[m].float().cpu().tolist() for lp, m in zip(s.logp, s.mask)]}

    return dataset.map(fn, batched=True, batch_size=batch_size, new_fingerprint=fp,
                       desc="blind log-probs")


def pad_logprobs(values: list[Any]) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-row lists of log-probs -> ``(values (B, L), mask (B, L))``, zero-padded."""
    rows = [[] if v is None else list(v) for v in values]
    width = max((len(r) for r in rows), default=0)
    out = torch.zeros(len(rows), width, dtype=torch.float32)
    mask = torch.zeros(len(rows), width, dtype=torch.bool)
    for i, r in enumerate(rows):
        if r:
            out[i, :len(r)] = torch.tensor(r, dtype=torch.float32)
            mask[i, :len(r)] = True
    return out, mask


class BlindColumnCollator:
    """Wraps any collator: pops ``column`` (per-row answer-token log-probs) from the rows,
    collates the rest, and adds ``<column>`` and ``<column>_mask`` (B, L) to the batch.
    Rows without the column pass through unchanged."""

    def __init__(self, collator: Any, column: str = "blind_logprobs"):
        self.collator = collator
        self.column = column

    def __call__(self, rows: list[dict[str, Any]]) -> dict[str, Any]:
        if not rows or self.column not in rows[0]:
            return self.collator(rows)
        vals = [r[self.column] for r in rows]
        batch = self.collator([{k: v for k, v in r.items() if k != self.column} for r in rows])
        batch[self.column], batch[f"{self.column}_mask"] = pad_logprobs(vals)
        return batch
