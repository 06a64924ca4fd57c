"""The language-model steps' client (:mod:`hf_real3d.llm.client`) over one backend interface
(:mod:`hf_real3d.llm.base`): an OpenAI-compatible server (:mod:`~hf_real3d.llm.server`), a
local transformers folder (:mod:`~hf_real3d.llm.local`) or Batch API files
(:mod:`~hf_real3d.llm.batch`), each a class with the same methods, the reply cache
(:mod:`~hf_real3d.llm.cache`) a wrapper around any of them; its settings in one dataclass
(:mod:`~hf_real3d.llm.config`) and the prompt templates apart (:mod:`~hf_real3d.llm.prompts`)."""

from hf_real3d.llm.base import Decoding, LLMError, Reply, first_json_object
from hf_real3d.llm.cache import llm_cache_dir
from hf_real3d.llm.client import Generation, LLMClient, offline_step, usage_totals
from hf_real3d.llm.config import LLMConfig
from hf_real3d.llm.prompts import PROMPTS, PromptTemplate, render_prompt, seeded_subset

__all__ = ["Decoding", "LLMError", "Reply", "first_json_object", "llm_cache_dir", "Generation",
           "LLMClient", "offline_step", "usage_totals", "LLMConfig", "PROMPTS", "PromptTemplate",
           "render_prompt", "seeded_subset"]
