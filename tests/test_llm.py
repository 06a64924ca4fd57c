"""The language-model steps (hf_real3d.llm, `hf-real3d judge`, `hf-real3d rotate`): the
client's cache, retries, timeouts, refusals, stopping, structured output, re-asks, dry runs and
Batch API round trips against a scripted loopback server (tests/llm_servers.py) that
misbehaves on request; the rewrite step's parsing, exclusions and checks; the shipped
in-context examples under the rotation checker; and both commands end to end against a real
`transformers serve` of a tiny model, and through the local-folder route."""

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers.cli import run_cli
from helpers.docs import documentation
from helpers.llm_servers import (
    Raw,
    StubLLM,
    TransformersServe,
    free_port,
    run_batch,
    save_tiny_lm,
    serve_once,
)

from hf_real3d.english.mentions import heading_cue
from hf_real3d.llm import (
    LLMClient,
    LLMConfig,
    LLMError,
    PromptTemplate,
    first_json_object,
    llm_cache_dir,
)
from hf_real3d.real3dqa.checker.text import check_text
from hf_real3d.real3dqa.judge import run_judge
from hf_real3d.real3dqa.rotate import (
    HEADING_CUE_NOTE,
    ROTATE_TEMPLATE,
    parse_rotation,
    rotate_dataset,
)

BIN = Path(sys.executable).parent
GOOD = {"situation": "I am facing the wall with the door on my left.", "answer": "left"}


def client(url, tmp_path, *, progress=False, **settings):
    """A client of the server at ``url`` (None: batch files) with ``settings`` (LLMConfig's),
    model "stub", no retries and its cache under ``tmp_path`` unless they say otherwise."""
    settings = {"llm_model": "stub", "llm_retries": 0, "llm_cache": tmp_path / "cache",
                **settings}
    return LLMClient(LLMConfig(llm_url=url, **settings), progress=progress)


@pytest.fixture
def quick_retries(monkeypatch):
    """The openai client's backoff, shortened (its own retry loop is what is tested)."""
    import openai._base_client as base

    monkeypatch.setattr(base, "INITIAL_RETRY_DELAY", 0.01)
    monkeypatch.setattr(base, "MAX_RETRY_DELAY", 0.05)


def chats(n):
    return [[{"role": "user", "content": f"question {i}"}] for i in range(n)]


def replies_cached(folder: Path) -> int:
    return len(list(folder.glob("*/*.json")))


def test_cache_makes_a_rerun_send_nothing(tmp_path):
    with StubLLM(lambda m: "answer to " + m[-1]["content"]) as srv:
        c = client(srv.url, tmp_path)
        first = c.generate(chats(5))
        assert [g.text for g in first] == [f"answer to question {i}" for i in range(5)]
        assert srv.requests == 5 and not any(g.cached for g in first)
        assert [g.finish_reason for g in first] == ["stop"] * 5
        assert first[0].usage == {"prompt_tokens": 7, "completion_tokens": 3}
        assert c.stats.prompt_tokens == 35 and c.stats.completion_tokens == 15
        again = client(srv.url, tmp_path)  # a new process would do the same
        second = again.generate(chats(5))
        assert [g.text for g in second] == [g.text for g in first]
        assert srv.requests == 5 and again.stats.requests == 0 and all(g.cached for g in second)
        assert second[0].usage == first[0].usage  # the record travels with the reply
        # other decoding settings are other keys
        other = client(srv.url, tmp_path, temperature=0.7, seed=1)
        other.generate(chats(1))
        assert srv.requests == 6


def test_retries_on_429_and_500_then_success(tmp_path, quick_retries):
    """The openai client's own retries (not a loop of ours) and their count."""
    with StubLLM(lambda m: "ok", script=[429, 500]) as srv:
        c = client(srv.url, tmp_path, llm_concurrency=1, llm_retries=3)
        assert c.generate(chats(1))[0].text == "ok"
        assert srv.requests == 3 and c.stats.retries == 2 and c.stats.requests == 3
    with StubLLM(lambda m: "ok", script=[503, 503, 503]) as srv:
        c = client(srv.url, tmp_path / "b", llm_concurrency=1, llm_retries=1)
        out = c.generate(chats(2))
        # the first item fails after its retry, the run goes on and the second succeeds
        assert out[0].text is None and out[0].error.startswith("HTTP 503 after 2 attempts")
        assert out[1].text == "ok" and c.stats.failures == 1
    with StubLLM(lambda m: "ok", script=[400]) as srv:  # a client error is not retried
        out = client(srv.url, tmp_path / "c", llm_retries=3).generate(chats(1))
        assert out[0].error.startswith("HTTP 400:") and srv.requests == 1


def test_timeout_fails_the_item_not_the_run(tmp_path, quick_retries):
    with StubLLM(lambda m: "late", delay=1.5) as srv:
        c = client(srv.url, tmp_path, llm_timeout=0.3, llm_retries=1, llm_concurrency=2)
        t0 = time.perf_counter()
        out = c.generate(chats(2))
        assert all(g.text is None and "Timeout" in g.error for g in out)
        assert all("no reply within 0.3 s" in g.error for g in out)
        assert time.perf_counter() - t0 < 10
        assert replies_cached(tmp_path / "cache") == 0  # failures are not cached


def test_refusals_before_any_work(tmp_path, monkeypatch, capsys):
    port = free_port()  # nothing listens there
    with pytest.raises(LLMError, match=f"127.0.0.1:{port}/v1: no server answers there"):
        client(f"http://127.0.0.1:{port}/v1", tmp_path, llm_cache=None).check()
    assert not llm_cache_dir().exists() or not any(llm_cache_dir().iterdir())
    with pytest.raises(ValueError, match="expected an http"):
        client("127.0.0.1:8000", tmp_path)
    with StubLLM(lambda m: "x", models=["a", "b"]) as srv:
        with pytest.raises(LLMError, match=r"`llm_model` 'c': .* lists \['a', 'b'\]"):
            client(srv.url, tmp_path / "x", llm_model="c").check()
        # a server that is not an OpenAI-compatible API
        with pytest.raises(LLMError, match="not an OpenAI-compatible API"):
            client(srv.url.removesuffix("/v1") + "/nothing", tmp_path / "y").check()
        # a refused run leaves no cache folder behind
        assert not (tmp_path / "x").exists() and not (tmp_path / "y").exists()
        # a cache folder written for another model
        client(srv.url, tmp_path / "z", llm_model="a").generate(chats(1))
        with pytest.raises(LLMError, match="a cache of the model 'a'.*not of 'b'"):
            client(srv.url, tmp_path / "z", llm_model="b")
        assert json.loads((tmp_path / "z/cache/model.json").read_text())["model"] == "a"
        # the probe says what it does while it does it
        c = client(srv.url, tmp_path / "w", llm_model="a", progress=True)
        c.check()
        err = capsys.readouterr().err
        assert f"asking {srv.url} for its models" in err and "serves 'a'" in err
    with pytest.raises(LLMError, match="HF_REAL3D_TEST_KEY.*not set"):
        client("http://127.0.0.1:1/v1", tmp_path, llm_api_key_env="HF_REAL3D_TEST_KEY").check()
    with pytest.raises(LLMError, match="no config.json, so no saved model"):
        LLMClient(LLMConfig(llm_path=str(tmp_path)), progress=False)
    # a clone without `git lfs pull`
    (tmp_path / "lfs").mkdir()
    (tmp_path / "lfs/config.json").write_text("{}")
    (tmp_path / "lfs/model.safetensors").write_text(
        "version https://git-lfs.github.com/spec/v1\noid sha256:abc\nsize 12\n")
    with pytest.raises(LLMError, match=r"model\.safetensors is a git-lfs pointer.*git lfs pull"):
        LLMClient(LLMConfig(llm_path=str(tmp_path / "lfs")), progress=False)


