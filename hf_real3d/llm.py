"""One text-generation client for every step that asks a language model (the text-only judge,
rotation rewriting): an OpenAI-compatible server or a local transformers folder.

One backend class per route, and the reply cache as a wrapper around either:

* :class:`ServerBackend` (``url=`` + ``model=``): vLLM, TGI, ``transformers serve``, Ollama or
  a hosted API, through the ``openai`` package (which ``transformers[serving]`` brings; it works
  with ``HF_HUB_OFFLINE=1``, where ``huggingface_hub.InferenceClient`` refuses every request).
  The API key is read from the environment variable ``api_key_env`` names, and is never written
  to a log, a card or the cache. 429, 5xx, timeouts and dropped connections are retried by the
  ``openai`` client itself (``max_retries``, exponential backoff, ``Retry-After`` honoured).
* :class:`LocalBackend` (``path=``): a causal LM folder with its tokenizer (its chat template
  when it has one), run in this process, ``concurrency`` prompts per batch.
* :class:`CachedBackend`: every reply on disk under a key of (model, what the server says of
  it, the cache tag, prompt, decoding, requested output format), one small file each, written
  atomically the moment it arrives: a rerun sends no request and gives the same output, and a
  run stopped midway keeps every reply received.

:class:`LLMClient` runs many prompts through them: at most ``concurrency`` requests in flight;
Ctrl-C or SIGTERM stops within seconds (no new request is sent, the replies in flight for a
few seconds more are kept); ``max_failures`` consecutive failures stop the run; a reply a
step cannot use may be asked again with the next seed (``reask``); structured output
(``response_format`` with a JSON schema, else ``json_object``) is requested when the step
gives a schema, and a server that refuses it gets plain prompts for the rest of the run. The
requests can also go through the OpenAI Batch API's JSONL format (:meth:`LLMClient.write_batch`,
``batch_in=``), which ``vllm run-batch`` reads and writes. A progress bar shows the work and
the failures.
"""

from __future__ import annotations

import collections
import hashlib
import json
import os
import queue
import random
import re
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from tqdm.auto import tqdm

from hf_real3d._io import FormatError, cache_root, read_json, read_jsonl, write_jsonl
from hf_real3d._runtime import Terminated

__all__ = ["LLMError", "Decoding", "Generation", "Reply", "LLMClient", "ServerBackend",
           "LocalBackend", "CachedBackend", "llm_cache_dir", "Prompt", "PromptTemplate",
           "PROMPTS", "public_url", "first_json_object", "STRUCTURED", "render_prompt",
           "offline_step", "usage_totals", "seeded_subset"]

#: a prompt: a chat (a list of {"role", "content"} messages) or plain text (a completion)
Prompt = list[dict[str, str]] | str

#: ``structured=`` settings: ``auto`` asks for the JSON schema, falls back to ``json_object``
#: and then to plain prompts when the server refuses; the others ask for one format only
STRUCTURED = ("auto", "json_schema", "json_object", "none")

#: engines whose /models card says they batch requests (``owned_by``): the default
#: concurrency is high for them
BATCHING_SERVERS = ("vllm", "sglang", "tgi", "text-generation-inference", "lmdeploy",
                    "tensorrt-llm", "trtllm", "llamacpp")
CONCURRENCY_BATCHING, CONCURRENCY_OTHER, LOCAL_BATCH = 64, 8, 8
#: seconds a stopped run waits for the replies in flight (each is cached as it arrives)
STOP_GRACE = 3.0


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
class Reply:
    """What a model answered to one request: its text, why it stopped (``stop``, ``length``:
    cut at ``max_tokens``) and the tokens it used (``prompt_tokens``, ``completion_tokens``)."""

    text: str
    finish_reason: str | None = None
    usage: dict[str, int] = field(default_factory=dict)

    @property
    def cut(self) -> bool:
        return self.finish_reason == "length"

    def to_dict(self) -> dict[str, Any]:
        return {"text": self.text, "finish_reason": self.finish_reason, "usage": self.usage}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Reply:
        return cls(str(d["text"]), d.get("finish_reason"), dict(d.get("usage") or {}))


@dataclass
class Attempt:
    """One request made for an item (or found in the cache): its seed, the output format it
    asked for, the reply or the error, and why the step could not use the reply."""

    seed: int
    structured: str
    reply: Reply | None = None
    error: str | None = None
    reason: str | None = None
    cached: bool = False

    def to_dict(self) -> dict[str, Any]:
        r = self.reply
        return {"seed": self.seed, "structured": self.structured, "cached": self.cached,
                "finish_reason": r.finish_reason if r else None,
                "prompt_tokens": int(r.usage.get("prompt_tokens", 0)) if r else 0,
                "completion_tokens": int(r.usage.get("completion_tokens", 0)) if r else 0,
                "error": self.error, "reason": self.reason}


@dataclass
class Generation:
    """One prompt's outcome: the last reply's text (None when no reply came: ``error`` says
    why), ``reason`` when the step could not use it, and every attempt."""

    text: str | None
    error: str | None = None
    cached: bool = False
    attempts: list[Attempt] = field(default_factory=list)
    reason: str | None = None

    @property
    def reply(self) -> Reply | None:
        return self.attempts[-1].reply if self.attempts else None

    @property
    def finish_reason(self) -> str | None:
        return self.reply.finish_reason if self.reply else None

    @property
    def usage(self) -> dict[str, int]:
        """Tokens over every attempt."""
        out: dict[str, int] = collections.Counter()
        for a in self.attempts:
            if a.reply:
                out.update({k: int(v) for k, v in a.reply.usage.items()
                            if k in ("prompt_tokens", "completion_tokens")})
        return dict(out)

    @property
    def ok(self) -> bool:
        return self.text is not None and self.reason is None


@dataclass
class _Stats:
    requests: int = 0  # HTTP requests (retries included) or local generations
    cache_hits: int = 0
    retries: int = 0
    failures: int = 0
    unusable: int = 0
    prompt_tokens: int = 0  # spent in this run (not the cache's)
    completion_tokens: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def add(self, **kw: int) -> None:
        with self.lock:
            for k, v in kw.items():
                setattr(self, k, getattr(self, k) + v)

    def as_dict(self) -> dict[str, int]:
        return {k: getattr(self, k) for k in ("requests", "cache_hits", "retries", "failures",
                                              "unusable", "prompt_tokens",
                                              "completion_tokens")}


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


