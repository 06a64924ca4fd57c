"""The explorer's Gradio layout: the tabs, their controls and handlers, and how the app is
served (:func:`build_app`, :func:`launch_kwargs`, :func:`launch`)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import pandas as pd

from .data import (
    CHECK_SUBSETS,
    PRUNED,
    RULES,
    SUBSETS,
    ExplorerData,
    Leaderboard,
    ModelAnswers,
    QuestionData,
    SRBenchData,
    export_csv,
    filtered_ids,
    srbench_items,
)
from .render import (
    leaderboard_html,
    leaderboard_markdown,
    pk_figure,
    question_html,
    scene_figure,
    srbench_item,
    topdown_image,
)
from .review_tab import REVIEW_CSS, REVIEW_JS, review_tab

__all__ = ["build_app", "launch", "launch_kwargs", "CSS", "HEAD"]


_APP_HINT = "pip install 'hf_real3d[app]' (Gradio); `make install` installs it"


def _gradio():
    # Gradio is the optional [app] extra: imported when an app is built
    try:
        import gradio as gr  # noqa: I001 - the [app] extra
    except ImportError:
        raise ImportError(f"hf-real3d explore needs Gradio: {_APP_HINT}") from None
    return gr


CSS = """
.viewpoints {border-collapse: collapse; width: 100%; font-size: 0.9em}
.viewpoints th, .viewpoints td {border: 1px solid #ddd; padding: 4px 6px; vertical-align: top}
.viewpoints th {background: #f6f6f6}
.right {color: #2ca02c; font-weight: bold}
.wrong {color: #d62728; font-weight: bold}
.flip {background: #fde2e1; color: #a00; border-radius: 3px; padding: 0 3px; font-size: 0.85em}
.qmeta {color: #555}
.lb-table th {cursor: pointer; user-select: none}
.viewpoints td.current, .viewpoints th.current {background: #fff7d6}
.lb-table th[data-sort=asc]::after {content: " \\25B2"}
.lb-table th[data-sort=desc]::after {content: " \\25BC"}
""" + REVIEW_CSS


def _theme():
    gr = _gradio()
    local = ["ui-sans-serif", "system-ui", "sans-serif"]  # no web fonts: works offline
    return gr.themes.Default(font=local, font_mono=["ui-monospace", "monospace"])


def launch_kwargs() -> dict[str, Any]:
    """The theme, CSS and the leaderboard's sorting script the app expects:
    ``app.launch(**launch_kwargs())`` in a Space."""
    return {"theme": _theme(), "css": CSS, "head": HEAD}


def build_app(dataset: str | None = None, predictions: Sequence[str] = (),
              results: Sequence[str] = (), srbench: str | None = None,
              srbench_predictions: Sequence[str] = (), *, data: ExplorerData | None = None):
    """The explorer as a ``gr.Blocks`` (serve it with ``.launch(**launch_kwargs())``, or
    :func:`launch`, which also keeps Gradio's allowed paths to the given reports)."""
    gr = _gradio()
    data = data or ExplorerData.load(dataset, predictions, results, srbench,
                                     srbench_predictions)
    qd, models = data.questions, data.models
    with gr.Blocks(title="hf_real3d explorer", analytics_enabled=False) as app:
        app.explorer_data = data
        gr.Markdown("# hf_real3d explorer")
        # with a review folder the app opens on the Review tab
        with gr.Tabs(selected="review" if data.review is not None else None):
            if qd is not None:
                _questions_tab(gr, qd, models)
                if models:
                    with gr.Tab("Models", elem_id="tab-models"):
                        rule = gr.Radio(list(RULES), value="refined EM", label="matching rule",
                                        elem_id="pk-rule")
                        pk = gr.Plot(pk_figure(models), elem_id="pk-plot", label="P_k")
                        rule.change(lambda r: pk_figure(models, RULES[r]), rule, pk)
            if data.leaderboard is not None:
                _leaderboard_tab(gr, data.leaderboard)
            if data.srbench is not None:
                _srbench_tab(gr, data.srbench)
            if data.review is not None:
                review_tab(gr, data.review, data.review_warning)
    return app


def _questions_tab(gr, qd: QuestionData, models: list[ModelAnswers]) -> None:
    t = qd.table
    ids = t.question_id.astype(int).tolist()
    with gr.Tab("Questions", elem_id="tab-questions"):
        gr.Markdown(f"`{qd.folder}`: {len(t)} questions, "
                    f"{sum(len(v) > 1 for v in qd.viewpoints.values())} rotation groups"
                    + (f", {len(models)} model(s)" if models else ""))
        with gr.Row():
            qtype = gr.Dropdown(["all", *sorted(t.question_type.dropna().unique())],
                                value="all", label="question type", elem_id="f-type")
            scene = gr.Dropdown(["all", *sorted(t.scene_id.unique())], value="all",
                                label="scene", elem_id="f-scene")
            subset = gr.Dropdown([s for s in SUBSETS if s == "all" or (t.subset == s).any()]
                                 + ([PRUNED] if t.pruned_kept.any() else [])
                                 + [c for c in CHECK_SUBSETS if (t.checks == c).any()],
                                 value="all", label="subset", elem_id="f-subset")
            rule = gr.Dropdown(list(RULES), value="refined EM", label="matching rule",
                               elem_id="f-rule")
        with gr.Row():
            qid = gr.Dropdown([str(i) for i in ids], value=str(ids[0]) if ids else None,
                              label=f"question ({len(ids)})", elem_id="f-qid",
                              filterable=True)
            deg = gr.Radio(["0", "90", "180", "270"], value="0", label="viewpoint (3D view)",
                           elem_id="f-deg")
        view = gr.HTML(question_html(qd, ids[0], models) if ids else "", elem_id="question")
        if qd.has_scenes:
            plot = gr.Plot(scene_figure(qd, ids[0]) if ids else None, label="3D scene",
                           elem_id="scene3d")
            top = gr.Image(topdown_image(qd, ids[0]) if ids else None,
                           label="top-down (as `hf-real3d draw`)", elem_id="topdown",
                           type="pil", format="png")
        else:
            gr.Markdown(qd.note, elem_id="no-geometry")
            plot = top = None

        def refilter(a, b, c):
            got = filtered_ids(qd, a, b, c)
            return gr.update(choices=[str(i) for i in got],
                             value=str(got[0]) if got else None,
                             label=f"question ({len(got)})")

        for f in (qtype, scene, subset):
            f.change(refilter, [qtype, scene, subset], qid, queue=False)

        def show(q, r, d):
            if not q:
                return ("<p>no question matches these filters</p>",
                        *((None, None) if qd.has_scenes else ()))
            out = [question_html(qd, int(q), models, RULES[r])]
            if qd.has_scenes:
                out += [scene_figure(qd, int(q), int(d)), topdown_image(qd, int(q))]
            return tuple(out)

        outs = [view, *([plot, top] if qd.has_scenes else [])]
        # light handlers answer directly (no queue): a question shows in ~50 ms, not ~70
        fast = {"queue": False, "show_progress": "hidden"}
        qid.change(show, [qid, rule, deg], outs, **fast)
        rule.change(lambda q, r: question_html(qd, int(q), models, RULES[r]) if q else "",
                    [qid, rule], view, **fast)
        if qd.has_scenes:
            deg.change(lambda q, d: scene_figure(qd, int(q), int(d)) if q else None,
                       [qid, deg], plot, **fast)


HEAD = """<script>
document.addEventListener('click', (ev) => {
  const th = ev.target.closest('table.lb-table th');
  if (!th) return;
  const table = th.closest('table');
  const idx = Array.from(th.parentNode.children).indexOf(th);
  const asc = th.dataset.sort !== 'asc';
  table.querySelectorAll('th').forEach(h => delete h.dataset.sort);
  th.dataset.sort = asc ? 'asc' : 'desc';
  const num = th.dataset.type === 'number';
  const key = (r) => {
    const c = r.cells[idx];
    if (!num) return c.innerText;
    const v = parseFloat(c.dataset.value);
    return isNaN(v) ? -Infinity : v;
  };
  const body = table.tBodies[0];
  const rows = Array.from(body.rows);
  rows.sort((a, b) => {
    const x = key(a), y = key(b);
    const d = num ? (x < y ? -1 : x > y ? 1 : 0) : String(x).localeCompare(String(y));
    return asc ? d : -d;
  });
  rows.forEach((r) => body.appendChild(r));
});
</script>""" + REVIEW_JS


def _leaderboard_tab(gr, lb: Leaderboard) -> None:
    with gr.Tab("Leaderboard", elem_id="tab-leaderboard"):
        for key, df, title in (("real3dqa", lb.real3dqa, "Real-3DQA (`hf-real3d evaluate`)"),
                               ("srbench", lb.srbench, "3DSRBench (`evaluate-3dsrbench`)")):
            if df.empty:
                continue
            gr.Markdown(f"### {title}\nClick a column header to sort (again: descending).")
            gr.HTML(leaderboard_html(df, key), elem_id=f"lb-{key}")
            with gr.Row():
                btn = gr.Button("Export CSV", elem_id=f"lb-{key}-csv-btn")
                file = gr.File(label="CSV", elem_id=f"lb-{key}-csv")
                btn.click(_exporter(df, f"leaderboard_{key}"), None, file)
            with gr.Accordion("Markdown table", open=False):
                gr.Code(leaderboard_markdown(df), language="markdown", elem_id=f"lb-{key}-md")


def _exporter(df: pd.DataFrame, name: str):
    return lambda: export_csv(df, name)


def _srbench_tab(gr, sr: SRBenchData) -> None:
    configs = list(sr.configs)
    first = srbench_items(sr, configs[0])
    with gr.Tab("3DSRBench", elem_id="tab-srbench"):
        with gr.Row():
            config = gr.Dropdown(configs, value=configs[0], label="config", elem_id="sr-config")
            item = gr.Dropdown(first, value=first[0] if first else None,
                               label=f"item ({len(first)})", elem_id="sr-item",
                               filterable=True)
        im0, im1, text = srbench_item(sr, configs[0], first[0]) if first else (None, None, "")
        with gr.Row():
            image = gr.Image(im0, label="image", type="pil", elem_id="sr-image")
            mirror = gr.Image(im1, label="mirrored (FlipEval)", type="pil",
                              elem_id="sr-mirror")
        info = gr.HTML(text, elem_id="sr-item-html")

        def pick_config(c):
            items = srbench_items(sr, c)
            return gr.update(choices=items, value=items[0] if items else None,
                             label=f"item ({len(items)})")

        config.change(pick_config, config, item)
        item.change(lambda c, q: srbench_item(sr, c, q) if q else (None, None, ""),
                    [config, item], [image, mirror, info])


def launch(app, *, host: str = "127.0.0.1", port: int | None = None, share: bool = False,
           allowed_paths: Sequence[str] | None = None, block: bool = True, quiet: bool = False):
    """Serve ``app`` on ``host`` (127.0.0.1 unless asked), with Gradio's allowed paths
    limited to ``allowed_paths`` (default: the reports of the app's results folders)."""
    data = getattr(app, "explorer_data", None)
    paths = list(allowed_paths if allowed_paths is not None
                 else (data.allowed_paths() if data else []))
    os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
    return app.launch(server_name=host, server_port=port, share=share, allowed_paths=paths,
                      prevent_thread_lock=not block, quiet=quiet, ssr_mode=False,
                      footer_links=[], **launch_kwargs())
