"""3D-reweighted fine-tuning (3DR-FT): pure losses, config, trainer."""

# the recipes seed through the package they train with (transformers' own set_seed), so that
# their first import is hf_real3d's, which bounds OpenMP's spinning before torch loads
from transformers import set_seed

from hf_real3d.training.blind import (
    BlindColumnCollator,
    model_digest,
    precompute_blind_logprobs,
)
from hf_real3d.training.losses import (
    official_loss,
    official_loss_from_logprobs,
    paper_loss,
    paper_loss_from_logprobs,
    paper_weights,
    per_sample_nll,
    token_logprobs,
)
from hf_real3d.training.modes import MODES, Mode, family_weights, mode, register
from hf_real3d.training.routes import (
    FusedHeadRoute,
    HFModelRoute,
    ModuleRoute,
    TextOnlyInputError,
    TokenScores,
)
from hf_real3d.training.trainer import (
    ReweightedConfig,
    ReweightedTrainer,
    ReweightingArguments,
)

__all__ = ["BlindColumnCollator", "FusedHeadRoute", "HFModelRoute", "ModuleRoute", "MODES", "Mode",
           "mode", "register", "family_weights", "set_seed", "ReweightingArguments",
           "TextOnlyInputError", "TokenScores", "official_loss_from_logprobs",
           "paper_loss_from_logprobs", "ReweightedConfig", "ReweightedTrainer", "model_digest",
           "official_loss", "paper_loss", "paper_weights", "per_sample_nll",
           "precompute_blind_logprobs", "token_logprobs"]
