"""A small conversation whose pages share generic words ("budget", "medical").

Used by the keyword and bookmark tests; each page also has a probe question about its
specifics (for manual inspection).
"""

from __future__ import annotations

import random
from pathlib import Path

from copage.core.types import Page, Turn, page_id, render_turns

PAGES: list[tuple[list[str], str]] = [
    (
        [
            "I need help with the budget for our wedding. The budget is tight.",
            "Sure. What is the total budget for the wedding?",
            "The wedding budget is $18,000 and the venue in Sintra already takes $9,000.",
            "Then the caterer and the photographer must fit in the remaining budget.",
            "The caterer quoted $4,500 for 80 guests, and the photographer wants $2,000.",
            "That leaves $2,500 of the budget for flowers, the cake and the band.",
        ],
        "How much of the budget does the wedding venue take?",
    ),
    (
        [
            "Different topic: I have a budget for a new laptop for work.",
            "What is the budget for the laptop?",
            "My budget is $1,400. I want 32GB of RAM and a good keyboard for programming.",
            "Within that budget the ThinkPad T14 or a refurbished MacBook Pro fit.",
            "The ThinkPad sounds right, the budget matters more than the screen.",
            "Then the ThinkPad T14 with 32GB RAM is the pick within budget.",
        ],
        "Which laptop fits my budget?",
    ),
    (
        [
            "I have a medical appointment next week, with the dentist.",
            "What is the medical appointment for?",
            "The dentist wants to do a root canal on my molar, on Tuesday at 9am.",
            "For a root canal medical appointment, ask the dentist about anaesthesia.",
            "Dr. Okafor said the root canal takes ninety minutes.",
            "Eat before the appointment, the numbness lasts a few hours.",
        ],
        "When is my root canal appointment?",
    ),
    (
        [
            "Another medical thing: I saw the allergist about my allergy.",
            "What did the medical appointment show?",
            "The skin test confirmed a peanut allergy and a mild cat allergy.",
            "With a peanut allergy, carry the epinephrine pen to every medical appointment.",
            "The allergist prescribed an EpiPen and antihistamines for the cat allergy.",
            "Tell restaurants about the peanut allergy when you order.",
        ],
        "What allergy did the skin test confirm?",
    ),
    (
        [
            "Let's plan the vacation budget for Japan in October.",
            "What budget do you have for the vacation?",
            "The vacation budget is $5,000 for two weeks, flights to Tokyo included.",
            "Flights to Tokyo cost about $1,200, and a ryokan in Kyoto about $300 a night.",
            "Let's book the ryokan in Kyoto for three nights within the budget.",
            "A rail pass for the vacation adds $450 to the budget.",
        ],
        "What budget did we set for the Japan trip?",
    ),
    (
        [
            "One more medical appointment: physiotherapy for my knee.",
            "What happened to the knee?",
            "I injured the knee running, the physiotherapist thinks it is the meniscus.",
            "For the meniscus, the physiotherapist gives exercises at each medical appointment.",
            "The physiotherapy sessions are every Thursday for six weeks.",
            "Ice the knee after the exercises and avoid running.",
        ],
        "What did the physiotherapist say about my knee?",
    ),
    (
        [
            "I also want a monthly budget for groceries.",
            "How much is the grocery budget each month?",
            "The grocery budget is $600 a month, and we shop at Lidl on Saturdays.",
            "To stay within the grocery budget, plan meals and buy rice and lentils in bulk.",
            "Meal planning with lentils and rice should keep the budget down.",
            "Then the grocery budget of $600 should work.",
        ],
        "What is my grocery budget per month?",
    ),
    (
        [
            "Last medical appointment this month: the eye exam.",
            "What did the optometrist say at the medical appointment?",
            "The optometrist says my prescription changed, I need new glasses for reading.",
            "New glasses with a stronger prescription should help with reading at night.",
            "The glasses cost $350 and the medical insurance covers half.",
            "Ask the optometrist for the receipt for the medical insurance claim.",
        ],
        "What did the eye exam say about my glasses?",
    ),
]


def make_page(index: int, texts: list[str], speakers: tuple[str, str] = ("Anna", "Ben")) -> Page:
    """A page of alternating speakers (user first) from turn texts."""
    turns = tuple(
        Turn(
            id=f"t{index}-{i}",
            role="user" if i % 2 == 0 else "assistant",
            text=text,
            speaker=speakers[i % 2],
        )
        for i, text in enumerate(texts)
    )
    text = render_turns(turns)
    return Page(id=page_id(index), index=index, turns=turns, text=text, tokens=len(text) // 4)


def conversation() -> list[Page]:
    """The fixture's pages, ``p1`` to ``p8``."""
    return [make_page(i, texts) for i, (texts, _) in enumerate(PAGES)]


def probes() -> list[str]:
    """One probe question per page, same order as :func:`conversation`."""
    return [probe for _, probe in PAGES]


def blob_pages() -> list[Page]:
    """Pages with what users paste: a hex blob, a 200k-character turn, huge numbers."""
    rng = random.Random(0)
    hexblob = "".join(rng.choice("0123456789abcdef") for _ in range(9000))
    vocab = ["Alpha", "beta", "Gamma", "delta", "Lisbon", "budget"]
    big = " ".join(rng.choice(vocab) for _ in range(40000))[:200_000]
    title = " ".join(w.capitalize() for w in big.split())
    return [
        make_page(20, ["Here is the dump: " + hexblob, "Thanks, that is the core file."]),
        make_page(21, [big, "ok"]),
        make_page(22, [title, "ok"]),
        make_page(23, ["$" + "9" * 5000 + " and 12" + "3" * 5000, "That is a big number."]),
    ]


# Names of every kind in one page: speakers, people the text marks as people (addressed,
# related, credited, quoted), and names a capital letter cannot type (places, a genre, a
# company, pets, titles). Written for these tests in the manner of LoCoMo's chats.
NAMES_TURNS = [
    ("Hey Mel! I finally went to Lisbon with my friend Maria. We walked through Alfama and "
    "heard Fado every night."),
    "Thanks, Caro! Sounds amazing. I started at Snowflake last week, so no trips for me.",
    ("It was Matt Patterson, he is so talented! Also I read \"Becoming Nicole\" "
    "by Amy Ellis Nutt on the plane."),
    "Lately I've been busy. We got another cat named Bailey. Here's a pic of Oliver.",
    "Bye Caroline! BTW my sister Rosa says hi.",
]
NAMES_PEOPLE = {"Caroline", "Melanie", "Mel", "Caro", "Maria", "Matt Patterson",
                "Amy Ellis Nutt", "Rosa"}
NAMES_OTHER = {"Lisbon", "Alfama", "Fado", "Snowflake", "Becoming Nicole", "Bailey", "Oliver"}


def names_page() -> Page:
    """``NAMES_TURNS`` spoken by Caroline and Melanie."""
    return make_page(0, NAMES_TURNS, speakers=("Caroline", "Melanie"))


def locomo_sample() -> Path | None:
    """The LoCoMo sample beside the checkout (``../shared`` of some ancestor), if present.

    Never committed; tests that use it skip cleanly without it.
    """
    for parent in Path(__file__).resolve().parents:
        path = parent / "shared" / "data" / "locomo" / "locomo-sample.json"
        if path.exists():
            return path
    return None
