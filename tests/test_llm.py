"""The language-model steps (hf_real3d.llm, `hf-real3d judge`, `hf-real3d rotate`): the
client's cache, retries, timeouts and refusals against a scripted loopback server; the rewrite
step's parsing, exclusions and checks; the shipped in-context examples under the rotation
checker; and both commands end to end against a real `transformers serve` of a tiny model,
and through the local-folder route."""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import documentation

from hf_real3d.llm import Decoding, LLMClient, LLMError, PromptTemplate
from hf_real3d.real3dqa.checks import check_text
from hf_real3d.real3dqa.judge import JUDGE_TEMPLATE, run_judge
from hf_real3d.real3dqa.rewrite import ROTATE_TEMPLATE, parse_rotation, rotate_dataset

sys.path.insert(0, str(Path(__file__).parent))
from llm_servers import (  # noqa: E402
    StubLLM,
    TransformersServe,
    free_port,
    save_tiny_lm,
    serve_once,
)

BIN = Path(sys.executable).parent


def client(url, tmp_path, **kw):
    kw.setdefault("retries", 3)
    kw.setdefault("backoff", 0.01)
    return LLMClient(url=url, model=kw.pop("model", "stub"), cache_dir=tmp_path / "cache",
                     progress=False, **kw)


def chats(n):
    return [[{"role": "user", "content": f"question {i}"}] for i in range(n)]


def test_cache_makes_a_rerun_send_nothing(tmp_path):
    with StubLLM(lambda m: "answer to " + m[-1]["content"]) as srv:
        c = client(srv.url, tmp_path)
        c.check()
        first = c.generate(chats(5))
        assert [g.text for g in first] == [f"answer to question {i}" for i in range(5)]
        assert srv.requests == 5 and not any(g.cached for g in first)
        again = client(srv.url, tmp_path)  # a new process would do the same
        second = again.generate(chats(5))
        assert [g.text for g in second] == [g.text for g in first]
        assert srv.requests == 5 and again.stats.requests == 0 and all(g.cached for g in second)
        # other decoding settings are other keys
        other = client(srv.url, tmp_path, decoding=Decoding(temperature=0.7, seed=1))
        other.generate(chats(1))
        assert srv.requests == 6


def test_retries_on_429_and_500_then_success(tmp_path):
    with StubLLM(lambda m: "ok", script=[429, 500]) as srv:
        c = client(srv.url, tmp_path, concurrency=1)
        assert c.generate(chats(1))[0].text == "ok"
        assert srv.requests == 3 and c.stats.retries == 2
    with StubLLM(lambda m: "ok", script=[503, 503, 503]) as srv:
        c = client(srv.url, tmp_path / "b", concurrency=1, retries=1)
        out = c.generate(chats(2))
        # the first item fails after its retry, the run goes on and the second succeeds
        assert out[0].text is None and out[0].error.startswith("HTTP 503 after 2 attempts")
        assert out[1].text == "ok" and c.stats.failures == 1
    with StubLLM(lambda m: "ok", script=[400]) as srv:  # a client error is not retried
        out = client(srv.url, tmp_path / "c").generate(chats(1))
        assert out[0].error.startswith("HTTP 400:") and srv.requests == 1


def test_timeout_fails_the_item_not_the_run(tmp_path):
    with StubLLM(lambda m: "late", delay=1.5) as srv:
        c = client(srv.url, tmp_path, timeout=0.3, retries=1, concurrency=2)
        t0 = time.perf_counter()
        out = c.generate(chats(2))
        assert all(g.text is None and "Timeout" in g.error for g in out)
        assert time.perf_counter() - t0 < 10
        assert not list((tmp_path / "cache").glob("*/*.json"))  # failures are not cached


def test_refusals_before_any_work(tmp_path, monkeypatch):
    port = free_port()  # nothing listens there
    with pytest.raises(LLMError, match=f"127.0.0.1:{port}/v1: no server answers there"):
        client(f"http://127.0.0.1:{port}/v1", tmp_path).check()
    with pytest.raises(ValueError, match="expected an http"):
        client("127.0.0.1:8000", tmp_path)
    with StubLLM(lambda m: "x", models=["a", "b"]) as srv:
        with pytest.raises(LLMError, match=r"--llm_model 'c': .* lists \['a', 'b'\]"):
            client(srv.url, tmp_path / "x", model="c").check()
        # a server that is not an OpenAI-compatible API
        with pytest.raises(LLMError, match="not an OpenAI-compatible API"):
            client(srv.url.removesuffix("/v1") + "/nothing", tmp_path / "y").check()
        # a cache folder written for another model
        client(srv.url, tmp_path / "z", model="a")
        with pytest.raises(LLMError, match="a cache of the model 'a'.*not of 'b'"):
            client(srv.url, tmp_path / "z", model="b")
        assert json.loads((tmp_path / "z/cache/model.json").read_text())["model"] == "a"
    with pytest.raises(LLMError, match="HF_REAL3D_TEST_KEY.*not set"):
        client("http://127.0.0.1:1/v1", tmp_path, api_key_env="HF_REAL3D_TEST_KEY")
    with pytest.raises(LLMError, match="no model folder there"):
        LLMClient(path=tmp_path, progress=False)


