"""Language-model servers on 127.0.0.1 for the tests: a scripted OpenAI-compatible stub (its
statuses, delays and replies chosen by the test) and a real `transformers serve` of a tiny
causal LM built from config."""

from __future__ import annotations

import inspect
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Raw:
    """A scripted 200 reply that is not JSON (a proxy's or a login portal's page)."""

    def __init__(self, body: bytes, content_type: str = "text/html"):
        self.body, self.content_type = body, content_type


class StubLLM:
    """``/v1/models`` lists ``models`` (with ``card``'s fields); ``/v1/chat/completions``
    answers with ``reply(messages)`` (or ``reply(messages, body)``), after the statuses in
    ``script`` (e.g. [429, 500]: the first two requests fail). ``delay`` seconds before each
    answer. A reply may be a text, ``(text, finish_reason)``, an HTTP status (int), a whole
    body (dict) or a :class:`Raw` page. ``refuse_formats``: response_format types answered
    HTTP 400 naming the field; ``require_key``: the API key every request must carry (401
    otherwise); ``models_page``: a :class:`Raw` page for GET /models. ``requests`` counts the
    completion requests, ``answered`` the replies written whole, ``bodies`` keeps them."""

    def __init__(self, reply: Callable[..., object], *, models=("stub",), script=(),
                 delay: float = 0.0, card: dict | None = None, refuse_formats=(),
                 require_key: str | None = None, models_page: Raw | None = None):
        self.reply, self.models, self.script, self.delay = reply, list(models), list(script), delay
        self.card = dict(card or {"created": 0, "owned_by": "test"})
        self.refuse_formats, self.require_key = set(refuse_formats), require_key
        self.models_page = models_page
        self.requests = self.answered = 0
        self.bodies: list[dict] = []
        self.lock = threading.Lock()
        two = len(inspect.signature(reply).parameters) >= 2
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _send(self, status: int, body: dict | Raw):
                raw = isinstance(body, Raw)
                data = body.body if raw else json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", body.content_type if raw else "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
                return True

            def _key_ok(self) -> bool:
                if stub.require_key is None or \
                        self.headers.get("Authorization") == f"Bearer {stub.require_key}":
                    return True
                self._send(401, {"error": {"message": "Incorrect API key provided",
                                           "type": "invalid_request_error"}})
                return False

            def do_GET(self):
                if not self._key_ok():
                    return
                if self.path.rstrip("/") == "/v1/models":
                    if stub.models_page is not None:
                        self._send(200, stub.models_page)
                        return
                    self._send(200, {"object": "list", "data": [
                        {"id": m, "object": "model", **stub.card} for m in stub.models]})
                else:
                    self._send(404, {"error": "no such route"})

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with stub.lock:
                    stub.requests += 1
                    stub.bodies.append(body)
                    status = stub.script.pop(0) if stub.script else 200
                if not self._key_ok():
                    return
                if stub.delay:
                    time.sleep(stub.delay)
                fmt = (body.get("response_format") or {}).get("type")
                if fmt in stub.refuse_formats:
                    self._send(400, {"error": {"message": f"response_format {fmt} is not "
                                               "supported by this server", "code": 400}})
                    return
                if status != 200:
                    self._send(status, {"error": {"message": f"scripted {status}"}})
                    return
                out = stub.reply(body["messages"], body) if two else stub.reply(body["messages"])
                finish = "stop"
                if isinstance(out, tuple):
                    out, finish = out
                if isinstance(out, int):
                    self._send(out, {"error": {"message": f"scripted {out}"}})
                    return
                if isinstance(out, Raw | dict):
                    self._send(200, out)
                else:
                    self._send(200, {"id": "x", "object": "chat.completion", "created": 0,
                                     "model": body["model"], "choices": [
                                         {"index": 0, "finish_reason": finish,
                                          "message": {"role": "assistant", "content": out}}],
                                     "usage": {"prompt_tokens": 7, "completion_tokens": 3,
                                               "total_tokens": 10}})
                with stub.lock:
                    stub.answered += 1

        class Server(ThreadingHTTPServer):
            daemon_threads = True
            # many clients connect at once: the default backlog of 5 drops connections,
            # which the client then retries after a pause
            request_queue_size = 128

            def handle_error(self, request, client_address):
                pass  # a client that timed out and hung up: nothing to report

        self.server = Server(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def __enter__(self):
        # a short poll so that shutdown() returns at once (the default waits up to 0.5 s)
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05},
                         daemon=True).start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()


