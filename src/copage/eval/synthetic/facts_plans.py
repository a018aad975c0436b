"""Fact types about plans and people: budget, deadline, schedule, contact."""

from __future__ import annotations

import datetime as dt
import random

from copage.eval.synthetic.values import DrawContext, FactType, Topic, Value

_WORDS = {
    400: "four hundred",
    500: "five hundred",
    600: "six hundred",
    750: "seven-fifty",
    800: "eight hundred",
    900: "nine hundred",
    1000: "a thousand",
    1200: "twelve hundred",
    1500: "fifteen hundred",
    1800: "eighteen hundred",
    2000: "two thousand",
    2500: "twenty-five hundred",
}


def _amount(n: int) -> Value:
    """``$1,200`` with variants ``1200 dollars`` and ``twelve hundred bucks``."""
    return Value(f"${n:,}", (f"${n:,}", f"{n} dollars", f"{_WORDS[n]} bucks"), spoken=3)


def _budget(item: str, low: int, high: int, *indirect: str) -> Topic:
    return Topic(
        name=item,
        slots={"item": item},
        values=tuple(_amount(n) for n in _WORDS if low <= n <= high),
        direct=(
            "What's my budget for the {item}?",
            "How much did I say I can spend on the {item}?",
        ),
        indirect=indirect,
    )


BUDGET = FactType(
    name="budget",
    keyword="budget",
    topics=(
        _budget(
            "laptop",
            800,
            2500,
            "What laptop can I afford?",
            "Which laptop would you recommend for me?",
        ),
        _budget(
            "weekend trip",
            400,
            1500,
            "Can you plan a weekend getaway for me that fits what I can spend?",
        ),
        _budget("sofa", 600, 2000, "Which sofa should I buy for my living room?"),
        _budget("commuter bike", 400, 1500, "Can you recommend a commuter bike for me?"),
        _budget("phone", 400, 1200, "Which phone should I get?"),
    ),
    statements=(
        "I'm finally replacing my {item}. My budget is {v}, tops.",
        "Let's be realistic about the {item}: I can spend {v} and not a cent more.",
        "For the {item} I've set aside {v}. That's the whole budget.",
        "Money's tight this year, so the {item} has to come in under {v}.",
    ),
    acks=(
        (
            "Got it, {v} is the ceiling for the {item}. That's workable; I'll only point you "
            "at options that fit."
        ),
        (
            "Smart to fix the number first. With {v} for the {item} you can get something "
            "solid without stretching."
        ),
    ),
    restates=(
        "Still shopping for the {item}. Sticking to {v}, whatever the salespeople say.",
        "Saw a {item} I loved but it was way over my {v} limit, so back to browsing.",
    ),
    restate_acks=(
        (
            "Good discipline. Prices drop regularly, so waiting for a sale inside your limit is "
            "a smart move."
        ),
        "Annoying, but the right call. Last year's models are often the best value.",
    ),
    updates=(
        "Budget update for the {item}: after redoing my finances it's {v} now, not {old}.",
        "Okay, new number for the {item}: {v}. Forget the {old} I mentioned before.",
    ),
    update_acks=(
        "Thanks for the update. I'll plan the {item} around {v} from now on.",
        "Got it, {v} replaces {old}. That changes which options make sense.",
    ),
    distractors=(
        "My friend Sam's budget for his {item} is {d}. We keep sending each other listings.",
        (
            "Back when I was a student my budget for a {item} was {d}, which feels like another "
            "life now."
        ),
        "My brother asked me to help him pick a {item} too; his budget is {d}.",
    ),
    distractor_acks=(
        "Everyone's got their own number. Comparing notes can help spot good deals, though.",
        "Good to have a reference point; prices move around a lot.",
    ),
)

_MONTHS = (
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)


def _ordinal(day: int) -> str:
    suffix = "th" if 11 <= day % 100 <= 13 else {1: "st", 2: "nd", 3: "rd"}.get(day % 10, "th")
    return f"{day}{suffix}"


def date_value(day: dt.date) -> Value:
    """``March 14`` with variants ``March 14th`` and ``14 March``."""
    month = _MONTHS[day.month - 1]
    key = f"{month} {day.day}"
    return Value(key, (key, f"{month} {_ordinal(day.day)}", f"{day.day} {month}"), spoken=3)


def _draw_date(rng: random.Random, ctx: DrawContext) -> Value:
    return date_value(ctx.base_date + dt.timedelta(days=rng.randint(10, 75)))


