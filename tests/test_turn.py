"""The English floor's writer (hf_real3d.english.turn): a situation said again after a turn in
place, every egocentric phrase moved by the one turn rule and read back by the reader."""

import pytest

from hf_real3d.english.mentions import read
from hf_real3d.english.turn import turn_text
from hf_real3d.geometry import bearing_after_turn


@pytest.mark.parametrize("text, turn, expected", [
    # a quarter turn to the right: front -> left, right -> front, behind -> right, left -> behind
    ("There is a desk on my left and a door behind me.", 90,
     "There is a desk behind me and a door on my right."),
    ("On my right, there is a window.", 90, "In front of me, there is a window."),
    ("I am facing the desk and there is a TV behind me.", 90,
     "I have the desk on my left and there is a TV on my right."),
    ("I am sitting on a chair facing the table.", 270,
     "I am sitting on a chair with the table on my right."),
    ("I am standing with my back to the door.", 180,
     "I am standing with the door in front of me."),
    ("I am standing in front of the sink and a towel is to my right.", 90,
     "I am standing with the sink on my left and a towel is in front of me."),
    ("There is a lamp at my 3 o'clock.", 90, "There is a lamp at my 12 o'clock."),
    ("There is a lamp in my two o'clock direction.", 270,
     "There is a lamp in my five o'clock direction."),
    ("I'm facing the bed, while there is a chair on my left.", 180,
     "I have the bed behind me, while there is a chair on my right."),
    ("I am writing on the whiteboard.", 90, "I am writing on the whiteboard on my left."),
    # "another one": the other of what the text names, placed
    ("I am sitting on an armchair while having another one to my left.", 90,
     "I am sitting on an armchair while having another one behind me."),
])
def test_turned_situations(text, turn, expected):
    assert turn_text(text, turn) == expected


@pytest.mark.parametrize("text, turn", [
    ("I am sitting on the bed.", 90),  # nothing pins the heading
    ("I am sitting on the left cushion of the couch.", 90),  # a part of a thing
    ("The chair is to the left of the door.", 180),  # allocentric: nothing turns
    ("There is a chair on either side of me.", 90),  # both sides at once
    ("A chair facing the table is on my left.", 90),  # a thing faces: not the agent
    # a thing placed by a part of the body turns with the agent: no phrase says where it is
    ("I am facing the bed with a box by my left foot.", 90),
    ("I am facing a door and a radiator is far away on my back.", 180),
    ("I am holding the handle with my right hand, the sink is on my left.", 90),
    ("I am lying on my back facing the ceiling fan and the door is on my left.", 90),
    # a faced thing read short of its noun phrase ("my favourite" of "... evening show"), or
    # going on with "of"
    ("I am lying on my bed while watching my favourite evening show.", 90),
    ("I am facing the big brown door of the room.", 180),
    # "the back is against the wall": the agent's back, or a thing's?
    ("I am standing in front of the oven and the back is against the wall.", 90),
    # "standing ahead of the mat": the agent's ahead, or the mat's?; "on my sides": both
    ("I am standing ahead of the mat and looking at the chair.", 90),
    ("I reorganize the chairs in front of me to the tables that are on my sides.", 90),
    # standing in front of one thing and facing another: the first may be behind
    ("I am standing in front of the table and facing the trash can.", 90),
])
def test_what_is_not_turned(text, turn):
    assert turn_text(text, turn) is None


@pytest.mark.parametrize("turn", [90, 180, 270])
def test_the_reader_reads_the_turn_back(turn):
    """Every object the original places is placed, after the turn, where the turn rule sends
    it: the writer and the reader agree."""
    text = ("I am sitting on a chair facing the desk, with a lamp on my right, a bin behind me "
            "and a window in my ten o'clock direction.")
    before = {m.head: m.bearing for m in read(text).mentions}
    after = {m.head: m.bearing for m in read(turn_text(text, turn)).mentions}
    assert before.keys() == after.keys() == {"desk", "lamp", "bin", "window"}
    assert after == {h: bearing_after_turn(b, turn) for h, b in before.items()}


def test_a_half_turn_keeps_both_sides():
    assert turn_text("There is a chair on either side of me and a desk in front of me.", 180) \
        == "There is a chair on either side of me and a desk behind me."


def test_a_question_need_not_pin_a_heading():
    """A question's phrases turn alike, but it need not place a thing, and may ask a state
    right after a side."""
    q = "Which bed is closer to me between the one on my left and the one on my right?"
    assert turn_text(q, 90) is None
    assert turn_text(q, 90, question=True) == ("Which bed is closer to me between the one "
                                               "behind me and the one in front of me?")
    q = "Is the door to my right open or closed?"
    assert turn_text(q, 90) is None
    assert turn_text(q, 180, question=True) == "Is the door to my left open or closed?"
