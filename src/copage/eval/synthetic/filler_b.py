"""Filler topic families, part two: gardening, job search, books, music, pets, photography.

Same rule as part one: no fact keywords, allergens, meat, weekdays, dates or amounts.
"""

from __future__ import annotations

from copage.eval.synthetic.values import Exchange as E

GARDENING = (
    E(
        "I want to grow something on my balcony. What's easy for a beginner?",
        "Herbs like mint, basil and chives are very forgiving, and cherry tomatoes do well in "
        "a big pot with plenty of sun. Start with three or four plants so it stays fun.",
    ),
    E(
        "My basil keeps going leggy and flopping over.",
        "Pinch off the top pair of leaves above a leaf junction every week or so. It feels "
        "harsh, but it makes the plant bush out, and you get to use the tips.",
    ),
    E(
        "How often should I water pots in summer?",
        "Check the soil instead of following a fixed rule: if the top two centimetres are "
        "dry, water deeply until it drains out. In a heatwave that can mean every day.",
    ),
    E(
        "Something is eating holes in my leaves.",
        "Look under the leaves in the evening; snails and caterpillars are the usual suspects. "
        "Picking them off by hand and a ring of grit around the pot often solve it.",
    ),
    E(
        "First cherry tomatoes are turning red!",
        "That's the best part. Pick them when they're fully coloured and slightly soft; they "
        "taste far better than anything from the shop.",
    ),
    E(
        "I'm thinking of starting a compost bin too.",
        "A small bin with a lid works on a balcony. Mix greens like peelings with browns like "
        "cardboard, keep it damp but not wet, and turn it now and then.",
    ),
)

JOB_SEARCH = (
    E(
        "I'm thinking about looking for a new job. My resume feels ancient.",
        "Start by rewriting your last two roles around results: what changed because you were "
        "there. One page is plenty unless you have a long specialist career.",
    ),
    E(
        "How do I write a cover letter that doesn't sound generic?",
        "Open with why this specific team, mention one concrete thing you'd bring, and keep it "
        "under three hundred words. Hiring managers skim, so lead with the strongest point.",
    ),
    E(
        "I have my first interview in years coming up. I'm nervous.",
        "Totally normal. Prepare five short stories about past work that show different "
        "skills, and practise telling each in about two minutes. Most questions map onto one "
        "of them.",
    ),
    E(
        "What questions should I ask at the end of an interview?",
        "Ask what success looks like in the first six months, how the team handles "
        "disagreements, and what the interviewer enjoys about working there.",
    ),
    E(
        "The interview went really well, I think!",
        "That's great to hear. Send a short thank-you note today mentioning something "
        "specific you discussed; it's a small touch that people remember.",
    ),
    E(
        "How long should I wait before following up?",
        "If they gave you a timeline, wait until it passes plus a couple of days. Otherwise a "
        "polite check-in after about a week is perfectly fine.",
    ),
)

BOOKS = (
    E(
        "I want to read more but I keep falling asleep after two pages.",
        "Try reading earlier in the evening, or switch to something with short chapters and a "
        "strong plot. It's fine to abandon books you're not enjoying.",
    ),
    E(
        "Can you recommend a gripping novel?",
        "The Martian is hard to put down, and Project Hail Mary by the same author is even "
        "better. If you like mysteries, Magpie Murders is clever and twisty.",
    ),
    E(
        "Finished Project Hail Mary in three nights. Wow.",
        "It's such a good one! If you want more big ideas with heart, try Children of Time or "
        "A Psalm for the Wild-Built.",
    ),
    E(
        "Do audiobooks count as reading?",
        "For enjoyment and understanding, absolutely. Plenty of people take in books on "
        "walks or commutes; the story is the point.",
    ),
    E(
        "I'm thinking of joining a library again instead of buying everything.",
        "Great idea. Most libraries also lend ebooks and audiobooks through an app now, and "
        "you can request titles they don't have.",
    ),
    E(
        "Maybe I'll keep a little reading journal this year.",
        "Nice habit. A line or two per book about what stuck with you is enough, and it's "
        "lovely to look back on later.",
    ),
)