def test_api_key_is_sent_and_never_written(tmp_path, monkeypatch):
    seen = []
    secret = "sk-test-never-written-123"
    monkeypatch.setenv("HF_REAL3D_TEST_KEY", secret)
    with StubLLM(lambda m: "ok") as srv:
        orig = srv.server.RequestHandlerClass.do_POST

        def spy(self):
            seen.append(self.headers.get("Authorization"))
            orig(self)

        srv.server.RequestHandlerClass.do_POST = spy
        c = client(srv.url, tmp_path, api_key_env="HF_REAL3D_TEST_KEY")
        c.generate(chats(2))
    assert seen == [f"Bearer {secret}"] * 2
    written = "".join(p.read_text() for p in tmp_path.rglob("*") if p.is_file())
    assert secret not in written and secret not in json.dumps(c.describe())


def test_prompt_templates_are_checked(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"user": "Turn {degrees}: {situation} {answers}"}))
    with pytest.raises(ValueError, match=r"bad\.json: the user template lacks \{question\}, "
                                         r"\{answer\}; has unknown field\(s\) \{answers\}"):
        PromptTemplate.load(bad, required=("degrees", "situation", "question", "answer"))
    (tmp_path / "notjson.json").write_text("{")
    with pytest.raises(ValueError, match="not a JSON prompt template"):
        PromptTemplate.load(tmp_path / "notjson.json", required=())
    tpl = PromptTemplate.load(JUDGE_TEMPLATE, required=("question",), optional=("situation",))
    msgs = tpl.messages(situation="I sit.", question="What is on my left?")
    assert msgs[-1]["content"] == "Situation: I sit.\nQuestion: What is on my left?\nAnswer:"


def test_shipped_examples_rotate_correctly():
    tpl = PromptTemplate.load(ROTATE_TEMPLATE, required=("degrees", "situation", "question",
                                                          "answer"), optional=("scene_graph",))
    assert len(tpl.examples) >= 3
    for ex in tpl.examples:
        assert check_text(ex["situation"], ex["output"]["situation"], ex["degrees"]) == [], ex
        assert parse_rotation(json.dumps(ex["output"]), ex["situation"])[1] is None
    msgs = tpl.messages(degrees=90, situation="s", question="q", answer="a", scene_graph="g")
    assert [m["role"] for m in msgs] == ["system"] + ["user", "assistant"] * 3 + ["user"]


def test_replies_that_cannot_be_used_are_excluded_with_the_reason():
    original = "I am facing the door."
    assert parse_rotation('{"situation": "I am facing the bed.", "answer": "yes"}', original) \
        == ({"situation": "I am facing the bed.", "answers": ["yes"]}, None)
    assert parse_rotation('```json\n{"situation": "I face the bed.", "answer": "no"}\n```',
                          original)[0]["answers"] == ["no"]
    for text, why in (("right right }", "not a JSON object"), ("[1]", "not a JSON object"),
                      ('{"situation": "", "answer": "x"}', "empty or missing situation"),
                      ('{"situation": "a b", "answer": ""}', "empty or missing answer"),
                      ('{"situation": "I am facing  the door.", "answer": "x"}',
                       "repeats the original situation"),
                      ('Sure! {"situation": "x", "answer": "y"}', "not a JSON object")):
        assert parse_rotation(text, original) == (None, why), text


@pytest.fixture(scope="module")
def sqa3d_folder(tmp_path_factory):
    """A small synthetic SQA3D folder with its scenes (one room, 12 questions)."""
    from hf_real3d.synth import SynthConfig, build_benchmark

    root = tmp_path_factory.mktemp("llm_data")
    build_benchmark(root / "synth", SynthConfig(seed=2, scenes={"train": 0, "val": 0, "test": 1},
                                                questions_per_scene={"test": 12}),
                    workers=1, progress=False)
    return root / "synth"