def test_api_key_is_sent_and_never_written(tmp_path, monkeypatch):
    secret = "sk-test-never-written-123"
    monkeypatch.setenv("HF_REAL3D_TEST_KEY", secret)
    with StubLLM(lambda m: "ok", require_key=secret) as srv:
        c = client(srv.url, tmp_path, llm_api_key_env="HF_REAL3D_TEST_KEY")
        assert [g.text for g in c.generate(chats(2))] == ["ok", "ok"]
    written = "".join(p.read_text() for p in tmp_path.rglob("*") if p.is_file())
    assert secret not in written and secret not in json.dumps(c.describe())


def test_401_names_the_key(tmp_path, monkeypatch):
    with StubLLM(lambda m: "ok", require_key="sk-right") as srv:
        # no key given: the probe says which option takes one
        with pytest.raises(LLMError, match=r"HTTP 401: the server wants an API key.*"
                                           r"--llm_api_key_env"):
            client(srv.url, tmp_path).check()
        monkeypatch.setenv("HF_REAL3D_TEST_KEY", "sk-wrong")
        with pytest.raises(LLMError, match=r"HTTP 401: the key in \$HF_REAL3D_TEST_KEY "
                                           r"\(--llm_api_key_env\) was refused"):
            client(srv.url, tmp_path, llm_api_key_env="HF_REAL3D_TEST_KEY").check()
        # without the probe, the first 401 stops the run: every request would fail alike
        c = client(srv.url, tmp_path, llm_api_key_env="HF_REAL3D_TEST_KEY", llm_no_probe=True,
                   llm_concurrency=2)
        with pytest.raises(LLMError, match="HTTP 401 .*--llm_api_key_env.*nothing more"):
            c.generate(chats(50))
        assert srv.requests <= 2 + 2


def test_a_200_reply_that_is_not_a_completion_fails_that_item_only(tmp_path):
    def reply(messages):
        n = int(messages[-1]["content"].split()[-1])
        if n == 37:
            return Raw(b"<html><body>Please log in to the portal</body></html>")
        if n == 61:
            return {"id": "x", "object": "chat.completion", "choices": []}
        return f"answer {n}"

    with StubLLM(reply) as srv:
        out = client(srv.url, tmp_path, llm_concurrency=8).generate(chats(100))
    bad = {i: g.error for i, g in enumerate(out) if g.text is None}
    assert set(bad) == {37, 61}
    assert bad[37].startswith("HTTP 200 but not a completion: an HTML page") and \
        "login portal" in bad[37]
    assert bad[61] == "HTTP 200 but the reply has no choices" or \
        bad[61].startswith("HTTP 200 but the reply has no choices")
    assert out[99].text == "answer 99"
    # at the probe: one line naming the URL, not a traceback
    with StubLLM(lambda m: "x", models_page=Raw(b"<html>Sign in</html>")) as srv:
        with pytest.raises(LLMError, match=r"GET /models answered HTTP 200 but not a model "
                                           r"list \('<html>Sign in</html>'\)"):
            client(srv.url, tmp_path).check()


def test_everything_failed_and_too_many_failures_in_a_row(tmp_path):
    with StubLLM(lambda m: 503) as srv:
        c = client(srv.url, tmp_path, llm_concurrency=4)  # --max_failures 20, the default
        with pytest.raises(LLMError, match=r"stopped after 20 failures in a row "
                                           r"\(`max_failures` 20\); the last: prompt \d+: "
                                           "HTTP 503"):
            c.generate(chats(200))
        assert 20 <= srv.requests <= 20 + 4
        c = client(srv.url, tmp_path, max_failures=0)
        assert all(g.text is None for g in c.generate(chats(30)))  # 0: never stops


def test_progress_bar_shows_failures(tmp_path, capsys):
    with StubLLM(lambda m: 500 if m[-1]["content"].endswith(" 3") else "ok") as srv:
        client(srv.url, tmp_path, progress=True, llm_concurrency=1).generate(chats(6))
    err = capsys.readouterr().err
    assert "failed 1" in err and "first failure: prompt 3: HTTP 500" in err