def first_json_object(text: str) -> Any:
    """The first JSON object in ``text`` ("Sure! {...}", a fenced block): reading it is
    parsing, not guessing. Raises ValueError when there is none."""
    dec = json.JSONDecoder()
    at = text.find("{")
    while at >= 0:
        try:
            value, _ = dec.raw_decode(text, at)
        except ValueError:
            at = text.find("{", at + 1)
            continue
        if isinstance(value, dict):
            return value
        at = text.find("{", at + 1)
    raise ValueError("no JSON object")


def _write_kept(path: Path, obj: Any) -> None:
    """Write JSON atomically, even while the process stops: a reply received is kept (the
    library's ``write_json`` commits nothing once a signal asked to stop). The temporary
    file is this thread's own, made with the umask's permissions as ``open()`` does."""
    data = json.dumps(obj).encode()
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o666)
    try:
        try:
            os.write(fd, data)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


# --- what the client may say (an error a server gave, classified) -----------------------


class _Refused(Exception):
    """The server refused the requested output format (HTTP 400/422 naming it)."""


class _Fatal(Exception):
    """Every further request would fail the same way (a refused key): stop the run."""


class _Stopped(Exception):
    """The run was asked to stop: no new request."""


class _ItemError(Exception):
    """This item failed (its reason); the run goes on."""


def _err_text(err: Exception) -> str:
    """A server error's own message (the ``message`` of its JSON body when it has one)."""
    body = getattr(err, "body", None)
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        body = body["error"]
    msg = body.get("message") if isinstance(body, dict) else None
    if not isinstance(msg, str) or not msg:
        msg = getattr(err, "message", None) or str(err)
        msg = re.sub(r"^Error code: \d+ - ", "", str(msg))
    return " ".join(str(msg).split())[:200]


def _not_completion(resp, chat: bool) -> str | None:
    """Why a 200 reply is not a (chat) completion, or None."""
    ctype = resp.headers.get("content-type", "")
    try:
        body = json.loads(resp.content)
    except ValueError:
        head = " ".join(resp.text[:80].split())
        kind = "an HTML page" if "html" in ctype or head.lstrip().startswith("<") else \
            f"not JSON ({ctype or 'no content type'})"
        return (f"HTTP 200 but not a completion: {kind}, {head!r}; a proxy or login portal "
                "may be answering in place of the server")
    if not isinstance(body, dict):
        return f"HTTP 200 but not a completion: a JSON {type(body).__name__}"
    choices = body.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        return "HTTP 200 but the reply has no choices" + (
            f" (it says {_err_text(Exception(json.dumps(body)))})" if body else "")
    first = choices[0]
    if chat:
        msg = first.get("message")
        if not isinstance(msg, dict) or not isinstance(msg.get("content"), str | None):
            return "HTTP 200 but the first choice has no message text"
    elif not isinstance(first.get("text"), str | None):
        return "HTTP 200 but the first choice has no text"
    return None


def reply_from_body(body: Any, chat: bool) -> Reply:
    """A :class:`Reply` from a (chat) completion's JSON body (checked by the caller)."""
    first = body["choices"][0]
    text = (first["message"].get("content") if chat else first.get("text")) or ""
    usage = body.get("usage") if isinstance(body.get("usage"), dict) else {}
    return Reply(text.strip(), first.get("finish_reason"),
                 {k: int(usage[k]) for k in ("prompt_tokens", "completion_tokens")
                  if isinstance(usage.get(k), int)})


def _names_format(message: str) -> bool:
    return bool(re.search(r"response_format|json_schema|json_object|guided|structured",
                          message, re.I))


# --- the routes ------------------------------------------------------------------------


