"""The Review tab: its controls (:func:`review_tab`), the handlers behind them
(:class:`ReviewHandlers`), and the page's script and styles (:data:`REVIEW_JS`,
:data:`REVIEW_CSS`).

Annotators accept, correct or discard rotated items, or take a proposed repair with one
click; each decision is appended to their file at once
(:meth:`hf_real3d.real3dqa.review.ReviewFolder.record`). The handlers keep no server state:
the page carries the annotator and the showing (``rv-key``: the item and its place in the
queue, or the decision reopened; never which showing it is), so a restarted server carries
on, and the browser keeps typed drafts."""

from __future__ import annotations

import html
import time
from typing import Any

from hf_real3d.real3dqa.format import plain_text
from hf_real3d.real3dqa.review import LISTED, MAX_REASON, Refused, ReviewEntry, check_annotator

from .review_page import (
    Showing,
    decision_choices,
    proposal_label,
    review_drawings,
    review_html,
    rules_legend,
    shown_decisions,
)

__all__ = ["review_tab", "ReviewHandlers", "typed_texts", "REVIEW_JS", "REVIEW_CSS"]

DECISION_BUTTONS = ("accept", "correct", "discard")
AFTER_START = ("reset", "undo", "reopen")  # buttons that act on a queue: off before Start


def typed_texts(decision: str, situation: str, answers: str,
                revising: dict[str, Any] | None) -> dict[str, Any]:
    """The texts a decision from the tab carries: what the boxes hold (answers separated by
    ``|``), except that an Accept of a reopened correction whose boxes still hold that
    correction (up to case and spaces) accepts the item as it is."""
    typed = [a for a in (answers or "").split("|") if a.strip()]
    if decision == "accept" and revising and revising["decision"] == "correct":
        same_sit = plain_text(situation or "") == plain_text(revising["situation"])
        same_ans = sorted(map(plain_text, typed)) == sorted(map(plain_text,
                                                                revising["answers"]))
        if same_sit and same_ans:
            return {}
    return {"situation": situation, "answers": typed}


def status_html(who: str | None, note: str, *, failed: str = "", fix: str = "",
                retry: str = "") -> str:
    """The status line (``failed``: "not saved" or "error", said first); ``data-t`` changes
    with every answer, so the page's script knows the server answered; ``fix``: the box the
    script moves the focus to, where ``Ctrl+Enter`` then tries decision ``retry`` again."""
    e = html.escape
    said = f"<b>{e(failed)}:</b> {e(note)}" if failed else e(note)
    who_said = f"<b>{e(who)}</b>: " if who else ""
    focus = f" data-focus='rv-{e(fix)}' data-retry='rv-{e(retry)}'" if fix else ""
    return (f"<p class='rv-status{' rv-failed' if failed else ''}' data-t='{time.time_ns()}'"
            f"{focus}>{who_said}{said}</p>")