def test_cache_key_follows_what_the_server_says_and_the_tag(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_REAL3D_CACHE", str(tmp_path / "hf_cache"))
    with StubLLM(lambda m: "ok", card={"created": 1_000_000, "owned_by": "lab"}) as srv:
        client(srv.url, tmp_path, llm_cache=None).generate(chats(2))
        client(srv.url, tmp_path, llm_cache=None).generate(chats(2))
        assert srv.requests == 2
        srv.card["created"] = 2_000_000  # another model served under the same name
        client(srv.url, tmp_path, llm_cache=None).generate(chats(2))
        assert srv.requests == 4
        c = client(srv.url, tmp_path, llm_cache=None, llm_cache_tag="rev2")
        c.generate(chats(2))
        assert srv.requests == 6 and c.cache.folder != client(srv.url, tmp_path,
                                                              llm_cache=None).cache.folder
        # a stamp of the request's time (vLLM's `created`) is not the model's: left out
        srv.card["created"] = int(time.time())
        c = client(srv.url, tmp_path, llm_cache=None)
        c.check()
        card = c.backend.inner.card
        assert "created" not in card and card["owned_by"] == "lab"
    # a gateway without /models: --llm_no_probe
    with StubLLM(lambda m: "ok", models_page=Raw(b"<html>no</html>")) as srv:
        with pytest.raises(LLMError):
            client(srv.url, tmp_path / "p").check()
        c = client(srv.url, tmp_path / "p", llm_no_probe=True)
        assert c.generate(chats(1))[0].text == "ok"


def test_first_json_object_of_a_reply():
    assert first_json_object('Sure! {"a": {"b": 1}} and {"c": 2}') == {"a": {"b": 1}}
    assert first_json_object('{not json} then {"x": "}"}') == {"x": "}"}
    with pytest.raises(ValueError):
        first_json_object("[1, 2] no object")


def test_structured_output_falls_back_and_the_record_says_so(tmp_path):
    from hf_real3d.real3dqa.rotate import ROTATION_SCHEMA

    with StubLLM(lambda m: json.dumps(GOOD), refuse_formats={"json_schema"}) as srv:
        c = client(srv.url, tmp_path, llm_concurrency=1)
        out = c.generate(chats(3), schema=ROTATION_SCHEMA)
        assert all(g.text == json.dumps(GOOD) for g in out)
        kinds = [(b.get("response_format") or {}).get("type") for b in srv.bodies]
        assert kinds == ["json_schema", "json_object", "json_object", "json_object"]
        assert srv.bodies[0]["response_format"]["json_schema"]["schema"] == ROTATION_SCHEMA
        assert c.formats.record(True).startswith(
            "json_object (the server refused json_schema: HTTP 400: response_format")
        assert [g.attempts[-1].structured for g in out] == ["json_object"] * 3
        # a new run finds the replies under the format they were asked with
        again = client(srv.url, tmp_path)
        again.generate(chats(3), schema=ROTATION_SCHEMA)
        assert again.stats.requests == 0
    with StubLLM(lambda m: json.dumps(GOOD), refuse_formats={"json_schema", "json_object"}
                 ) as srv:
        c = client(srv.url, tmp_path / "b", llm_concurrency=1)
        out = c.generate(chats(3), schema=ROTATION_SCHEMA)
        assert all(g.text is not None for g in out)
        assert [b.get("response_format") is None for b in srv.bodies][-3:] == [True] * 3
        assert "plain prompts for the rest of the run" in c.formats.record(True)
    with StubLLM(lambda m: json.dumps(GOOD), refuse_formats={"json_schema"}) as srv:
        c = client(srv.url, tmp_path / "c", llm_structured="none")
        c.generate(chats(2), schema=ROTATION_SCHEMA)
        assert all("response_format" not in b for b in srv.bodies)
    # one format asked for, and refused: those items fail, with no plain prompt sent
    with StubLLM(lambda m: json.dumps(GOOD), refuse_formats={"json_schema"}) as srv:
        c = client(srv.url, tmp_path / "d", llm_structured="json_schema", llm_concurrency=1)
        out = c.generate(chats(3), schema=ROTATION_SCHEMA)
        assert srv.requests == 1 and all(g.text is None for g in out)
        assert all(g.error.endswith("(--llm_structured json_schema; auto falls back)")
                   for g in out)
        assert c.formats.record(True).startswith("json_schema (the server refused")


def test_shipped_examples_rotate_correctly():
    tpl = PromptTemplate.load(ROTATE_TEMPLATE, required=("degrees", "situation", "question",
                                                          "answer"), optional=("scene_graph",),
                              output=("situation", "answer"))
    assert len(tpl.examples) >= 3
    for ex in tpl.examples:
        assert check_text(ex["situation"], ex["output"]["situation"], ex["degrees"]) == [], ex
        assert parse_rotation(json.dumps(ex["output"]), ex["situation"])[1] is None
    msgs = tpl.messages(degrees=90, situation="s", question="q", answer="a", scene_graph="g")
    assert [m["role"] for m in msgs] == ["system"] + ["user", "assistant"] * 3 + ["user"]
    noted = tpl.messages(degrees=90, situation="s", question="q", answer="a", scene_graph="g",
                         note=HEADING_CUE_NOTE)
    assert noted[-1]["content"] == msgs[-1]["content"] + "\n" + HEADING_CUE_NOTE


def test_replies_that_cannot_be_used_are_excluded_with_the_reason():
    original = "I am facing the door."
    assert parse_rotation('{"situation": "I am facing the bed.", "answer": "yes"}', original) \
        == ({"situation": "I am facing the bed.", "answers": ["yes"]}, None)
    assert parse_rotation('```json\n{"situation": "I face the bed.", "answer": "no"}\n```',
                          original)[0]["answers"] == ["no"]
    # the first JSON object of a chatty reply is read
    assert parse_rotation('Sure! {"situation": "I face the bed.", "answer": "no"} Hope it helps',
                          original)[0]["situation"] == "I face the bed."
    for text, why in (("right right }", "not a JSON object"), ("[1]", "not a JSON object"),
                      ('{"situation": "", "answer": "x"}', "empty or missing situation"),
                      ('{"situation": "a b", "answer": ""}', "empty or missing answer"),
                      ('{"situation": "I am facing  the door.", "answer": "x"}',
                       "repeats the original situation"),
                      ('Sure! {"situation": "I am in the room.", "answer": "y"}',
                       "no heading cue in the rotated situation")):
        assert parse_rotation(text, original) == (None, why), text
    assert parse_rotation(json.dumps(GOOD), original, cut=True) == (None, "cut at max_tokens")


def test_heading_cues():
    for text in ("I am facing the door.", "The lamp is on my left.", "I am walking towards "
                 "the whiteboard.", "A chair is at my 3 o'clock.", "I have my back to the sink.",
                 "I am writing on the whiteboard with a trash can by my right foot."):
        assert heading_cue(text), text
    for text in ("I am turning on the lamp while standing between two beds.",
                 "I am using the toilet.", "I am washing my face at the sink."):
        assert not heading_cue(text), text


@pytest.fixture(scope="module")
def sqa3d_folder(tmp_path_factory):
    """A small synthetic SQA3D folder with its scenes (one room, 12 questions)."""
    from hf_real3d.synth import SynthConfig, build_benchmark

    root = tmp_path_factory.mktemp("llm_data")
    build_benchmark(root / "synth", SynthConfig(seed=2, scenes={"train": 0, "val": 0, "test": 1},
                                                questions_per_scene={"test": 12}),
                    workers=1, progress=False)
    return root / "synth"


def rotated(*args, **kwargs) -> dict:
    """rotate_dataset's typed summary (a RotateRun, or a Trial) as the dict its JSON is."""
    import dataclasses

    from hf_real3d.real3dqa.rotate import rotate_dataset

    return dataclasses.asdict(rotate_dataset(*args, **kwargs))


def _parts(messages):
    text = messages[-1]["content"]
    return (text.split("Situation before the turn: ")[1].split("\n")[0],
            text.split("Question: ")[1].split("\n")[0],
            int(text.split("The agent turns ")[1].split()[0]))


def test_rotate_keeps_what_parses_and_checks_it(sqa3d_folder, tmp_path):
    """A scripted model: a situation naming no direction for some questions (excluded: no
    heading cue), the original situation reworded for others (it parses, and the checker
    flags it), garbage for the rest (excluded); geometry is not used (no scenes). Kept items
    carry the model's reply; every attempt is recorded with its tokens."""
    from hf_real3d.hub import load_local
    from hf_real3d.sqa3d import read_split

    recs = read_split(sqa3d_folder / "sqa3d", "test")
    kinds = {(r.situation, r.question): i % 3 for i, r in enumerate(recs)}
    assert len(kinds) == len(recs)

    def reply(messages):
        sit, q, _ = _parts(messages)
        kind = kinds[(sit, q)]
        if kind == 2:
            return "I cannot do that"
        new = "Still, " + sit[0].lower() + sit[1:] if kind == 1 else "I am in the room."
        return json.dumps({"situation": new, "answer": "no"})

    with StubLLM(reply) as srv:
        s = rotated(sqa3d_folder / "sqa3d", tmp_path / "rot", client(srv.url, tmp_path))
    garbage = sum(v == 2 for v in kinds.values())
    no_cue = sum(v == 0 for v in kinds.values())
    assert s["sources"] == {"lm": 3 * s["groups"]} and s["groups"] == len(recs) - garbage - no_cue
    assert s["reasons"] == {"not a JSON object": 3 * garbage,
                            "no heading cue in the rotated situation": 3 * no_cue}
    assert s["usage"]["prompt_tokens"] == 7 * 3 * len(recs) and s["structured"] == "json_schema"
    rot = load_local(tmp_path / "rot", "rotations").to_pandas()
    assert set(rot.source) == {"original", "lm"}
    assert set(rot[rot.rotation_deg == 90].answers.map(list).map(tuple)) == {("no",)}
    turned = rot[rot.rotation_deg > 0]
    assert all(json.loads(r)["situation"] == s_ for r, s_ in zip(turned.raw_reply,
                                                                  turned.situation))
    assert set(rot[rot.rotation_deg == 0].raw_reply) == {""}
    ex = load_local(tmp_path / "rot", "rotations_excluded").to_pandas()
    assert set(ex.output) == {"I cannot do that", json.dumps({"situation": "I am in the room.",
                                                               "answer": "no"})}
    calls = load_local(tmp_path / "rot", "llm_calls").to_pandas()
    assert len(calls) == 3 * len(recs) and set(calls.finish_reason) == {"stop"}
    assert calls.completion_tokens.sum() == 3 * 3 * len(recs)
    card = (tmp_path / "rot/README.md").read_text()
    assert "structured output: json_schema" in card and "finish reasons: stop" in card
    checks = json.loads((tmp_path / "rot/checks/check.json").read_text())
    verdicts = [json.loads(x) for x in (tmp_path / "rot/checks/verdicts.jsonl").read_text()
                .splitlines()]
    flagged = {v["question_id"] for v in verdicts if v["verdict"] != "pass"}
    assert flagged == {r.question_id for r in recs if kinds[(r.situation, r.question)] == 1}
    assert checks["items"] == 3 * s["groups"]


def test_a_sibling_viewpoints_exclusion_is_reported(sqa3d_folder, tmp_path):
    """Replies that parse but whose question lost another viewpoint are in
    rotations_excluded with the reason, not dropped in silence."""
    from hf_real3d.hub import load_local
    from hf_real3d.sqa3d import read_split

    recs = read_split(sqa3d_folder / "sqa3d", "test")
    odd = {(r.situation, r.question) for r in recs[1::2]}

    def reply(messages):
        sit, q, deg = _parts(messages)
        return "no idea" if (sit, q) in odd and deg == 180 else json.dumps(GOOD)

    with StubLLM(reply) as srv:
        s = rotated(sqa3d_folder / "sqa3d", tmp_path / "rot", client(srv.url, tmp_path))
    n = len(odd)
    assert s["groups"] == len(recs) - n
    assert s["reasons"] == {"not a JSON object": n, "a sibling viewpoint was excluded": 2 * n}
    ex = load_local(tmp_path / "rot", "rotations_excluded").to_pandas()
    sib = ex[ex.reason.str.startswith("a sibling")]
    assert set(sib.reason) == {"a sibling viewpoint was excluded (rotation_deg 180)"}
    assert sorted(sib.rotation_deg.unique()) == [90, 270] and set(sib.output) == {
        json.dumps(GOOD)}
    # every turned viewpoint asked is accounted for: kept or excluded
    assert 3 * s["groups"] + len(ex) == 3 * len(recs)


def _real_like(sqa3d_folder: Path, dest: Path, no_cue: dict[int, str]) -> Path:
    """The synthetic SQA3D files as real ones (no semantics), some situations replaced."""
    dest.mkdir(parents=True)
    for f in (sqa3d_folder / "sqa3d").glob("*test*.json"):
        data = json.loads(f.read_text())
        for a in data.get("annotations", []):
            a.pop("synth", None)
        for i, q in enumerate(data.get("questions", [])):
            q["situation"] = no_cue.get(i, q["situation"])
        (dest / f.name).write_text(json.dumps(data))
    return dest


def test_no_heading_cue(sqa3d_folder, tmp_path):
    """A situation naming no direction: without a scene it is not asked and is counted; with
    one, the prompt asks for a heading cue."""
    from hf_real3d.hub import load_local

    lamp = "I am turning on the lamp while standing between two beds."
    folder = _real_like(sqa3d_folder, tmp_path / "sqa", {0: lamp, 1: lamp})
    seen = []

    def reply(messages):
        seen.append(messages[-1]["content"])
        return json.dumps(GOOD)

    with StubLLM(reply) as srv:
        s = rotated(folder, tmp_path / "rot", client(srv.url, tmp_path))
    assert s["no_heading_cue"] == 2 and s["reasons"] == {"no heading cue without a scene": 6}
    assert not any(lamp in t for t in seen) and len(seen) == 3 * 10
    ex = load_local(tmp_path / "rot", "rotations_excluded").to_pandas()
    assert (ex.reason == "no heading cue without a scene").sum() == 6
    assert "Questions whose situation names no direction: 2" in (tmp_path / "rot/README.md"
                                                                 ).read_text()
    seen.clear()
    with StubLLM(reply) as srv:
        s = rotated(folder, tmp_path / "rot2", client(srv.url, tmp_path),
                           scenes=sqa3d_folder / "scans")
    cue_less = [t for t in seen if lamp in t]
    assert s["no_heading_cue"] == 2 and len(cue_less) == 6
    assert all(t.endswith(HEADING_CUE_NOTE) for t in cue_less)
    assert not any(t.endswith(HEADING_CUE_NOTE) for t in seen if lamp not in t)


def test_rotate_of_a_built_folder_keeps_its_geometry_groups(sqa3d_folder, tmp_path):
    """`build-real3dqa` then `rotate --dataset built`: every geometry group the build made is
    made again (the real3dqa config keeps the semantics), so the model is asked only for the
    rest."""
    from hf_real3d.hub import load_local
    from hf_real3d.real3dqa.build import build_real3dqa
    from hf_real3d.sqa3d import read_split

    recs = read_split(sqa3d_folder / "sqa3d", "test")
    full = tmp_path / "full.jsonl"
    full.write_text("\n".join(json.dumps({"question_id": r.question_id, "prediction": "zzz"})
                              for r in recs))
    build_real3dqa(sqa3d_folder / "sqa3d", sqa3d_folder / "scans", tmp_path / "built",
                   pairs=[("m", str(full), str(full))], progress=False)
    built = load_local(tmp_path / "built", "rotations").to_pandas()
    geometry = set(built.question_id)
    assert geometry
    with StubLLM(lambda m: json.dumps(GOOD)) as srv:
        s = rotated(tmp_path / "built", tmp_path / "rot", client(srv.url, tmp_path))
        asked = srv.requests
    rot = load_local(tmp_path / "rot", "rotations").to_pandas()
    assert set(rot[rot.source == "geometry"].question_id) == geometry
    assert s["sources"]["geometry"] == 3 * len(geometry)
    assert asked == 3 * (len(recs) - len(geometry))
    # a folder built before the real3dqa config kept the semantics: read from its rotations
    from hf_real3d.hub import ConfigData, write_dataset_folder
    from hf_real3d.schema import question_features, scene_features

    configs = []
    for name in ("real3dqa", "rotations", "scenes"):
        ds = load_local(tmp_path / "built", name)
        rows = [{k: v for k, v in r.items() if not (name == "real3dqa" and k == "semantics")}
                for r in ds]
        feats = question_features("kind", "guessable", "prior_kind", "dependency") \
            if name == "real3dqa" \
            else scene_features() if name == "scenes" else ds.features
        configs.append(ConfigData(name, {"test": rows}, feats, default=name == "real3dqa"))
    write_dataset_folder(tmp_path / "old", configs, pretty_name="old", summary="old",
                         license="other", citation="")
    assert "semantics" not in load_local(tmp_path / "old", "real3dqa").column_names
    # one reader of questions: which config holds them, decided in one place; a folder
    # whose questions lack their semantics gets those its rotations config records (for the
    # questions geometry turned)
    from hf_real3d.sources import read_questions, resolve

    src = resolve(tmp_path / "built")
    assert src.question_config() == "real3dqa"
    assert src.question_config(before_filtering=True) == "sqa3d"
    kept = read_questions(src)
    old = read_questions(resolve(tmp_path / "old"))
    assert [r.question_id for r in read_questions(src, before_filtering=True)] == \
        [r.question_id for r in recs] == [r.question_id for r in kept]
    same = [(o.extra, k.extra) for o, k in zip(old, kept) if o.question_id in geometry]
    assert len(same) == len(geometry) and all(a == b and a["synth"] for a, b in same)
    with StubLLM(lambda m: json.dumps(GOOD)) as srv:
        s = rotated(tmp_path / "old", tmp_path / "rot_old",
                           client(srv.url, tmp_path))
    assert s["sources"]["geometry"] == 3 * len(geometry)
    # --out equal to or inside the input is refused before any work
    for out in (tmp_path / "built", tmp_path / "built/rotated"):
        with pytest.raises(ValueError, match="out .*(is|lies inside) the input dataset"):
            rotate_dataset(tmp_path / "built", out, client("http://127.0.0.1:1/v1",
                                                           tmp_path / "n"))
    assert not (tmp_path / "built/rotated").exists() and not (tmp_path / "n").exists()
    assert load_local(tmp_path / "built", "rotations").num_rows == len(built)


def test_reask_with_the_next_seed_and_cut_replies(sqa3d_folder, tmp_path):
    from hf_real3d.hub import load_local

    def reply(messages, body):
        if body["seed"] == 0:
            return "Let me think about the room first"
        return json.dumps(GOOD)

    with StubLLM(reply) as srv:
        with pytest.raises(LLMError, match="no rotation group"):
            rotate_dataset(sqa3d_folder / "sqa3d", tmp_path / "a", client(srv.url, tmp_path))
        assert not (tmp_path / "a").exists()
        asked = srv.requests
        s = rotated(sqa3d_folder / "sqa3d", tmp_path / "b",
                           client(srv.url, tmp_path, llm_reask=2))
        # each first attempt came from the cache; the re-ask with seed 1 was sent
        assert srv.requests == 2 * asked and s["groups"] == asked // 3
    calls = load_local(tmp_path / "b", "llm_calls").to_pandas()
    assert sorted(calls.attempt.unique()) == [0, 1] and set(calls[calls.attempt == 1].seed) == {1}
    assert set(calls[calls.attempt == 0].reason) == {"not a JSON object"}
    assert calls[calls.attempt == 0].cached.all() and not calls[calls.attempt == 1].cached.any()
    with StubLLM(lambda m: (json.dumps(GOOD), "length")) as srv:
        with pytest.raises(LLMError, match="cut at max_tokens"):
            rotate_dataset(sqa3d_folder / "sqa3d", tmp_path / "c",
                           client(srv.url, tmp_path / "cut"))


def _cli(*args, env=None):
    return run_cli(*args, env=env)  # in process: the exit code and output are tested


def test_dry_run_limit_and_run_options(sqa3d_folder, tmp_path, capsys):
    from hf_real3d.cli import main

    with StubLLM(lambda m: "yes") as srv:
        llm = ["--llm_url", srv.url, "--llm_model", "stub", "--llm_cache",
               str(tmp_path / "cache")]
        assert main(["judge", "--dataset", str(sqa3d_folder / "sqa3d"), "--out",
                     str(tmp_path / "j.jsonl"), *llm, "--dry_run"]) == 0
        out = capsys.readouterr().out
        assert srv.requests == 0 and not (tmp_path / "j.jsonl").exists()
        assert "dry run: 12 prompts, 0 answered from the cache, 12 request(s) would be sent" \
            in out and "[system] You answer questions" in out
        assert not (tmp_path / "cache").exists()
        assert main(["judge", "--dataset", str(sqa3d_folder / "sqa3d"), "--out",
                     str(tmp_path / "j.jsonl"), *llm, "--limit", "5"]) == 0
        rows = [json.loads(x) for x in (tmp_path / "j.jsonl").read_text().splitlines()]
        assert srv.requests == 5 and len(rows) == 5
        meta = json.loads((tmp_path / "j.judge.json").read_text())
        assert meta["limit"] == 5 and meta["usage"]["finish_reasons"] == {"stop": 5}
        assert rows[0]["finish_reason"] == "stop" and rows[0]["completion_tokens"] == 3
        # the same seed draws the same subset; a dry run counts what the cache holds
        assert main(["judge", "--dataset", str(sqa3d_folder / "sqa3d"), "--out",
                     str(tmp_path / "j.jsonl"), *llm, "--dry_run"]) == 0
        assert "12 prompts, 5 answered from the cache, 7 request(s)" in capsys.readouterr().out
        assert srv.requests == 5
        capsys.readouterr()
        # every run option is checked before any work
        for bad, msg in ((["--limit", "0"], "--limit 0: expected at least 1"),
                         (["--llm_reask", "-1"], "--llm_reask -1"),
                         (["--max_failures", "-2"], "--max_failures -2"),
                         (["--dry_run", "--batch_out", str(tmp_path / "b.jsonl")],
                          "--dry_run with --batch_out"),
                         (["--llm_structured", "xml"], "invalid choice"),
                         (["--llm_concurrency", "0"], "--llm_concurrency 0")):
            try:
                code = main(["rotate", "--dataset", str(sqa3d_folder / "sqa3d"), "--out",
                             str(tmp_path / "r"), *llm, *bad])
            except SystemExit as exit_:  # argparse's own refusal of a value
                code = exit_.code
            err = capsys.readouterr().err
            assert code == 2 and re.search(msg, err), (bad, err)
        assert srv.requests == 5 and not (tmp_path / "r").exists()


def test_batch_round_trip_gives_the_live_output(sqa3d_folder, tmp_path):
    """--batch_out, a batch run (what vllm run-batch does), --batch_in: the same predictions
    file and the same rotation set as the live run."""
    from hf_real3d.hub import load_local
    from hf_real3d.sqa3d import read_split

    recs = read_split(sqa3d_folder / "sqa3d", "test")
    seen = {}

    def reply(messages):
        text = messages[-1]["content"]
        if "Situation before the turn" not in text:
            return "answer " + str(len(text))
        sit, q, deg = _parts(messages)
        seen.setdefault((sit, q), len(seen))
        return "garbage" if seen[(sit, q)] % 4 == 0 else json.dumps(
            {"situation": f"I am facing the door at {deg}, the bed on my left.", "answer": "x"})

    with StubLLM(reply) as srv:
        live = client(srv.url, tmp_path / "live")
        run_judge(sqa3d_folder / "sqa3d", tmp_path / "live.jsonl", live)
        rotate_dataset(sqa3d_folder / "sqa3d", tmp_path / "live_rot", live)
        sent = srv.requests
        offline = dict(llm_cache=tmp_path / "offline")
        t = run_judge(sqa3d_folder / "sqa3d", tmp_path / "b.jsonl",
                      client(None, tmp_path, **offline,
                             batch_out=str(tmp_path / "judge_requests.jsonl")))
        assert t.requests == len(recs) and not (tmp_path / "b.jsonl").exists()
        t = rotated(sqa3d_folder / "sqa3d", tmp_path / "b_rot",
                           client(None, tmp_path, **offline,
                                  batch_out=str(tmp_path / "rot_requests.jsonl")))
        assert t["requests"] == 3 * len(recs) and not (tmp_path / "b_rot").exists()
        line = json.loads((tmp_path / "rot_requests.jsonl").read_text().splitlines()[0])
        assert line["method"] == "POST" and line["url"] == "/v1/chat/completions"
        assert line["body"]["response_format"]["type"] == "json_schema"
        assert srv.requests == sent  # writing the batch sent nothing
        run_batch(tmp_path / "judge_requests.jsonl", tmp_path / "judge_results.jsonl", srv.url)
        run_batch(tmp_path / "rot_requests.jsonl", tmp_path / "rot_results.jsonl", srv.url)
    run_judge(sqa3d_folder / "sqa3d", tmp_path / "b.jsonl",
              client(None, tmp_path, **offline, batch_in=str(tmp_path / "judge_results.jsonl")))
    assert (tmp_path / "b.jsonl").read_text() == (tmp_path / "live.jsonl").read_text()
    meta = json.loads((tmp_path / "b.judge.json").read_text())
    assert meta["judge"]["route"] == "batch" and "url" not in meta["judge"]
    # the batch's replies are cached under the keys of a server asked without its probe
    with StubLLM(lambda m: "never asked") as srv:
        m = run_judge(sqa3d_folder / "sqa3d", tmp_path / "e.jsonl",
                      client(srv.url, tmp_path, **offline, llm_no_probe=True))
        assert srv.requests == 0 and m.cached == len(recs)
    s = rotated(sqa3d_folder / "sqa3d", tmp_path / "b_rot",
                       client(None, tmp_path, **offline,
                              batch_in=str(tmp_path / "rot_results.jsonl")))
    assert s["groups"] > 0 and s["excluded"] > 0
    for config in ("rotations", "rotations_excluded", "real3dqa"):
        a = load_local(tmp_path / "live_rot", config).to_pandas()
        b = load_local(tmp_path / "b_rot", config).to_pandas()
        assert a.to_json() == b.to_json(), config
    # a results file of another run is refused, naming it
    with pytest.raises(LLMError, match="none of its .* answers a request of this run"):
        run_judge(sqa3d_folder / "sqa3d", tmp_path / "c.jsonl",
                  client(None, tmp_path, llm_cache=tmp_path / "other", seed=5,
                         batch_in=str(tmp_path / "judge_results.jsonl")))
    # the command line: a batch file needs the model's name, not a server
    from hf_real3d.cli import main

    assert main(["judge", "--dataset", str(sqa3d_folder / "sqa3d"), "--out",
                 str(tmp_path / "d.jsonl"), "--llm_model", "stub", "--llm_cache",
                 str(tmp_path / "cli_cache"), "--batch_out", str(tmp_path / "cli.jsonl")]) == 0
    assert (tmp_path / "cli.jsonl").read_text() == (tmp_path / "judge_requests.jsonl"
                                                    ).read_text()


def test_batch_in_beside_a_server_is_refused(sqa3d_folder, tmp_path, capsys):
    """--batch_in with --llm_url (issue 56): the results file would replace the server, which
    would be asked nothing, so the pair is refused in one line naming both flags and the fix,
    before any work, by judge and rotate alike; so is a results file that is not there."""
    from hf_real3d.cli import main

    results = tmp_path / "results.jsonl"
    results.write_text("")
    with StubLLM(lambda m: "yes") as srv:
        for command, out in (("judge", tmp_path / "j.jsonl"), ("rotate", tmp_path / "r")):
            for batch_in, why in ((results, rf"--batch_in {results} with --llm_url {srv.url}: "
                                             r".*drop --llm_url .*or drop --batch_in"),
                                  (tmp_path / "none.jsonl", "--batch_in .*none.jsonl: no such")):
                url = ["--llm_url", srv.url] if batch_in == results else []
                code = main([command, "--dataset", str(sqa3d_folder / "sqa3d"), "--out",
                             str(out), "--llm_model", "stub", "--llm_cache",
                             str(tmp_path / "cache"), *url, "--batch_in", str(batch_in)])
                err = capsys.readouterr().err
                assert code == 2 and len(err.splitlines()) == 1 and re.search(why, err), err
                assert not out.exists() and not (tmp_path / "cache").exists()
        assert srv.requests == 0
    with pytest.raises(SystemExit):
        main(["judge", "--help"])
    assert "Not with --llm_url" in " ".join(capsys.readouterr().out.split())


def test_failed_judge_runs_exit_non_zero_and_build_refuses_them(sqa3d_folder, tmp_path,
                                                                capsys):
    from hf_real3d.real3dqa.build import build_real3dqa
    from hf_real3d.sqa3d import read_split

    recs = read_split(sqa3d_folder / "sqa3d", "test")
    from hf_real3d.cli import main

    with StubLLM(lambda m: 503) as srv:
        llm = ["--llm-url", srv.url, "--llm-model", "stub", "--llm_retries", "0",
               "--llm_cache", str(tmp_path / "cache")]
        code = main(["judge", "--dataset", str(sqa3d_folder / "sqa3d"), "--out",
                     str(tmp_path / "j.jsonl"), *llm])
    assert code == 2 and "no question answered (12 failed: 12 HTTP 503" in \
        capsys.readouterr().err
    assert not (tmp_path / "j.jsonl").exists()
    # three of twelve fail: the file is written, and build-real3dqa refuses it
    hard = {r.question for r in recs[:3]}
    with StubLLM(lambda m: 500 if m[-1]["content"].split("Question: ")[1].split("\n")[0]
                 in hard else "no") as srv:
        m = run_judge(sqa3d_folder / "sqa3d", tmp_path / "j.jsonl",
                      client(srv.url, tmp_path, llm_cache=tmp_path / "c2"))
    n_hard = sum(r.question in hard for r in recs)
    assert m.failed == n_hard >= 3 and m.answered == 12 - n_hard
    full = tmp_path / "full.jsonl"
    full.write_text("\n".join(json.dumps({"question_id": r.question_id, "prediction": "zzz"})
                              for r in recs))
    code = main(["build-real3dqa", "--sqa3d", str(sqa3d_folder / "sqa3d"), "--scenes",
                 str(sqa3d_folder / "scans"), "--out", str(tmp_path / "r3"), "--full",
                 f"m={full}", "--blind", f"m={full}", "--judge", f"j={tmp_path / 'j.jsonl'}"])
    err = capsys.readouterr().err
    assert code == 2 and not (tmp_path / "r3").exists()
    assert f"--judge j={tmp_path / 'j.jsonl'}: {n_hard} of 12 questions failed" in err
    assert "--allow_judge_failures" in err
    build_real3dqa(sqa3d_folder / "sqa3d", sqa3d_folder / "scans", tmp_path / "r3",
                   pairs=[("m", str(full), str(full))], judges=[("j", str(tmp_path / "j.jsonl"))],
                   allow_judge_failures=True, progress=False)
    assert f"{n_hard} of 12 unanswered" in (tmp_path / "r3/README.md").read_text()


@pytest.fixture(scope="module")
def many_questions(tmp_path_factory):
    """40 synthetic questions without scenes (120 prompts for rotate)."""
    from hf_real3d.synth import SynthConfig, build_benchmark

    root = tmp_path_factory.mktemp("llm_many")
    build_benchmark(root / "synth", SynthConfig(seed=3, scenes={"train": 0, "val": 0, "test": 1},
                                                questions_per_scene={"test": 40}),
                    workers=1, progress=False, write_scenes=False)
    return root / "synth/sqa3d"


@pytest.mark.parametrize("sig,code,again", [
    (signal.SIGINT, 130, False),
    pytest.param(signal.SIGTERM, 143, True, marks=pytest.mark.slow)])
def test_a_signal_stops_within_seconds_keeping_every_reply(many_questions, tmp_path, sig,
                                                           code, again):
    """Ctrl-C or SIGTERM in the middle of `rotate`: it exits within 5 s, sends at most
    --llm_concurrency requests after the signal, and every reply the server gave is cached;
    the rerun asks only for the rest."""
    with StubLLM(lambda m: json.dumps(GOOD), delay=0.15) as srv:
        args = [str(BIN / "hf-real3d"), "rotate", "--dataset", str(many_questions), "--out",
                str(tmp_path / "rot"), "--llm-url", srv.url, "--llm-model", "stub",
                "--llm_cache", str(tmp_path / "cache"), "--llm_concurrency", "4"]
        # a real process: the signal and the exit code it gives are what is tested
        proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True)
        deadline = time.time() + 120
        while srv.answered < 12 and time.time() < deadline:
            assert proc.poll() is None, proc.stderr.read()[-2000:]
            time.sleep(0.02)
        at_signal = srv.requests
        t0 = time.perf_counter()
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=60)
        took = time.perf_counter() - t0
        assert proc.returncode == code, err[-2000:]
        assert took < 5, took
        assert srv.requests - at_signal <= 4
        assert srv.answered < 120 and replies_cached(tmp_path / "cache") == srv.answered
        assert "replies received and cached" in err and not (tmp_path / "rot").exists()
        if not again:
            return
        cached = replies_cached(tmp_path / "cache")
        before = srv.requests
        p = _cli(*args[1:])
    assert p.returncode == 0, p.stderr[-2000:]
    m = re.search(r"(\d+) prompts, (\d+) cached, (\d+) request\(s\) sent", p.stdout)
    assert m and int(m[1]) == 120 and int(m[2]) >= cached > 0
    assert int(m[3]) == srv.requests - before == 120 - int(m[2])