class ServerBackend:
    """An OpenAI-compatible server through the ``openai`` client (its retries, its timeout,
    one connection pool shared by the worker threads)."""

    route = "server"

    def __init__(self, url: str | None, model: str, *, api_key_env: str | None = None,
                 timeout: float = 60.0, retries: int = 4, probe: bool = True):
        if url is None:  # batch files only: no server is asked from here
            probe = False
        elif urlsplit(url).scheme not in ("http", "https"):
            raise ValueError(f"`llm_url` {url!r}: expected an http:// or https:// base URL, "
                             "e.g. http://127.0.0.1:8000/v1")
        if not model:
            raise ValueError(f"`llm_url` {url}: name the model the server serves (`llm_model`)")
        if api_key_env is not None and not os.environ.get(api_key_env):
            raise LLMError(f"`llm_api_key_env` {api_key_env}: that environment variable is "
                           "not set (it should hold the API key)")
        self.url, self.model, self.api_key_env = url, model, api_key_env
        self.timeout, self.retries, self.probe_models = timeout, retries, probe
        self.card: dict[str, Any] | None = None  # what GET /models says of the model
        self._client = None
        self._local = threading.local()  # requests sent by this thread's current call
        self.stop = threading.Event()
        self.sent = 0
        self._lock = threading.Lock()

    @property
    def where(self) -> str:
        return public_url(self.url) if self.url else "(no server: batch files)"

    def base_identity(self) -> dict[str, Any]:
        return {"route": "server", "model": self.model}

    def identity(self) -> dict[str, Any]:
        return {"served": self.card}

    def _on_request(self, request) -> None:  # an httpx event hook: every request, retries too
        if self.stop.is_set():
            raise _Stopped()
        self._local.count = getattr(self._local, "count", 0) + 1
        with self._lock:
            self.sent += 1

    def client(self):
        if self._client is None:
            try:
                # the [llm] extra (transformers[serving] brings it): only for a server
                import openai
            except ImportError:
                raise ImportError("a server route needs the openai package: pip install "
                                  "'hf_real3d[llm]' (make install installs it)") from None
            key = os.environ[self.api_key_env] if self.api_key_env else "EMPTY"
            http = openai.DefaultHttpxClient(event_hooks={"request": [self._on_request]})
            self._client = openai.OpenAI(base_url=self.url or "http://127.0.0.1:9/v1",
                                         api_key=key, timeout=self.timeout,
                                         max_retries=self.retries, http_client=http)
        return self._client

    def _key_hint(self) -> str:
        if self.api_key_env:
            return (f"the key in ${self.api_key_env} (--llm_api_key_env) was refused; put the "
                    "right key there")
        return ("the server wants an API key: put it in an environment variable and name the "
                "variable with --llm_api_key_env")

    def check(self, say: Callable[[str], None]) -> None:
        """Ask GET /models (unless ``probe`` is off): the server answers and lists the model;
        what it says of the model (id, created, owned_by, ...) joins the cache key."""
        if not self.probe_models:
            say(f"not asking {self.where} for its models (--llm_no_probe): the cache key holds "
                f"the model name {self.model!r} and the cache tag only")
            return
        import openai  # client() reported a missing package already

        client = self.client()
        self.stop.clear()
        say(f"asking {self.where} for its models (GET /models; --llm_no_probe skips this) ...")
        where = self.where
        try:
            resp = client.with_options(max_retries=0).models.with_raw_response.list() \
                .http_response
        except openai.APIConnectionError as err:
            raise LLMError(f"`llm_url` {where}: no server answers there ({err.__class__.__name__}:"
                           f" {_err_text(err)}); start it or fix the URL") from None
        except openai.APIStatusError as err:
            if err.status_code in (401, 403):
                raise LLMError(f"`llm_url` {where}: GET /models answered HTTP {err.status_code}"
                               f": {self._key_hint()}") from None
            raise LLMError(f"`llm_url` {where}: not an OpenAI-compatible API (GET /models "
                           f"answered HTTP {err.status_code}); give its base URL, e.g. "
                           "http://HOST:PORT/v1") from None
        try:
            data = json.loads(resp.content)
            cards = data["data"]
            ids = [c["id"] for c in cards]
        except (ValueError, KeyError, TypeError):
            head = " ".join(resp.text[:80].split())
            raise LLMError(f"`llm_url` {where}: GET /models answered HTTP {resp.status_code} "
                           f"but not a model list ({head!r}); give the API's base URL (e.g. "
                           "http://HOST:PORT/v1); a proxy or login portal may be answering"
                           ) from None
        if self.model not in ids:
            raise LLMError(f"`llm_model` {self.model!r}: {where} does not serve it (it lists "
                           f"{ids}); pick one of those")
        card = next(c for c in cards if c["id"] == self.model)
        self.card = {k: card[k] for k in ("id", "created", "owned_by", "root", "parent",
                                          "max_model_len") if card.get(k) is not None}
        # vLLM stamps `created` with the time of the request: not the model's, so not a key
        created = self.card.get("created")
        if isinstance(created, int | float) and abs(time.time() - created) < 120:
            self.card.pop("created")
        details = ", ".join(f"{k} {v}" for k, v in self.card.items() if k != "id")
        say(f"{where} serves {self.model!r} ({details or 'no details'})")

    def batches(self) -> bool:
        """Whether the server says it batches requests (vLLM, SGLang, TGI ...)."""
        card = self.card or {}
        owner = str(card.get("owned_by", "")).lower()
        return any(b in owner for b in BATCHING_SERVERS) or "max_model_len" in card

    def body(self, prompt: Prompt, d: Decoding, response_format: dict | None) -> dict:
        body: dict[str, Any] = {"model": self.model, "temperature": d.temperature,
                                "seed": d.seed, "max_tokens": d.max_tokens}
        body["messages" if isinstance(prompt, list) else "prompt"] = prompt
        if response_format is not None:
            body["response_format"] = response_format
        return body

    def ask(self, prompt: Prompt, d: Decoding, response_format: dict | None) -> Reply:
        import openai  # the server route's package (its errors)

        client = self.client()
        chat = isinstance(prompt, list)
        kw = self.body(prompt, d, response_format)
        self._local.count = 0
        try:
            if chat:
                raw = client.chat.completions.with_raw_response.create(**kw)
            else:
                raw = client.completions.with_raw_response.create(**kw)
        except openai.APIStatusError as err:
            tries = self._local.count
            if err.status_code in (401, 403):
                raise _Fatal(f"HTTP {err.status_code} from {self.where}: {self._key_hint()}") \
                    from None
            message = _err_text(err)
            if response_format is not None and err.status_code in (400, 422) and \
                    _names_format(message):
                raise _Refused(f"HTTP {err.status_code}: {message}") from None
            raise _ItemError(f"HTTP {err.status_code}" + (f" after {tries} attempts"
                                                           if tries > 1 else "")
                             + f": {message}") from None
        except openai.APIConnectionError as err:  # timeouts too
            if isinstance(err.__cause__, _Stopped) or self.stop.is_set():
                raise _Stopped() from None
            tries = self._local.count
            what = err.__class__.__name__
            if isinstance(err, openai.APITimeoutError):
                what += f" (no reply within {self.timeout:g} s)"
            raise _ItemError(f"{what} after {tries} attempt(s): {_err_text(err)}") from None
        resp = raw.http_response
        why = _not_completion(resp, chat)
        if why is not None:
            raise _ItemError(why)
        return reply_from_body(json.loads(resp.content), chat)

    def requests_sent(self) -> int:
        """HTTP requests the calling thread's last :meth:`ask` sent (retries included)."""
        return getattr(self._local, "count", 0)

    def describe(self) -> dict[str, Any]:
        out = {"model": self.model, "route": "server"}
        if self.url:
            out["url"] = self.where
        if self.card:
            out["served"] = self.card
        return out


