"""``askable``'s weights, one per ``features.FEATURES``.

Written by ``bench/fit_askable.py fit --method routing`` on
conv-26, conv-30, conv-41, conv-42, conv-43. Do not edit by hand: fit again.
"""

ASKABLE_WEIGHTS: tuple[float, ...] = (
    0.25,  # z
    0.0,  # rarity
    0.0,  # log_count
    0.0,  # noun
    0.0,  # both_sides
    0.0,  # past
    -1.0,  # question_only
    0.0,  # in_question
    0.25,  # first_person
    1.0,  # common
    0.0,  # capitalised
    0.0,  # bigram
    0.0,  # length
    0.0,  # ing
    -0.5,  # plural
    -1.25,  # ly
    0.0,  # digit
    0.0,  # dated
)
