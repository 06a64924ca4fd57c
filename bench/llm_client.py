"""The language-model client against an instant server: does the client ever limit it?

Target (issue 47): with the cache on, ``hf-real3d judge`` reaches at least 0.8 of the
throughput of a bare ``openai`` loop (64 threads, no cache, no parsing of ours) against the
same instant loopback server, in the same run; the judge's start-up (reading the questions,
building prompts, imports) is subtracted as the time of the same command with ``--dry_run``.

The server is a minimal asyncio HTTP/1.1 server in its own process (keep-alive, one fixed
chat completion, ~0 ms per reply). The questions are the SQA3D test set (3,519) when
``../shared/real/sqa3d`` is there, else synthetic ones. Each side runs ``--rounds`` times,
alternating; the best time of each counts (a shared machine's noise only slows a run).

    python bench/llm_client.py [--questions N] [--concurrency 64] [--rounds 2]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import queue
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from _common import report

ROOT = Path(__file__).resolve().parents[1]
SQA3D = ROOT.parent / "shared" / "real" / "sqa3d"
MODEL = "bench-instant"
_REPLY = json.dumps({"id": "x", "object": "chat.completion", "created": 0, "model": MODEL,
                     "choices": [{"index": 0, "finish_reason": "stop",
                                  "message": {"role": "assistant", "content": "two"}}],
                     "usage": {"prompt_tokens": 40, "completion_tokens": 1,
                               "total_tokens": 41}}).encode()
_MODELS = json.dumps({"object": "list", "data": [{"id": MODEL, "object": "model", "created": 0,
                                                  "owned_by": "bench"}]}).encode()


async def _handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while True:
            line = await reader.readline()
            if not line:
                break
            length = 0
            while True:
                h = await reader.readline()
                if h in (b"\r\n", b"\n", b""):
                    break
                if h.lower().startswith(b"content-length:"):
                    length = int(h.split(b":", 1)[1])
            if length:
                await reader.readexactly(length)
            body = _MODELS if line.startswith(b"GET") else _REPLY
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                         b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
            await writer.drain()
    except (ConnectionError, asyncio.IncompleteReadError):
        pass
    finally:
        writer.close()


async def _serve(port_file: str) -> None:
    server = await asyncio.start_server(_handle, "127.0.0.1", 0, backlog=1024)
    Path(port_file).write_text(str(server.sockets[0].getsockname()[1]))
    async with server:
        await server.serve_forever()


def _start_server(tmp: Path) -> tuple[subprocess.Popen, str]:
    port_file = tmp / "port"
    proc = subprocess.Popen([sys.executable, __file__, "--serve", str(port_file)])
    deadline = time.time() + 30
    while not port_file.is_file() or not port_file.read_text():
        if time.time() > deadline or proc.poll() is not None:
            raise RuntimeError("the instant server did not start")
        time.sleep(0.05)
    return proc, f"http://127.0.0.1:{port_file.read_text()}/v1"


def _questions(tmp: Path, n: int | None) -> Path:
    """An SQA3D folder: the real test set, cut to ``n`` questions when asked; else synthetic."""
    out = tmp / "sqa3d"
    if SQA3D.is_dir():
        out.mkdir()
        for f in SQA3D.glob("*test*.json"):
            data = json.loads(f.read_text())
            for k in ("questions", "annotations"):
                if k in data and n:
                    data[k] = data[k][:n]
            (out / f.name).write_text(json.dumps(data))
        return out
    from hf_real3d.synth import SynthConfig, build_benchmark

    build_benchmark(tmp / "synth", SynthConfig(seed=0, scenes={"train": 0, "val": 0, "test": 4},
                                               questions_per_scene={"test": (n or 400) // 4}),
                    workers=1, progress=False, write_scenes=False)
    return tmp / "synth" / "sqa3d"


def _bare(url: str, prompts: list, threads: int) -> float:
    """Seconds for a bare openai loop over ``prompts`` with ``threads`` threads."""
    import openai

    client = openai.OpenAI(base_url=url, api_key="EMPTY", max_retries=0, timeout=60)
    work: queue.SimpleQueue = queue.SimpleQueue()
    for p in prompts:
        work.put(p)
    errors = []

    def run() -> None:
        while True:
            try:
                p = work.get_nowait()
            except queue.Empty:
                return
            try:
                client.chat.completions.create(model=MODEL, messages=p, temperature=0.0,
                                               seed=0, max_tokens=128)
            except Exception as err:  # noqa: BLE001 - counted
                errors.append(err)

    t0 = time.perf_counter()
    ts = [threading.Thread(target=run) for _ in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    dt = time.perf_counter() - t0
    if errors:
        raise RuntimeError(f"the bare loop failed {len(errors)} times: {errors[0]}")
    return dt


def _judge(sqa3d: Path, url: str, tmp: Path, concurrency: int, *, dry: bool, tag: int
           ) -> float:
    exe = Path(sys.executable).parent / "hf-real3d"
    args = [str(exe), "judge", "--dataset", str(sqa3d), "--out", str(tmp / f"j{tag}.jsonl"),
            "--llm-url", url, "--llm-model", MODEL, "--llm_concurrency", str(concurrency),
            "--llm_cache", str(tmp / f"cache{tag}"), "--max_failures", "0"]
    if dry:
        args.append("--dry_run")
    env = dict(os.environ, HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", TQDM_DISABLE="1")
    t0 = time.perf_counter()
    p = subprocess.run(args, capture_output=True, text=True, env=env)
    dt = time.perf_counter() - t0
    if p.returncode:
        raise RuntimeError(f"judge failed: {p.stderr[-2000:]}")
    if not dry and " 0 failed" not in p.stdout:
        raise RuntimeError(f"judge had failures: {p.stdout}")
    return dt


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--questions", type=int, default=None, help="default: all 3,519")
    ap.add_argument("--concurrency", type=int, default=64)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--serve", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.serve:
        asyncio.run(_serve(a.serve))
        return
    from hf_real3d.llm import PromptTemplate
    from hf_real3d.real3dqa.judge import JUDGE_TEMPLATE
    from hf_real3d.sources import SQA3DFolder, read_questions

    tmp = Path(tempfile.mkdtemp(prefix="bench_llm_"))
    server, url = _start_server(tmp)
    try:
        sqa3d = _questions(tmp, a.questions)
        tpl = PromptTemplate.load(JUDGE_TEMPLATE, required=("question",),
                                  optional=("situation",))
        prompts = [tpl.messages(situation=q.situation, question=q.question)
                   for q in read_questions(SQA3DFolder(sqa3d), validate_poses=False)]
        n = len(prompts)
        _bare(url, prompts[:64], a.concurrency)  # warm-up: imports, connections
        bare, live, dry = [], [], []
        for r in range(a.rounds):
            bare.append(_bare(url, prompts, a.concurrency))
            dry.append(_judge(sqa3d, url, tmp, a.concurrency, dry=True, tag=r))
            live.append(_judge(sqa3d, url, tmp, a.concurrency, dry=False, tag=r))
        t_bare, t_client = min(bare), min(lv - d for lv, d in zip(live, dry))
        if t_client <= 0:  # the client's time is lost in the start-up's noise: say so
            print(f"{n} prompts: the live runs ({', '.join(f'{x:.2f}' for x in live)} s) were "
                  f"not slower than the dry runs ({', '.join(f'{x:.2f}' for x in dry)} s); "
                  "too few prompts to separate the client from the start-up (use more "
                  "--questions, or run it alone)")
            report("judge client / bare openai loop, prompts/s", float("nan"), "1/s",
                   baseline=n / t_bare, target=">= 0.8 x", ok=False, prompts=n,
                   concurrency=a.concurrency, separated=False)
            return
        bare_rate, client_rate = n / t_bare, n / t_client
        ratio = client_rate / bare_rate
        print(f"{n} prompts, {a.concurrency} threads/requests in flight, instant loopback "
              f"server, best of {a.rounds}")
        print(f"  bare openai loop: {bare_rate:8.1f} prompts/s ({t_bare:.2f} s)")
        print(f"  hf-real3d judge:  {client_rate:8.1f} prompts/s ({t_client:.2f} s = live "
              f"{min(live):.2f} s - dry run {min(dry):.2f} s), "
              f"{1000 * t_client / n:.2f} ms per prompt")
        print(f"  ratio {ratio:.2f} (target >= 0.8); start-up included: "
              f"{n / min(live):.1f} prompts/s")
        report("judge client / bare openai loop, prompts/s", client_rate, "1/s",
               baseline=bare_rate, target=">= 0.8 x", ok=ratio >= 0.8, prompts=n,
               concurrency=a.concurrency, ms_per_prompt=round(1000 * t_client / n, 3),
               bare_seconds=round(t_bare, 3), client_seconds=round(t_client, 3),
               dry_run_seconds=round(min(dry), 3), live_seconds=round(min(live), 3))
    finally:
        server.terminate()
        server.wait(10)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