class LocalBackend:
    """A local causal-LM folder run in this process, prompts generated in batches
    (left-padded)."""

    route = "local"

    def __init__(self, path: str | os.PathLike):
        folder = Path(path)
        if not (folder / "config.json").is_file():
            raise LLMError(f"`llm_path` {folder}: no model folder there (no config.json); give "
                           "a local transformers causal-LM folder with its tokenizer")
        weights = sorted(p for p in folder.iterdir() if p.suffix in (".safetensors", ".bin"))
        for p in weights:
            with open(p, "rb") as f:
                head = f.read(64)
            if head.startswith(b"version https://git-lfs"):
                raise LLMError(f"`llm_path` {folder}: {p.name} is a git-lfs pointer file, not "
                               f"the weights; run `git lfs pull` in {folder}")
        self.path = folder
        self.digest = hashlib.sha256(json.dumps(
            [(folder / "config.json").read_text(), [(p.name, p.stat().st_size) for p in weights]]
        ).encode()).hexdigest()[:16]
        self._loaded: tuple[Any, Any] | None = None
        self.stop = threading.Event()

    def base_identity(self) -> dict[str, Any]:
        return {"route": "local", "model": str(self.path.resolve())}

    def identity(self) -> dict[str, Any]:
        return {"weights": self.digest}

    def check(self, say: Callable[[str], None]) -> None:
        self.load()

    def batches(self) -> bool:
        return True

    def load(self) -> tuple[Any, Any]:
        if self._loaded is None:
            # torch and transformers only for a local model
            from transformers import AutoModelForCausalLM, AutoTokenizer

            try:
                tok = AutoTokenizer.from_pretrained(self.path, local_files_only=True)
                model = AutoModelForCausalLM.from_pretrained(self.path, local_files_only=True)
            except (OSError, ValueError) as err:
                raise LLMError(f"`llm_path` {self.path}: not a causal LM with its tokenizer "
                               f"({str(err).splitlines()[0]})") from None
            model.eval()
            self._loaded = (model, tok)
        return self._loaded

    def _ids(self, tok, prompt: Prompt) -> list[int]:
        if isinstance(prompt, str):
            return list(tok(prompt)["input_ids"])
        if getattr(tok, "chat_template", None):
            out = tok.apply_chat_template(prompt, add_generation_prompt=True, tokenize=True)
            return list(out["input_ids"] if isinstance(out, dict) or hasattr(out, "keys")
                        else out)
        # no chat template: the messages' texts, one after the other
        return list(tok("\n\n".join(m["content"] for m in prompt))["input_ids"])

    def ask_many(self, prompts: Sequence[Prompt], d: Decoding) -> list[Reply]:
        """One reply per prompt, generated together."""
        import torch  # a local model only (loaded by load)

        model, tok = self.load()
        ids = [self._ids(tok, p) for p in prompts]
        pad = next((t for t in (tok.pad_token_id, tok.eos_token_id) if t is not None), 0)
        width = max(map(len, ids))
        inputs = torch.tensor([[pad] * (width - len(x)) + x for x in ids])
        mask = torch.tensor([[0] * (width - len(x)) + [1] * len(x) for x in ids])
        torch.manual_seed(d.seed)
        sample = d.temperature > 0
        with torch.no_grad():
            out = model.generate(input_ids=inputs, attention_mask=mask,
                                 max_new_tokens=d.max_tokens, do_sample=sample, pad_token_id=pad,
                                 **({"temperature": d.temperature} if sample else {}))
        eos = model.generation_config.eos_token_id
        eos = set(eos if isinstance(eos, list) else [] if eos is None else [eos])
        replies = []
        for row, x in zip(out[:, width:].tolist(), ids):
            n = next((i for i, t in enumerate(row) if t in eos), None)
            gen = row if n is None else row[:n + 1]  # the end token counts, as servers count it
            finish = "length" if n is None else "stop"
            replies.append(Reply(tok.decode(gen, skip_special_tokens=True).strip(), finish,
                                 {"prompt_tokens": len(x), "completion_tokens": len(gen)}))
        return replies

    def describe(self) -> dict[str, Any]:
        return {"model": str(self.path), "route": "local"}


class CachedBackend:
    """The reply cache around a backend: a folder per (route, model, cache tag) holding
    ``model.json`` and one file per reply, named by its key."""

    def __init__(self, backend: ServerBackend | LocalBackend,
                 folder: str | os.PathLike | None = None, tag: str | None = None):
        self.backend, self.tag = backend, tag
        self.meta = dict(backend.base_identity(), **({"tag": tag} if tag else {}))
        ident = json.dumps(self.meta, sort_keys=True)
        if folder is None:
            h = hashlib.sha256(ident.encode()).hexdigest()[:12]
            folder = llm_cache_dir() / f"{_slug(self.meta['model'])}-{h}"
        self.folder = Path(folder)
        meta = self.folder / "model.json"
        if meta.is_file():
            have = read_json(meta)
            if have != self.meta:
                what = f"{have.get('model')!r} ({have.get('route')}" + (
                    f", tag {have['tag']!r}" if have.get("tag") else "") + ")"
                want = f"{self.meta['model']!r}" + (f" (tag {tag!r})" if tag else "")
                raise LLMError(f"`llm_cache` {self.folder}: a cache of the model {what}, not of "
                               f"{want}; give another cache folder")
        elif self.folder.is_dir() and any(self.folder.iterdir()):
            raise LLMError(f"`llm_cache` {self.folder}: not empty and not a response cache (no "
                           "model.json); give an empty or new folder")
        elif self.folder.exists() and not self.folder.is_dir():
            raise LLMError(f"`llm_cache` {self.folder}: a file, not a folder; give a folder")
        self._made = meta.is_file()
        self._lock = threading.Lock()
        self._dirs: set[str] = set()

    def _make(self) -> None:
        with self._lock:
            if not self._made:  # made at the first reply: a refused run leaves no folder
                self.folder.mkdir(parents=True, exist_ok=True)
                if not (self.folder / "model.json").is_file():
                    _write_kept(self.folder / "model.json", self.meta)
                self._made = True

    def _path(self, key: str) -> Path:
        return self.folder / key[:2] / f"{key}.json"

    def get(self, key: str) -> Reply | None:
        if not self._made:
            return None
        path = self._path(key)
        try:
            return Reply.from_dict(json.loads(path.read_bytes()))
        except FileNotFoundError:
            return None
        except (ValueError, KeyError, TypeError, OSError):  # unreadable: ask again
            return None

    def put(self, key: str, prompt: Prompt, reply: Reply) -> None:
        if not self._made:
            self._make()
        path = self._path(key)
        if key[:2] not in self._dirs:
            path.parent.mkdir(exist_ok=True)
            self._dirs.add(key[:2])
        _write_kept(path, {**reply.to_dict(), "prompt": prompt})

    def remember_card(self, card: dict | None) -> None:
        """What the server said of the model, kept for ``--dry_run`` counts."""
        if card is not None and self._made:
            _write_kept(self.folder / "served.json", card)

    def last_card(self) -> dict | None:
        p = self.folder / "served.json"
        try:
            return json.loads(p.read_bytes()) if p.is_file() else None
        except ValueError:
            return None


# --- the client -------------------------------------------------------------------------


@dataclass
class _Item:
    index: int
    attempt: int = 0
    attempts: list[Attempt] = field(default_factory=list)


