"""The Review tab's page: what an annotator sees of one showing, in named parts (the heading
and counter, the turn in words, the group table, the checker's findings, the proposed repair,
the drawings), and what the page shows of the annotator's own decisions.

A second look (an unannounced repeat of a whole group) renders as a first look does: the same
heading and counter (the queue's showings, repeats included), and the same decisions, for
what the page shows of them is a function of the queue position alone
(:func:`shown_decisions`): the group table shows the decisions made on this showing of the
group, "your decisions" the last ones made in the queue, whichever look they were."""

from __future__ import annotations

import base64
import html
import io
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from hf_real3d.geometry import Pose
from hf_real3d.real3dqa.draw import PANEL_DPI, topdown_panel, turn_words
from hf_real3d.real3dqa.review import LISTED

from .render import answers_text

__all__ = ["Showing", "review_html", "review_drawings", "rules_legend", "proposal_label",
           "shown_decisions", "decision_choices", "KEYS_HELP"]

_SENSE_WORDS = {
    "quaternion": "the texts follow this turn",
    "opposite": "the texts follow the opposite turn (a valid item when situation and answer "
                "agree on it)",
    "either": "the texts fit either sense (a half turn, or nothing tells the senses apart)",
    "none": "the texts follow no rigid turn",
}
KEYS_HELP = ("Keys (outside the text boxes): <kbd>a</kbd> accept, <kbd>c</kbd> correct, "
             "<kbd>d</kbd> discard, <kbd>p</kbd> accept the proposed repair, <kbd>r</kbd> reset "
             "the text to the item's own, <kbd>u</kbd> undo (reopen your last decision). In a "
             "text box: <kbd>Ctrl</kbd>+<kbd>Enter</kbd> saves (correct if you edited the text, "
             "else the decision just refused, or accept) and leaves the box, "
             "<kbd>Esc</kbd> leaves the box. <kbd>Enter</kbd> in the name box starts.")
e = html.escape


@dataclass
class Showing:
    """What the page shows: the annotator, the showing (``entry``, None at the end of the
    queue), its place in the queue (``position``), showings ``done`` of ``total``, the
    decision being reopened (``revising``), the annotator's decisions on this showing of the
    group by item (``mine``) and the last ones in the queue (``recent``), see
    :func:`shown_decisions`, and the draft key of the item just saved (``saved``: the page's
    script forgets its draft)."""

    annotator: str
    entry: Any = None
    position: int | None = None
    done: int = 0
    total: int = 0
    revising: dict[str, Any] | None = None
    mine: dict[tuple[Any, int], dict[str, Any]] = field(default_factory=dict)
    saved: str = ""
    recent: list[tuple[int, dict[str, Any]]] = field(default_factory=list)

    @property
    def key(self) -> str:
        """The page's key (``rv-key``, and the draft key): annotator, item, queue position
        (a first showing) or the decision reopened; no word of which showing it is."""
        if self.entry is None:
            return f"{self.annotator}||||"
        rev = self.revising["n"] if self.revising else ""
        pos = "" if self.revising else self.position
        return f"{self.annotator}|{self.entry.question_id}|{self.entry.rotation_deg}|{pos}|{rev}"


def shown_decisions(queue: Sequence[Any], made: Sequence[dict[str, Any]], at: int | None
                    ) -> tuple[dict[tuple[Any, int], dict[str, Any]], list[tuple[int, dict]]]:
    """What the page shows of the annotator's decisions (``made``, history included), alike
    at a first and a second look: (for the group table, the standing decision of each
    showing in the run of the group's showings around queue position ``at``, by item; for
    "your decisions", the standing decisions of the last :data:`LISTED` showings decided,
    as (queue position, decision), latest first)."""
    on = {(d["question_id"], d["rotation_deg"], d["repeat"]): d for d in made}
    table: dict[tuple[Any, int], dict[str, Any]] = {}
    if at is not None:
        lo = hi = at
        while lo and queue[lo - 1].question_id == queue[at].question_id:
            lo -= 1
        while hi + 1 < len(queue) and queue[hi + 1].question_id == queue[at].question_id:
            hi += 1
        table = {(e.question_id, e.rotation_deg): on[e.key] for e in queue[lo:hi + 1]
                 if e.key in on}
    recent = [(i, on[queue[i].key]) for i in reversed(range(len(queue))) if queue[i].key in on]
    return table, recent[:LISTED]


