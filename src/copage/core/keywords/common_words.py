"""Everyday English words that say nothing about what a page is about.

A background list for the ``contrast`` extractor. Fightin' Words (Monroe et al.
2008) scores a term against an informative prior, ideally a large background
corpus; inside one conversation "swamped", "given" or "lately" said once look
as specific as "pottery" or "necklace". This short list (verbs of saying and
doing, evaluative adjectives, adverbs, chat fillers and generic nouns, written
for copage) stands in for that background: such words are not chosen while a
page has anything more specific. Topic nouns that people ask about, even
common ones ("family", "job", "kids"), are deliberately not in it.
"""

from __future__ import annotations

# fmt: off
_VERBS = """
be am is are was were been being have has had having do does did done doing go goes went gone going
get gets got gotten getting make makes made making take takes took taken taking give gives gave given
giving come comes came coming see sees saw seen seeing know knows knew known knowing think thinks
thought thinking say says said saying tell tells told telling feel feels felt feeling want wants wanted
wanting need needs needed needing look looks looked looking seem seems seemed try tries tried trying
keep keeps kept keeping start starts started starting help helps helped helping find finds found
finding let lets letting put puts putting mean means meant show shows showed shown showing hear hears
heard hearing call calls called calling use uses used using leave leaves left leaving bring brings
brought bringing happen happens happened sound sounds sounded sounding love loves loved loving like
likes liked hope hopes hoped hoping wish wished guess guessed believe believes believed remember
remembers remembered forget forgot forgotten appreciate appreciates appreciated enjoy enjoys enjoyed
enjoying share shares shared sharing talk talks talked talking chat chatted chatting catch caught stay
stays stayed staying move moved moving change changed changing turn turned turning end ended ending
check checked checking glad mind miss missed missing wait waiting waited able gotta gonna wanna can't
won't don't didn't doesn't isn't wasn't aren't
"""
_ADJECTIVES = """
good great awesome amazing cool nice fine happy sad hard tough easy big small little new old best
better worse worst special beautiful wonderful fantastic incredible lovely super fun busy proud
excited exciting sure right wrong real true important different same whole full free late early long
short high low huge tiny quick slow bad awful terrible interesting inspiring inspired powerful
meaningful stunning gorgeous cute sweet kind brave strong positive perfect favorite favourite tight
crazy wild insane serious rewarding thrilled lucky grateful thankful touched stoked nervous scared
worried stressed overwhelmed swamped tired exhausted ready alright main certain possible
"""
_ADVERBS = """
really totally lately recently definitely actually always never still yet already even maybe probably
perhaps quite pretty much many more most less least often sometimes usually finally especially
exactly absolutely completely literally seriously honestly basically simply truly somehow anyway
though ever soon later ago far away back around together almost enough else instead lots bit
"""
_NOUNS_AND_FILLERS = """
thing things stuff time times way ways day days kind sort part idea ideas moment moments something
anything everything nothing someone anyone everyone somebody anybody everybody people person guy guys
one ones lot week weeks year years month months today tonight tomorrow yesterday morning evening night
weekend while point reason fact question questions answer news update story stories experience
experiences feeling feelings journey step steps chance wow haha lol omg ugh btw congrats
congratulations pic pics photo photos picture pictures
"""
# fmt: on
COMMON_WORDS: frozenset[str] = frozenset(
    (_VERBS + _ADJECTIVES + _ADVERBS + _NOUNS_AND_FILLERS).split()
)
"""About 500 lower-cased everyday words (see the module docstring)."""