class LLMClient:
    """Generate text for many prompts: cached, bounded, retried, stoppable (see the module
    docstring). Give ``url`` and ``model`` (a server) or ``path`` (a local folder).

    ``concurrency``: requests in flight at once (a server) or prompts per batch (a local
    folder); None: 64 for a server whose /models card names a batching engine (vLLM, SGLang,
    TGI ...), 8 otherwise. ``reask``: a reply the step cannot use is asked again with the
    next seed, up to this many times. ``max_failures``: this many failures in a row stop the
    run (0: never). ``structured``: one of :data:`STRUCTURED`. ``probe``: ask GET /models
    first. ``cache_tag``: joins the cache key (a server changed under the same name)."""

    def __init__(self, *, url: str | None = None, model: str | None = None,
                 path: str | os.PathLike | None = None, api_key_env: str | None = None,
                 decoding: Decoding = Decoding(), timeout: float = 60.0,
                 concurrency: int | None = None, retries: int = 4,
                 cache_dir: str | os.PathLike | None = None, cache: bool = True,
                 cache_tag: str | None = None, probe: bool = True, structured: str = "auto",
                 reask: int = 0, max_failures: int = 20, progress: bool = True,
                 say: Callable[[str], None] | None = None, batch: bool = False):
        if url is None and path is None and batch and model:
            pass  # batch files only (--batch_out, --batch_in): the model's name is enough
        elif (url is None) == (path is None):
            raise ValueError("give a server (`llm_url` with `llm_model`) or a local model "
                             "folder (`llm_path`), one of the two")
        if url is not None and not model:
            raise ValueError(f"`llm_url` {url}: name the model the server serves (`llm_model`)")
        if (concurrency is not None and concurrency < 1) or retries < 0 or timeout <= 0:
            raise ValueError(f"`llm_concurrency` {concurrency} must be >= 1, `llm_retries` "
                             f"{retries} >= 0 and `llm_timeout` {timeout} > 0")
        if reask < 0 or max_failures < 0:
            raise ValueError(f"`llm_reask` {reask} and `max_failures` {max_failures} must be "
                             ">= 0 (`max_failures` 0: never stop)")
        if structured not in STRUCTURED:
            raise ValueError(f"`llm_structured` {structured!r}: expected one of {STRUCTURED}")
        if cache_tag is not None and not cache_tag.strip():
            raise ValueError("`llm_cache_tag`: empty; give a word that names this server's "
                             "state (e.g. a date or a model revision)")
        self.backend: ServerBackend | LocalBackend = (
            ServerBackend(url, model, api_key_env=api_key_env, timeout=timeout,
                          retries=retries, probe=probe) if path is None
            else LocalBackend(path))
        self.url, self.model = url, model
        self.path = None if path is None else Path(path)
        self.decoding, self.timeout = decoding, timeout
        self._concurrency, self.retries = concurrency, retries
        self.reask, self.max_failures, self.structured = reask, max_failures, structured
        self.progress = progress
        self.say = say or ((lambda m: print(m, file=sys.stderr, flush=True)) if progress
                           else (lambda m: None))
        self.stats = _Stats()
        self.cache = CachedBackend(self.backend, cache_dir, cache_tag) if cache else None
        self.cache_tag = cache_tag
        self._modes_refused: dict[str, str] = {}  # mode -> the server's refusal
        self._mode_lock = threading.Lock()
        self._checked = False
        self._batch_used = 0
        self.stopped: str | None = None  # why the last run stopped early

    # --- identity, description -------------------------------------------------------

    @property
    def concurrency(self) -> int:
        if self._concurrency is not None:
            return self._concurrency
        if self.backend.route == "local":
            return LOCAL_BATCH
        return CONCURRENCY_BATCHING if self.backend.batches() else CONCURRENCY_OTHER

    def _concurrency_why(self) -> str:
        if self._concurrency is not None:
            return "--llm_concurrency"
        if self.backend.route == "local":
            return "the default batch of a local model"
        return ("default for a server that batches (its /models card)" if self.backend.batches()
                else "default for a server not known to batch")

    @property
    def identity(self) -> dict[str, Any]:
        return {**self.backend.base_identity(), **self.backend.identity(),
                **({"tag": self.cache_tag} if self.cache_tag else {})}

    def describe(self) -> dict[str, Any]:
        """What a card records: the model, where it ran and how it decoded (no key)."""
        out = {**self.backend.describe(), **asdict(self.decoding),
               "concurrency": self.concurrency, "concurrency_from": self._concurrency_why(),
               "reask": self.reask}
        if self.cache_tag:
            out["cache_tag"] = self.cache_tag
        if self.backend.route == "server" and not self.backend.probe_models:
            out["probe"] = False
        return out

    def structured_record(self, asked: bool) -> str:
        """What the record says of structured output this run."""
        if not asked:
            return "not requested"
        if self.backend.route == "local":
            return "none (a local model: plain prompts)"
        if self.structured == "none":
            return "none (--llm_structured none)"
        modes = self._modes()
        now = self._mode(modes)
        refused = "; ".join(f"the server refused {m}: {why}"
                            for m, why in self._modes_refused.items())
        if all(m in self._modes_refused for m in modes):  # one format asked for, refused
            return f"{modes[0]} ({refused}; the items asked with it failed)"
        return now + (f" ({refused}; plain prompts for the rest of the run)" if refused and
                      now == "none" else f" ({refused})" if refused else "")

    def key(self, prompt: Prompt, decoding: Decoding | None = None,
            response_format: dict | None = None) -> str:
        blob = json.dumps({"model": self.identity, "prompt": prompt,
                           "decoding": asdict(decoding or self.decoding),
                           **({"format": response_format} if response_format else {})},
                          sort_keys=True)
        return hashlib.sha256(blob.encode()).hexdigest()

    # --- structured output -------------------------------------------------------------

    def _modes(self) -> list[str]:
        if self.backend.route == "local" or self.structured == "none":
            return ["none"]
        if self.structured == "auto":
            return ["json_schema", "json_object", "none"]
        return [self.structured]

    def _mode(self, modes: list[str]) -> str:
        with self._mode_lock:
            return next((m for m in modes if m not in self._modes_refused), "none")

    def _refuse(self, mode: str, why: str) -> bool:
        """Record that the server refused ``mode``; False when no format is left."""
        with self._mode_lock:
            if mode not in self._modes_refused:
                self._modes_refused[mode] = why
                nxt = next((m for m in self._modes() if m not in self._modes_refused), None)
                self.say(f"the server refused response_format {mode} ({why}); "
                         + (f"every item fails (--llm_structured {mode}; auto falls back)"
                            if nxt is None else f"asking with {nxt} from now on"
                            if nxt != "none" else "plain prompts for the rest of the run"))
            return any(m not in self._modes_refused for m in self._modes())

    @staticmethod
    def _format(mode: str, schema: dict | None) -> dict | None:
        if schema is None or mode == "none":
            return None
        if mode == "json_object":
            return {"type": "json_object"}
        return {"type": "json_schema", "json_schema": {"name": schema.get("title", "reply"),
                                                       "schema": schema, "strict": True}}

    # --- checks ------------------------------------------------------------------------

    def check(self) -> None:
        """Fail before any work when the server does not answer or does not list the model
        (a local folder is loaded here)."""
        self.backend.check(self.say)
        self._checked = True
        if self.cache is not None and self.backend.route == "server":
            self.cache.remember_card(self.backend.card)

    # --- per item --------------------------------------------------------------------------

    def _decoding(self, attempt: int) -> Decoding:
        return replace(self.decoding, seed=self.decoding.seed + attempt) if attempt else \
            self.decoding

    def _lookup(self, prompt: Prompt, attempt: int, schema: dict | None,
                extra: dict[str, Reply] | None = None) -> tuple[Reply, str] | None:
        """A reply to this attempt already at hand (the cache, a batch file), in the order of
        the formats asked for."""
        d = self._decoding(attempt)
        for mode in self._modes() if schema is not None else ["none"]:
            k = self.key(prompt, d, self._format(mode, schema))
            r = extra.get(k) if extra else None
            if r is None and self.cache is not None:
                r = self.cache.get(k)
            if r is not None:
                if extra and k in extra:
                    self._batch_used += 1
                    if self.cache is not None:
                        self.cache.put(k, prompt, r)  # a batch result joins the cache
                return r, mode
        return None

    def _settle(self, item: _Item, reply: Reply, mode: str, cached: bool,
                check: Callable[[int, Reply], str | None] | None) -> bool:
        """Record an attempt's reply; True when the item is done."""
        reason = check(item.index, reply) if check else None
        item.attempts.append(Attempt(self._decoding(item.attempt).seed, mode, reply,
                                     reason=reason, cached=cached))
        if reason is not None and item.attempt < self.reask:
            item.attempt += 1
            return False
        return True

    def _from_hand(self, item: _Item, prompt: Prompt, schema: dict | None, check,
                   extra: dict[str, Reply] | None = None) -> bool:
        """Resolve what the cache (or a batch file) already holds; True when done."""
        while True:
            got = self._lookup(prompt, item.attempt, schema, extra)
            if got is None:
                return False
            self.stats.add(cache_hits=1)
            if self._settle(item, got[0], got[1], True, check):
                return True

    def _ask_one(self, item: _Item, prompt: Prompt, schema: dict | None, check) -> None:
        """Ask (server) until the item is done: its attempts, format fallbacks included."""
        backend = self.backend
        while True:
            modes = self._modes() if schema is not None else ["none"]
            mode = self._mode(modes)
            d = self._decoding(item.attempt)
            if schema is not None and all(m in self._modes_refused for m in modes):
                # --llm_structured asked for one format only, and the server refuses it
                why = self._modes_refused[modes[0]]
                item.attempts.append(Attempt(d.seed, modes[0], error=f"{why} (--llm_structured "
                                             f"{modes[0]}; auto falls back)"))
                self.stats.add(failures=1)
                return
            fmt = self._format(mode, schema)
            try:
                reply = backend.ask(prompt, d, fmt)
            except _Refused as err:
                self.stats.add(requests=backend.requests_sent())
                self._refuse(mode, str(err))
                continue
            except _ItemError as err:
                n = backend.requests_sent()
                self.stats.add(requests=n, retries=max(n - 1, 0), failures=1)
                item.attempts.append(Attempt(d.seed, mode, error=str(err)))
                return
            n = backend.requests_sent()
            self.stats.add(requests=n, retries=max(n - 1, 0),
                           prompt_tokens=reply.usage.get("prompt_tokens", 0),
                           completion_tokens=reply.usage.get("completion_tokens", 0))
            if self.cache is not None:
                self.cache.put(self.key(prompt, d, fmt), prompt, reply)
            if self._settle(item, reply, mode, False, check):
                return
            # a re-ask: its reply may be cached already
            if self._from_hand(item, prompt, schema, check):
                return

    @staticmethod
    def _generation(item: _Item) -> Generation:
        last = item.attempts[-1]
        if last.reply is None:
            return Generation(None, last.error, False, item.attempts)
        return Generation(last.reply.text, None, last.cached, item.attempts, last.reason)

    # --- many prompts ----------------------------------------------------------------------

    def pending(self, prompts: Sequence[Prompt], *, schema: dict | None = None,
                check: Callable[[int, Reply], str | None] | None = None
                ) -> list[tuple[int, str, dict]]:
        """(item, key, request body) of each item a run would send a request for now, given
        the cache (for ``--dry_run`` and ``--batch_out``; a re-ask needs the reply before it,
        so only the first missing attempt of each item is listed; items with the same prompt
        share a key)."""
        if self.backend.route == "server":
            # what a live run starts with (the openai package, its client), so that a dry
            # run reports a missing package and costs what a live run's start-up costs
            self.backend.client()
            if self.cache is not None and self.backend.card is None and \
                    self.backend.probe_models:
                self.backend.card = self.cache.last_card()  # the last probe's, for the keys
        out = []
        for i, p in enumerate(prompts):
            item = _Item(i)
            if self._from_hand(item, p, schema, check):
                continue
            mode = self._mode(self._modes() if schema is not None else ["none"])
            d = self._decoding(item.attempt)
            fmt = self._format(mode, schema)
            body = self.backend.body(p, d, fmt) if self.backend.route == "server" else \
                {"prompt": p, **asdict(d)}
            out.append((i, self.key(p, d, fmt), body))
        return out

    def write_batch(self, path: str | os.PathLike, prompts: Sequence[Prompt], *,
                    schema: dict | None = None, check=None) -> tuple[int, int]:
        """The requests a run would send, as OpenAI Batch API JSONL (what ``vllm run-batch
        -i`` reads), written atomically; returns (requests, items that need one).
        ``custom_id`` is the cache key."""
        if self.backend.route != "server":
            raise ValueError("`batch_out`: a batch file is for a server (`llm_url`, "
                             "`llm_model`), not a local folder")
        need = self.pending(prompts, schema=schema, check=check)
        todo = list({k: body for _, k, body in need}.items())
        write_jsonl(path, ({"custom_id": k, "method": "POST",
                            "url": "/v1/chat/completions" if "messages" in body
                            else "/v1/completions", "body": body} for k, body in todo))
        return len(todo), len(need)

    @staticmethod
    def read_batch(path: str | os.PathLike) -> tuple[dict[str, Reply], dict[str, str]]:
        """(replies, errors) by ``custom_id`` from an OpenAI Batch API output file (what
        ``vllm run-batch -o`` writes). A line of another shape is a FormatError naming it."""
        path = Path(path)
        if not path.is_file():
            raise FileNotFoundError(f"`batch_in` {path}: no such file (the output of the batch "
                                    "run, e.g. vllm run-batch -o FILE)")
        replies: dict[str, Reply] = {}
        errors: dict[str, str] = {}
        for n, row in read_jsonl(path):
            cid = row.get("custom_id")
            resp = row.get("response")
            if not isinstance(cid, str) or not (isinstance(resp, dict) or row.get("error")):
                raise FormatError(f"`batch_in` {path}: line {n} is not a Batch API result "
                                  "(custom_id with response or error); give the output file of "
                                  "the batch run")
            if row.get("error") and not resp:
                err = row["error"]
                errors[cid] = "batch error: " + (err.get("message", json.dumps(err))
                                                 if isinstance(err, dict) else str(err))
                continue
            status = resp.get("status_code", 200)
            body = resp.get("body")
            if status != 200:
                msg = body.get("error", body) if isinstance(body, dict) else body
                msg = msg.get("message", msg) if isinstance(msg, dict) else msg
                errors[cid] = f"batch result HTTP {status}: {' '.join(str(msg).split())[:200]}"
                continue
            chat = isinstance(body, dict) and isinstance((body.get("choices") or [{}])[0], dict) \
                and "message" in (body.get("choices") or [{}])[0]

            class _R:  # the shape _not_completion reads
                headers = {"content-type": "application/json"}
                content = json.dumps(body).encode()
                text = json.dumps(body)[:200]

            why = _not_completion(_R, chat)
            if why is not None:
                errors[cid] = f"batch result: {why}"
                continue
            replies[cid] = reply_from_body(body, chat)
        return replies, errors

    def generate(self, prompts: Sequence[Prompt], *, desc: str = "asking the model",
                 items: Sequence[str] | None = None, schema: dict | None = None,
                 check: Callable[[int, Reply], str | None] | None = None,
                 on_result: Callable[[int, Generation], None] | None = None,
                 batch_in: str | os.PathLike | None = None) -> list[Generation]:
        """One :class:`Generation` per prompt, in order; what the cache holds is not asked
        again. ``check(i, reply)`` says why prompt ``i``'s reply cannot be used (None: it
        can); such a reply is asked again with the next seed (``reask``). ``schema``: the
        JSON schema of the reply, asked as structured output. ``items`` name the prompts in
        messages. ``batch_in``: replies from a Batch API output file, in place of a server.
        ``on_result(i, generation)`` is called as each arrives."""
        self.stopped = None
        names = list(items) if items is not None else [f"prompt {i}" for i in range(len(prompts))]
        if len(names) != len(prompts):
            raise ValueError(f"{len(names)} item names for {len(prompts)} prompts")
        if not self._checked and batch_in is None:
            self.check()
        extra: dict[str, Reply] | None = None
        batch_errors: dict[str, str] = {}
        self._batch_used = 0
        if batch_in is not None:
            extra, batch_errors = self.read_batch(batch_in)
        state = [_Item(i) for i in range(len(prompts))]
        out: list[Generation | None] = [None] * len(prompts)
        todo = []
        for it in state:
            if self._from_hand(it, prompts[it.index], schema, check, extra):
                out[it.index] = self._generation(it)
                if on_result:
                    on_result(it.index, out[it.index])
            else:
                todo.append(it)
        if batch_in is not None:
            used = self._batch_used
            for it in todo:
                d = self._decoding(it.attempt)
                keys = [self.key(prompts[it.index], d, self._format(m, schema))
                        for m in (self._modes() if schema is not None else ["none"])]
                err = next((batch_errors[k] for k in keys if k in batch_errors), None)
                used += err is not None
                it.attempts.append(Attempt(d.seed, "none", error=err or (
                    f"no result for it in --batch_in {batch_in} (write its request with "
                    "--batch_out and run the batch again)")))
                self.stats.add(failures=1)
                out[it.index] = self._generation(it)
            if todo and not used:
                n = len(extra or {}) + len(batch_errors)
                raise LLMError(f"`batch_in` {batch_in}: none of its {n} result(s) answers a "
                               "request of this run (another run's file, or other "
                               "settings: model, prompt, decoding, `llm_cache_tag`)")
            return [g for g in out if g is not None]
        if todo:
            try:
                self._run(todo, prompts, names, out, desc, schema, check, on_result)
            finally:
                if self.cache is not None and self.backend.route == "server":
                    self.cache.remember_card(self.backend.card)
        return [g for g in out if g is not None]

    def _run(self, todo: list[_Item], prompts, names, out, desc, schema, check,
             on_result) -> None:
        bar = tqdm(total=len(todo), desc=desc, unit="prompt",
                   disable=not self.progress, dynamic_ncols=True)
        failed = unusable = streak = 0
        last_error = ""
        received = 0

        def done(it: _Item) -> None:
            nonlocal failed, unusable, streak, last_error, received
            g = self._generation(it)
            out[it.index] = g
            received += any(a.reply is not None and not a.cached for a in it.attempts)
            if g.text is None:
                failed += 1
                streak += 1
                last_error = f"{names[it.index]}: {g.error}"
                if failed == 1:
                    bar.write(f"first failure: {last_error}", file=sys.stderr)
            else:
                streak = 0
                if g.reason is not None:
                    unusable += 1
                    self.stats.add(unusable=1)
            if failed or unusable:
                bar.set_postfix_str(f"failed {failed}, unusable {unusable}", refresh=False)
            bar.update()
            if on_result:
                on_result(it.index, g)
            if self.max_failures and streak >= self.max_failures:
                raise LLMError(f"stopped after {streak} failures in a row (`max_failures` "
                               f"{self.max_failures}); the last: {last_error}. The replies "
                               f"received ({received}) are cached: fix the cause and run the "
                               "same command again")

        try:
            if self.backend.route == "local":
                self._run_local(todo, prompts, schema, check, done)
            else:
                self._run_server(todo, prompts, schema, check, done)
        except _Fatal as err:
            self.stopped = str(err)
            raise LLMError(f"{err}; nothing more was asked") from None
        except BaseException as err:
            if isinstance(err, KeyboardInterrupt | Terminated):
                self.stopped = "interrupted"
                bar.write(f"stopped: {received} repl{'y' if received == 1 else 'ies'} received "
                          "and cached; run the same command again to go on (cached replies are "
                          "not asked again)", file=sys.stderr)
            raise
        finally:
            bar.close()

    def _run_local(self, todo, prompts, schema, check, done) -> None:
        backend: LocalBackend = self.backend  # type: ignore[assignment]
        rounds = list(todo)
        while rounds:
            nxt = []
            by_attempt = collections.defaultdict(list)
            for it in rounds:
                by_attempt[it.attempt].append(it)
            for attempt, group in sorted(by_attempt.items()):
                d = self._decoding(attempt)
                for s in range(0, len(group), self.concurrency):
                    chunk = group[s:s + self.concurrency]
                    replies = backend.ask_many([prompts[it.index] for it in chunk], d)
                    self.stats.add(requests=len(chunk))
                    for it, r in zip(chunk, replies):
                        self.stats.add(prompt_tokens=r.usage.get("prompt_tokens", 0),
                                       completion_tokens=r.usage.get("completion_tokens", 0))
                        if self.cache is not None:
                            self.cache.put(self.key(prompts[it.index], d), prompts[it.index], r)
                        if self._settle(it, r, "none", False, check) or \
                                self._from_hand(it, prompts[it.index], schema, check):
                            done(it)
                        else:
                            nxt.append(it)
            rounds = nxt

    def _run_server(self, todo, prompts, schema, check, done) -> None:
        backend: ServerBackend = self.backend  # type: ignore[assignment]
        backend.stop.clear()
        work: queue.SimpleQueue = queue.SimpleQueue()
        for it in todo:
            work.put(it)
        results: queue.SimpleQueue = queue.SimpleQueue()
        lock = threading.Lock()
        streak = [0]  # failures in a row, in the order the results are handed over

        def worker() -> None:
            while not backend.stop.is_set():
                try:
                    it = work.get_nowait()
                except queue.Empty:
                    return
                try:
                    self._ask_one(it, prompts[it.index], schema, check)
                except _Stopped:
                    return
                except BaseException as err:  # noqa: BLE001 - handed to the main thread
                    results.put((it, err))
                    return
                with lock:
                    results.put((it, None))
                    streak[0] = streak[0] + 1 if it.attempts[-1].reply is None else 0
                    if self.max_failures and streak[0] >= self.max_failures:
                        backend.stop.set()  # the main thread stops the run at this result

        threads = [threading.Thread(target=worker, daemon=True, name=f"llm-{n}")
                   for n in range(min(self.concurrency, len(todo)))]
        for t in threads:
            t.start()
        left = len(todo)
        try:
            while left:
                try:
                    it, err = results.get(timeout=0.2)
                except queue.Empty:
                    if not any(t.is_alive() for t in threads) and results.empty():
                        raise LLMError("the request threads ended before every prompt was "
                                       "asked; run the same command again") from None
                    continue
                if err is not None:
                    raise err
                left -= 1
                done(it)
        except BaseException:
            backend.stop.set()  # no new request from here on
            deadline = time.monotonic() + STOP_GRACE
            for t in threads:  # the replies in flight are cached as they arrive
                t.join(max(0.0, deadline - time.monotonic()))
            raise


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

    @property
    def fields(self) -> set[str]:
        return set(_FIELD.findall(self.user))

    def fill(self, **fields: Any) -> str:
        return _FIELD.sub(lambda m: str(fields.get(m.group(1), m.group(0))), self.user)

    def messages(self, *, note: str = "", **fields: Any) -> list[dict[str, str]]:
        """The chat: system, then each example's user and assistant turns, then the item.
        ``note``: a line added to the item's turn (where the template has no field for it)."""
        out = [{"role": "system", "content": self.system}] if self.system else []
        for ex in self.examples:
            reply = ex["output"] if isinstance(ex["output"], str) else json.dumps(ex["output"])
            out += [{"role": "user", "content": self.fill(**ex)},
                    {"role": "assistant", "content": reply}]
        text = self.fill(**fields)
        return out + [{"role": "user", "content": text + (f"\n{note}" if note else "")}]