def test_rotate_keeps_what_parses_and_checks_it(sqa3d_folder, tmp_path):
    """A scripted model: a situation naming no direction for some questions (it passes), the
    original situation reworded for others (it parses, and the checker flags it), garbage for
    the rest (excluded); geometry is not used (no scenes)."""
    from hf_real3d.hub import load_local
    from hf_real3d.sqa3d import read_split

    recs = read_split(sqa3d_folder / "sqa3d", "test")
    kinds = {(r.situation, r.question): i % 3 for i, r in enumerate(recs)}
    assert len(kinds) == len(recs)

    def reply(messages):
        text = messages[-1]["content"]
        sit = text.split("Situation before the turn: ")[1].split("\n")[0]
        kind = kinds[(sit, text.split("Question: ")[1].split("\n")[0])]
        if kind == 2:
            return "I cannot do that"
        new = "Still, " + sit[0].lower() + sit[1:] if kind == 1 else "I am in the room."
        return json.dumps({"situation": new, "answer": "no"})

    with StubLLM(reply) as srv:
        s = rotate_dataset(sqa3d_folder / "sqa3d", tmp_path / "rot", client(srv.url, tmp_path),
                           progress=False)
    garbage = sum(v == 2 for v in kinds.values())
    assert s["sources"] == {"lm": 3 * s["groups"]} and s["groups"] == len(recs) - garbage
    assert s["reasons"] == {"not a JSON object": 3 * garbage}
    rot = load_local(tmp_path / "rot", "rotations").to_pandas()
    assert set(rot.source) == {"original", "lm"}
    assert set(rot[rot.rotation_deg == 90].answers.map(list).map(tuple)) == {("no",)}
    ex = load_local(tmp_path / "rot", "rotations_excluded").to_pandas()
    assert set(ex.output) == {"I cannot do that"}
    checks = json.loads((tmp_path / "rot/checks/check.json").read_text())
    flags = [json.loads(x) for x in (tmp_path / "rot/checks/flags.jsonl").read_text()
             .splitlines()]
    flagged = {f["question_id"] for f in flags}
    assert flagged == {r.question_id for r in recs if kinds[(r.situation, r.question)] == 1}
    assert checks["items"] == 3 * s["groups"]


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    root = tmp_path_factory.mktemp("serve")
    model = save_tiny_lm(root / "tiny")
    srv = TransformersServe(model, root / "serve.log").start()
    try:
        yield srv
    finally:
        srv.stop()


def _cli(*args, env=None):
    return subprocess.run([str(BIN / "hf-real3d"), *map(str, args)], capture_output=True,
                          text=True, env=dict(os.environ, **(env or {})), timeout=900)


@pytest.mark.slow
def test_judge_and_rotate_against_transformers_serve(served, sqa3d_folder, tmp_path):
    llm = ["--llm-url", served.url, "--llm-model", served.model, "--max_tokens", "12",
           "--llm_cache", tmp_path / "cache"]
    p = _cli("judge", "--dataset", sqa3d_folder / "sqa3d", "--out", tmp_path / "j.jsonl", *llm)
    assert p.returncode == 0, p.stderr[-2000:]
    rows = [json.loads(x) for x in (tmp_path / "j.jsonl").read_text().splitlines()]
    assert len(rows) == 12 and all(isinstance(r["prediction"], str) for r in rows)
    meta = json.loads((tmp_path / "j.judge.json").read_text())
    assert meta["answered"] == 12 and meta["judge"]["model"] == served.model
    sent = served.completions()
    assert sent == 12
    # a rerun sends nothing and writes the same file
    before = (tmp_path / "j.jsonl").read_text()
    p = _cli("judge", "--dataset", sqa3d_folder / "sqa3d", "--out", tmp_path / "j.jsonl", *llm)
    assert p.returncode == 0 and "0 request(s) sent" in p.stdout
    assert served.completions() == sent and (tmp_path / "j.jsonl").read_text() == before
    # the judge's file filters: the card records the judge
    preds = tmp_path / "full.jsonl"
    preds.write_text("\n".join(json.dumps({"question_id": r["question_id"], "prediction": "zzz"})
                               for r in rows))
    p = _cli("build-real3dqa", "--sqa3d", sqa3d_folder / "sqa3d", "--scenes",
             sqa3d_folder / "scans", "--out", tmp_path / "r3", "--full", f"m={preds}",
             "--blind", f"m={preds}", "--judge", f"tiny={tmp_path / 'j.jsonl'}")
    assert p.returncode == 0, p.stderr[-2000:]
    card = (tmp_path / "r3/README.md").read_text()
    assert f"judge `tiny`: {served.model}" in card and "removed by judge:tiny" in card
    # rotate: what a random model writes is excluded, with the reason
    p = _cli("rotate", "--dataset", sqa3d_folder / "sqa3d", "--out", tmp_path / "rot", *llm)
    assert p.returncode == 0, p.stderr[-2000:]
    assert "36 turned items excluded: {'not a JSON object': 36}" in p.stdout
    sent = served.completions()
    p = _cli("rotate", "--dataset", sqa3d_folder / "sqa3d", "--out", tmp_path / "rot", *llm)
    assert p.returncode == 0 and "36 cached, 0 request(s) sent" in p.stdout
    assert served.completions() == sent


