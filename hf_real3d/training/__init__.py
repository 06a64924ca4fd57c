"""3D-reweighted fine-tuning (3DR-FT): pure losses, config, trainer."""

from hf_real3d.training.blind import model_digest, precompute_blind_logprobs
from hf_real3d.training.losses import (
    official_loss,
    paper_loss,
    paper_weights,
    per_sample_nll,
    token_logprobs,
)
from hf_real3d.training.trainer import REWEIGHTING, ReweightedConfig, ReweightedTrainer

__all__ = [
    "REWEIGHTING",
    "ReweightedConfig",
    "ReweightedTrainer",
    "model_digest",
    "official_loss",
    "paper_loss",
    "paper_weights",
    "per_sample_nll",
    "precompute_blind_logprobs",
    "token_logprobs",
]