def seeded_subset(n: int, limit: int | None, seed: int) -> list[int]:
    """Indices of ``limit`` of ``n`` items drawn with ``seed``, in their order (all when
    ``limit`` is None or not smaller than ``n``)."""
    if limit is None or limit >= n:
        return list(range(n))
    return sorted(random.Random(seed).sample(range(n), limit))


def render_prompt(prompt: Prompt) -> str:
    """A prompt as text: each chat turn after its role."""
    if isinstance(prompt, str):
        return prompt
    return "\n".join(f"[{m['role']}] {m['content']}" for m in prompt)


def offline_step(client: LLMClient, prompts: Sequence[Prompt], names: Sequence[str], *,
                 schema: dict | None = None, check=None, dry_run: bool = False,
                 batch_out: str | os.PathLike | None = None) -> dict[str, Any] | None:
    """``--dry_run`` (what would be asked, nothing sent) or ``--batch_out`` (the requests as a
    Batch API file, nothing sent); None for a live run."""
    if dry_run:
        todo = client.pending(prompts, schema=schema, check=check)
        return {"dry_run": True, "prompts": len(prompts),
                "requests": len({k for _, k, _ in todo}), "cached": len(prompts) - len(todo),
                "show": [(names[i], prompts[i]) for i, _, _ in todo]}
    if batch_out is not None:
        n, items = client.write_batch(batch_out, prompts, schema=schema, check=check)
        return {"batch_out": str(batch_out), "prompts": len(prompts), "requests": n,
                "cached": len(prompts) - items}
    return None


def usage_totals(generations: Sequence[Generation]) -> dict[str, Any]:
    """Tokens, finish reasons and attempts over ``generations`` (cached replies included:
    what the replies cost when they were made)."""
    tokens: collections.Counter = collections.Counter()
    finish: collections.Counter = collections.Counter()
    attempts = 0
    for g in generations:
        tokens.update(g.usage)
        attempts += len(g.attempts)
        for a in g.attempts:
            if a.reply is not None:
                finish[str(a.reply.finish_reason)] += 1
    return {"prompt_tokens": tokens.get("prompt_tokens", 0),
            "completion_tokens": tokens.get("completion_tokens", 0),
            "finish_reasons": dict(finish), "attempts": attempts}