MUSIC = (
    E(
        "I picked up my old guitar again after ten years. My fingers hurt!",
        "That's the calluses coming back. Play short sessions, fifteen minutes a few times a "
        "day, and the soreness usually fades within a couple of weeks.",
    ),
    E(
        "What should I practise first?",
        "Clean open chords and smooth changes between them. Pick two chords, switch between "
        "them slowly for a minute, then add a third. Speed comes on its own.",
    ),
    E(
        "Any songs that are good for getting back into it?",
        "Wonderwall, Horse with No Name and Knockin' on Heaven's Door use a few simple chords "
        "and are satisfying to play along with.",
    ),
    E(
        "The F chord is my nemesis.",
        "It's everyone's nemesis at first. Start with the small four-string version and work "
        "up to the full barre; rolling your index finger slightly onto its side helps.",
    ),
    E(
        "I played a whole song without stopping today.",
        "That's a great feeling! Recording yourself now and again is a nice way to hear your "
        "progress.",
    ),
    E(
        "Should I learn to read music or just use tabs?",
        "Tabs are fine for most guitar music. Learning a bit of rhythm notation later makes "
        "tabs much easier to follow, though.",
    ),
)

PETS = (
    E(
        "We're thinking about adopting a dog. Is that a crazy idea in an apartment?",
        "Not at all, plenty of dogs are happy in apartments if they get good walks. An adult "
        "rescue with a calm temperament is often easier than a puppy.",
    ),
    E(
        "How do we pick the right dog at the shelter?",
        "Tell the staff about your routine and space; they know the dogs' personalities. "
        "Meet a few, take them for a short walk, and trust how relaxed you both feel.",
    ),
    E(
        "We met the sweetest old greyhound today.",
        "Retired greyhounds are famously gentle couch potatoes. They need a couple of short "
        "walks and a soft bed, and they're wonderful in small homes.",
    ),
    E(
        "What do we need before bringing her home?",
        "A bed, bowls, a harness and lead, some toys and the food the shelter used, so her "
        "stomach doesn't get upset. A quiet corner of her own helps her settle.",
    ),
    E(
        "She's home! She's been asleep on the sofa for three hours.",
        "That sounds perfect. Give her a few quiet days to settle before lots of visitors, "
        "and enjoy the snoring.",
    ),
    E(
        "Any tips for teaching her to stay calm when we leave?",
        "Practise short departures, a few minutes at first, and keep comings and goings "
        "low-key. A puzzle toy when you leave makes it a good thing.",
    ),
)

PHOTOGRAPHY = (
    E(
        "I want to take better photos with just my phone.",
        "Clean the lens, tap to focus, and use the grid to put your subject off-centre. Light "
        "matters most: shoot near a window or in the golden hour before sunset.",
    ),
    E(
        "My night photos are always blurry.",
        "Brace the phone against something solid and let night mode do its long exposure. "
        "Even leaning on a railing makes a big difference.",
    ),
    E(
        "How do I make portraits look less flat?",
        "Turn your subject so light falls on them from the side, and step back a bit and "
        "zoom slightly; wide angles up close distort faces.",
    ),
    E(
        "Should I edit my photos or is that cheating?",
        "Editing is part of photography and always has been. Small tweaks to exposure, "
        "straightening and a gentle crop go a long way.",
    ),
    E(
        "I took a photo of the sunset over the river that I'm really proud of.",
        "That sounds lovely! Sunsets over water are great because the reflection doubles the "
        "colour. You could print it; photos look different on paper.",
    ),
    E(
        "Maybe I'll do a photo-a-day challenge.",
        "Fun idea. Pick a loose theme each week so you're never stuck, and don't worry "
        "about missing a day now and then.",
    ),
)

FAMILIES_B: dict[str, tuple[E, ...]] = {
    "gardening": GARDENING,
    "job search": JOB_SEARCH,
    "books": BOOKS,
    "music": MUSIC,
    "pets": PETS,
    "photography": PHOTOGRAPHY,
}

GREETINGS = (
    E(
        "Hi! Got a few minutes? I have a bunch of random things on my mind today.",
        "Of course! Happy to help with whatever's on your mind. What's first?",
    ),
    E(
        "Hey there. Long week, but I finally have time to sort some stuff out.",
        "Glad you have a moment to breathe. Let's tackle things one at a time.",
    ),
    E(
        "Morning! Coffee in hand, ready to get organised.",
        "Good morning! Sounds like a productive start. What should we look at?",
    ),
)

CLOSINGS = (
    "Thanks, that's all for now!",
    "Okay, I need to run. Thanks for all the help today!",
    "That's everything for today. Talk soon!",
)

SMALL_TALK = (
    E(
        "Sorry, got distracted, it's pouring rain here.",
        "No worries! Perfect weather for staying in. Where were we?",
    ),
    E(
        "Honestly my brain is fried today.",
        "Totally understandable. Let's keep things simple and take them one at a time.",
    ),
    E(
        "Ha, my neighbour's cat just walked across my keyboard.",
        "Sounds like a helpful assistant! Take your time.",
    ),
)
