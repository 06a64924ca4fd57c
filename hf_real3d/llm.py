"""One text-generation client for every step that asks a language model (the text-only judge,
rotation rewriting): an OpenAI-compatible server or a local transformers folder.

* **Server** (``url=`` + ``model=``): vLLM, TGI, ``transformers serve``, Ollama or a hosted
  API, through the ``openai`` package (which ``transformers[serving]`` brings; it works with
  ``HF_HUB_OFFLINE=1``, where ``huggingface_hub.InferenceClient`` refuses every request). The
  API key is read from the environment variable ``api_key_env`` names, and is never written to
  a log, a card or the cache.
* **Local** (``path=``): a causal LM folder with its tokenizer (its chat template when it has
  one), run in this process.

Every request is checked before any work (:meth:`LLMClient.check`: the server answers and
lists the model, or the folder holds a model). Decoding is deterministic by default
(temperature 0, a seed). Every response is cached on disk under a key of (model, prompt,
decoding), one small file each, written atomically the moment it arrives: a rerun sends no
request and gives the same output, and a run stopped midway keeps every finished item. At
most ``concurrency`` requests are in flight; 429, 5xx, timeouts and dropped connections are
retried with exponential backoff (``retries`` times), then the item fails with its reason and
the run goes on. A progress bar shows the work.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from tqdm.auto import tqdm

from hf_real3d._io import cache_root, read_json, write_json

__all__ = ["LLMError", "Decoding", "Generation", "LLMClient", "llm_cache_dir", "Prompt",
           "PromptTemplate", "PROMPTS", "public_url"]

#: a prompt: a chat (a list of {"role", "content"} messages) or plain text (a completion)
Prompt = list[dict[str, str]] | str


class LLMError(OSError):
    """A server, model or cache the client cannot use (one line naming it and the fix)."""


@dataclass(frozen=True)
class Decoding:
    """How text is generated; part of every cache key."""

    temperature: float = 0.0
    seed: int = 0
    max_tokens: int = 128

    def __post_init__(self) -> None:
        if self.temperature < 0 or self.max_tokens < 1:
            raise ValueError(f"temperature {self.temperature} must be >= 0 and max_tokens "
                             f"{self.max_tokens} >= 1")


@dataclass
class Generation:
    """One prompt's outcome: its text, or the reason it failed."""

    text: str | None
    error: str | None = None
    cached: bool = False


@dataclass
class _Stats:
    requests: int = 0  # HTTP requests (retries included) or local generations
    cache_hits: int = 0
    retries: int = 0
    failures: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def add(self, **kw: int) -> None:
        with self.lock:
            for k, v in kw.items():
                setattr(self, k, getattr(self, k) + v)


def llm_cache_dir() -> Path:
    """Where responses are cached by default: ``llm/`` under :func:`hf_real3d._io.cache_root`
    (``$HF_REAL3D_CACHE``, else ``~/.cache/huggingface/hf_real3d``)."""
    return cache_root() / "llm"


def public_url(url: str) -> str:
    """``url`` without user name, password or query (what a card or a log may show)."""
    p = urlsplit(url)
    return urlunsplit((p.scheme, p.hostname + (f":{p.port}" if p.port else "")
                       if p.hostname else p.netloc, p.path, "", ""))


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("_")[-48:] or "model"


