"""The English reader (hf_real3d.english.mentions): egocentric and allocentric phrases,
answers as directions and what a question asks. The misreadings issue 46 found are quoted from
the release's own texts."""

import re

import pytest

from hf_real3d.english.asks import HEADING_FREE, answer_direction, question_kind
from hf_real3d.english.mentions import mentions, normal_text, plain_words, read


def placed(text):
    return {(m.head, m.bearing) for m in mentions(text)}


# ---- the misreadings of issue 46, in the release's texts ---------------------------------

def test_a_side_of_the_room_is_not_my_side():
    # rotation_90.json 22060203159601
    text = ("I am standing to the left of the black chair on the left side of the room "
            "turning on the lamp in front of me.")
    assert placed(text) == {("lamp", 0.0)}  # no "chair on my left"
    r = read(text)
    assert {(x.side, x.anchor) for x in r.relations} == {("left", "chair"), ("left", "room")}


@pytest.mark.parametrize("text", [
    "The lamp is to the left of the door.",
    "I am sitting on the couch on the left side of the room.",
    "I want to open the curtain on the right side of the radiator.",
    "I am sitting on the left end of the couch.",
    "The box is in front of the desk.",
])
def test_allocentric_phrases_place_nothing_relative_to_me(text):
    assert mentions(text) == []
    assert read(text).relations


def test_within_reach_is_not_an_object():
    # rotation_0.json 220602001321 and 220602002977
    assert placed("I am picking up my backpack with a chair to my left within reach.") == \
        {("chair", 270.0)}
    assert placed("There is a chair within reach on my left.") == {("chair", 270.0)}
    assert placed("I am sitting on the chair facing another chair, and the bed is on my left "
                  "within reach.") == {("chair", 0.0), ("bed", 270.0)}


def test_what_lies_on_the_floor_is_what_is_placed():
    # rotation_90.json 22060202730601
    got = placed("I threw my backpack on the floor to my right and grabbed the ironing board "
                 "behind me.")
    assert ("backpack", 90.0) in got and ("board", 180.0) in got
    assert not any(h == "floor" for h, _ in got)
    # "the lamp on the table to my right": both are to my right
    assert placed("There is a lamp on the table to my right.") == {("lamp", 90.0),
                                                                  ("table", 90.0)}


def test_my_backside_facing_the_window_puts_the_window_behind_me():
    # rotation_0.json 220602000442
    ms = mentions("I am standing ahead of the mat and my backside is facing the window and "
                  "looking at the chair.")
    assert {(m.head, m.bearing, m.facing) for m in ms} == {("window", 180.0, False),
                                                          ("chair", 0.0, True)}
    for text in ("With my back to the door, I read.", "My back is towards the sink.",
                 "I am facing away from the crate."):
        assert [m.bearing for m in mentions(text)] == [180.0], text


def test_contractions_and_spelling_do_not_hide_a_copy():
    a = "I am sitting on a chair facing the table."
    assert plain_words("I'm sitting on a chair, facing the table") == plain_words(a)
    assert normal_text("at my 3 o clock") == "at my 3 o'clock"
    assert normal_text("the desk infront of me") == "the desk in front of me"


# ---- what the reader reads ---------------------------------------------------------------

def test_objects_directions_facing_and_clock_hours():
    got = {(m.head, m.bearing, m.facing) for m in mentions(
        "I am facing a door, while having a mini fridge and a trash can on my right. "
        "There is a bed behind me and to my left is a huge curtain.")}
    assert got == {("door", 0.0, True), ("fridge", 90.0, False), ("can", 90.0, False),
                   ("bed", 180.0, False), ("curtain", 270.0, False)}
    clock = mentions("I am facing the paper towel dispenser with a chair in my 4 o'clock "
                     "direction.")
    assert [(m.head, m.bearing, m.width) for m in clock] == \
        [("dispenser", 0.0, 90.0), ("chair", 120.0, 30.0)]
    assert placed("I washed my hands and behind me was the towel.") == {("towel", 180.0)}
    assert placed("I am standing in front of the sink.") == {("sink", 0.0)}


def test_what_the_reader_leaves_open():
    r = read("I am standing between two chairs with windows on my left and right.")
    assert r.mentions == [] and r.unresolved
    assert mentions("I am using my left hand to open the door.") == []
    assert mentions("I am lying on my back on the bed.") == []
    # a chair facing the table is the chair's facing, not mine
    assert not any(m.facing for m in mentions("There is a chair facing the table on my left."))


def test_several_of_one_name():
    assert "chair" in read("I sit on a chair with another chair on my left.").several
    assert "bed" in read("I am looking at the bed closest to the window.").several
    assert read("Some cabinets are on my left.").several == set()  # one group, named once
    assert [m.number for m in mentions("Two chairs are behind me.")] == ["plural"]
    assert [m.modifier for m in mentions("The office chair is on my left.")] == ["office"]


