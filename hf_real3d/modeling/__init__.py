"""SceneLM and its data pipeline."""

from hf_real3d.modeling.data import (
    ABLATIONS,
    SPECIAL_TOKENS,
    SceneBank,
    SceneInputs,
    SceneQACollator,
    collator_for,
    qa_rows,
    train_tokenizer,
)
from hf_real3d.modeling.inference import attention_to_3d, predict_rows
from hf_real3d.modeling.scene_lm import (
    SCENE_INPUT_NAMES,
    SceneLM,
    SceneLMConfig,
    SceneLMOutput,
    causal_lm_loss,
)

__all__ = ["ABLATIONS", "SPECIAL_TOKENS", "SCENE_INPUT_NAMES", "SceneBank", "SceneInputs",
           "SceneLM", "SceneLMConfig", "SceneLMOutput", "SceneQACollator", "attention_to_3d",
           "causal_lm_loss", "collator_for", "predict_rows", "qa_rows", "train_tokenizer"]