class ReviewHandlers:
    """What the tab's buttons do. Each handler returns the tab's outputs: the page key, the
    page, the drawings, the three text boxes, the status, the three decision buttons, the
    proposal button, the list of decisions and the buttons off before Start (:meth:`show`),
    or the status alone (:meth:`fail`)."""

    def __init__(self, gr, rf):
        self.gr, self.rf = gr, rf
        self.panels: dict = {}
        self.n_outputs = 7 + len(DECISION_BUTTONS) + 2 + len(AFTER_START)

    def showing(self, who: str, entry=None, revising: dict | None = None,
                saved: str = "") -> Showing:
        """What the page shows to ``who``: the next showing of the queue, or ``entry`` with
        the decision reopened."""
        rf = self.rf
        nxt, done, total = rf.next_entry(who)
        if entry is None and revising is None:
            entry = nxt
        queue = rf.queue(who)
        at = queue.index(entry) if entry in queue else None
        mine, recent = shown_decisions(queue, rf.decisions(who), at)
        return Showing(who, entry, None if revising else at, done, total, revising, mine,
                       saved, recent)

    def show(self, who: str, entry=None, revising: dict | None = None, note: str = "",
             saved: str = ""):
        gr, rf = self.gr, self.rf
        s = self.showing(who, entry, revising, saved)
        live = s.entry is not None
        key = (s.entry.question_id, s.entry.rotation_deg) if live else None
        row = rf.rows.get(key) if live else None
        if revising and revising["decision"] == "correct":
            sit, ans = revising["situation"], " | ".join(revising["answers"])
        else:
            sit, ans = (row["situation"], " | ".join(row["answers"])) if row else ("", "")
        label = proposal_label(rf.proposals.get(key, [])) if live else None
        try:
            pictures = review_drawings(rf, key[0], key[1], self.panels) if live else ""
        except (KeyError, OSError, ValueError) as err:  # a scene the folder lacks
            pictures = f"<p class='rv-no-drawing'>no drawing: {html.escape(str(err))}</p>"
        return (s.key, review_html(rf, s), pictures, sit, ans, "", status_html(who, note),
                *(gr.update(interactive=live) for _ in DECISION_BUTTONS),
                gr.update(visible=live and label is not None, value=label or "",
                          interactive=live),
                gr.update(choices=decision_choices(s.recent), value=None),
                *(gr.update(interactive=True) for _ in AFTER_START))

    def fail(self, msg: str, who: str | None = None, failed: str = "not saved", **focus):
        """Only the status changes: what was not saved (or went wrong), and why (``focus``:
        the box to fix and the decision to retry, see :func:`status_html`)."""
        out: list[Any] = [self.gr.update()] * self.n_outputs
        out[6] = status_html(who, msg, failed=failed, **focus)
        return tuple(out)

    def begin(self, who: str):
        try:
            who = check_annotator(who)
            return self.show(who, note=self.rf.greeting(who))
        except (ValueError, OSError) as err:
            return self.fail(str(err), failed="error")

    def current(self, who_box: str, k: str):
        """((annotator, entry, decision reopened or None), None) of the page, or (None, the
        reason it cannot be acted on)."""
        who, q, d, pos, rev = ((k or "") + "||||").split("|")[:5]
        if not who or not q:
            return None, ("type your name and press Start first" if not who else
                          "no item is shown (all judged): reopen one from your decisions")
        try:
            who = self._who(who_box, k)
            if not rev:
                return (who, self._at(who, q, d, pos), None), None
            revising = next((x for x in self.rf.decisions(who) if str(x["n"]) == rev), None)
            if revising is None:
                raise ValueError("the decision this page reopened is not in your file; reload")
        except ValueError as err:
            return None, str(err)
        return (who, ReviewEntry(revising["question_id"], revising["rotation_deg"],
                                 revising["repeat"]), revising), None

    def decider(self, decision: str):
        def decide(who_box: str, k: str, sit: str, ans: str, why: str):
            got, err = self.current(who_box, k)
            if err:
                return self.fail(err)
            who, entry, revising = got
            dropped = decision == "accept" and bool((why or "").strip())
            try:
                line = self.rf.record(who, entry, decision, "" if decision == "accept" else why,
                                      revises=revising["n"] if revising else None,
                                      **typed_texts(decision, sit, ans, revising))
            except Refused as e:  # the box to fix gets the focus
                return self.fail(str(e), who, fix=e.box, retry=decision)
            except Exception as e:  # noqa: BLE001 - whatever failed, the page says not saved
                return self.fail(str(e) or type(e).__name__, who)
            note = (f"saved: {decision} of {entry.question_id} at {entry.rotation_deg}°"
                    + f" (decision {line['n']} in your file"
                    + (f", replacing decision {revising['n']})" if revising else ")")
                    + ("; an accept keeps no reason, so the reason typed was not saved"
                       if dropped else ""))
            return self.show(who, note=note, saved=k)
        return decide

    def take_repair(self, who_box: str, k: str):
        got, err = self.current(who_box, k)
        if err:
            return self.fail(err)
        who, entry, revising = got
        props = self.rf.proposals.get((entry.question_id, entry.rotation_deg), [])
        if not props:
            return self.fail("the checker proposed no repair for this item", who)
        p = props[0]
        why = f"accepted the proposed repair ({p['rule']}): {p.get('why', '')}".strip()
        fix = p["action"] == "replace"
        try:
            line = self.rf.record(
                who, entry, "correct" if fix else "discard",
                (why if fix else "the situation must be rewritten: " + why)[:MAX_REASON],
                answers=p["to"] if fix else None, revises=revising["n"] if revising else None,
                repair=p)
        except Exception as e:  # noqa: BLE001 - whatever failed, the page says not saved
            return self.fail(str(e) or type(e).__name__, who)
        what = "correct (proposed answers)" if fix else "discard until rewritten (proposed)"
        return self.show(who, note=f"saved: {what} of {entry.question_id} at "
                                   f"{entry.rotation_deg}° (decision {line['n']} in your file)",
                         saved=k)

    def reset_texts(self, k: str):
        """The item's own situation and answers back in the boxes, and a status line that
        says so (no stale "not saved" stays)."""
        who, q, d = ((k or "") + "||").split("|")[:3]
        try:
            row = self.rf.rows[(self.rf.item_id(q), int(d))]
        except (ValueError, KeyError):
            return (self.gr.update(), self.gr.update(),
                    status_html(who or None, "press Start first" if not who else
                                "no item is shown: nothing to reset"))
        return (row["situation"], " | ".join(row["answers"]),
                status_html(who, "the item's own situation and answers are back in the boxes"))

    def _who(self, who_box: str, k: str) -> str:
        """The name typed, which must be the annotator whose queue the page shows."""
        who = check_annotator(who_box)
        shown_for = (k or "").split("|")[0]
        if shown_for and shown_for != who:
            raise ValueError(f"the name box says {who!r} but this page shows {shown_for!r}'s "
                             f"queue: press Start to switch to {who!r}; nothing was saved")
        return who

    def _at(self, who: str, q: str, d: str, pos: str) -> ReviewEntry:
        """The showing at queue position ``pos``, which must be item ``q`` at ``d``."""
        queue = self.rf.queue(who)
        entry = queue[int(pos)] if pos.isdigit() and int(pos) < len(queue) else None
        if entry is None or (str(entry.question_id), str(entry.rotation_deg)) != (q, d):
            raise ValueError("this page shows an item of another queue or set; reload the page")
        return entry

    def reopen_last(self, who_box: str, k: str):
        try:
            who = self._who(who_box, k)
            made = self.rf.decisions(who)
        except (ValueError, OSError) as err:
            return self.fail(str(err), failed="error")
        if not made:
            return self.fail("nothing to undo: you have not judged an item yet", who)
        last = made[-1]
        entry = ReviewEntry(last["question_id"], last["rotation_deg"], last["repeat"])
        return self.show(who, entry, last, note=f"reopened your last decision "
                         f"({last['decision']} of {last['question_id']} at "
                         f"{last['rotation_deg']}°): decide again")

    def reopen_picked(self, who_box: str, k: str, picked: str):
        try:
            who = self._who(who_box, k)
        except ValueError as err:
            return self.fail(str(err), failed="error")
        if not picked:
            return self.fail("pick one of your decisions first", who)
        q, d, pos = (picked + "||").split("|")[:3]
        try:
            entry = self._at(who, q, d, pos)
            standing = self.rf.standing(who, entry)
        except (ValueError, OSError) as err:
            return self.fail(f"{picked!r}: {err}", who)
        if standing is None:
            return self.fail(f"you have not judged {q} at {d}°", who)
        return self.show(who, entry, standing, note=f"reopened {q} at {d}°: decide again")


