"""An OpenAI-compatible server (vLLM, TGI, ``transformers serve``, Ollama, a hosted API) as a
backend, and the OpenAI wire format (request bodies, replies), through the ``openai`` package
(it works with ``HF_HUB_OFFLINE=1``, where ``InferenceClient`` refuses every request). The API
key is read from the variable ``llm_api_key_env`` names, never written anywhere; 429, 5xx,
timeouts and dropped connections are retried by the ``openai`` client itself (backoff,
``Retry-After`` honoured), one connection pool shared by the worker threads."""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Callable, Sequence
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from hf_real3d.llm.base import (
    Backend,
    Decoding,
    Fatal,
    FormatRefused,
    ItemError,
    LLMError,
    Prompt,
    Reply,
    Stopped,
)

__all__ = ["ServerBackend", "not_completion", "reply_from_body", "request_body"]

#: engines whose /models card says they batch requests (``owned_by``): the default
#: concurrency is high for them
BATCHING_SERVERS = ("vllm", "sglang", "tgi", "text-generation-inference", "lmdeploy",
                    "tensorrt-llm", "trtllm", "llamacpp")
CONCURRENCY_BATCHING, CONCURRENCY_OTHER = 64, 8


def public_url(url: str) -> str:
    """``url`` without user name, password or query (what a card or a log may show)."""
    p = urlsplit(url)
    return urlunsplit((p.scheme, p.hostname + (f":{p.port}" if p.port else "")
                       if p.hostname else p.netloc, p.path, "", ""))


def request_body(model: str, prompt: Prompt, d: Decoding, response_format: dict | None
                 ) -> dict[str, Any]:
    """An OpenAI (chat) completion request's body."""
    body: dict[str, Any] = {"model": model, "temperature": d.temperature, "seed": d.seed,
                            "max_tokens": d.max_tokens}
    body["messages" if isinstance(prompt, list) else "prompt"] = prompt
    if response_format is not None:
        body["response_format"] = response_format
    return body


def err_text(err: Exception) -> str:
    """A server error's own message (the ``message`` of its JSON body when it has one)."""
    body = getattr(err, "body", None)
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        body = body["error"]
    msg = body.get("message") if isinstance(body, dict) else None
    if not isinstance(msg, str) or not msg:
        msg = getattr(err, "message", None) or str(err)
        msg = re.sub(r"^Error code: \d+ - ", "", str(msg))
    return " ".join(str(msg).split())[:200]


def not_completion(content: bytes, ctype: str, chat: bool) -> str | None:
    """Why a 200 reply's body is not a (chat) completion, or None."""
    try:
        body = json.loads(content)
    except ValueError:
        head = " ".join(content[:80].decode(errors="replace").split())
        kind = "an HTML page" if "html" in ctype or head.lstrip().startswith("<") else \
            f"not JSON ({ctype or 'no content type'})"
        return (f"HTTP 200 but not a completion: {kind}, {head!r}; a proxy or login portal "
                "may be answering in place of the server")
    if not isinstance(body, dict):
        return f"HTTP 200 but not a completion: a JSON {type(body).__name__}"
    choices = body.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        return "HTTP 200 but the reply has no choices" + (
            f" (it says {err_text(Exception(json.dumps(body)))})" if body else "")
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