def decision_choices(recent: Sequence[tuple[int, dict[str, Any]]]) -> list[tuple[str, str]]:
    """The "your decisions" list: the standing decision of each showing in ``recent``, as
    (label, ``question_id|rotation_deg|queue position``); nothing tells a second look."""
    return [(f"{d['question_id']} at {d['rotation_deg']}°: {d['decision']}",
             f"{d['question_id']}|{d['rotation_deg']}|{i}") for i, d in recent]


def _rule_span(rule: str, needs_scene: bool = False) -> str:
    # the rule names' meanings, for the tooltips and the legend
    from hf_real3d.real3dqa.checker.text import RULES

    cls = "rv-rule needs-scene" if needs_scene else "rv-rule wrong"
    return (f"<span class='{cls}' data-rule='{e(rule)}' title='{e(RULES.get(rule, rule))}'>"
            f"{e(rule)}</span>")


def rules_legend() -> str:
    """Every checker rule and what it means (the Review tab's legend)."""
    # the checker's rule texts only for the Review tab
    from hf_real3d.real3dqa.checker.text import RULES

    items = "".join(f"<dt><code>{e(r)}</code></dt><dd>{e(t)}</dd>" for r, t in RULES.items())
    return (f"<details class='rv-legend'><summary>What the checker's rules mean</summary>"
            f"<dl>{items}</dl><p>Verdicts: <b>defect</b> (the text contradicts its turn), "
            "<b>needs_scene</b> (the text alone cannot decide), <b>pass</b>.</p></details>")


def _counter(s: Showing) -> str:
    return (f"<p class='rv-progress'>{s.done:,} of {s.total:,} done &middot; annotator "
            f"<b>{e(s.annotator)}</b></p>")


def _item_line(rf, s: Showing, scene_id: Any) -> str:
    """The item's heading, carrying its key and texts for the page's script."""
    q, k = s.entry.question_id, s.entry.rotation_deg
    if s.revising is not None:
        head = (f"reopened: your decision on question_id <b>{e(str(q))}</b> at {k}&deg; was "
                f"<b>{e(s.revising['decision'])}</b> ({e(s.revising.get('time', ''))}); a new "
                "decision replaces it (the history stays in your file)"
                + ("; the boxes hold your correction: Correct saves them, Accept accepts the "
                   "item as it is" if s.revising["decision"] == "correct" else ""))
    else:
        head = f"item {s.position + 1:,} of {s.total:,}: question_id <b>{e(str(q))}</b> at {k}&deg;"
    row = rf.rows[(q, k)]
    return (f"<p class='qmeta' id='rv-item' data-qid='{e(str(q))}' data-deg='{k}' "
            f"data-key='{e(s.key)}' data-saved='{e(s.saved)}' "
            f"data-situation='{e(row['situation'])}' "
            f"data-answers='{e(' | '.join(row['answers']))}'>{head} &middot; scene "
            f"{e(str(scene_id))}</p>")


def _turn_line(check: dict[str, Any], k: int) -> str:
    """Which way the agent turned, in words, and the checker's verdict and sense."""
    turn = check.get("turn", k)
    sense = check.get("sense")
    after = ""
    if 0 < round(turn) % 360 < 180:
        after = (". After a turn to the right, what was on its right is now in front and what "
                 "was in front is on its left")
    elif round(turn) % 360 > 180:
        after = (". After a turn to the left, what was on its left is now in front and what "
                 "was in front is on its right")
    verdict = (f". Checker: <b class='rv-verdict'>{e(check.get('verdict') or '?')}</b>, sense "
               f"<b class='rv-sense'>{e(sense)}</b>: {e(_SENSE_WORDS.get(sense, ''))}"
               if sense else "")
    return (f"<p class='rv-turn' data-turn='{float(turn):g}'>Viewpoint {k}&deg;: the agent "
            f"<b>{e(turn_words(turn))}</b> (seen from above), relative to viewpoint 0{after}"
            f"{verdict}.</p>")


