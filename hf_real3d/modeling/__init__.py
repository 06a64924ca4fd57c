"""SceneLM and its data pipeline."""

from hf_real3d.modeling.data import (
    ABLATIONS,
    SPECIAL_TOKENS,
    SceneBank,
    SceneQACollator,
    qa_rows,
    train_tokenizer,
)
from hf_real3d.modeling.scene_lm import (
    SCENE_INPUT_NAMES,
    SceneLM,
    SceneLMConfig,
    SceneLMOutput,
    causal_lm_loss,
)

__all__ = [
    "ABLATIONS",
    "SPECIAL_TOKENS",
    "SCENE_INPUT_NAMES",
    "SceneBank",
    "SceneLM",
    "SceneLMConfig",
    "SceneLMOutput",
    "SceneQACollator",
    "causal_lm_loss",
    "qa_rows",
    "train_tokenizer",
]
