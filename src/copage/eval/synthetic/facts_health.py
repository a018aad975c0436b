"""Fact types about the body and habits: allergy, medical, preference."""

from __future__ import annotations

from copage.eval.synthetic.values import FactType, Topic, Value


def _allergen(key: str, adj: str) -> Value:
    return Value(key, (key, adj), {"adj": adj})


ALLERGY = FactType(
    name="allergy",
    keyword="allerg",
    topics=(
        Topic(
            name="food",
            slots={},
            values=(
                _allergen("peanuts", "peanut"),
                _allergen("shellfish", "shellfish"),
                _allergen("gluten", "gluten"),
                _allergen("tree nuts", "tree nut"),
                _allergen("sesame", "sesame"),
                _allergen("eggs", "egg"),
                _allergen("soy", "soy"),
                _allergen("kiwi", "kiwi"),
            ),
            direct=(
                "What am I allergic to?",
                "Which food did I say I can't eat?",
            ),
            indirect=(
                "Can you suggest a restaurant for dinner with friends this Friday?",
                "I'm baking something for a coworker's birthday. What should I make?",
                "What snacks should I pack for a long hike this weekend?",
                "Can you plan a three-course menu for a dinner party I'm hosting?",
            ),
        ),
    ),
    statements=(
        "Oh, before I forget: I'm allergic to {v}. Properly allergic, EpiPen and everything.",
        "Just so you know, I can't eat {v}. I swell up within minutes, so I check every label.",
        (
            "Random thing you should know: my doctor says no {v} for me, ever. "
            "Found that out the hard way at a wedding."
        ),
        "I should mention I have a pretty serious {adj} allergy, in case food comes up later.",
        (
            "Ugh, I had to send a dish back at lunch again. I'm allergic to {v} "
            "and the menu didn't say it was in there."
        ),
    ),
    acks=(
        (
            "Thanks for telling me, that's important. I'll keep {v} out of anything I suggest, "
            "and it's always worth telling restaurant staff directly since menus don't list "
            "everything."
        ),
        (
            "Good to know. I'll treat {v} as completely off the table for recipes, snacks and "
            "restaurant picks, including cross-contamination risks."
        ),
        (
            "That sounds scary, and I'm glad you're careful about it. Nothing I recommend will "
            "contain {v}, and I'll flag dishes where it's commonly hidden."
        ),
    ),
    restates=(
        (
            "Tried a new place last night and had to grill the waiter about {v} again. "
            "Being allergic makes eating out exhausting."
        ),
        (
            "Note to self and to you: still can't go anywhere near {v}. "
            "I nearly grabbed a snack with it in it today."
        ),
        (
            "My {adj} allergy acted up after a potluck this weekend. "
            "Someone didn't label their dish."
        ),
    ),
    restate_acks=(
        (
            "Sorry, that sounds stressful. It's completely reasonable to ask; a good kitchen "
            "takes allergies seriously and will tell you what's safe."
        ),
        (
            "Glad you caught it. A small allergy card you can hand to staff or hosts makes this "
            "a lot easier."
        ),
    ),
    distractors=(
        "My sister is allergic to {d}, so family dinners are always a negotiation.",
        (
            "A coworker had an allergic reaction to {d} at the office lunch yesterday. "
            "Paramedics and everything, but she's fine now."
        ),
        (
            "Funny story: as a kid I was sure I was allergic to {d}, but the allergist tested me "
            "and it was nothing."
        ),
        "My nephew's school just went {d_adj}-free because one kid has a bad allergy.",
    ),
    distractor_acks=(
        "Allergies affect everyone around the person too; good that people take them seriously.",
        "Food allergies make shared meals tricky. Clear labels and asking first go a long way.",
        "A good reminder of how common food allergies are, and how different for each person.",
    ),
)


def _med(name: str, dose: str) -> Value:
    return Value(name, (name,), {"dose": dose})