def _controls(gr, rf, warning: str) -> dict[str, Any]:
    """The tab's components, top to bottom; the decision buttons stay in view (a bar fixed
    at the bottom of the window), whatever the drawings' height."""
    c: dict[str, Any] = {}
    gr.Markdown(f"Reviewing the rotated items of `{rf.meta['dataset']}` into `{rf.folder}` "
                f"({len(rf.order):,} items): groups the checker flags come first. Type your "
                "name and press Start; every decision is saved at once, you resume where you "
                "stopped, and you can reopen any item you judged.")
    if warning:
        gr.HTML(f"<p class='rv-warning'><b>warning:</b> {html.escape(warning)}</p>",
                elem_id="rv-warning")
    with gr.Row():
        c["name"] = gr.Textbox(label="annotator", placeholder="your name", elem_id="rv-name",
                               max_length=64)
        c["start"] = gr.Button("Start / resume", elem_id="rv-start")
    c["status"] = gr.HTML("", elem_id="rv-status")
    gr.HTML("<p id='rv-outage' class='rv-outage'></p><p id='rv-keynote' class='rv-keynote'></p>",
            elem_id="rv-pending")
    c["page"] = gr.HTML("", elem_id="rv-group")
    # no max_length: a browser would cut a long paste without a word; the save refuses it
    c["situation"] = gr.Textbox(label="situation at this viewpoint (edit it, then press "
                                      "Correct)", elem_id="rv-situation", lines=2)
    c["answers"] = gr.Textbox(label="answers (separate several with |)", elem_id="rv-answers")
    c["reason"] = gr.Textbox(label=f"reason (needed to correct or discard, not kept with an "
                                   f"accept; at most {MAX_REASON:,} characters)",
                             elem_id="rv-reason")
    with gr.Row(elem_id="rv-actions"):
        c["buttons"] = {d: gr.Button(d.capitalize(), elem_id=f"rv-{d}", interactive=False,
                                     variant="primary" if d == "accept" else "secondary")
                        for d in DECISION_BUTTONS}
        c["repair"] = gr.Button("Accept proposal", elem_id="rv-repair", visible=False)
        c["reset"] = gr.Button("Reset text", elem_id="rv-reset", interactive=False)
        c["undo"] = gr.Button("Undo (reopen last)", elem_id="rv-undo", interactive=False)
    c["drawings"] = gr.HTML("", elem_id="rv-drawings")
    with gr.Row():
        c["mine"] = gr.Dropdown([], label=f"your last {LISTED} decisions (latest first): pick "
                                "one to reopen it", elem_id="rv-mine", filterable=True,
                                allow_custom_value=False)
        c["reopen"] = gr.Button("Reopen", elem_id="rv-reopen", interactive=False)
    c["key"] = gr.Textbox("", elem_id="rv-key", visible="hidden", label="item shown")
    gr.HTML(rules_legend(), elem_id="rv-legend")
    return c