@pytest.mark.slow
def test_the_throughput_bench_runs(tmp_path):
    p = subprocess.run([sys.executable, str(Path(__file__).parents[1] / "bench/llm_client.py"),
                        "--questions", "300", "--rounds", "1"], capture_output=True, text=True,
                       timeout=600, cwd=tmp_path)
    assert p.returncode == 0, p.stderr[-3000:]
    row = json.loads(next(x for x in p.stdout.splitlines() if x.startswith("BENCH "))[6:])
    assert row["prompts"] == 300 and row["baseline"] > 0
    # the client's time (live minus dry run) is a figure, or, where a busy machine (the
    # suite's other worker) hides it in the start-up's noise, said to be unseparated
    if row.get("separated", True):
        assert row["value"] > 0 and "ms per prompt" in p.stdout and "ratio" in p.stdout
    else:
        assert row["ok"] is False and "too few prompts to separate" in p.stdout


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    root = tmp_path_factory.mktemp("serve")
    model = save_tiny_lm(root / "tiny", one_word=True)
    srv = TransformersServe(model, root / "serve.log").start()
    try:
        yield srv
    finally:
        srv.stop()


def _cli(*args, env=None):
    return run_cli(*args, env=env)  # in process: the exit code and output are tested


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
    assert all(r["finish_reason"] == "stop" for r in rows)
    assert meta["usage"]["completion_tokens"] > 0 and meta["usage"]["prompt_tokens"] > 0
    # rotate: what a random model writes is excluded, with the reason; geometry keeps its
    # groups (the scenes are given); the server ignores response_format (it says so in its
    # log), so the replies are plain text
    llm_rot = [*llm, "--scenes", sqa3d_folder / "scans"]
    p = _cli("rotate", "--dataset", sqa3d_folder / "sqa3d", "--out", tmp_path / "rot", *llm_rot)
    assert p.returncode == 0, p.stderr[-2000:]
    m = re.search(r"(\d+) turned items excluded: \{'not a JSON object': (\d+)\}", p.stdout)
    assert m and m[1] == m[2] and int(m[1]) > 0, p.stdout
    sent = served.completions()
    assert sent > 12
    p = _cli("rotate", "--dataset", sqa3d_folder / "sqa3d", "--out", tmp_path / "rot", *llm_rot)
    assert p.returncode == 0 and f"{m[1]} cached, 0 request(s) sent" in p.stdout
    assert served.completions() == sent
    # without scenes nothing is kept: the run says why and writes nothing
    p = _cli("rotate", "--dataset", sqa3d_folder / "sqa3d", "--out", tmp_path / "rot2", *llm)
    assert p.returncode == 2 and "no rotation group (12 questions; excluded turned items: " \
        "not a JSON object: 36)" in p.stderr
    assert not (tmp_path / "rot2").exists()