@pytest.mark.slow
def test_a_server_stopped_midway_loses_no_finished_item(sqa3d_folder, tmp_path):
    model = save_tiny_lm(tmp_path / "tiny")
    log = tmp_path / "serve.log"
    srv = TransformersServe(model, log).start()
    llm = ["--llm-url", srv.url, "--llm-model", str(model), "--max_tokens", "400",
           "--llm_cache", tmp_path / "cache", "--llm_retries", "1", "--llm_timeout", "20",
           "--llm_concurrency", "1"]
    proc = subprocess.Popen([str(BIN / "hf-real3d"), "judge", "--dataset",
                             str(sqa3d_folder / "sqa3d"), "--out", str(tmp_path / "j.jsonl"),
                             *map(str, llm)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    try:
        deadline = time.time() + 300
        while srv.completions() < 4 and time.time() < deadline:
            assert proc.poll() is None, proc.stderr.read()[-2000:]
            time.sleep(0.05)
        srv.stop()  # the server goes away mid-run
        out, err = proc.communicate(timeout=300)
    finally:
        srv.stop()
    assert proc.returncode == 0, err[-2000:]
    meta = json.loads((tmp_path / "j.judge.json").read_text())
    finished = meta["answered"]
    assert 0 < finished < 12 and meta["failed"] == 12 - finished
    assert all("APIConnectionError" in f["reason"] or "after 2 attempts" in f["reason"]
               for f in meta["failures"])
    # the server is back: the rerun asks only for what failed, and completes
    srv = TransformersServe(model, log).start()
    try:
        sent = srv.completions()
        p = _cli("judge", "--dataset", sqa3d_folder / "sqa3d", "--out", tmp_path / "j.jsonl",
                 *[a if a != llm[1] else srv.url for a in llm])
        assert p.returncode == 0, p.stderr[-2000:]
        meta = json.loads((tmp_path / "j.judge.json").read_text())
        assert meta["answered"] == 12 and meta["cached"] == finished
        assert srv.completions() - sent == 12 - finished
    finally:
        srv.stop()


@pytest.mark.slow
def test_local_folder_route(sqa3d_folder, tmp_path):
    model = save_tiny_lm(tmp_path / "tiny")
    c = LLMClient(path=model, decoding=Decoding(max_tokens=6), cache_dir=tmp_path / "cache",
                  progress=False)
    m = run_judge(sqa3d_folder / "sqa3d", tmp_path / "j.jsonl", c)
    assert m["answered"] == 12 and c.stats.requests == 12 and m["judge"]["route"] == "local"
    first = (tmp_path / "j.jsonl").read_text()
    c2 = LLMClient(path=model, decoding=Decoding(max_tokens=6), cache_dir=tmp_path / "cache",
                   progress=False)
    run_judge(sqa3d_folder / "sqa3d", tmp_path / "j.jsonl", c2)
    assert c2.stats.requests == 0 and (tmp_path / "j.jsonl").read_text() == first
    # the same greedy decoding without the cache gives the same text
    c3 = LLMClient(path=model, decoding=Decoding(max_tokens=6), cache=False, progress=False)
    run_judge(sqa3d_folder / "sqa3d", tmp_path / "k.jsonl", c3)
    assert (tmp_path / "k.jsonl").read_text() == first
    p = _cli("judge", "--dataset", sqa3d_folder / "sqa3d", "--out", tmp_path / "l.jsonl",
             "--llm-path", tmp_path / "nothing")
    assert p.returncode == 2 and "no model folder there" in p.stderr


def _readme_pipeline() -> list[str]:
    text = documentation()
    block = text[text.index("<!-- llm-pipeline -->"):text.index("<!-- /llm-pipeline -->")]
    body = block.split("```sh\n")[1].split("```")[0]
    return [line.split("  #")[0].strip() for line in body.splitlines() if line.strip()]


@pytest.mark.slow
def test_readme_pipeline_runs_against_a_served_model(served, tmp_path):
    """Every line of the README's construction pipeline, in order, against the tiny model
    `transformers serve` serves (for its first line); a person's review is played by the
    library (every item accepted)."""
    import shutil

    from hf_real3d.review import ReviewFolder
    from hf_real3d.sqa3d import read_split
    from hf_real3d.synth import SynthConfig, build_benchmark

    build_benchmark(tmp_path / "data/synth", SynthConfig(
        seed=4, scenes={"train": 0, "val": 0, "test": 1}, questions_per_scene={"test": 16}),
        workers=1, progress=False)
    recs = read_split(tmp_path / "data/synth/sqa3d", "test")
    (tmp_path / "full.jsonl").write_text("\n".join(json.dumps(
        {"question_id": r.question_id, "prediction": r.answers[0]}) for r in recs))
    (tmp_path / "blind.jsonl").write_text("\n".join(json.dumps(
        {"question_id": r.question_id, "prediction": "zzz"}) for r in recs))
    env = {"HF_REAL3D_CACHE": str(tmp_path / "cache")}
    lines = _readme_pipeline()
    assert lines[0].startswith("transformers serve path/to/model")
    ran = []
    for line in lines[1:]:
        line = line.replace("http://127.0.0.1:8000/v1", served.url).replace(
            "path/to/model", served.model)
        args = line.split()
        assert args[0] == "hf-real3d", line
        if args[1] == "explore":
            serve_once([str(BIN / "hf-real3d"), *args[1:]], tmp_path)
            rf = ReviewFolder(tmp_path / "review")
            while (e := rf.next_entry("reviewer")[0]) is not None:
                rf.record("reviewer", e, "accept")
            ran.append("explore")
            continue
        if args[1] == "evaluate":  # the user's model: right everywhere
            from hf_real3d.real3dqa.evaluate import load_references

            refs = load_references(tmp_path / "reviewed")
            (tmp_path / "preds.jsonl").write_text("\n".join(json.dumps(
                {"question_id": int(q), "rotation_deg": int(d), "prediction": a[0]})
                for q, d, a in zip(refs.question_id, refs.rotation_deg, refs.answers)))
        p = subprocess.run(args, cwd=tmp_path, capture_output=True, text=True, timeout=900,
                           env=dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ['PATH']}",
                                    **env))
        assert p.returncode == 0, (line, p.stderr[-3000:])
        ran.append(args[1])
    assert ran == ["judge", "build-real3dqa", "rotate", "check-rotations", "explore",
                   "review-stats", "export-rotations", "import-real3dqa", "evaluate"]
    assert "judge `llm`" in (tmp_path / "built/README.md").read_text()
    exported = json.loads((tmp_path / "reviewed_release/review.json").read_text())
    assert exported["exported"] > 0
    metrics = json.loads((tmp_path / "reviewed_report/metrics.json").read_text())
    assert metrics[0]["rotation"]["vrs"] == 100.0
    shutil.rmtree(tmp_path / "cache")


