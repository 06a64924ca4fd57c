"""Bad input, round 7, the language-model steps (issue 63, class 3), through `hf-real3d
judge`: reply-cache entries that are null, of another schema or another prompt's, a cache
filled under another model, tag or prompt (never an answer given silently), prompt files
with placeholders the code does not fill or examples without their output, and limits out
of range. Each mistake is one line naming the file or option, with nothing written and the
inputs untouched."""

import hashlib
import json
from pathlib import Path

import pytest
from helpers.cli import run_cli
from helpers.llm_servers import StubLLM

from hf_real3d.real3dqa.judge import JUDGE_TEMPLATE


@pytest.fixture(scope="module")
def questions(tmp_path_factory):
    """A synthetic SQA3D folder of 12 questions (no scenes: judge reads the text alone)."""
    from hf_real3d.synth import SynthConfig, build_benchmark

    root = tmp_path_factory.mktemp("judge_data")
    build_benchmark(root / "synth", SynthConfig(seed=2, scenes={"train": 0, "val": 0, "test": 1},
                                                questions_per_scene={"test": 12}),
                    workers=1, progress=False, write_scenes=False)
    return root / "synth/sqa3d"


def _digest(root: Path) -> dict[str, str]:
    return {str(p): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def _judge(questions, tmp_path, srv, *extra, cache="cache"):
    return run_cli("judge", "--dataset", questions, "--out", tmp_path / "j.jsonl", "--llm_url",
                   srv.url, "--llm_model", "stub", "--llm_cache", tmp_path / cache,
                   "--llm_retries", "0", *extra)


def _refused(p, tmp_path, before, *said):
    errors = [x for x in p.stderr.splitlines() if "error:" in x]
    assert p.returncode == 2 and len(errors) == 1, p.stderr[-2000:]
    assert "Traceback" not in p.stderr and p.stderr.strip().splitlines()[-1] == errors[0]
    for part in said:
        assert part in errors[0], (part, errors[0])
    assert _digest(tmp_path) == before  # nothing written, the cache untouched


def test_cache_entries_that_are_not_replies_are_never_answers(questions, tmp_path):
    with StubLLM(lambda m: "left") as srv:
        assert _judge(questions, tmp_path, srv, "--limit", "3").returncode == 0
        (tmp_path / "j.jsonl").unlink()
        (tmp_path / "j.judge.json").unlink()
        entries = sorted((tmp_path / "cache").glob("*/*.json"))
        assert len(entries) == 3 and srv.requests == 3
        first, second = (json.loads(e.read_text()) for e in entries[:2])
        for bad, why in (({**first, "text": None}, "a reply has a string `text`"),
                         ([first["text"]], "a reply has a string `text`, not list"),
                         ({"answer": "left"}, "a reply has a string `text`"),
                         ({**first, "usage": "many"}, "its `usage` an object"),
                         (second, "the reply to another prompt than its key's")):
            entries[0].write_text(json.dumps(bad))
            before = _digest(tmp_path)
            p = _judge(questions, tmp_path, srv, "--limit", "3")
            _refused(p, tmp_path, before, "--llm_cache", entries[0].name, why,
                     "delete the file to ask again")
        assert srv.requests == 3  # none of them was asked again or answered from the entry
        entries[0].unlink()  # deleted: asked again, the others answered from the cache
        assert _judge(questions, tmp_path, srv, "--limit", "3").returncode == 0
        assert srv.requests == 4
        # the record of the cache's model: not an object naming it
        (tmp_path / "cache/model.json").write_text("null")
        (tmp_path / "j.jsonl").unlink()
        (tmp_path / "j.judge.json").unlink()
        before = _digest(tmp_path)
        _refused(_judge(questions, tmp_path, srv, "--limit", "3"), tmp_path, before,
                 "model.json: not a response cache's record of its model")


def test_a_cache_of_another_model_tag_or_prompt_never_answers(questions, tmp_path):
    with StubLLM(lambda m: "left", models=("stub", "other")) as srv:
        assert _judge(questions, tmp_path, srv, "--limit", "4").returncode == 0
        assert srv.requests == 4
        for extra, said in ((["--llm_cache_tag", "rev2"], "tag 'rev2'"),
                            (["--llm_model", "other"], "not of 'other'")):
            before = _digest(tmp_path)
            p = _judge(questions, tmp_path, srv, "--limit", "4", *extra, "--out",
                       tmp_path / "k.jsonl")
            _refused(p, tmp_path, before, "--llm_cache", "a cache of the model 'stub'", said)
        # another prompt over the same cache: its requests are other keys, asked anew
        tpl = json.loads(Path(JUDGE_TEMPLATE).read_text())
        (tmp_path / "mine.json").write_text(json.dumps({**tpl, "system": "Be brief."}))
        p = _judge(questions, tmp_path, srv, "--limit", "4", "--prompt", tmp_path / "mine.json",
                   "--out", tmp_path / "k.jsonl")
        assert p.returncode == 0 and srv.requests == 8, p.stderr[-2000:]
        assert "4 answered, 0 failed, 0 from the cache; 4 request(s) sent" in p.stdout


def test_prompt_files_and_limits(questions, tmp_path):
    tpl = json.loads(Path(JUDGE_TEMPLATE).read_text())
    example = {"question": "What is on my left?", "situation": "I face the door.",
               "output": "table"}
    cases = [
        ({**tpl, "user": "Situation: {situation}\nQuestion: {Question}"},
         ["lacks {question}", "has {Question}, which is not filled"]),
        ({**tpl, "user": "Question: { question }"}, ["has { question }, which is not filled"]),
        ({**tpl, "user": "Q: {question} Context: {context}"}, ["has {context}"]),
        ({**tpl, "system": "The room: {situation}"},
         ["the system text has {situation}, but only the user template is filled"]),
        ({**tpl, "exmaples": [example]}, ["it has ['about', 'exmaples', 'system', 'user']"]),
        ({**tpl, "examples": [{k: v for k, v in example.items() if k != "output"}]},
         ["example 0 lacks output (the reply's text)"]),
        ({**tpl, "examples": [{"question": "q", "output": "a"}]}, ["example 0 lacks situation"]),
        ({**tpl, "examples": [{**example, "output": {"answer": "table"}}]},
         ["example 0 lacks output"]),
        ({**tpl, "examples": "table"}, ["'examples' is a list of objects"]),
        ({**tpl, "system": ["a"]}, ["a prompt template is a JSON object"]),
    ]
    with StubLLM(lambda m: "left") as srv:
        for i, (data, said) in enumerate(cases):
            path = tmp_path / f"p{i}.json"
            path.write_text(json.dumps(data))
            before = _digest(tmp_path)
            _refused(_judge(questions, tmp_path, srv, "--prompt", path), tmp_path, before,
                     str(path), *said)
        for extra, said in ((["--limit", "0"], "--limit 0: expected at least 1"),
                            (["--limit", "-3"], "--limit -3"),
                            (["--max_tokens", "0"], "--max_tokens 0: expected at least 1"),
                            (["--temperature", "-1"], "--temperature -1.0: expected 0"),
                            (["--llm_concurrency", "0"], "--llm_concurrency 0"),
                            (["--llm_timeout", "0"], "--llm_timeout 0")):
            before = _digest(tmp_path)
            _refused(_judge(questions, tmp_path, srv, *extra), tmp_path, before, said)
        assert srv.requests == 0
        # acceptable: a prompt with its own examples, and a limit above the questions (all)
        path = tmp_path / "good.json"
        path.write_text(json.dumps({**tpl, "examples": [example]}))
        p = _judge(questions, tmp_path, srv, "--prompt", path, "--limit", "100")
        assert p.returncode == 0 and srv.requests == 12, p.stderr[-2000:]
        assert srv.bodies[-1]["messages"][2] == {"role": "assistant", "content": "table"}