def _condition(cond: str, *meds: Value) -> Topic:
    return Topic(
        name=cond,
        slots={"cond": cond},
        values=meds,
        direct=(
            "What medication do I take for my {cond}?",
            "Which prescription am I on right now, and at what dose?",
        ),
        indirect=(
            (
                "I'm packing for a two-week trip abroad. What should I make sure is in my "
                "carry-on for my health?"
            ),
            "I've got a bad cold. Which over-the-counter stuff is safe for me to take?",
            (
                "A new clinic wants my current prescriptions on their intake form. "
                "What should I write?"
            ),
        ),
    )


MEDICAL = FactType(
    name="medical",
    keyword="medic",
    topics=(
        _condition(
            "high blood pressure",
            _med("lisinopril", "10 mg once a day"),
            _med("losartan", "50 mg once a day"),
            _med("amlodipine", "5 mg daily"),
        ),
        _condition(
            "type 2 diabetes",
            _med("metformin", "500 mg twice a day"),
            _med("glipizide", "5 mg with breakfast"),
            _med("sitagliptin", "100 mg once a day"),
        ),
        _condition(
            "hypothyroidism",
            _med("levothyroxine", "50 mcg every morning"),
            _med("liothyronine", "25 mcg every morning"),
            _med("Armour Thyroid", "60 mg every morning"),
        ),
        _condition(
            "migraines",
            _med("topiramate", "25 mg at night"),
            _med("propranolol", "40 mg twice a day"),
            _med("amitriptyline", "10 mg at bedtime"),
        ),
        _condition(
            "acid reflux",
            _med("omeprazole", "20 mg before breakfast"),
            _med("pantoprazole", "40 mg once a day"),
            _med("famotidine", "20 mg twice a day"),
        ),
        _condition(
            "high cholesterol",
            _med("atorvastatin", "20 mg at night"),
            _med("rosuvastatin", "10 mg once a day"),
            _med("simvastatin", "20 mg in the evening"),
        ),
        _condition(
            "atrial fibrillation",
            _med("warfarin", "5 mg daily"),
            _med("apixaban", "5 mg twice a day"),
            _med("rivaroxaban", "20 mg with dinner"),
        ),
    ),
    statements=(
        (
            "I should tell you: I have {cond} and I take {v}, {dose}. Keep that in mind if "
            "anything health-related comes up."
        ),
        "Health stuff, quickly: my doctor put me on {v} for my {cond} last year, {dose}.",
        (
            "Just got back from my checkup. Still on {v} ({dose}) for the {cond}, and my doctor "
            "wants to keep it that way."
        ),
    ),
    acks=(
        (
            "Thanks for sharing that. I'll remember you take {v} for {cond}; it matters for "
            "painkillers, supplements and travel planning. Do double-check new medicines with "
            "your pharmacist."
        ),
        (
            "Noted: {v}, {dose}, for {cond}. If you ask about supplements or cold medicine, "
            "I'll flag possible interactions so you can check with your doctor."
        ),
    ),
    restates=(
        (
            "Refilled my {v} prescription today and the pharmacy line was ridiculous. "
            "At least the {cond} is under control."
        ),
        "My doctor checked in about the {cond} again; we're sticking with {v}, same dose.",
    ),
    restate_acks=(
        "Good that it's under control. Automatic refills could save you the queue next time.",
        "Consistency helps a lot with {cond}; sounds like the plan is working.",
    ),
    updates=(
        (
            "Update on the health front: my doctor switched me from {old} to {v} for my {cond}. "
            "It's {dose} now."
        ),
        (
            "Heads up, I'm not on {old} anymore. My doctor moved me to {v} ({dose}) because of "
            "side effects."
        ),
    ),
    update_acks=(
        (
            "Thanks for the update; I'll go with {v} from now on. A switch can take a few weeks "
            "to settle, so keep an eye on how you feel."
        ),
        (
            "Got it, {v} instead of {old}. Worth asking the pharmacist whether anything else you "
            "take needs adjusting."
        ),
    ),
    distractors=(
        (
            "My dad has {cond} too, and his doctor just put him on {d}. Now he asks me medical "
            "questions like I'm the expert."
        ),
        "My roommate's medical appointment ran long today. They're trying her on {d} now.",
        (
            "Back in college I was on {d} for a few months, but that medication was years ago "
            "and I stopped long since."
        ),
    ),
    distractor_acks=(
        "Medication questions come up a lot in families. A pharmacist is a great resource.",
        "Everyone's medication list is different; worth checking with a doctor or pharmacist.",
        "Treatments change over time; what matters is what each person takes now.",
    ),
)