def run_batch(requests: Path, results: Path, url: str) -> None:
    """What `vllm run-batch -i REQUESTS -o RESULTS` does, against the server at ``url``: each
    Batch API request line POSTed, each answer written as a Batch API result line."""
    out = []
    for line in requests.read_text().splitlines():
        req = json.loads(line)
        data = json.dumps(req["body"]).encode()
        http = urllib.request.Request(url.removesuffix("/v1") + req["url"], data=data,
                                      headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(http, timeout=30) as r:
                status, body = r.status, json.loads(r.read())
        except urllib.error.HTTPError as err:
            status, body = err.code, json.loads(err.read())
        out.append({"id": f"batch-{len(out)}", "custom_id": req["custom_id"],
                    "response": {"status_code": status, "request_id": f"r{len(out)}",
                                 "body": body}, "error": None})
    results.write_text("".join(json.dumps(r) + "\n" for r in out))


def save_tiny_lm(folder: Path, *, one_word: bool = False) -> Path:
    """A tiny Llama (random weights) with a word-level tokenizer and a chat template.
    ``one_word``: every word ends the reply (its generation config lists them all as end
    tokens), so a reply is one word and stops before ``max_tokens``; without it the model
    rambles until ``max_tokens``."""
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    words = ('the a chair table door bed left right front behind me my facing i am { } " : , '
             'situation answer yes no two three').split()
    tok = Tokenizer(models.WordLevel(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.train_from_iterator([" ".join(words)] * 3, trainers.WordLevelTrainer(
        vocab_size=200, special_tokens=["<unk>", "<pad>", "<s>", "</s>"]))
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="<unk>", pad_token="<pad>",
                                   bos_token="<s>", eos_token="</s>")
    fast.chat_template = ("{% for m in messages %}{{ m['role'] }} : {{ m['content'] }} "
                          "{% endfor %}assistant :")
    fast.save_pretrained(folder)
    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=len(fast), hidden_size=32, intermediate_size=64,
                      num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=2,
                      max_position_embeddings=4096, bos_token_id=2, eos_token_id=3,
                      pad_token_id=1)
    model = LlamaForCausalLM(cfg)
    if one_word:
        model.generation_config.eos_token_id = list(range(3, len(fast)))
    model.save_pretrained(folder)
    return folder


class TransformersServe:
    """`transformers serve FOLDER` on 127.0.0.1 (CPU), started and stopped by its PID; its
    access log counts the completion requests."""

    def __init__(self, folder: Path, log: Path, port: int | None = None):
        self.folder, self.log, self.port = folder, log, port or free_port()
        self.url = f"http://127.0.0.1:{self.port}/v1"
        self.proc: subprocess.Popen | None = None

    def start(self, timeout: float = 180.0) -> TransformersServe:
        exe = Path(sys.executable).parent / "transformers"
        env = dict(os.environ, HF_HUB_OFFLINE="1")
        self.proc = subprocess.Popen(
            [str(exe), "serve", str(self.folder), "--host", "127.0.0.1", "--port",
             str(self.port), "--device", "cpu", "--log-level", "info"],
            stdout=open(self.log, "a"), stderr=subprocess.STDOUT, env=env,
            start_new_session=True)
        deadline = time.time() + timeout
        while time.time() < deadline:
            assert self.proc.poll() is None, self.log.read_text()[-3000:]
            try:
                with urllib.request.urlopen(f"{self.url}/models", timeout=2) as r:
                    if r.status == 200:
                        return self
            except OSError:
                time.sleep(0.3)
        raise AssertionError(f"transformers serve did not answer within {timeout} s")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(30)

    def completions(self) -> int:
        return self.log.read_text().count("POST /v1/chat/completions")

    @property
    def model(self) -> str:
        return str(self.folder)


def serve_once(args: list[str], cwd: Path, env: dict | None = None, timeout: float = 180) -> None:
    """Start a command that serves a page (``hf-real3d explore ...``; ``--port`` is added),
    wait until its page answers, then stop it."""
    port = free_port()
    proc = subprocess.Popen([*args, "--port", str(port)], cwd=cwd, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.time() + timeout
        while time.time() < deadline:
            assert proc.poll() is None, proc.stderr.read()[-3000:]
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=2) as r:
                    if r.status == 200:
                        return
            except OSError:
                time.sleep(0.2)
        raise AssertionError(f"{args[0]} did not answer within {timeout:g} s")
    finally:
        proc.terminate()
        proc.wait(30)
