"""Filler topic families, part one: travel, cooking, coding, fitness, movies, home repair.

Filler never mentions a fact keyword, an allergen, meat, a weekday, a date or a
money amount, so it can neither contradict nor accidentally restate a planted fact.
"""

from __future__ import annotations

from copage.eval.synthetic.values import Exchange as E

TRAVEL = (
    E(
        "I'm daydreaming about a trip to Portugal this autumn. Is a week enough?",
        "A week works well if you pick two bases, say Lisbon and Porto, and take the train "
        "between them. Trying to see the whole country in a week mostly means sitting in "
        "transit.",
    ),
    E(
        "How early should I book the train between the two cities?",
        "A couple of weeks ahead is usually plenty outside of holidays. The fast trains are "
        "comfortable and the ride takes about three hours, with nice views near the coast.",
    ),
    E(
        "Is it worth doing a day trip to Sintra?",
        "Yes, it's one of the classic day trips. Go early to beat the crowds, pick two of the "
        "palaces rather than all of them, and wear shoes with good grip because the paths are "
        "steep.",
    ),
    E(
        "What about packing? I always overpack.",
        "Try a capsule wardrobe: two pairs of shoes, layers in three colours that all match, "
        "and one light jacket. Laundry is easy to find, so a carry-on really is enough for a "
        "week.",
    ),
    E(
        "Any tips for not looking like a lost tourist with my phone out all the time?",
        "Download offline maps before you go, glance at the route before leaving a cafe, and "
        "step aside into a doorway when you need to check. Most people won't notice either "
        "way.",
    ),
    E(
        "Okay, I'm sold. I think I'll start a little itinerary document tonight.",
        "Sounds fun. Start with one anchor activity per day and leave the rest open; the best "
        "travel moments are usually the unplanned ones.",
    ),
)

COOKING = (
    E(
        "I want to get better at cooking on weeknights. Where do I even start?",
        "Start with a handful of techniques rather than recipes: roasting vegetables, cooking "
        "rice properly, and making a simple soup. Once those are reliable, most weeknight "
        "meals are combinations of them.",
    ),
    E(
        "My roasted vegetables always come out soggy. What am I doing wrong?",
        "Usually the pan is too crowded or the oven isn't hot enough. Use a hot oven, spread "
        "the pieces in a single layer with space between them, and don't skimp on the olive "
        "oil and salt.",
    ),
    E(
        "How do you keep fresh herbs from wilting in two days?",
        "Treat soft herbs like flowers: trim the stems and stand them in a glass of water in "
        "the fridge, loosely covered. Hardy ones like rosemary keep well wrapped in a damp "
        "paper towel.",
    ),
    E(
        "I finally bought a cast iron pan. Is it as fussy as people say?",
        "Not really. Dry it right after washing, wipe in a thin film of oil while it's warm, "
        "and cook with it often. A little soap won't hurt a well-seasoned pan.",
    ),
    E(
        "What's a good lentil soup for a cold evening?",
        "Soften onion, carrot and celery in olive oil, add garlic, cumin and red lentils, then "
        "vegetable stock and a can of tomatoes. Simmer for twenty-five minutes and finish with lemon "
        "juice; it tastes even better the next day.",
    ),
    E(
        "Made the soup, and it was great. Even my picky flatmate had seconds.",
        "That's the best kind of review. Next time try a spoon of smoked paprika or a handful "
        "of spinach at the end for a variation.",
    ),
)

CODING = (
    E(
        "My code review comments keep turning into long arguments. Any advice?",
        "Separate must-fix issues from suggestions and label them that way. Ask questions "
        "instead of issuing verdicts, and move anything that needs a real discussion to a "
        "quick call.",
    ),
    E(
        "How small should a pull request be?",
        "Small enough that a reviewer can understand it in one sitting, roughly a few hundred "
        "lines of real change. Split refactors from behaviour changes so each can be reviewed "
        "on its own.",
    ),
    E(
        "I spent an hour chasing a bug that turned out to be a stale cache. Classic.",
        "That one gets everyone. When behaviour makes no sense, clearing caches and rebuilding "
        "from scratch early is a cheap check that saves a lot of head-scratching.",
    ),
    E(
        "Is it worth writing tests for a tiny personal tool?",
        "A few tests around the tricky parts are worth it, especially parsing and anything "
        "with dates or money. You don't need full coverage; you need confidence when you "
        "change things later.",
    ),
    E(
        "What's your take on naming things? I agonize over variable names.",
        "Name for the reader: say what a value means, not how it's computed. If a name needs "
        "a comment to explain it, try a longer, plainer name instead.",
    ),
    E(
        "I just used git bisect for the first time and found a regression in minutes.",
        "Bisect feels like magic the first time. If you can script the check, `git bisect "
        "run` will do the whole search for you.",
    ),
)

