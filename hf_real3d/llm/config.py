"""The language-model client's settings: one dataclass, which the command line parses (its
fields are the ``--llm_*`` flags) and :class:`hf_real3d.llm.client.LLMClient` takes whole
(light: neither ``openai`` nor ``transformers`` loads with it)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from hf_real3d._fields import help_field
from hf_real3d.llm.base import Backend, Decoding
from hf_real3d.llm.batch import BatchBackend
from hf_real3d.llm.cache import CachedBackend
from hf_real3d.llm.local import LocalBackend
from hf_real3d.llm.server import ServerBackend

__all__ = ["LLMConfig", "STRUCTURED"]

#: ``llm_structured`` settings: ``auto`` asks for the JSON schema, falls back to
#: ``json_object`` and then to plain prompts when the server refuses; the others ask for one
#: format only
STRUCTURED = ("auto", "json_schema", "json_object", "none")


@dataclass(kw_only=True)
class LLMConfig:
    """The model a language-model step asks (a server, a local folder, or Batch API files)
    and how: decoding, cache, concurrency, retries, structured output, re-asks and when to
    stop."""
    llm_url: str | None = help_field("Base URL of an OpenAI-compatible server (vLLM, TGI, "
                                     "`transformers serve`, Ollama, a hosted API), e.g. "
                                     "http://127.0.0.1:8000/v1; with --llm_model.",
                                     default=None)
    llm_model: str | None = help_field("The model name the server lists (GET /v1/models).",
                                       default=None)
    llm_path: str | None = help_field("Or: a local transformers causal-LM folder with its "
                                      "tokenizer, run in this process.", default=None)
    llm_api_key_env: str | None = help_field("Name of the environment variable holding the "
                                             "server's API key (never written anywhere).",
                                             default=None)
    llm_cache: str | None = help_field("Folder of cached replies for this model (default: one "
                                       "per model and cache tag under $HF_REAL3D_CACHE/llm or "
                                       "~/.cache/huggingface/hf_real3d/llm).", default=None)
    no_llm_cache: bool = help_field("Ask every prompt again (nothing read from or written to "
                                    "the cache).", default=False)
    llm_cache_tag: str | None = help_field("A word that joins the cache key (a date, a model "
                                           "revision): replies cached under another tag are "
                                           "not reused.", default=None)
    llm_no_probe: bool = help_field("Do not ask GET /models first (gateways without it); the "
                                    "cache key then holds the model name and the cache tag "
                                    "only, not what the server says of the model.",
                                    default=False)
    temperature: float = help_field("Sampling temperature (0: greedy, the default).",
                                    default=0.0)
    seed: int = help_field("Seed sent with every request (and set for a local model); also "
                           "draws the --limit subset.", default=0)
    max_tokens: int = help_field("Longest reply, in tokens; a reply cut there is not used "
                                 "('cut at max_tokens').", default=128)
    llm_timeout: float = help_field("Seconds to wait for one reply.", default=60.0)
    llm_concurrency: int | None = help_field(
        "Requests in flight at once (a server), or prompts per batch (a local folder). "
        "Default: 64 for a server whose /models card names a batching engine (vLLM, SGLang, "
        "TGI), 8 for other servers and for a local folder.", default=None)
    llm_retries: int = help_field("Retries of a request answered 429 or 5xx, timed out or "
                                  "cut off (the openai client's, with exponential backoff).",
                                  default=4)
    llm_reask: int = help_field("Ask a reply that cannot be used (does not parse, cut at "
                                "max_tokens) again with the next seed, up to N times; each "
                                "attempt is cached and recorded (at temperature 0 a server "
                                "usually answers the same).", default=0)
    llm_structured: str = help_field(
        "Structured output for replies with a JSON shape (rotate): auto asks for the JSON "
        "schema (response_format), falls back to json_object and then to plain prompts when "
        "the server refuses (the record says so); json_schema, json_object or none ask for "
        "that one only.", default="auto", choices=STRUCTURED)
    max_failures: int = help_field("Stop the run after this many failed requests in a row, "
                                   "with the reason (0: never); the replies received stay "
                                   "cached.", default=20)
    batch_out: str | None = help_field("Write the requests not in the cache as an OpenAI Batch "
                                       "API JSONL file (what `vllm run-batch -i` reads) and "
                                       "send none (with --llm_model; no server is needed).",
                                       default=None)
    batch_in: str | None = help_field(
        "Read the replies from a Batch API output file (`vllm run-batch -o`) in place of a "
        "server: into the cache and the output, as a live run (with --llm_model). Not with "
        "--llm_url: a request the file lacks is not sent to a server; write it with "
        "--batch_out and run the batch again.", default=None)

    @property
    def decoding(self) -> Decoding:
        return Decoding(self.temperature, self.seed, self.max_tokens)

    def check(self) -> None:
        """Every setting checked before any work, one line naming it and the fix."""
        batch = self.batch_in or self.batch_out
        if self.batch_in and self.llm_url:
            raise ValueError(f"`batch_in` {self.batch_in} with `llm_url` {self.llm_url}: the "
                             "batch results replace the server, which would be asked nothing; "
                             "drop `llm_url` (write the missing requests with `batch_out`), or "
                             "drop `batch_in` to ask the server")
        if self.batch_in and self.batch_out:
            raise ValueError("`batch_out` and `batch_in`: one at a time (write the requests, "
                             "run the batch, then read its output)")
        if batch and self.llm_path:
            raise ValueError("`batch_out`/`batch_in`: a batch file is for a server "
                             "(`llm_model`), not a local folder (`llm_path`)")
        if not batch and (self.llm_url is None) == (self.llm_path is None):
            raise ValueError("give a server (`llm_url` with `llm_model`) or a local model "
                             "folder (`llm_path`), one of the two")
        if self.batch_in and not Path(self.batch_in).is_file():
            raise FileNotFoundError(f"`batch_in` {self.batch_in}: no such file (the output "
                                    "file of the batch run, e.g. vllm run-batch -o FILE)")
        if self.batch_out and Path(self.batch_out).is_dir():
            raise FileExistsError(f"`batch_out` {self.batch_out}: a folder; give a .jsonl file")
        if self.llm_concurrency is not None and self.llm_concurrency < 1:
            raise ValueError(f"`llm_concurrency` {self.llm_concurrency}: expected at least 1")
        if self.llm_retries < 0 or self.llm_timeout <= 0:
            raise ValueError(f"`llm_retries` {self.llm_retries} must be >= 0 and `llm_timeout` "
                             f"{self.llm_timeout} > 0")
        if self.llm_reask < 0:
            raise ValueError(f"`llm_reask` {self.llm_reask}: expected 0 or more re-asks")
        if self.max_failures < 0:
            raise ValueError(f"`max_failures` {self.max_failures}: expected 0 (never stop) or "
                             "more")
        if self.llm_structured not in STRUCTURED:
            raise ValueError(f"`llm_structured` {self.llm_structured!r}: expected one of "
                             f"{STRUCTURED}")
        if self.llm_cache_tag is not None and not self.llm_cache_tag.strip():
            raise ValueError("`llm_cache_tag`: empty; give a word that names this server's "
                             "state (e.g. a date or a model revision)")
        self.decoding  # noqa: B018 - Decoding checks temperature and max_tokens

    def backend(self) -> Backend:
        """The backend these settings name, wrapped in the cache unless ``no_llm_cache``."""
        tag = self.llm_cache_tag
        if self.batch_in or self.batch_out:
            inner: Backend = BatchBackend(self.llm_model, self.batch_in, tag)
        elif self.llm_path is not None:
            inner = LocalBackend(self.llm_path, tag)
        else:
            inner = ServerBackend(self.llm_url, self.llm_model,
                                  api_key_env=self.llm_api_key_env, timeout=self.llm_timeout,
                                  retries=self.llm_retries, probe=not self.llm_no_probe, tag=tag)
        return inner if self.no_llm_cache else CachedBackend(inner, self.llm_cache)
