"""``askable``'s weights, one per ``features.FEATURES``.

Written by ``bench/fit_askable.py fit --method routing`` on
conv-26, conv-30, conv-41, conv-42, conv-43. Do not edit by hand: fit again.
"""

ASKABLE_WEIGHTS: tuple[float, ...] = (
    -0.25,  # z
    0.0,  # rarity
    0.0,  # log_count
    0.25,  # noun
    0.0,  # both_sides
    1.0,  # past
    -1.0,  # question_only
    0.25,  # in_question
    0.25,  # first_person
    0.0,  # common
    0.25,  # capitalised
    0.25,  # bigram
    0.0,  # length
    0.0,  # ing
    0.0,  # plural
    0.0,  # ly
    0.0,  # digit
)