def review_tab(gr, rf, warning: str = "") -> None:
    """The Review tab of ``rf`` (a :class:`hf_real3d.real3dqa.review.ReviewFolder`);
    ``warning``: bad lines in its decision files, shown above everything."""
    with gr.Tab("Review", elem_id="tab-review", id="review"):
        c = _controls(gr, rf, warning)
        h = ReviewHandlers(gr, rf)
        outs = [c["key"], c["page"], c["drawings"], c["situation"], c["answers"], c["reason"],
                c["status"], *c["buttons"].values(), c["repair"], c["mine"],
                *(c[b] for b in AFTER_START)]
        c["start"].click(h.begin, [c["name"]], outs)
        c["name"].submit(h.begin, [c["name"]], outs)
        texts = [c["name"], c["key"], c["situation"], c["answers"], c["reason"]]
        for d, b in c["buttons"].items():
            b.click(h.decider(d), texts, outs)
        c["repair"].click(h.take_repair, [c["name"], c["key"]], outs)
        c["reset"].click(h.reset_texts, [c["key"]], [c["situation"], c["answers"], c["status"]])
        c["undo"].click(h.reopen_last, [c["name"], c["key"]], outs)
        c["reopen"].click(h.reopen_picked, [c["name"], c["key"], c["mine"]], outs)


REVIEW_CSS = """
.rv-drawings {display: flex; flex-wrap: wrap; gap: 8px}
.rv-panel {margin: 0; border: 4px solid transparent}
.rv-panel.current {border-color: #ff7f0e}
.rv-panel img {width: 480px; max-width: 100%; height: auto}
.rv-rule {cursor: help; border-bottom: 1px dotted; margin-right: 4px}
.needs-scene {color: #b8860b; font-weight: bold}
.rv-corrected {background: #e6f4ea; text-decoration: none}
.rv-turn {font-size: 1.05em}
.rv-proposal {border: 1px solid #ff7f0e; border-radius: 4px; padding: 4px 8px; margin: 6px 0}
.rv-keys, .rv-keynote {color: #555; font-size: 0.9em}
.rv-failed, .rv-outage, .rv-warning {color: #a00}
#rv-actions {position: fixed; left: 0; right: 0; bottom: 0; z-index: 50; margin: 0;
             padding: 8px 24px; background: var(--background-fill-primary, #fff);
             box-shadow: 0 -2px 6px rgba(0, 0, 0, 0.15); flex-wrap: nowrap}
#tab-review {padding-bottom: 96px}
#rv-actions button {display: block; flex: 1 0 auto; min-width: 0 !important;
                    white-space: nowrap; overflow: hidden; text-overflow: ellipsis}
#rv-actions #rv-repair, #rv-actions #rv-undo {flex: 1 1 auto}
body.rv-pending #rv-status {opacity: 0.35}
body.rv-outage #rv-status {display: none}
kbd {border: 1px solid #bbb; border-radius: 3px; padding: 0 3px; font-size: 0.9em}
"""

