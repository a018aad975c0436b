"""The paraphrase set's facts: each stated once by the user, asked later in other words.

Written for copage (not taken from a dataset). Every fact has a natural chat
statement, a question a user would really ask that uses none of the statement's
content words (synonyms, another word form, or an indirect question whose answer
needs the fact), and the proof words that show the statement reached the model.
``kind`` says how the question departs from the statement:

* ``synonym``: the same thing in other words (sister / sibling, manager / boss);
* ``form``: a related word form only (grandma / grandmother, monthly / month);
* ``indirect``: the question does not name the fact at all (allergic to peanuts /
  can I have the satay sauce?).

The split into development and final facts is in :mod:`copage.eval.paraphrase`.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["FACTS", "Fact"]


@dataclass(frozen=True, slots=True)
class Fact:
    """One fact: ``statement`` (a user turn), ``question`` (asked later), ``proof``
    (words of the statement that show it reached the model; all of them, whole words,
    any case)."""

    id: str
    domain: str
    kind: str
    statement: str
    question: str
    proof: tuple[str, ...]


def _f(id: str, kind: str, statement: str, question: str, *proof: str) -> Fact:
    return Fact(id, id.split("-", 1)[0], kind, statement, question, proof)


FACTS: tuple[Fact, ...] = (
    # health
    _f("health-peanut", "indirect", "I'm allergic to peanuts, so I always read food labels.",
       "Can I order the satay sauce at the Thai place tonight?", "peanuts"),
    _f("health-penicillin", "indirect", "Penicillin gives me a terrible rash, I found that out "
       "as a kid.", "Which antibiotic should my doctor avoid prescribing for me?", "penicillin"),
    _f("health-acl", "indirect", "I tore my left ACL skiing two winters ago.",
       "Is running a marathon next month wise given my injury history?", "ACL"),
    _f("health-lactose", "indirect", "Dairy upsets my stomach since I'm lactose intolerant.",
       "Would a milkshake be a bad idea for me?", "lactose"),
    _f("health-sertraline", "synonym", "I take 50 mg of sertraline every morning.",
       "What's my daily medication dose?", "sertraline", "50"),
    _f("health-insomnia", "indirect", "I've had insomnia ever since the baby was born.",
       "Why might I struggle to fall asleep at night?", "insomnia"),
    _f("health-myopia", "synonym", "I'm nearsighted, minus three in both eyes.",
       "Do I need corrective lenses behind the wheel?", "nearsighted"),
    # family
    _f("family-sister", "synonym", "My sister Ana moved to Porto last spring.",
       "Where does my sibling live these days?", "Porto"),
    _f("family-son", "synonym", "My son Leo turned seven in March.",
       "How old is my boy now?", "Leo", "seven"),
    _f("family-wife", "synonym", "My wife Mara is a pediatric nurse at St. Luke's.",
       "What does my spouse do for a living?", "pediatric", "nurse"),
    _f("family-grandma", "form", "Grandma Rosa turns ninety on the 12th of August.",
       "When is my grandmother's big birthday?", "ninety", "August"),
    _f("family-twins", "indirect", "We're expecting twins in October!",
       "How many babies is my partner carrying, and when are they due?", "twins"),
    _f("family-dad", "indirect", "Dad is diabetic, so dessert has to be sugar-free when he "
       "visits.", "What should I bake for my father's stay?", "diabetic"),
    # work
    _f("work-job", "synonym", "I work as a backend developer at a logistics startup.",
       "What's my profession?", "backend", "logistics"),
    _f("work-manager", "synonym", "My manager, Priya, hates long emails.",
       "How should I write to my boss?", "Priya"),
    _f("work-report", "synonym", "The quarterly report is due on the 28th.",
       "By what date must I submit the three-month financial summary?", "28th"),
    _f("work-commute", "indirect", "I bike to the office, it takes about twenty minutes.",
       "How do I usually get to work?", "bike"),
    _f("work-remote", "indirect", "On Fridays I stay home and do my job from the kitchen "
       "table.", "Which weekday am I not in the office?", "Fridays"),
    _f("work-japanese", "synonym", "I'm learning Japanese for a transfer to the Osaka branch.",
       "Which language am I studying, and why?", "Japanese"),
    _f("work-salary", "synonym", "My salary went up to 85k after the promotion.",
       "How much do I earn per year now?", "85k"),
    # travel
    _f("travel-flight", "synonym", "My flight to Lisbon leaves at 6:40 on Thursday.",
       "What time is my plane departing?", "6:40"),
    _f("travel-passport", "indirect", "My passport expires in January, I need to renew it.",
       "Is my travel document still valid for a trip next spring?", "passport", "January"),
    _f("travel-seasick", "indirect", "I get seasick on any boat, even big ferries.",
       "Would a cruise be a good vacation for me?", "seasick"),
    _f("travel-hotel", "indirect", "We booked the Hotel Miramar for our anniversary trip.",
       "Where are we staying when we celebrate our wedding date?", "Miramar"),
    _f("travel-visa", "indirect", "My Canadian citizenship means I don't need a visa for "
       "Japan.", "Is entry paperwork required for my Tokyo holiday?", "Canadian"),
    _f("travel-aisle", "form", "I always pick the aisle seat because of my long legs.",
       "Where do I like to sit on planes?", "aisle"),
    # money
    _f("money-kitchen", "synonym", "Our budget for the kitchen remodel is $15,000 max.",
       "How much can we spend renovating the room where we cook?", "15,000"),
    _f("money-loans", "synonym", "I still owe about 12,000 on my student loans.",
       "How much do I have left to pay off from college?", "12,000"),
    _f("money-rent", "form", "Rent here is 1,450 a month.",
       "What's my monthly housing cost?", "1,450"),
    _f("money-invest", "synonym", "I'm putting 300 into an index fund every payday.",
       "How much do I invest regularly?", "300", "index"),
    _f("money-bank", "indirect", "I switched my checking account to Nordbank last month.",
       "Which bank do I use now?", "Nordbank"),
    # preferences
    _f("pref-tea", "indirect", "I can't stand coffee, I only drink green tea.",
       "What should I order for myself at the café?", "green", "tea"),
    _f("pref-meat", "indirect", "I stopped eating meat three years ago.",
       "Should I get the beef burger or something else?", "meat"),
    _f("pref-jazz", "synonym", "Jazz is my favourite, especially Coltrane.",
       "What kind of tunes do I enjoy most?", "Coltrane"),
    _f("pref-orange", "indirect", "Please never suggest anything orange, I hate that colour.",
       "Would a tangerine sweater make a good gift for me?", "orange"),
    _f("pref-spicy", "indirect", "Spicy food gives me heartburn, so I keep it mild.",
       "Should I add chili flakes to my pasta?", "heartburn"),
    _f("pref-christie", "indirect", "I've read every Agatha Christie novel.",
       "Which mystery author am I a huge fan of?", "Christie"),
    # schedule
    _f("schedule-dentist", "indirect", "Dentist appointment on the 14th at 9am.",
       "When am I seeing the person who checks my teeth?", "14th"),
    _f("schedule-yoga", "indirect", "I do yoga on Tuesday and Thursday evenings.",
       "Which nights am I busy with my exercise class?", "yoga"),
    _f("schedule-wedding", "synonym", "My cousin's wedding is on June 21 in Seville.",
       "When and where is the family ceremony I'm attending this summer?", "Seville"),
    _f("schedule-choir", "form", "Choir rehearsal is every Wednesday at seven.",
       "When do I practise singing with the group?", "choir", "Wednesday"),
    # pets
    _f("pet-beagle", "synonym", "Our dog Biscuit is a three-year-old beagle.",
       "What breed is my pup?", "beagle"),
    _f("pet-kidney", "indirect", "The cat is on a prescription kidney diet now.",
       "Can I give my kitty some tuna as a treat?", "kidney"),
    _f("pet-vet", "synonym", "Dr. Okafor at Hillside Clinic takes care of our animals.",
       "Who is our veterinarian?", "Okafor"),
    _f("pet-tetras", "synonym", "I keep six neon tetras in a small aquarium.",
       "What sort of fish do I have in my tank?", "tetras"),
    # home
    _f("home-wifi", "synonym", "The wifi password is bluefalcon42, written on the fridge.",
       "What's the code for our wireless internet?", "bluefalcon42"),
    _f("home-floor", "indirect", "We live on the fifth floor and the elevator is often "
       "broken.", "How many flights of stairs do I climb when the lift is out?", "fifth"),
    _f("home-balcony", "synonym", "I grow tomatoes and basil on my balcony.",
       "What vegetables and herbs am I cultivating outside?", "tomatoes", "basil"),
    _f("home-plumber", "synonym", "The leak under the sink is fixed; the plumber charged 240.",
       "How much did that pipe repair cost?", "240"),
    # word forms: the question shares only other forms of the statement's words
    _f("health-cats", "form", "Sadly I'm allergic to cats.",
       "Is there a cat allergy I should mention to my host?", "allergic", "cats"),
    _f("home-renovated", "form", "The bathroom was renovated in 2021.",
       "What year was the renovation of our washroom?", "2021"),
    _f("work-retiring", "form", "I'm retiring in 2027, finally.",
       "When is my retirement?", "2027"),
    _f("hobby-running", "form", "I've been running daily before breakfast.",
       "How often do I go for runs?", "daily"),
    _f("money-increased", "form", "Our landlord increased the rent by 8 percent.",
       "How big was the increase on what we pay to live here?", "8", "percent"),
    _f("travel-flying", "form", "I'm terrified of flying, I take trains when I can.",
       "Should I book flights for the conference trip?", "terrified"),
    _f("family-organizing", "form", "I'm organizing a fundraiser for the animal shelter.",
       "Which organization am I raising funds for?", "shelter"),
    # other
    _f("car-civic", "synonym", "I drive a 2014 Honda Civic with a manual gearbox.",
       "What vehicle do I own?", "Civic"),
    _f("hobby-bouldering", "synonym", "I've been climbing at the bouldering gym three times "
       "a week.", "What sport keeps me busy lately?", "bouldering"),
)
