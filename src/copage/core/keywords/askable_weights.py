"""``askable``'s weights, one per ``features.FEATURES``.

Written by ``tools/fit_askable.py fit`` with
``--method routing --format compact --n-keywords 12 --bookmark-tokens 12 --bag``
on conv-26, conv-30, conv-41, conv-42, conv-43. Do not edit by hand: fit again.
"""

ASKABLE_WEIGHTS: tuple[float, ...] = (
    0.2,  # z
    0.0,  # rarity
    0.05,  # log_count
    -0.05,  # noun
    -0.1,  # both_sides
    0.25,  # past
    -0.4,  # question_only
    0.35,  # in_question
    0.25,  # first_person
    0.2,  # common
    0.5,  # capitalised
    -0.7,  # bigram
    0.0,  # length
    -0.15,  # ing
    0.0,  # plural
    -0.7,  # ly
    0.0,  # digit
    0.65,  # dated
)