@pytest.mark.slow
def test_a_server_stopped_midway_loses_no_finished_item(sqa3d_folder, tmp_path):
    """A model that rambles to --max_tokens (every reply cut: no question answered, exit 2)
    behind a server killed midway: the replies received are cached, and the rerun against the
    server started again asks only for the rest."""
    model = save_tiny_lm(tmp_path / "tiny")
    log = tmp_path / "serve.log"
    srv = TransformersServe(model, log).start()
    llm = ["--llm-url", srv.url, "--llm-model", str(model), "--max_tokens", "400",
           "--llm_cache", tmp_path / "cache", "--llm_retries", "1", "--llm_timeout", "20",
           "--llm_concurrency", "1"]
    # a real process: it runs on while the test stops the server under it
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
    finished = replies_cached(tmp_path / "cache")
    assert proc.returncode == 2 and 0 < finished < 12, err[-2000:]
    assert "no question answered (12 failed: " in err and f"{finished} cut at max_tokens" in err
    assert "APIConnectionError" in err and not (tmp_path / "j.jsonl").exists()
    # the server is back: the rerun asks only for what failed
    srv = TransformersServe(model, log).start()
    try:
        sent = srv.completions()
        p = _cli("judge", "--dataset", sqa3d_folder / "sqa3d", "--out", tmp_path / "j.jsonl",
                 *[a if a != llm[1] else srv.url for a in llm])
        assert p.returncode == 2 and "12 failed: 12 cut at max_tokens" in p.stderr
        assert srv.completions() - sent == 12 - finished
    finally:
        srv.stop()