def test_judge_of_a_scanqa_file_filters_real_scanqa(sqa3d_folder, tmp_path):
    """`judge` reads a ScanQA JSON (no situation in the prompt) and `build-real-scanqa
    --judge` removes what it answers, with the judge on the card."""
    from hf_real3d.real_scanqa import build_real_scanqa
    from hf_real3d.scanqa import read_scanqa

    scanqa = next((sqa3d_folder / "scanqa").glob("*.json"))
    qs = read_scanqa(scanqa)
    truth = dict(zip(qs.question, (a[0] for a in qs.answers)))
    asked = []

    def reply(messages):
        asked.append(messages[-1]["content"])
        q = messages[-1]["content"].split("Question: ")[1].split("\n")[0]
        return truth[q] if q.startswith("What color") else "no idea"

    with StubLLM(reply) as srv:
        m = run_judge(scanqa, tmp_path / "j.jsonl", client(srv.url, tmp_path))
    assert m["questions"] == len(qs) and all(a.startswith("Situation: \nQuestion: ")
                                             for a in asked)
    full = tmp_path / "full.jsonl"
    full.write_text("\n".join(json.dumps({"question_id": q, "prediction": "zzz"})
                              for q in qs.question_id))
    s = build_real_scanqa(scanqa, tmp_path / "rs", pairs=[("m", str(full), str(full))],
                          judges=[("stub", str(tmp_path / "j.jsonl"))])
    colour = int(qs.question.str.startswith("What color").sum())
    assert colour and s["removed"] == colour
    assert "judge `stub`: stub at http://127.0.0.1" in (tmp_path / "rs/README.md").read_text()
    assert f"removed {colour} question(s)" in (tmp_path / "rs/README.md").read_text()
