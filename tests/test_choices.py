import pytest

from hf_real3d.choices import circular_shifts, extract_choice, extract_choices, swap_left_right

OPTS = ["left of the chair", "right of the chair", "in front", "behind"]


@pytest.mark.parametrize("answer, letter, rule", [
    ("B", "B", "letter"), ("(C)", "C", "letter"), ("D.", "D", "letter"),
    ("The answer is A.", "A", "letter"), ("Answer: (B)", "B", "letter"),
    ("After looking carefully, I choose C", "C", "letter"),
    ("It is right of the chair.", "B", "text"), ("behind", "D", "text"),
    ("I cannot tell.", None, "unparsed"), ("left or right, hard to say", None, "unparsed"),
])
def test_rules(answer, letter, rule):
    r = extract_choice(answer, OPTS)
    assert (r.letter, r.rule) == (letter, rule)


def test_longer_option_wins_and_judge():
    r = extract_choice("It is on the left", ["left", "left of the table"])
    assert r.letter == "A"
    seen = []

    def judge(prompt):
        seen.append(prompt)
        return " B"

    r = extract_choice("hmm, the second one", OPTS, question="Where?", judge=judge)
    assert (r.letter, r.rule) == ("B", "judge") and "Options:" in seen[0]
    r = extract_choice("no idea", OPTS, judge=lambda p: "Z")
    assert r.letter is None and r.rule == "unparsed"
    letters, stats = extract_choices(["A", "no idea"], [OPTS, OPTS])
    assert letters == ["A", None] and stats["unparsed"] == 1


def test_circular_shifts_keep_answer_text():
    shifts = circular_shifts(OPTS, "B")
    assert len(shifts) == 4 and shifts[0] == (OPTS, "B")
    for opts, ans in shifts:
        assert opts["ABCD".index(ans)] == "right of the chair"
        assert sorted(opts) == sorted(OPTS)
    with pytest.raises(ValueError, match="answer letter 'E'"):
        circular_shifts(OPTS, "E")


def test_swap_left_right():
    assert swap_left_right("Is the cup left of the Right box, leftmost?") == \
        "Is the cup right of the Left box, rightmost?"