def _deadline(item: str) -> Topic:
    return Topic(
        name=item,
        slots={"item": item},
        draw=_draw_date,
        direct=("When is my {item} due?", "What's the deadline for the {item}?"),
        indirect=(
            "Can you help me plan the next few weeks of work on the {item}?",
            (
                "A friend invited me on a week-long trip soon. Given the {item}, when is "
                "the earliest I could go?"
            ),
        ),
    )


DEADLINE = FactType(
    name="deadline",
    keyword="deadline",
    topics=tuple(
        _deadline(i)
        for i in (
            "grant application",
            "thesis chapter",
            "quarterly report",
            "visa renewal",
            "conference paper",
            "portfolio review",
        )
    ),
    statements=(
        "The {item} is due on {v}, and I can't afford to miss it.",
        "My {item} deadline is {v}. Writing it here so it feels real.",
        "I just found out the {item} has to be submitted by {v}.",
        "Stressing a bit: {item}, due {v}. Please remind me it's doable.",
    ),
    acks=(
        (
            "Okay, {v} for the {item}. Working backwards from that date with a few milestones "
            "usually helps."
        ),
        (
            "It's doable. With {v} as the date, we can split the {item} into weekly chunks so "
            "nothing piles up at the end."
        ),
    ),
    restates=(
        "Made progress on the {item} today. It's due {v} and I'm on track.",
        "The {item} is eating my evenings, with {v} coming up fast.",
    ),
    restate_acks=(
        "Nice progress. Keep a buffer of a few days before the deadline for final checks.",
        "Hang in there. Short daily sessions beat one huge push at the end.",
    ),
    updates=(
        "Big news: the {item} deadline got moved to {v}. The old date was {old}.",
        "They changed the {item} date; it's due {v} now instead of {old}.",
    ),
    update_acks=(
        (
            "Thanks, I'll use {v} as the date for the {item} from now on. Update your calendar "
            "so the old one doesn't confuse you."
        ),
        "Good to know. With {v} instead of {old}, let's reshuffle the milestones.",
    ),
    distractors=(
        "My colleague's {item} deadline is {d}, and she hasn't even started.",
        "Last year the deadline for my {item} was {d}; glad that one's behind me.",
        "My sister has a deadline on {d} for her own {item}, so we're both stressed.",
    ),
    distractor_acks=(
        "Deadlines everywhere! Writing each one down with its owner keeps them straight.",
        "Good to keep those straight; dates pile up quickly.",
    ),
)

_WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday")


def _event(event: str, time: str, days: tuple[str, ...], indirect: tuple[str, ...]) -> Topic:
    return Topic(
        name=event,
        slots={"event": event, "time": time},
        values=tuple(Value(d, (d, d + "s")) for d in days),
        direct=("When is my {event}?", "What day do I have {event}?"),
        indirect=indirect,
    )


_EVENING = (
    (
        "My friends want to start a weekly game night. Which evening should I tell them "
        "doesn't work for me?"
    ),
    "I want a regular weekly dinner with my parents. Which day should I avoid?",
)
_MORNING = ("My manager wants a recurring 8:30 meeting. Which weekday should I push back on?",)
_WEEKEND = ("Some friends want to do a weekend brunch every week. Which day works for me?",)

SCHEDULE = FactType(
    name="schedule",
    keyword="schedule",
    topics=(
        _event("choir practice", "7 pm", _WEEKDAYS, _EVENING),
        _event("pottery class", "7:30 pm", _WEEKDAYS, _EVENING),
        _event("Spanish class", "6:30 pm", _WEEKDAYS, _EVENING),
        _event("pickup soccer", "6 pm", _WEEKDAYS, _EVENING),
        _event("physical therapy", "8 am", _WEEKDAYS, _MORNING),
        _event("food bank volunteering", "10 am", ("Saturday", "Sunday"), _WEEKEND),
    ),
    statements=(
        "I've got {event} every {v} at {time}, so that slot is always taken.",
        "My week revolves around {event} on {v}s at {time}. I never skip it.",
        "Heads up for any planning: {event} is every {v} at {time}, without fail.",
    ),
    acks=(
        "Got it, {v}s at {time} are blocked for {event}. I'll plan around that.",
        "Noted. A fixed {event} slot on {v} is a nice anchor for the week.",
    ),
    restates=(
        "Had {event} again this {v}, and it was the highlight of my week.",
        "Can't do anything on {v} at {time}; that's {event}, as always.",
    ),
    restate_acks=("Sounds like a great routine. Something regular like that really helps.",),
    updates=(
        "Change of plans: {event} moved from {old} to {v}, same time.",
        "Heads up, {event} is on {v}s now instead of {old}s.",
    ),
    update_acks=("Thanks, I'll treat {v} at {time} as your {event} slot from now on.",),
    distractors=(
        (
            "My roommate's schedule is wild. She has yoga every {d} at 6 and guards it with "
            "her life."
        ),
        "My kid's swim practice just got added to the family schedule, every {d} morning.",
        (
            "A friend asked me to join her book club on {d}s, but I said no; my schedule is full "
            "enough."
        ),
    ),
    distractor_acks=(
        "Shared calendars help a lot when everyone has their own fixed slots.",
        "Everyone's week has its own rhythm; good to keep track of who's busy when.",
    ),
)

