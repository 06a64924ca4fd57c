"""``hf-real3d explore`` measured through a real browser (Debian's chromium, Playwright).

Data: the official Real-3DQA release imported with ``hf-real3d import-real3dqa`` (1,485
questions plus 750 rotation groups; ``../shared/real`` on project machines, else release-shaped
files of the same size), three models' answers on every row (JSONL, ~60% right), and ten
results folders of ``hf-real3d evaluate``. The app runs as a user runs it: ``hf-real3d
explore`` in a fresh process.

Baseline, in the same run and the same browser: a minimal Gradio app (one dropdown echoed
into one HTML block) served the same way, so each ratio says what the explorer adds to
Gradio's own page load and round trip.

Targets (issue 24): first page usable <= 3 s after the server answers; switching questions
< 300 ms (median of 15); the leaderboard of 10 results folders shown < 1 s (loading the
folders, then the tab's table in the page).

    python bench/explore.py [--switches 15] [--results 10]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import numpy as np
from _common import report
from _release_fixture import write_release_like

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "real" / "real3dqa"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
ARGS = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]
ENV = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1",
       "HF_EVALUATE_OFFLINE": "1", "GRADIO_ANALYTICS_ENABLED": "False"}
BASELINE_APP = """
import json, sys, gradio as gr
ids = json.load(open(sys.argv[2]))  # the explorer's question ids
with gr.Blocks(analytics_enabled=False) as app:
    q = gr.Dropdown(ids, value=ids[0], elem_id="f-qid", filterable=True)
    out = gr.HTML("<table class='viewpoints'><tr><td>0</td></tr></table>", elem_id="question")
    q.change(lambda v: f"<table class='viewpoints'><tr><td>{v}</td></tr></table>", q, out,
             queue=False, show_progress="hidden")
app.launch(server_name="127.0.0.1", server_port=int(sys.argv[1]), ssr_mode=False, quiet=True)
"""


INSTRUMENT = """() => {
  window.__t = {};
  document.addEventListener('pointerdown', (e) => {
    if (e.target.closest('[role=option]')) window.__t.press = performance.now();
  }, true);
  const q = document.querySelector('#question');
  new MutationObserver(() => {
    if (window.__t.press !== undefined && window.__t.shown === undefined &&
        q.innerText.includes(window.__want)) window.__t.shown = performance.now();
  }).observe(q, {subtree: true, childList: true, characterData: true});
}"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_ready(url: str, proc: subprocess.Popen, timeout: float = 300) -> float:
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < timeout:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited: {proc.stderr.read()[-2000:]}")
        try:
            with urllib.request.urlopen(url, timeout=2) as r:
                if r.status == 200:
                    return time.perf_counter()
        except OSError:
            time.sleep(0.05)
    raise TimeoutError(url)


def prepare(tmp: Path, n_results: int) -> tuple[Path, list[str], list[str]]:
    src = SHARED if SHARED.is_dir() else None
    if src is None:
        src = tmp / "release"
        write_release_like(src, 750)
    cli = str(Path(sys.executable).with_name("hf-real3d"))
    subprocess.run([cli, "import-real3dqa", "--release", str(src), "--out", str(tmp / "imp")],
                   check=True, env=ENV, capture_output=True)
    from hf_real3d.hub import load_local

    rows = []
    for config in ("real3dqa", "rotations"):
        ds = load_local(tmp / "imp", config).select_columns(["question_id", "rotation_deg",
                                                              "answers"])
        rows += list(zip(ds["question_id"], ds["rotation_deg"], ds["answers"]))
    specs = []
    for m in range(3):
        rng = np.random.default_rng(m)
        path = tmp / f"model{m}.jsonl"
        seen, lines = set(), []
        for q, d, a in rows:
            if (q, d) in seen:
                continue
            seen.add((q, d))
            lines.append(json.dumps({"question_id": int(q), "rotation_deg": int(d),
                                     "prediction": a[0] if rng.random() < 0.6 else "two"}))
        path.write_text("\n".join(lines) + "\n")
        specs.append(f"model{m}={path}")
    results = []
    for i in range(n_results):
        out = tmp / f"results{i}"
        subprocess.run([cli, "evaluate", "--dataset", str(tmp / "imp"), "--predictions",
                        *specs, "--out", str(out), "--allow_missing"], check=True, env=ENV,
                       capture_output=True)
        results.append(str(out))
    return tmp / "imp", specs, results