class LLMClient:
    """Generate text for many prompts, cached, bounded and retried (see the module
    docstring). Give ``url`` and ``model`` (a server) or ``path`` (a local folder)."""

    def __init__(self, *, url: str | None = None, model: str | None = None,
                 path: str | os.PathLike | None = None, api_key_env: str | None = None,
                 decoding: Decoding = Decoding(), timeout: float = 60.0, concurrency: int = 4,
                 retries: int = 4, backoff: float = 0.5, cache_dir: str | os.PathLike | None = None,
                 cache: bool = True, progress: bool = True):
        if (url is None) == (path is None):
            raise ValueError("give a server (--llm_url with --llm_model) or a local model "
                             "folder (--llm_path), one of the two")
        if url is not None and not model:
            raise ValueError(f"--llm_url {url}: name the model the server serves (--llm_model)")
        if url is not None and urlsplit(url).scheme not in ("http", "https"):
            raise ValueError(f"--llm_url {url!r}: expected an http:// or https:// base URL, "
                             "e.g. http://127.0.0.1:8000/v1")
        if concurrency < 1 or retries < 0 or timeout <= 0:
            raise ValueError(f"concurrency {concurrency} must be >= 1, retries {retries} >= 0 "
                             f"and timeout {timeout} > 0")
        if api_key_env is not None and not os.environ.get(api_key_env):
            raise LLMError(f"--llm_api_key_env {api_key_env}: that environment variable is "
                           "not set (it should hold the API key)")
        self.url, self.model, self.path = url, model, None if path is None else Path(path)
        self.api_key_env = api_key_env
        self.decoding, self.timeout, self.concurrency = decoding, timeout, concurrency
        self.retries, self.backoff, self.progress = retries, backoff, progress
        self.stats = _Stats()
        self._local: tuple[Any, Any] | None = None
        self._client = None
        self.identity = self._identity()
        self.cache = self._cache_folder(cache_dir) if cache else None

    # --- identity and cache ----------------------------------------------------------------

    def _identity(self) -> dict[str, Any]:
        if self.url is not None:
            return {"route": "server", "model": self.model}
        folder = self.path
        if not (folder / "config.json").is_file():
            raise LLMError(f"--llm_path {folder}: no model folder there (no config.json); give "
                           "a local transformers causal-LM folder with its tokenizer")
        weights = sorted((p.name, p.stat().st_size) for p in folder.iterdir()
                         if p.suffix in (".safetensors", ".bin"))
        digest = hashlib.sha256(json.dumps([(folder / "config.json").read_text(), weights])
                                .encode()).hexdigest()[:16]
        return {"route": "local", "model": str(folder.resolve()), "weights": digest}

    def describe(self) -> dict[str, Any]:
        """What a card records: the model, where it ran and how it decoded (no key)."""
        out = {"model": self.model if self.url else str(self.path),
               "route": self.identity["route"], **asdict(self.decoding)}
        if self.url:
            out["url"] = public_url(self.url)
        return out

    def _cache_folder(self, cache_dir: str | os.PathLike | None) -> Path:
        """A folder of this model's responses: ``cache_dir`` itself when given (it must be
        empty or this model's), else one under :func:`llm_cache_dir` per model."""
        ident = json.dumps(self.identity, sort_keys=True)
        if cache_dir is None:
            tag = hashlib.sha256(ident.encode()).hexdigest()[:12]
            folder = llm_cache_dir() / f"{_slug(self.identity['model'])}-{tag}"
        else:
            folder = Path(cache_dir)
        meta = folder / "model.json"
        if meta.is_file():
            have = read_json(meta)
            if have != self.identity:
                raise LLMError(f"--llm_cache {folder}: a cache of the model {have.get('model')!r}"
                               f" ({have.get('route')}), not of {self.identity['model']!r}; "
                               "give another cache folder")
        elif folder.is_dir() and any(folder.iterdir()):
            raise LLMError(f"--llm_cache {folder}: not empty and not a response cache (no "
                           "model.json); give an empty or new folder")
        else:
            folder.mkdir(parents=True, exist_ok=True)
            write_json(meta, self.identity, indent=2)
        return folder

    def key(self, prompt: Prompt) -> str:
        blob = json.dumps({"model": self.identity, "prompt": prompt,
                           "decoding": asdict(self.decoding)}, sort_keys=True)
        return hashlib.sha256(blob.encode()).hexdigest()

    def _cached(self, key: str) -> str | None:
        if self.cache is None:
            return None
        path = self.cache / key[:2] / f"{key}.json"
        if not path.is_file():
            return None
        try:
            return read_json(path)["text"]
        except (ValueError, KeyError, TypeError, OSError):  # unreadable: ask again
            return None

    def _store(self, key: str, prompt: Prompt, text: str) -> None:
        if self.cache is not None:
            (self.cache / key[:2]).mkdir(exist_ok=True)
            write_json(self.cache / key[:2] / f"{key}.json", {"text": text, "prompt": prompt})

    # --- the routes ---------------------------------------------------------------------

    def _openai(self):
        if self._client is None:
            try:
                # the [llm] extra (transformers[serving] brings it): only for a server
                import openai
            except ImportError:
                raise ImportError("a server route needs the openai package: pip install "
                                  "'hf_real3d[llm]' (make install installs it)") from None
            key = os.environ[self.api_key_env] if self.api_key_env else "EMPTY"
            self._client = openai.OpenAI(base_url=self.url, api_key=key, timeout=self.timeout,
                                         max_retries=0)
        return self._client

    def check(self) -> None:
        """Fail before any work when the server does not answer or does not list the model
        (a local folder is loaded here)."""
        if self.url is None:
            self._load_local()
            return
        import openai  # _openai() reported a missing package already

        client = self._openai()
        where = public_url(self.url)
        try:
            ids = [m.id for m in client.models.list()]
        except openai.APIConnectionError as err:
            raise LLMError(f"--llm_url {where}: no server answers there ({err.__class__.__name__}:"
                           f" {err}); start it or fix the URL") from None
        except openai.APIStatusError as err:
            raise LLMError(f"--llm_url {where}: not an OpenAI-compatible API (GET /models "
                           f"answered HTTP {err.status_code}); give its base URL, e.g. "
                           "http://HOST:PORT/v1") from None
        except (ValueError, TypeError) as err:  # a page that is not JSON
            raise LLMError(f"--llm_url {where}: not an OpenAI-compatible API (GET /models did "
                           f"not answer a model list: {err})") from None
        if self.model not in ids:
            raise LLMError(f"--llm_model {self.model!r}: {where} does not serve it (it lists "
                           f"{ids}); pick one of those")

    def _load_local(self) -> tuple[Any, Any]:
        if self._local is None:
            # torch and transformers only for a local model
            from transformers import AutoModelForCausalLM, AutoTokenizer

            try:
                tok = AutoTokenizer.from_pretrained(self.path, local_files_only=True)
                model = AutoModelForCausalLM.from_pretrained(self.path, local_files_only=True)
            except (OSError, ValueError) as err:
                raise LLMError(f"--llm_path {self.path}: not a causal LM with its tokenizer "
                               f"({str(err).splitlines()[0]})") from None
            model.eval()
            self._local = (model, tok)
        return self._local

    def _ask_local(self, prompt: Prompt) -> str:
        import torch  # a local model only (loaded by _load_local)

        model, tok = self._load_local()
        if isinstance(prompt, str):
            ids = tok(prompt, return_tensors="pt")["input_ids"]
        elif getattr(tok, "chat_template", None):
            ids = tok.apply_chat_template(prompt, add_generation_prompt=True,
                                          return_tensors="pt", return_dict=True)["input_ids"]
        else:  # no chat template: the messages' texts, one after the other
            ids = tok("\n\n".join(m["content"] for m in prompt), return_tensors="pt")["input_ids"]
        torch.manual_seed(self.decoding.seed)
        sample = self.decoding.temperature > 0
        pad = tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id
        with torch.no_grad():
            out = model.generate(input_ids=ids, attention_mask=torch.ones_like(ids),
                                 max_new_tokens=self.decoding.max_tokens, do_sample=sample,
                                 pad_token_id=pad,
                                 **({"temperature": self.decoding.temperature} if sample else {}))
        self.stats.add(requests=1)
        return tok.decode(out[0, ids.shape[1]:], skip_special_tokens=True).strip()

    def _ask_server(self, prompt: Prompt) -> str:
        import openai  # the server route's package (its errors)

        client = self._openai()
        d = self.decoding
        for attempt in range(self.retries + 1):
            self.stats.add(requests=1)
            try:
                if isinstance(prompt, str):
                    r = client.completions.create(model=self.model, prompt=prompt,
                                                  temperature=d.temperature, seed=d.seed,
                                                  max_tokens=d.max_tokens)
                    return (r.choices[0].text or "").strip()
                r = client.chat.completions.create(model=self.model, messages=prompt,
                                                   temperature=d.temperature, seed=d.seed,
                                                   max_tokens=d.max_tokens)
                return (r.choices[0].message.content or "").strip()
            except (openai.APIConnectionError, openai.APIStatusError) as err:
                status = getattr(err, "status_code", None)
                again = status is None or status == 429 or status >= 500
                what = f"HTTP {status}" if status else err.__class__.__name__
                if not again or attempt == self.retries:
                    tries = f" after {attempt + 1} attempts" if again else ""
                    raise LLMError(f"{what}{tries}: {str(err).splitlines()[0][:200]}") from None
                self.stats.add(retries=1)
                time.sleep(min(self.backoff * 2 ** attempt, 30.0))
        raise AssertionError("unreachable")

    # --- many prompts -------------------------------------------------------------------

    def generate(self, prompts: Sequence[Prompt], *, desc: str = "asking the model",
                 on_result: Callable[[int, Generation], None] | None = None
                 ) -> list[Generation]:
        """One :class:`Generation` per prompt, in order; cached answers are not asked for
        again. ``on_result(i, generation)`` is called as each arrives."""
        out: list[Generation | None] = [None] * len(prompts)
        todo = []
        for i, p in enumerate(prompts):
            text = self._cached(self.key(p))
            if text is not None:
                out[i] = Generation(text, cached=True)
                self.stats.add(cache_hits=1)
                if on_result:
                    on_result(i, out[i])
            else:
                todo.append(i)
        ask = self._ask_server if self.url is not None else self._ask_local

        def one(i: int) -> Generation:
            try:
                text = ask(prompts[i])
            except LLMError as err:
                self.stats.add(failures=1)
                return Generation(None, str(err))
            self._store(self.key(prompts[i]), prompts[i], text)
            return Generation(text)

        bar = tqdm(total=len(todo), desc=desc, unit="prompt",
                   disable=not self.progress or not todo)
        if self.url is None:  # one local model: one at a time
            for i in todo:
                out[i] = one(i)
                bar.update()
                if on_result:
                    on_result(i, out[i])
        else:
            with ThreadPoolExecutor(max_workers=self.concurrency) as pool:
                futures = {pool.submit(one, i): i for i in todo}
                for f in as_completed(futures):
                    i = futures[f]
                    out[i] = f.result()
                    bar.update()
                    if on_result:
                        on_result(i, out[i])
        bar.close()
        return [g for g in out if g is not None]


