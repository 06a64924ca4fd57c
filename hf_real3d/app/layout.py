"""The explorer's Gradio layout: the tabs, their controls and handlers, and how the app is
served (:func:`build_app`, :func:`launch_kwargs`, :func:`launch`)."""

from __future__ import annotations

import html
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
    proposal_label,
    question_html,
    review_drawings,
    review_html,
    rules_legend,
    scene_figure,
    srbench_item,
    topdown_image,
)

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
.rv-drawings {display: flex; flex-wrap: wrap; gap: 8px}
.rv-panel {margin: 0; border: 4px solid transparent}
.rv-panel.current {border-color: #ff7f0e}
.rv-panel img {width: 480px; max-width: 100%; height: auto}
.rv-rule {cursor: help; border-bottom: 1px dotted; margin-right: 4px}
.needs-scene {color: #b8860b; font-weight: bold}
.rv-corrected {background: #e6f4ea; text-decoration: none}
.rv-turn {font-size: 1.05em}
.rv-proposal {border: 1px solid #ff7f0e; border-radius: 4px; padding: 4px 8px; margin: 6px 0}
.rv-keys {color: #555; font-size: 0.9em}
kbd {border: 1px solid #bbb; border-radius: 3px; padding: 0 3px; font-size: 0.9em}
"""


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
                _review_tab(gr, data.review)
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
</script>""" + """<script>
/* The Review tab: drafts kept in the browser (the name, and what was typed for each item,
   restored after a reload or a server restart), and keyboard shortcuts. */
(() => {
  const P = 'hf_real3d.review|';
  const box = (id) => document.querySelector(`#${id} textarea, #${id} input`);
  const item = () => document.querySelector('#rv-item');
  const folder = () => (document.querySelector('#rv-folder') || {dataset: {}}).dataset.folder
    || location.pathname;
  const keyOf = (k) => P + folder() + '|' + k;
  const plain = (t) => (t || '').trim().replace(/\\s+/g, ' ').toLowerCase();
  const put = (el, v) => { el.value = v; el.dispatchEvent(new Event('input', {bubbles: true})); };
  let shown = null;
  document.addEventListener('input', (ev) => {
    const t = ev.target;
    if (!t || !t.closest) return;
    if (t.closest('#rv-name')) {
      localStorage.setItem(P + location.host + '|name', t.value);
      return;
    }
    if (!t.closest('#rv-situation, #rv-answers, #rv-reason')) return;
    const it = item();
    if (!it || !it.dataset.key) return;
    const d = {situation: box('rv-situation').value, answers: box('rv-answers').value,
               reason: box('rv-reason').value};
    localStorage.setItem(keyOf(it.dataset.key), JSON.stringify(d));
  }, true);
  const restore = () => {
    const it = item();
    if (!it) return;
    if (it.dataset.saved) localStorage.removeItem(keyOf(it.dataset.saved));
    const k = it.dataset.key;
    if (!k || k === shown) return;
    shown = k;
    const raw = localStorage.getItem(keyOf(k));
    if (!raw) return;
    const d = JSON.parse(raw);
    setTimeout(() => {
      for (const [id, v] of [['rv-situation', d.situation], ['rv-answers', d.answers],
                             ['rv-reason', d.reason]]) {
        const el = box(id);
        if (el && v !== undefined && el.value !== v) put(el, v);
      }
      const st = document.querySelector('#rv-status');
      if (st) st.dataset.draft = 'restored';
    }, 150);
  };
  let named = false;
  const resume = () => {
    const nb = box('rv-name');
    if (named || !nb) return;
    named = true;
    const name = localStorage.getItem(P + location.host + '|name');
    if (name && !nb.value) {
      put(nb, name);
      setTimeout(() => { const b = document.querySelector('#rv-start'); if (b) b.click(); }, 300);
    }
  };
  new MutationObserver(() => { resume(); restore(); }).observe(document.documentElement,
    {childList: true, subtree: true, attributes: true, attributeFilter: ['data-key']});
  const click = (id) => { const b = document.querySelector('#' + id);
                          if (b && !b.disabled && b.offsetParent !== null) b.click(); };
  document.addEventListener('keydown', (ev) => {
    const it = item();
    if (!it || it.offsetParent === null) return;  // the Review tab is not shown
    const t = ev.target;
    const typing = t && (t.tagName === 'TEXTAREA' || t.tagName === 'INPUT');
    if (typing) {
      if (!t.closest('#tab-review')) return;
      if (ev.key === 'Escape') { t.blur(); return; }
      if (ev.key === 'Enter' && (ev.ctrlKey || ev.metaKey)) {
        ev.preventDefault();
        const edited = plain(box('rv-situation').value) !== plain(it.dataset.situation) ||
          plain(box('rv-answers').value) !== plain(it.dataset.answers);
        t.dispatchEvent(new Event('change', {bubbles: true}));
        setTimeout(() => click(edited ? 'rv-correct' : 'rv-accept'), 50);
      }
      return;
    }
    if (ev.ctrlKey || ev.metaKey || ev.altKey) return;
    const id = {a: 'rv-accept', c: 'rv-correct', d: 'rv-discard', u: 'rv-undo',
                p: 'rv-repair'}[ev.key];
    if (id) { ev.preventDefault(); click(id); }
  });
})();
</script>"""


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


def _review_tab(gr, rf) -> None:
    """Annotators accept, correct or discard rotated items, or take a proposed repair with one
    click; each decision is appended to their file at once
    (:meth:`hf_real3d.real3dqa.review.ReviewFolder.record`). The handlers keep no server
    state: the page carries the annotator and the item shown (``rv-key``), so a restarted
    server carries on, and the browser keeps typed drafts (:data:`REVIEW_JS`)."""
    # the review records only when a review folder is given
    from hf_real3d.real3dqa.review import MAX_REASON, ReviewEntry, check_annotator
    from hf_real3d.real3dqa.review.queue import MAX_TEXT

    panels: dict = {}
    with gr.Tab("Review", elem_id="tab-review", id="review"):
        gr.Markdown(f"Reviewing the rotated items of `{rf.meta['dataset']}` into "
                    f"`{rf.folder}` ({len(rf.order):,} items): groups the checker flags come "
                    "first. Type your name and press Start; every decision is saved at once, "
                    "you resume where you stopped, and you can reopen any item you judged.")
        with gr.Row():
            name = gr.Textbox(label="annotator", placeholder="your name", elem_id="rv-name",
                              max_length=64)
            start = gr.Button("Start / resume", elem_id="rv-start")
        status = gr.Markdown("", elem_id="rv-status")
        page = gr.HTML("", elem_id="rv-group")
        drawings = gr.HTML("", elem_id="rv-drawings")
        situation = gr.Textbox(label="situation at this viewpoint (edit it, then press Correct)",
                               elem_id="rv-situation", lines=2, max_length=MAX_TEXT)
        answers = gr.Textbox(label="answers (separate several with |)", elem_id="rv-answers",
                             max_length=MAX_TEXT)
        reason = gr.Textbox(label=f"reason (needed to correct or discard; at most {MAX_REASON:,} "
                                  "characters)", elem_id="rv-reason", max_length=MAX_REASON)
        with gr.Row():
            buttons = {d: gr.Button(d.capitalize(), elem_id=f"rv-{d}", interactive=False,
                                    variant="primary" if d == "accept" else "secondary")
                       for d in ("accept", "correct", "discard")}
            repair = gr.Button("Accept proposal", elem_id="rv-repair", visible=False)
            undo = gr.Button("Undo (reopen my last decision)", elem_id="rv-undo")
        with gr.Row():
            mine = gr.Dropdown([], label="your decisions (latest first): pick one to reopen it",
                               elem_id="rv-mine", filterable=True, allow_custom_value=False)
            reopen = gr.Button("Reopen", elem_id="rv-reopen")
        key = gr.Textbox("", elem_id="rv-key", visible="hidden", label="item shown")
        gr.HTML(rules_legend(), elem_id="rv-legend")

        def parse_key(k: str):
            who, q, d, rep, rev = (k or "||||").split("|")[:5]
            entry = ReviewEntry(rf.item_id(q), int(d), rep == "1") if q else None
            return who, entry, (int(rev) if rev else None)

        def show(who: str, entry=None, revises=None, note: str = "", saved: str = ""):
            made = rf.decisions(who)
            if entry is None and revises is None:
                entry = rf.next_entry(who)[0]
            progress = rf.progress(who, made)
            latest = rf.latest(who, made)
            revising = next((d for d in made if d["n"] == revises), None) if revises else None
            row = rf.rows.get((entry.question_id, entry.rotation_deg)) if entry else None
            if revising and revising["decision"] == "correct":
                sit, ans = revising["situation"], " | ".join(revising["answers"])
            else:
                sit = row["situation"] if row else ""
                ans = " | ".join(row["answers"]) if row else ""
            props = rf.proposals.get((entry.question_id, entry.rotation_deg), []) if entry \
                else []
            label = proposal_label(props)
            last = {(d["question_id"], d["rotation_deg"], d["repeat"]): d for d in made}
            choices = [(f"{d['question_id']} at {d['rotation_deg']}°"
                        + (" (second look)" if d["repeat"] else "") + f": {d['decision']}",
                        f"{d['question_id']}|{d['rotation_deg']}|{int(d['repeat'])}")
                       for d in sorted(last.values(), key=lambda x: -x["n"])]
            live = entry is not None
            k = (f"{who}|{entry.question_id}|{entry.rotation_deg}|{int(entry.repeat)}|"
                 f"{revises or ''}") if live else f"{who}||||"
            try:
                pictures = review_drawings(rf, entry.question_id, entry.rotation_deg, panels) \
                    if live else ""
            except (KeyError, OSError, ValueError) as err:  # a scene the folder lacks
                pictures = f"<p class='rv-no-drawing'>no drawing: {html.escape(str(err))}</p>"
            return (k, review_html(rf, entry, annotator=who, progress=progress, mine=latest,
                                   revising=revising, saved=saved),
                    pictures, sit, ans, "", f"**{who}**: {note}" if note else f"**{who}**",
                    *(gr.update(interactive=live) for _ in buttons),
                    gr.update(visible=live and label is not None, value=label or "",
                              interactive=live),
                    gr.update(choices=choices, value=None))

        outs = [key, page, drawings, situation, answers, reason, status, *buttons.values(),
                repair, mine]
        keep = [gr.update()] * (len(outs) - 1)

        def fail(msg: str, who: str | None = None):
            out = list(keep)
            out.insert(6, f"**{who}**: **not saved:** {msg}" if who else f"**error:** {msg}")
            return tuple(out)

        def begin(who: str):
            try:
                who = check_annotator(who)
                return show(who, note=rf.greeting(who))
            except (ValueError, OSError) as err:
                return fail(str(err))

        start.click(begin, [name], outs)
        name.submit(begin, [name], outs)

        def current(who_box: str, k: str):
            """(annotator, entry, revises) of the page, or an error message."""
            try:
                who, entry, revises = parse_key(k)
            except ValueError as err:  # a page of another rotation set: reload it
                return None, f"{err}; reload the page"
            if not who or entry is None:
                return None, "type your name and press Start first" if not who else \
                    "no item is shown (all judged): reopen one from your decisions"
            try:
                typed = check_annotator(who_box)
            except ValueError as err:
                return None, str(err)
            if typed != who:
                return None, (f"the name box says {typed!r} but this page shows {who!r}'s "
                              f"queue: press Start to switch to {typed!r}; nothing was saved")
            return (who, entry, revises), None

        def decider(decision: str):
            def decide(who_box: str, k: str, sit: str, ans: str, why: str):
                got, err = current(who_box, k)
                if err:
                    return fail(err)
                who, entry, revises = got
                try:
                    texts = {"situation": sit, "answers": (ans or "").split("|")}
                    line = rf.record(who, entry, decision, why, revises=revises, **texts)
                except (ValueError, OSError) as e:
                    return fail(str(e), who)
                saved = f"{who}|{entry.question_id}|{entry.rotation_deg}|{int(entry.repeat)}"
                return show(who, note=f"saved: {decision} of {entry.question_id} at "
                                      f"{entry.rotation_deg}°" + (" (replaces decision "
                                                                  f"{revises})" if revises else "")
                            + f" (decision {line['n']} in your file)", saved=saved)
            return decide

        for d, b in buttons.items():
            b.click(decider(d), [name, key, situation, answers, reason], outs)

        def take_repair(who_box: str, k: str):
            got, err = current(who_box, k)
            if err:
                return fail(err)
            who, entry, revises = got
            props = rf.proposals.get((entry.question_id, entry.rotation_deg), [])
            if not props:
                return fail("the checker proposed no repair for this item", who)
            p = props[0]
            why = f"accepted the proposed repair ({p['rule']}): {p.get('why', '')}".strip()
            try:
                if p["action"] == "replace":
                    line = rf.record(who, entry, "correct", why[:MAX_REASON], answers=p["to"],
                                     revises=revises, repair=p)
                    what = "correct (proposed answers)"
                else:
                    line = rf.record(who, entry, "discard", ("the situation must be rewritten: "
                                                             + why)[:MAX_REASON],
                                     revises=revises, repair=p)
                    what = "discard until rewritten (proposed)"
            except (ValueError, OSError) as e:
                return fail(str(e), who)
            saved = f"{who}|{entry.question_id}|{entry.rotation_deg}|{int(entry.repeat)}"
            return show(who, note=f"saved: {what} of {entry.question_id} at "
                                  f"{entry.rotation_deg}° (decision {line['n']} in your file)",
                        saved=saved)

        repair.click(take_repair, [name, key], outs)

        def reopen_last(who_box: str, k: str):
            try:
                who = check_annotator(who_box)
            except ValueError as err:
                return fail(str(err))
            shown_for = (k or "").split("|")[0]
            if shown_for and shown_for != who:
                return fail(f"the name box says {who!r} but this page shows {shown_for!r}'s "
                            f"queue: press Start to switch", None)
            made = rf.decisions(who)
            if not made:
                return fail("nothing to undo: you have not judged an item yet", who)
            last = made[-1]
            entry = ReviewEntry(last["question_id"], last["rotation_deg"], last["repeat"])
            return show(who, entry, last["n"], note=f"reopened your last decision "
                        f"({last['decision']} of {last['question_id']} at "
                        f"{last['rotation_deg']}°): decide again")

        undo.click(reopen_last, [name, key], outs)

        def reopen_picked(who_box: str, k: str, picked: str):
            try:
                who = check_annotator(who_box)
            except ValueError as err:
                return fail(str(err))
            if not picked:
                return fail("pick one of your decisions first", who)
            try:
                q, d, rep = picked.split("|")
                entry = ReviewEntry(rf.item_id(q), int(d), rep == "1")
            except ValueError as err:
                return fail(f"{picked!r}: {err}", who)
            standing = rf.standing(who, entry)
            if standing is None:
                return fail(f"you have not judged {q} at {d}°", who)
            return show(who, entry, standing["n"], note=f"reopened {q} at {d}°: decide again")

        reopen.click(reopen_picked, [name, key, mine], outs)


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