_NAMES = (
    "Priya Shah",
    "Marcus Lee",
    "Elena Petrova",
    "Tom Becker",
    "Aisha Okafor",
    "Diego Ramirez",
    "Hannah Cole",
    "Kenji Watanabe",
    "Sofia Rossi",
    "Omar Haddad",
    "Grace Kim",
    "Liam Walsh",
)


def _draw_contact(rng: random.Random, ctx: DrawContext) -> Value:
    first, last = ctx.slots["name"].split()
    if rng.random() < 0.5:
        return Value(f"555-01{rng.randint(0, 99):02d}")
    return Value(f"{first.lower()}.{last.lower()}@example.{rng.choice(('com', 'org', 'net'))}")


def _contact(role: str, indirect: str) -> Topic:
    return Topic(
        name=role,
        slots={"role": role},
        draw=_draw_contact,
        slot_pools={"name": _NAMES},
        direct=("How can I reach my {role}?", "What's the contact for {name}?"),
        indirect=(indirect,),
    )


CONTACT = FactType(
    name="contact",
    keyword="contact",
    topics=(
        _contact(
            "neighbor",
            "A package needs to be signed for while I'm on vacation. Who can "
            "I ask, and how do I reach them?",
        ),
        _contact(
            "dog sitter",
            "I'm stuck at work late tonight and the dog needs a walk. Who "
            "should I get in touch with?",
        ),
        _contact(
            "building super",
            "My kitchen sink is leaking all over the floor. Who do I contact, and how?",
        ),
        _contact(
            "babysitter",
            "I've got a last-minute dinner on Saturday and need someone to "
            "watch the kids. Who should I message?",
        ),
        _contact(
            "mechanic",
            "My car makes a grinding noise when I brake. Who should I get in touch with?",
        ),
        _contact(
            "accountant", "I got a confusing letter from the tax office. Who should I send it to?"
        ),
    ),
    statements=(
        (
            "Writing this down so I don't lose it: my {role} is {name}, and the best way to "
            "reach {name} is {v}."
        ),
        "New {role}! It's {name}, contact: {v}. Super reliable so far.",
        (
            "If something goes wrong while I'm traveling, my {role} {name} can step in. "
            "{name} is at {v}."
        ),
    ),
    acks=(
        "Saved: {name}, your {role}, at {v}. Handy to have that in one place.",
        "Great, {name} at {v}. Worth putting that on the fridge too, in case your phone dies.",
    ),
    restates=(
        "{name} (my {role}) came through again this week. Glad I have {v} saved.",
        "Still using {name} as my {role}; same details, {v}.",
    ),
    restate_acks=("Good people are hard to find; sounds like a keeper.",),
    updates=(
        "Quick update: {name} changed contact details. Use {v} now, not {old}.",
        "{name}, my {role}, has a new contact: {v}. The old {old} doesn't work anymore.",
    ),
    update_acks=("Thanks, updated: {name} is at {v} now.",),
    distractors=(
        (
            "My old {role}, {d_name}, moved away last year. I still have the contact saved, "
            "{d}, for some reason."
        ),
        "My brother's {role} is {d_name}, contact {d}. He swears by that one.",
        "A friend sent me the contact for her {role}, {d_name}, at {d}. Haven't used it yet.",
    ),
    distractor_acks=(
        "Always nice to have a backup contact, even if you don't need it right now.",
        "Recommendations from people you trust are gold; good to keep it around.",
    ),
)