PROMPTS = Path(__file__).resolve().parent / "prompts"
_FIELD = re.compile(r"\{([a-z_]+)\}")


@dataclass
class PromptTemplate:
    """A prompt file: ``system`` text, a ``user`` template whose ``{field}`` placeholders are
    filled per item, and in-context ``examples`` (each with the fields and its ``output``),
    given to the model as earlier user and assistant turns. Shipped ones live in
    ``hf_real3d/prompts/``; a user's file of the same shape replaces them."""

    path: Path
    system: str
    user: str
    examples: list[dict[str, Any]]

    @classmethod
    def load(cls, path: str | os.PathLike, *, required: Sequence[str],
             optional: Sequence[str] = ()) -> PromptTemplate:
        """Read and check a template: its user prompt must hold every ``required`` field and
        no field outside ``required`` and ``optional``."""
        path = Path(path)
        if not path.is_file():
            raise FileNotFoundError(f"{path}: no such prompt template")
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except ValueError as err:
            raise ValueError(f"{path}: not a JSON prompt template ({err})") from None
        if not isinstance(data, dict) or not isinstance(data.get("user"), str):
            raise ValueError(f"{path}: a prompt template is a JSON object with a 'user' "
                             "template (and optional 'system' and 'examples')")
        have = set(_FIELD.findall(data["user"]))
        missing = [f for f in required if f not in have]
        unknown = sorted(have - set(required) - set(optional))
        if missing or unknown:
            raise ValueError(f"{path}: the user template "
                             + (f"lacks {', '.join('{' + f + '}' for f in missing)}"
                                if missing else "")
                             + ("; " if missing and unknown else "")
                             + (f"has unknown field(s) {', '.join('{' + f + '}' for f in unknown)}"
                                if unknown else "")
                             + f"; it fills {', '.join('{' + f + '}' for f in required)}"
                             + (f" and may use {', '.join('{' + f + '}' for f in optional)}"
                                if optional else ""))
        examples = data.get("examples") or []
        for i, ex in enumerate(examples):
            lacking = [f for f in have if f not in ex] + ([] if "output" in ex else ["output"])
            if lacking:
                raise ValueError(f"{path}: example {i} lacks {lacking}")
        return cls(path, str(data.get("system") or ""), data["user"], list(examples))

    def fill(self, **fields: Any) -> str:
        return _FIELD.sub(lambda m: str(fields.get(m.group(1), m.group(0))), self.user)

    def messages(self, **fields: Any) -> list[dict[str, str]]:
        """The chat: system, then each example's user and assistant turns, then the item."""
        out = [{"role": "system", "content": self.system}] if self.system else []
        for ex in self.examples:
            reply = ex["output"] if isinstance(ex["output"], str) else json.dumps(ex["output"])
            out += [{"role": "user", "content": self.fill(**ex)},
                    {"role": "assistant", "content": reply}]
        return out + [{"role": "user", "content": self.fill(**fields)}]