REVIEW_JS = """<script>
/* The Review tab: drafts kept in the browser (the name, and what was typed for each item,
   restored after a reload or a server restart), keyboard shortcuts, and a save that gets no
   answer said to be not saved. */
(() => {
  const P = 'hf_real3d.review|';
  const WAIT_MS = 20000;
  const box = (id) => document.querySelector(`#${id} textarea, #${id} input`);
  const item = () => document.querySelector('#rv-item');
  const folder = () => (document.querySelector('#rv-folder') || {dataset: {}}).dataset.folder
    || location.pathname;
  const keyOf = (k) => P + folder() + '|' + k;
  const plain = (t) => (t || '').trim().replace(/\\s+/g, ' ').toLowerCase();
  const put = (el, v) => { el.value = v; el.dispatchEvent(new Event('input', {bubbles: true})); };
  const stamp = () => { const p = document.querySelector('#rv-status [data-t]');
                        return p ? p.dataset.t : ''; };
  let shown = null, sent = null, timer = null, fixed = '', retry = '';
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
    retry = '';
    // a new item: its heading and the status line ("saved: ...") in view, above the bar
    const st = document.querySelector('#rv-status').getBoundingClientRect();
    const bar = document.querySelector('#rv-actions').getBoundingClientRect();
    if (st.top < 0 || it.getBoundingClientRect().bottom > bar.top) scrollBy(0, st.top - 8);
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
  const answered = () => {
    if (sent === null || stamp() === sent) return;
    sent = null;
    clearTimeout(timer);
    document.body.classList.remove('rv-pending', 'rv-outage');
    const o = document.querySelector('#rv-outage');
    if (o) o.textContent = '';
  };
  document.addEventListener('click', (ev) => {
    const b = ev.target.closest && ev.target.closest(
      '#rv-accept, #rv-correct, #rv-discard, #rv-repair');
    if (!b) return;
    sent = stamp();
    document.body.classList.add('rv-pending');
    clearTimeout(timer);
    timer = setTimeout(() => {
      if (sent === null) return;
      document.body.classList.add('rv-outage');
      const o = document.querySelector('#rv-outage');
      if (o) o.textContent = 'not saved: the server has not answered for 20 s (is it still ' +
        'running?). What you typed is kept in this browser; press the button again once it ' +
        'is back (a late answer replaces this line).';
    }, WAIT_MS);
  }, true);
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
  // a refusal names the box to fix: the focus goes there, and Ctrl+Enter in it (the text
  // not edited) tries the refused decision again, not an accept
  const refocus = () => {
    const p = document.querySelector('#rv-status [data-focus]');
    if (!p || p.dataset.t === fixed) return;
    fixed = p.dataset.t;
    retry = p.dataset.retry;
    const el = box(p.dataset.focus);
    if (el) el.focus();
  };
  new MutationObserver(() => { resume(); restore(); answered(); refocus(); }).observe(
    document.documentElement, {childList: true, subtree: true, attributes: true,
                               attributeFilter: ['data-key', 'data-t']});
  // a clicked button gives the focus back to the page: Enter or Space would otherwise press
  // it again, on the next item
  document.addEventListener('click', (ev) => {
    const b = ev.target.closest && ev.target.closest('#tab-review button');
    if (b) setTimeout(() => b.blur(), 0);
  });
  const click = (id) => { const b = document.querySelector('#' + id);
                          if (b && !b.disabled && b.offsetParent !== null) b.click(); };
  document.addEventListener('keydown', (ev) => {
    const t = ev.target;
    if (ev.key === 'Enter' && t && t.closest && t.closest('#rv-name')) {
      setTimeout(() => t.blur(), 0);  // Start, then the next key decides: not a letter typed
      return;
    }
    const it = item();
    if (!it || it.offsetParent === null) return;  // the Review tab is not shown
    const typing = t && (t.tagName === 'TEXTAREA' || t.tagName === 'INPUT');
    if (typing) {
      if (!t.closest('#tab-review')) return;
      if (ev.key === 'Escape') { t.blur(); return; }
      if (ev.key === 'Enter' && (ev.ctrlKey || ev.metaKey)) {
        ev.preventDefault();
        const edited = plain(box('rv-situation').value) !== plain(it.dataset.situation) ||
          plain(box('rv-answers').value) !== plain(it.dataset.answers);
        t.dispatchEvent(new Event('change', {bubbles: true}));
        t.blur();  // the next key acts on the page, not in the box
        setTimeout(() => click(edited ? 'rv-correct' : retry || 'rv-accept'), 50);
      }
      return;
    }
    if (ev.ctrlKey || ev.metaKey || ev.altKey) return;
    const id = {a: 'rv-accept', c: 'rv-correct', d: 'rv-discard', u: 'rv-undo',
                p: 'rv-repair', r: 'rv-reset'}[ev.key];
    const note = document.querySelector('#rv-keynote');
    if (note) note.textContent = '';
    const repair = document.querySelector('#rv-repair');
    if (id === 'rv-repair' && (!repair || repair.offsetParent === null)) {
      ev.preventDefault();  // p with no proposal: say so rather than do nothing
      if (note) note.textContent = 'This item has no proposed repair: p has nothing to accept.';
      return;
    }
    if (id) { ev.preventDefault(); click(id); }
  });
})();
</script>"""