def _group_table(rf, q: Any, k: int, group: list[tuple[int, dict]],
                 mine: dict[tuple[Any, int], dict[str, Any]]) -> str:
    """The group at every viewpoint: situation, question, answers (the annotator's shown
    corrections in place of the old text), the checker's rules, the shown decisions."""
    head = "".join(f"<th data-deg='{d}' class='{'current' if d == k else ''}'>{d}&deg;"
                   f"{' (under review)' if d == k else ''}<br><small>{e(turn_words(d))}"
                   "</small></th>" for d, _ in group)

    def cells(label: str, values: list[str], cls: str) -> str:
        tds = "".join(f"<td class='{cls}{' current' if d == k else ''}' data-deg='{d}'>{v}</td>"
                      for (d, _), v in zip(group, values))
        return f"<tr><th>{label}</th>{tds}</tr>"

    sits, anss, yours, rules = [], [], [], []
    for d, r in group:
        mined = mine.get((q, d))
        if mined and mined["decision"] == "correct":
            sits.append(f"<ins class='rv-corrected'>{e(mined['situation'])}</ins><br><del>"
                        f"{e(r['situation'])}</del>")
            anss.append(f"<b><ins class='rv-corrected'>{e(' / '.join(mined['answers']))}</ins>"
                        f"</b> <del>{e(answers_text(r['answers']))}</del>")
        else:
            sits.append(e(r["situation"]))
            anss.append(f"<b>{e(answers_text(r['answers']))}</b>")
        yours.append("" if not d else (e(mined["decision"]) if mined else "&ndash;"))
        c = rf.checks.get((q, d), {})
        hits = c.get("hits") or [{"rule": x} for x in c.get("rules", [])]
        spans = " ".join(_rule_span(h["rule"], bool(h.get("needs_scene"))) for h in hits)
        verdict = c.get("verdict")
        rules.append("" if not d else
                     (f"<span class='rv-v rv-v-{e(str(verdict))}'>{e(str(verdict))}</span> "
                      if verdict else "") + (spans or "<span class='right'>no rule</span>"))
    return (f"<table class='viewpoints'><tr><th></th>{head}</tr>"
            + cells("situation", sits, "rv-situation")
            + cells("question", [e(r["question"]) for _, r in group], "rv-question")
            + cells("answers", anss, "rv-answer") + cells("checker", rules, "rv-rules")
            + cells("your decision", yours, "rv-yours") + "</table>")


def _found(check: dict[str, Any]) -> str:
    found = [f"<li>{_rule_span(h['rule'], bool(h.get('needs_scene')))}: {e(h.get('detail', ''))}"
             "</li>" for h in check.get("hits", [])]
    if check.get("why"):
        found.append(f"<li>{e(check['why'])}</li>")
    return (f"<ul class='rv-found'>{''.join(found)}</ul>" if found else
            "<p class='rv-found'>The checker found nothing here.</p>")


def _proposals(props: list[dict[str, Any]]) -> str:
    if not props:
        return ""
    lis = []
    for p in props:
        if p["action"] == "replace":
            what = (f"answers <del>{e(' / '.join(p['from']))}</del> &rarr; "
                    f"<ins>{e(' / '.join(p['to']))}</ins>")
        else:
            what = "the situation must be rewritten (no text proposed)"
        lis.append(f"<li data-rule='{e(p['rule'])}'>{_rule_span(p['rule'])}: {what}. "
                   f"<small>{e(p.get('why', ''))}</small></li>")
    return (f"<div class='rv-proposal'><b>Proposed repair</b> (a suggestion; it counts only "
            f"once you accept it):<ul>{''.join(lis)}</ul></div>")