class ServerBackend(Backend):
    """An OpenAI-compatible server: ``url`` (its base URL) serving ``model``."""

    def __init__(self, url: str, model: str | None, *, api_key_env: str | None = None,
                 timeout: float = 60.0, retries: int = 4, probe: bool = True,
                 tag: str | None = None):
        super().__init__(tag)
        if urlsplit(url).scheme not in ("http", "https"):
            raise ValueError(f"`llm_url` {url!r}: expected an http:// or https:// base URL, "
                             "e.g. http://127.0.0.1:8000/v1")
        if not model:
            raise ValueError(f"`llm_url` {url}: name the model the server serves (`llm_model`)")
        self.url, self.model, self.api_key_env = url, model, api_key_env
        self.timeout, self.retries, self.probe = timeout, retries, probe
        self.card: dict[str, Any] | None = None  # what GET /models says of the model
        self._client = None

    @property
    def where(self) -> str:
        return public_url(self.url)

    def identity(self) -> dict[str, Any]:
        return {"route": "server", "model": self.model, "served": self.card}

    def describe(self) -> dict[str, Any]:
        out: dict[str, Any] = {"model": self.model, "route": "server", "url": self.where}
        if self.card:
            out["served"] = self.card
        if not self.probe:
            out["probe"] = False
        return out

    def default_concurrency(self) -> tuple[int, str]:
        """64 for a server whose /models card names a batching engine, 8 otherwise."""
        card = self.card or {}
        owner = str(card.get("owned_by", "")).lower()
        if any(b in owner for b in BATCHING_SERVERS) or "max_model_len" in card:
            return CONCURRENCY_BATCHING, "default for a server that batches (its /models card)"
        return CONCURRENCY_OTHER, "default for a server not known to batch"

    def served(self) -> dict[str, Any]:
        return {"served": self.card}

    def assume(self, served: dict[str, Any]) -> None:
        if self.card is None and self.probe:
            self.card = served.get("served")  # the last probe's, for a dry run's keys

    def body(self, prompt: Prompt, d: Decoding, response_format: dict | None) -> dict:
        return request_body(self.model, prompt, d, response_format)

    def _on_request(self, request) -> None:  # an httpx event hook: every request, retries too
        if self.stop.is_set():
            raise Stopped()
        self._local.count = getattr(self._local, "count", 0) + 1

    def prepare(self) -> None:
        """The ``openai`` client (a dry run reports a missing package as a live run does)."""
        self.client()

    def client(self):
        if self._client is None:
            try:
                # the [llm] extra (transformers[serving] brings it): only for a server
                import openai
            except ImportError:
                raise ImportError("a server route needs the openai package: pip install "
                                  "'hf_real3d[llm]' (make install installs it)") from None
            key = os.environ.get(self.api_key_env or "", "") or "EMPTY"
            http = openai.DefaultHttpxClient(event_hooks={"request": [self._on_request]})
            self._client = openai.OpenAI(base_url=self.url, api_key=key, timeout=self.timeout,
                                         max_retries=self.retries, http_client=http)
        return self._client

    def _key_hint(self) -> str:
        if self.api_key_env:
            return (f"the key in ${self.api_key_env} (--llm_api_key_env) was refused; put the "
                    "right key there")
        return ("the server wants an API key: put it in an environment variable and name the "
                "variable with --llm_api_key_env")

    def check(self, say: Callable[[str], None]) -> None:
        """The key's variable is set; GET /models (unless ``probe`` is off) answers and lists
        the model; what it says of the model (id, created, owned_by, ...) joins the key."""
        if self.api_key_env is not None and not os.environ.get(self.api_key_env):
            raise LLMError(f"`llm_api_key_env` {self.api_key_env}: that environment variable "
                           "is not set (it should hold the API key)")
        if not self.probe:
            say(f"not asking {self.where} for its models (--llm_no_probe): the cache key holds "
                f"the model name {self.model!r} and the cache tag only")
            return
        self.stop.clear()
        say(f"asking {self.where} for its models (GET /models; --llm_no_probe skips this) ...")
        resp = self._models()
        try:
            cards = json.loads(resp.content)["data"]
            ids = [c["id"] for c in cards]
        except (ValueError, KeyError, TypeError):
            head = " ".join(resp.text[:80].split())
            raise LLMError(f"`llm_url` {self.where}: GET /models answered HTTP "
                           f"{resp.status_code} but not a model list ({head!r}); give the API's "
                           "base URL (e.g. http://HOST:PORT/v1); a proxy or login portal may be "
                           "answering") from None
        if self.model not in ids:
            raise LLMError(f"`llm_model` {self.model!r}: {self.where} does not serve it (it "
                           f"lists {ids}); pick one of those")
        card = next(c for c in cards if c["id"] == self.model)
        self.card = {k: card[k] for k in ("id", "created", "owned_by", "root", "parent",
                                          "max_model_len") if card.get(k) is not None}
        # vLLM stamps `created` with the time of the request: not the model's, so not a key
        created = self.card.get("created")
        if isinstance(created, int | float) and abs(time.time() - created) < 120:
            self.card.pop("created")
        details = ", ".join(f"{k} {v}" for k, v in self.card.items() if k != "id")
        say(f"{self.where} serves {self.model!r} ({details or 'no details'})")

    def _models(self):
        """GET /models' raw response, or the one-line error naming the URL."""
        import openai  # client() reported a missing package already

        client = self.client()
        try:
            return client.with_options(max_retries=0).models.with_raw_response.list() \
                .http_response
        except openai.APIConnectionError as err:
            raise LLMError(f"`llm_url` {self.where}: no server answers there "
                           f"({err.__class__.__name__}: {err_text(err)}); start it or fix the "
                           "URL") from None
        except openai.APIStatusError as err:
            if err.status_code in (401, 403):
                raise LLMError(f"`llm_url` {self.where}: GET /models answered HTTP "
                               f"{err.status_code}: {self._key_hint()}") from None
            raise LLMError(f"`llm_url` {self.where}: not an OpenAI-compatible API (GET /models "
                           f"answered HTTP {err.status_code}); give its base URL, e.g. "
                           "http://HOST:PORT/v1") from None

    def ask_many(self, prompts: Sequence[Prompt], d: Decoding, response_format: dict | None
                 ) -> list[Reply]:
        """One request per prompt, in this thread (the client keeps many threads)."""
        sent = 0
        out = []
        for p in prompts:
            out.append(self._ask(p, d, response_format))
            sent += self._local.count
        self._local.count = sent
        return out

    def _ask(self, prompt: Prompt, d: Decoding, response_format: dict | None) -> Reply:
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
                raise Fatal(f"HTTP {err.status_code} from {self.where}: {self._key_hint()}") \
                    from None
            message = err_text(err)
            if response_format is not None and err.status_code in (400, 422) and \
                    _names_format(message):
                raise FormatRefused(f"HTTP {err.status_code}: {message}") from None
            raise ItemError(f"HTTP {err.status_code}" + (f" after {tries} attempts"
                                                          if tries > 1 else "")
                            + f": {message}") from None
        except openai.APIConnectionError as err:  # timeouts too
            if isinstance(err.__cause__, Stopped) or self.stop.is_set():
                raise Stopped() from None
            what = err.__class__.__name__
            if isinstance(err, openai.APITimeoutError):
                what += f" (no reply within {self.timeout:g} s)"
            raise ItemError(f"{what} after {self._local.count} attempt(s): {err_text(err)}") \
                from None
        resp = raw.http_response
        why = not_completion(resp.content, resp.headers.get("content-type", ""), chat)
        if why is not None:
            raise ItemError(why)
        return reply_from_body(json.loads(resp.content), chat)