def measure(page, url: str, ready: float, ids: list[str], switches: int,
            leaderboard_rows: int) -> dict[str, float]:
    page.goto(url)
    page.wait_for_selector("#question table.viewpoints", timeout=60000)
    page.locator("#f-qid input").wait_for(state="visible")
    first = time.perf_counter() - ready
    # timed in the page: from the option's pointer press to the question block showing the
    # new question (what the user waits for), not Playwright's own round trips
    page.evaluate(INSTRUMENT)
    times = []
    for q in ids[:switches]:
        box = page.locator("#f-qid input")
        box.click()
        box.press("Control+a")
        box.press_sequentially(q)
        option = page.get_by_role("option", name=q, exact=True)
        option.wait_for()
        page.evaluate("q => { window.__want = q; window.__t = {}; }", q)
        option.click()
        page.wait_for_function("() => window.__t.shown !== undefined", timeout=20000)
        t = page.evaluate("() => window.__t")
        times.append((t["shown"] - t["press"]) / 1e3)
    out = {"first": first, "switch": statistics.median(times)}
    if leaderboard_rows:
        t0 = time.perf_counter()
        page.get_by_role("tab", name="Leaderboard").click()
        page.locator("#lb-real3dqa-table tbody tr").nth(leaderboard_rows - 1).wait_for(
            state="visible")
        out["tab"] = time.perf_counter() - t0
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--switches", type=int, default=15)
    ap.add_argument("--results", type=int, default=10,
                    help="results folders on the leaderboard (one evaluate run each)")
    args = ap.parse_args()
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as t:
        tmp = Path(t)
        imp, specs, results = prepare(tmp, args.results)
        from hf_real3d.app import load_leaderboard, load_questions

        t0 = time.perf_counter()
        load_leaderboard(results)
        lb_load = time.perf_counter() - t0
        qd = load_questions(imp)
        groups = [str(q) for q, v in qd.viewpoints.items() if len(v) == 4]
        rng = np.random.default_rng(0)
        ids = [groups[i] for i in rng.choice(len(groups), args.switches, replace=False)]
        (tmp / "ids.json").write_text(json.dumps([str(q) for q in qd.table.question_id]))
        cli = str(Path(sys.executable).with_name("hf-real3d"))
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
            got = {}
            for kind in ("baseline", "explore"):
                port = free_port()
                cmd = ([sys.executable, "-c", BASELINE_APP, str(port), str(tmp / "ids.json")]
                       if kind == "baseline"
                       else [cli, "explore", "--dataset", str(imp), "--predictions", *specs,
                             "--results", *results, "--port", str(port)])
                proc = subprocess.Popen(cmd, env=ENV, cwd=tmp, stdout=subprocess.DEVNULL,
                                        stderr=subprocess.PIPE, text=True)
                try:
                    t_start = time.perf_counter()
                    ready = wait_ready(f"http://127.0.0.1:{port}/", proc)
                    page = browser.new_page(viewport={"width": 1300, "height": 1000})
                    got[kind] = measure(page, f"http://127.0.0.1:{port}/", ready, ids,
                                        args.switches,
                                        3 * args.results if kind == "explore" else 0)
                    got[kind]["start"] = ready - t_start
                    page.close()
                finally:
                    proc.terminate()
                    proc.wait(30)
            browser.close()
    b, e = got["baseline"], got["explore"]
    print(f"{'':<44} {'explore':>9} {'gradio floor':>13}")
    print(f"{'server start (process to first answer), s':<44} {e['start']:>9.2f} "
          f"{b['start']:>13.2f}")
    print(f"{'first page usable after ready, s':<44} {e['first']:>9.2f} {b['first']:>13.2f}")
    print(f"{'switch question (median), ms':<44} {e['switch'] * 1e3:>9.0f} "
          f"{b['switch'] * 1e3:>13.0f}")
    print(f"{f'leaderboard: load {args.results} folders + show tab, s':<44} "
          f"{lb_load + e['tab']:>9.3f}")
    report("explore: first page usable after the server is ready (release, 3 models)",
           e["first"], "s", baseline=b["first"], target="<= 3 s", ok=e["first"] <= 3.0)
    report(f"explore: switching questions, median of {args.switches} (release, 3 models)",
           e["switch"] * 1e3, "ms", baseline=b["switch"] * 1e3, target="< 300 ms",
           ok=e["switch"] < 0.3)
    report(f"explore: leaderboard of {args.results} results folders (load + tab shown)",
           lb_load + e["tab"], "s", target="< 1 s", ok=lb_load + e["tab"] < 1.0,
           load_s=round(lb_load, 4), tab_s=round(e["tab"], 4))
    return 0


if __name__ == "__main__":
    sys.exit(main())