def _pref(
    name: str,
    values: tuple[str, ...],
    direct: tuple[str, ...],
    indirect: tuple[str, ...],
    **templates: tuple[str, ...],
) -> Topic:
    return Topic(
        name=name,
        slots={},
        values=tuple(Value(v) for v in values),
        direct=direct,
        indirect=indirect,
        overrides=templates,
    )


PREFERENCE = FactType(
    name="preference",
    keyword="prefer",
    topics=(
        _pref(
            "diet",
            ("vegetarian", "vegan", "pescatarian"),
            direct=("What's my dietary preference?",),
            indirect=(
                "What should I cook for dinner tonight?",
                "Can you plan my meals for next week?",
            ),
            statements=(
                "Quick thing: I'm {v}, so when food comes up, please skip the meat ideas.",
                "I've been {v} for about six years now, and it's not changing.",
                "Just so you know for recipes, I'm strictly {v}.",
            ),
            acks=(
                "Got it, I'll keep every food suggestion {v}-friendly.",
                "Noted. I'll stick to {v} options from now on.",
            ),
            restates=("Made a {v} chili last night and honestly didn't miss anything.",),
            distractors=(
                "My roommate prefers eating {d}, so our fridge is split down the middle.",
                "My brother went {d} last month and says it's everyone's preference now, ha.",
            ),
        ),
        _pref(
            "language",
            ("Rust", "Haskell", "Kotlin", "Elixir", "TypeScript"),
            direct=("Which programming language do I prefer for my own projects?",),
            indirect=(
                "Which language should I use for my new command-line side project?",
                "Can you sketch a small web scraper for my hobby project?",
            ),
            statements=(
                "For my own projects I write {v} only. Please don't suggest other languages.",
                "I'm a {v} person through and through; anything I build on the side is {v}.",
            ),
            acks=(
                "Understood: {v} only for your projects. I'll write any examples in {v}.",
                "Fair enough, {v} has a lot going for it. I'll keep code suggestions in {v}.",
            ),
            restates=("Spent the weekend on my {v} side project and loved it all over again.",),
            distractors=(
                "My teammate prefers {d} for everything, and we argue about it constantly.",
                (
                    "The company I interviewed with prefers {d} for their backend, which is fine "
                    "for them."
                ),
            ),
        ),
        _pref(
            "seat",
            ("window seat", "aisle seat"),
            direct=("What kind of seat do I like on planes?",),
            indirect=(
                "I'm booking my flight to Denver right now. Which seat should I pick?",
                "Can you help me choose seats for my trip to Lisbon next month?",
            ),
            statements=(
                "When I fly I always take the {v}. I can't do anything else.",
                "Travel quirk of mine: it's the {v} or I'm miserable for the whole flight.",
            ),
            acks=(
                "Noted, the {v} every time. I'll keep that in mind for any bookings.",
                "Totally fair, seat choice makes a big difference. The {v} it is.",
            ),
            restates=("Booked a short work flight and grabbed the {v}, as always.",),
            distractors=(
                "My husband's preference is always the {d}, so we never sit together, ha.",
                "My boss prefers the {d} on every flight and books it for the whole team.",
            ),
        ),
    ),
    statements=(),
    acks=(),
    restates=(),
    restate_acks=(
        "Glad it's working out for you; sticking with what you like makes things easy.",
        "Nice, sounds like you've got it figured out.",
    ),
    distractors=(),
    distractor_acks=(
        "Fair enough, everyone has their own preferences.",
        "Ha, to each their own, as long as it works for them.",
    ),
)
