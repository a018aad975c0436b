"""A conversation with planted facts, shared by the adapter tests.

With ``PAGING`` (pages of 4 turns, 2 resident), the first pages are evicted by
the end: the locker code lives on page p1, the dentist appointment on p3.
"""

from __future__ import annotations

from typing import Any

# keywords pinned: the assertions quote bookmarks, and the default extractor may change.
PAGING: dict[str, Any] = {"boundary": "fixed_4", "policy": "lru", "resident_pages": 2,
                          "keywords": "heuristic"}

TURNS: list[tuple[str, str]] = [
    ("user", "My gym locker code is 4471, please remember it."),
    ("assistant", "Noted: your gym locker code is 4471."),
    ("user", "I also train on Tuesdays with Marta."),
    ("assistant", "Tuesdays with Marta, got it."),
    ("user", "Let's plan the Lisbon trip in October."),
    ("assistant", "Sure. Lisbon in October: flights, hotel, tram 28."),
    ("user", "Budget is 1800 euros for the Lisbon trip."),
    ("assistant", "1800 euros for Lisbon, noted."),
    ("user", "The dentist appointment is on 14 November at 9:30 with Dr Okafor."),
    ("assistant", "Dentist: 14 November, 9:30, Dr Okafor."),
    ("user", "Remind me to bring the insurance card to the dentist."),
    ("assistant", "I will remind you about the insurance card."),
    ("user", "Now some Python: how do I reverse a list?"),
    ("assistant", "Use reversed(xs) or xs[::-1]."),
    ("user", "And sort a dict by value?"),
    ("assistant", "sorted(d.items(), key=lambda kv: kv[1])."),
    ("user", "What is a good name for a cat?"),
    ("assistant", "Miso, Pixel or Biscuit."),
    ("user", "I like Biscuit."),
    ("assistant", "Biscuit it is."),
]
