"""The OpenAI Batch API's JSONL files as a backend: the requests for a batch run (``batch_out``,
what ``vllm run-batch -i`` reads) and its results (``batch_in``, what ``vllm run-batch -o``
writes) in place of a server. A request's ``custom_id`` is its key, so a result answers exactly
its request; nothing is sent from here, and a results file that answers no request of the run
(another run's, or other settings) stops it at once."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from hf_real3d._io import FormatError, read_jsonl, write_jsonl
from hf_real3d.llm.base import Backend, Decoding, Fatal, ItemError, Prompt, Reply
from hf_real3d.llm.server import not_completion, reply_from_body, request_body

__all__ = ["BatchBackend", "write_requests"]


def read_batch(path: str | os.PathLike) -> tuple[dict[str, Reply], dict[str, str]]:
    """(replies, errors) by ``custom_id`` from an OpenAI Batch API output file (what ``vllm
    run-batch -o`` writes). A line of another shape is a FormatError naming it."""
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
        first = (body.get("choices") or [{}])[0] if isinstance(body, dict) else None
        chat = isinstance(first, dict) and "message" in first
        why = not_completion(json.dumps(body).encode(), "application/json", chat)
        if why is not None:
            errors[cid] = f"batch result: {why}"
            continue
        replies[cid] = reply_from_body(body, chat)
    return replies, errors


def write_requests(path: str | os.PathLike, requests: Iterable[tuple[str, dict[str, Any]]]
                   ) -> int:
    """``requests`` (key, body) as a Batch API input file (what ``vllm run-batch -i`` reads),
    written atomically, one line a key; returns the lines written."""
    todo = dict(requests)
    write_jsonl(path, ({"custom_id": k, "method": "POST",
                        "url": "/v1/chat/completions" if "messages" in body
                        else "/v1/completions", "body": body} for k, body in todo.items()))
    return len(todo)


class BatchBackend(Backend):
    """Batch API files for ``model``: ``results`` (a batch run's output) answers the requests
    it holds (:func:`write_requests` writes the others for the next batch run)."""

    def __init__(self, model: str | None, results: str | os.PathLike | None = None,
                 tag: str | None = None):
        super().__init__(tag)
        if not model:
            raise ValueError("`batch_out`/`batch_in`: name the model the batch runs "
                             "(`llm_model`); its requests carry it")
        self.model, self.results = model, results
        self.replies, self.errors = read_batch(results) if results is not None else ({}, {})
        self.used = 0  # results that answer a request of this run

    def identity(self) -> dict[str, Any]:
        # what a server asked without its /models probe has: a batch round trip's replies
        # and such a server's share their keys (and the cache)
        return {"route": "server", "model": self.model, "served": None}

    def describe(self) -> dict[str, Any]:
        out = {"model": self.model, "route": "batch"}
        if self.results is not None:
            out["batch_in"] = str(self.results)
        return out

    def default_concurrency(self) -> tuple[int, str]:
        return 1, "a batch file (nothing is sent from here)"

    def body(self, prompt: Prompt, d: Decoding, response_format: dict | None) -> dict:
        return request_body(self.model, prompt, d, response_format)

    def lookup(self, prompt: Prompt, d: Decoding, response_format: dict | None
               ) -> Reply | None:
        key = self.key(prompt, d, response_format)
        self.used += key in self.replies or key in self.errors
        return self.replies.get(key)

    def ask_many(self, prompts: Sequence[Prompt], d: Decoding, response_format: dict | None
                 ) -> list[Reply]:
        """Nothing is asked: the results file's error for the request, or its absence."""
        self._local.count = 0
        if self.results is None:
            raise Fatal("`batch_out`: this run writes requests and asks nothing; read the "
                        "batch run's output with `batch_in`")
        key = self.key(prompts[0], d, response_format)
        if key in self.errors:
            raise ItemError(self.errors[key])
        if not self.used:
            n = len(self.replies) + len(self.errors)
            raise Fatal(f"`batch_in` {self.results}: none of its {n} result(s) answers a "
                        "request of this run (another run's file, or other settings: model, "
                        "prompt, decoding, `llm_cache_tag`)")
        raise ItemError(f"no result for it in --batch_in {self.results} (write its request "
                        "with --batch_out and run the batch again)")