@pytest.mark.parametrize("answer, expected", [
    ("left", (270.0, 90.0)), ("Turn left", (270.0, 90.0)), ("to my right", (90.0, 90.0)),
    ("forward", (0.0, 90.0)), ("straight ahead", (0.0, 90.0)), ("in front", (0.0, 90.0)),
    ("backward", (180.0, 90.0)), ("behind me", (180.0, 90.0)), ("turn around", (180.0, 90.0)),
    ("3 o'clock", (90.0, 30.0)), ("nine o'clock", (270.0, 30.0)),
    ("north", None), ("door", None), ("two", None), ("left side of the bed", None),
])
def test_answers_read_as_directions(answer, expected):
    assert answer_direction(answer) == expected


HEADING_FREE_EXAMPLES = {
    "count_in_room": "How many chairs are in the room?",
    "count_on_named": "How many pillows are on the bed?",
    "colour": "What color is the bed?",
    "material": "What is the table made of?",
    "shape": "What shape is the rug?",
    "state": "Is the door open or closed?",
    "reach": "Can I reach the lamp from where I am sitting?",
    "nearer": "Which is closer to me, the sofa or the bed?",
    "on_or_in_named": "What is on the table in front of the couch?",
    "between_named": "What is between the bed and the desk?",
    "doing_holding": "What am I sitting on?",
    "odd_even_in_room": "Is the number of chairs in the room odd or even?",
    "count": "How many pillows are on top of the bed?",
    "on_which_named": "Is the jacket on the bed or the armchair?",
    "at_named": "Is there anything on the desk?",
    "my_seat": "What type of chair am I sitting on?",
    "closest": "Which is the nearest piece of furniture I can sit on?",
}


def test_every_heading_free_pattern_has_an_example_it_reads():
    assert set(HEADING_FREE_EXAMPLES) == set(HEADING_FREE)
    for name, question in HEADING_FREE_EXAMPLES.items():
        assert question_kind(question) == ("heading_free", name), question


@pytest.mark.parametrize("question", [
    "What color is the shelf to my left?",       # which shelf depends on the heading
    "How many chairs are on my left side?",
    "Can I see the clock from where I am standing?",
    "What is on the table to the left of the couch?",  # left of: the viewer's
    "Is the amount of chairs I am facing odd or even?",
    "What is the closest object on my left?",
])
def test_a_heading_makes_a_question_heading_dependent(question):
    assert question_kind(question)[0] != "heading_free"


def test_questions_that_ask_a_direction_or_what_is_there():
    assert question_kind("Which direction should I go to reach the door?") == \
        ("direction", False)
    assert question_kind("Is the door on my left or right?") == ("direction", True)
    assert question_kind("Is the room in front of me dark or the room behind me?")[1] is True
    # a direction answer makes any question a direction question
    assert question_kind("Where is the bed?", ("infront",))[0] == "direction"
    # a side of an object is the object's, not mine
    assert question_kind("If I turn around, which side of the cabinet will I be facing?",
                         ("front",)) == ("other", None)
    kind, (bearing, width, phrase) = question_kind("What is the closest object on my left?")
    assert (kind, bearing, width) == ("at", 270.0, 90.0) and re.search("left", phrase)


def test_heading_free_patterns_are_documented():
    from pathlib import Path

    doc = (Path(__file__).parents[1] / "docs/rotations.md").read_text()
    for name in HEADING_FREE:
        assert f"`{name}`" in doc, name


def test_the_agent_faces_past_a_part_of_a_thing():
    """"at the foot of the bed facing the pillow": the agent faces it, not the bed; "facing
    the crib and the curtains are on my left": the crib is faced, not on the left."""
    assert placed("I am standing at the foot of the bed facing the blue pillow.") == \
        {("pillow", 0.0)}
    assert placed("I am facing the crib and the curtains are on my left side.") == \
        {("crib", 0.0), ("curtain", 270.0)}
    assert read("I am sitting on the left cushion of the couch.").places[0][:2] == \
        ("couch", "left cushion")


def test_what_a_question_at_the_pose_says():
    from hf_real3d.english.asks import question_template, said_at_pose

    def said(q, a):
        return {(m.head, m.bearing) for m in said_at_pose(q, (a,), "q")}

    assert said("What is on my left?", "window") == {("window", 270.0)}
    assert said("Which direction should I go if I want to open the window?", "left") == \
        {("window", 270.0)}
    assert said("What color is the couch behind me?", "black") == {("couch", 180.0)}
    assert said("Is the lamp on my left?", "no") == set()
    assert said("If I turn around, what is in front of me?", "door") == set()
    assert question_template("What color is the couch behind me?") == \
        ("what color is the couch <d>?", 180.0, 90.0)