def review_html(rf, s: Showing) -> str:
    """The Review tab's page for ``s``: which item and how far along, which way the turn goes
    (in words), the item's whole group, the checker's verdict, sense and rules (each with
    its meaning as a tooltip) and its proposed repair. ``rf``: a
    :class:`hf_real3d.real3dqa.review.ReviewFolder`."""
    folder = f"<span id='rv-folder' data-folder='{e(str(rf.folder.resolve()))}'></span>"
    if s.entry is None:
        return (f"{folder}<p class='rv-done' id='rv-item' data-key='' data-saved='{e(s.saved)}'>"
                f"All {s.total:,} showings of your queue judged ({len(rf.order):,} items). "
                "Thank you. Reopen one of your last decisions below to change it.</p>"
                + _counter(s))
    q, k = s.entry.question_id, s.entry.rotation_deg
    group = sorted(((d, r) for (gq, d), r in rf.rows.items() if gq == q), key=lambda x: x[0])
    check = rf.checks.get((q, k), {})
    return (folder + _item_line(rf, s, group[0][1]["scene_id"]) + _counter(s)
            + _turn_line(check, k) + _group_table(rf, q, k, group, s.mine) + _found(check)
            + _proposals(rf.proposals.get((q, k), []))
            + f"<p class='rv-keys'>{KEYS_HELP}</p>")


def proposal_label(props: list[dict[str, Any]]) -> str | None:
    """The one-click button's label for an item's proposed repair (None: no proposal)."""
    if not props:
        return None
    p = props[0]
    if p["action"] == "replace":
        return f"Accept proposal: answers -> {' / '.join(p['to'])}"
    return "Accept proposal: discard, to rewrite"


def _panel_png(rf, scene, pose0, qid: Any, d: int, r: dict[str, Any], current: int) -> bytes:
    labels = {o.label for o in scene.non_structural()}
    turn = float(rf.checks.get((qid, d), {}).get("turn", d)) if d else 0.0
    answer = answers_text(r["answers"]).split(" / ")[0]
    hl = {o.object_id for o in scene.by_label(answer)} if answer in labels else set()
    title = (f"{'UNDER REVIEW: ' if d == current else ''}{d}°, {turn_words(turn)}\n"
             f"answer: {answers_text(r['answers'])}")
    fig = topdown_panel(scene, pose0.turned(turn), highlight=hl, title=title,
                        current=d == current)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=PANEL_DPI, edgecolor=fig.get_edgecolor())
    return buf.getvalue()


def review_drawings(rf, qid: Any, current: int, cache: dict | None = None) -> str:
    """One top-down panel per viewpoint of ``qid``'s group at a readable size (480 px wide),
    the one under review framed, each titled with its turn in words; empty without scenes."""
    # the panels only for the Review tab of a set with scenes
    scenes = rf.rotation_set.scenes
    if scenes is None:
        return ""
    group = sorted(((d, r) for (q, d), r in rf.rows.items() if q == qid), key=lambda x: x[0])
    r0 = dict(group)[0]
    scene = scenes(str(r0["scene_id"]))
    pose0 = Pose.from_sqa3d(r0["position"], r0["rotation"], scene.origin,
                            item=f"question_id {qid}")
    imgs = []
    for d, r in group:
        key = ("panel", str(qid), d, d == current)
        png = (cache or {}).get(key)
        if png is None:
            png = _panel_png(rf, scene, pose0, qid, d, r, current)
            if cache is not None:
                if len(cache) > 64:
                    cache.pop(next(iter(cache)))
                cache[key] = png
        src = "data:image/png;base64," + base64.b64encode(png).decode()
        alt = f"{d} degrees: {turn_words(d)}; answer {answers_text(r['answers'])}"
        imgs.append(f"<figure class='rv-panel{' current' if d == current else ''}' "
                    f"data-deg='{d}'><img src='{src}' alt='{e(alt)}' title='{e(alt)}'></figure>")
    return (f"<div class='rv-drawings'>{''.join(imgs)}</div><p class='rv-drawing-legend'>"
            "Green arrow: where the agent faces; dashed: its quadrant borders; red: the "
            "objects the answer names; grey: walls, doors, windows. The orange frame marks the "
            "viewpoint under review.</p>")