FITNESS = (
    E(
        "I want to start running but I get bored after ten minutes.",
        "Try run-walk intervals, like one minute running and one walking, and listen to a "
        "podcast you only allow yourself while running. Boredom fades once it stops feeling "
        "like a struggle.",
    ),
    E(
        "How many times a week should a beginner run?",
        "Three easy sessions a week is a great start, with a rest day between them. Most of "
        "your runs should feel easy enough that you could hold a conversation.",
    ),
    E(
        "My knees feel a bit achy after runs. Should I worry?",
        "Mild achiness is common early on; sharp pain isn't. Check that your shoes aren't "
        "worn out, shorten your stride a little, and add some strength work for hips and "
        "legs.",
    ),
    E(
        "What strength exercises would you suggest, with no gym?",
        "Squats, lunges, glute bridges, push-ups and planks cover a lot. Two short sessions a "
        "week, twenty minutes each, will make a noticeable difference within a month.",
    ),
    E(
        "I did my first continuous twenty-minute run today!",
        "That's a real milestone, congratulations! Keep the next couple of weeks steady "
        "before adding distance, and enjoy it.",
    ),
    E(
        "Do I need one of those fancy watches to track all this?",
        "Not at all. Your phone or a simple notebook is enough. A watch is nice for pacing "
        "later on, but consistency matters far more than data.",
    ),
)

MOVIES = (
    E(
        "I need a good movie for tonight. Something that isn't a superhero film.",
        "How about a heist film like Inside Man, or a slow-burn mystery like Knives Out? Both "
        "are clever, well acted and easy to get into after a long day.",
    ),
    E(
        "Watched Knives Out. Loved it! Anything with a similar vibe?",
        "Try Glass Onion, the sequel, or an older classic like Murder on the Orient Express. "
        "If you liked the humour, the series Only Murders in the Building is a lot of fun.",
    ),
    E(
        "Do you think movies are too long these days?",
        "Many are, honestly. A two-hour cap would improve a lot of films, though some long "
        "ones earn their running time. Pacing matters more than the raw number of minutes.",
    ),
    E(
        "I want to get into older films but don't know where to start.",
        "Start with genre films that hold up: Rear Window for suspense, Some Like It Hot for "
        "comedy, Seven Samurai if you want an epic. Watching one a week is a fun habit.",
    ),
    E(
        "Rear Window was fantastic. That ending!",
        "Hitchcock really knew how to stretch tension. Vertigo and North by Northwest are "
        "great follow-ups if you want more.",
    ),
    E(
        "My friends and I might start a little movie club.",
        "Great idea. Take turns picking, keep a shared list, and save ten minutes afterwards "
        "to talk about it; that's where the fun is.",
    ),
)

HOME_REPAIR = (
    E(
        "My bathroom faucet won't stop dripping. Can I fix that myself?",
        "Usually yes. Turn off the water under the sink, take the handle off, and replace the "
        "cartridge or washer. Take the old part to the hardware store so you get an exact "
        "match.",
    ),
    E(
        "There's a crack in the wall plaster above the door. Is that serious?",
        "Thin hairline cracks above doors are common as houses settle. Fill it with flexible "
        "filler and repaint; if it's wider than a coin or keeps growing, get someone to look "
        "at it.",
    ),
    E(
        "What basic tools should every apartment have?",
        "A screwdriver set, a hammer, pliers, a tape measure, a level, a utility knife and a "
        "cordless drill. Add a stud finder if you hang a lot of things.",
    ),
    E(
        "I hung a shelf and it's already sagging. Ugh.",
        "It probably needs anchors rated for the weight, or screws into the studs. Take it "
        "down, find the studs, and use at least two solid fixings per bracket.",
    ),
    E(
        "Shelf is back up and rock solid this time. Thanks!",
        "Nice work! Nothing beats the feeling of a fix that actually holds.",
    ),
    E(
        "Next project is repainting the bedroom. Any tips?",
        "Prep is most of the job: fill holes, sand lightly, tape the edges and use a primer "
        "on patched spots. Two thin coats look much better than one thick one.",
    ),
)

FAMILIES_A: dict[str, tuple[E, ...]] = {
    "travel": TRAVEL,
    "cooking": COOKING,
    "coding": CODING,
    "fitness": FITNESS,
    "movies": MOVIES,
    "home repair": HOME_REPAIR,
}