@pytest.mark.slow
def test_local_folder_route(sqa3d_folder, tmp_path):
    """The local route, batched: one-word replies, cached, and the same without the cache."""
    model = save_tiny_lm(tmp_path / "tiny", one_word=True)
    local = dict(llm_path=str(model), max_tokens=6)
    c = LLMClient(LLMConfig(**local, llm_cache=str(tmp_path / "cache")), progress=False)
    m = run_judge(sqa3d_folder / "sqa3d", tmp_path / "j.jsonl", c)
    assert m.answered == 12 and c.stats.requests == 12 and m.judge["route"] == "local"
    first = (tmp_path / "j.jsonl").read_text()
    c2 = LLMClient(LLMConfig(**local, llm_cache=str(tmp_path / "cache")), progress=False)
    run_judge(sqa3d_folder / "sqa3d", tmp_path / "j.jsonl", c2)
    assert c2.stats.requests == 0 and (tmp_path / "j.jsonl").read_text() == first
    # the same greedy decoding without the cache gives the same text
    c3 = LLMClient(LLMConfig(**local, no_llm_cache=True), progress=False)
    run_judge(sqa3d_folder / "sqa3d", tmp_path / "k.jsonl", c3)
    assert (tmp_path / "k.jsonl").read_text() == first
    # batches are left-padded: one prompt at a time gives the same replies
    c4 = LLMClient(LLMConfig(**local, no_llm_cache=True, llm_concurrency=1), progress=False)
    run_judge(sqa3d_folder / "sqa3d", tmp_path / "o.jsonl", c4)
    assert (tmp_path / "o.jsonl").read_text() == first
    p = _cli("judge", "--dataset", sqa3d_folder / "sqa3d", "--out", tmp_path / "l.jsonl",
             "--llm-path", tmp_path / "nothing")
    assert p.returncode == 2 and "--llm_path" in p.stderr and "no such folder" in p.stderr


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

    from hf_real3d.real3dqa.review import ReviewFolder
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
            rf = ReviewFolder.open(tmp_path / "review")
            while (e := rf.next_entry("reviewer")[0]) is not None:
                rf.record("reviewer", e, "accept")
            ran.append("explore")
            continue
        if args[1] == "evaluate":  # the user's model: right everywhere
            from hf_real3d.real3dqa.references import load_references

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
    assert m.questions == len(qs) and all(a.startswith("Situation: \nQuestion: ")
                                             for a in asked)
    full = tmp_path / "full.jsonl"
    full.write_text("\n".join(json.dumps({"question_id": q, "prediction": "zzz"})
                              for q in qs.question_id))
    s = build_real_scanqa(scanqa, tmp_path / "rs", pairs=[("m", str(full), str(full))],
                          judges=[("stub", str(tmp_path / "j.jsonl"))])
    colour = int(qs.question.str.startswith("What color").sum())
    assert colour and s.removed == colour
    assert "judge `stub`: stub at http://127.0.0.1" in (tmp_path / "rs/README.md").read_text()
    assert f"removed {colour} question(s)" in (tmp_path / "rs/README.md").read_text()


def test_rotate_with_one_viewpoint_is_refused_before_any_work(sqa3d_folder, tmp_path, capsys):
    """`--viewpoints 1` would write a rotation set with no turned item (issue 49)."""
    from hf_real3d.cli import main

    assert main(["rotate", "--dataset", str(sqa3d_folder / "sqa3d"), "--out",
                 str(tmp_path / "rot"), "--viewpoints", "1", "--llm_url",
                 "http://127.0.0.1:1/v1", "--llm_model", "m", "--llm_no_probe"]) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert "--viewpoints 1: a rotation set needs viewpoint 0 and at least one turn" in err
    assert not (tmp_path / "rot").exists()
