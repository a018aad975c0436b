"""The five conversations of the NLL fault-detection experiment (paper section 3).

Four experimental cases plant critical facts (covering the seven fact types of
the paper: allergy, budget, deadline, medical, preference, schedule, contact)
that the final question needs; one control case needs nothing from the part
that is compressed. A conversation is a list of exchanges (a user message and
the assistant's reply); an exchange with a ``gist`` is critical: in condition
(B) it is replaced by a short summary that omits the critical detail.
Written for copage; the paper's own conversations are not published.
"""

from __future__ import annotations

from dataclasses import dataclass

SYSTEM = "You are a helpful personal assistant. Answer the user's last message directly."
GIST_USER = "(Summary of an earlier part of this conversation: {gist})"
GIST_ACK = "Understood."


@dataclass(frozen=True, slots=True)
class Exchange:
    """A user message and the assistant's reply; ``gist`` marks it critical."""

    user: str
    assistant: str
    gist: str | None = None


@dataclass(frozen=True, slots=True)
class NllCase:
    """One conversation: exchanges, the final question and the planted fact types."""

    id: str
    control: bool
    fact_types: tuple[str, ...]
    exchanges: tuple[Exchange, ...]
    question: str

    def messages(self, condition: str) -> list[dict[str, str]]:
        """Chat messages for condition ``"A"`` (full) or ``"B"`` (gist-compressed)."""
        if condition not in ("A", "B"):
            raise ValueError(f"condition must be 'A' or 'B', got {condition!r}")
        out = [{"role": "system", "content": SYSTEM}]
        for ex in self.exchanges:
            if condition == "B" and ex.gist is not None:
                out.append({"role": "user", "content": GIST_USER.format(gist=ex.gist)})
                out.append({"role": "assistant", "content": GIST_ACK})
            else:
                out.append({"role": "user", "content": ex.user})
                out.append({"role": "assistant", "content": ex.assistant})
        out.append({"role": "user", "content": self.question})
        return out


E = Exchange

CASES: tuple[NllCase, ...] = (
    NllCase(
        "dinner", False, ("allergy", "budget", "schedule"),
        (
            E("Hi! I'm planning a birthday dinner for my sister Mara.",
              "Happy early birthday to Mara! How can I help with the dinner?"),
            E("Important: Mara has a severe peanut allergy, she carries an EpiPen. Nothing "
              "cooked with peanut oil or satay sauce.",
              "Got it: a severe peanut allergy, so no peanuts, peanut oil or satay sauce.",
              gist="the user mentioned some dietary needs of the guest."),
            E("We're six people and the whole dinner must stay under $180 including tip.",
              "Six people, $180 in total with tip, so about $30 per person.",
              gist="the user talked about the group and the cost of the dinner."),
            E("It has to be Friday, and we can only arrive after 8:15 pm because Mara works late.",
              "Friday, arriving no earlier than 8:15 pm. I'll keep that in mind.",
              gist="the user said when the dinner could take place."),
            E("She loves Southeast Asian food, especially Thai and Indonesian.",
              "Lovely, Thai and Indonesian are great choices for a celebration."),
            E("By the way, what's a good birthday toast?",
              "Something short and warm, like: 'To Mara, who makes every year brighter!'"),
        ),
        "So, which kind of restaurant should I book and what should we order? Be specific.",
    ),
    NllCase(
        "report", False, ("deadline", "contact", "preference"),
        (
            E("I'm writing the quarterly data-pipeline report for my team.",
              "Sounds good. What do you need help with?"),
            E("The final report is due to the steering board on Thursday 14 March at noon, no "
              "extensions possible.",
              "Noted: due Thursday 14 March at 12:00, hard deadline.",
              gist="the user mentioned when the report is due."),
            E("Questions go to my manager Priya Raman, priya.raman@northwind.example, or her "
              "mobile +44 7700 900412 if it's urgent.",
              "Saved: Priya Raman, priya.raman@northwind.example, +44 7700 900412 for urgent "
              "matters.",
              gist="the user shared how to reach someone at work."),
            E("I strongly prefer code samples in Rust, never Python, because our stack is "
              "Rust-only.",
              "Understood: all code samples in Rust only.",
              gist="the user stated a preference about code."),
            E("The report covers ingestion latency and the new retry queue.",
              "Ingestion latency and the retry queue, got it."),
        ),
        "I'm running late on the report. Write the message I should send to ask for help, "
        "with the recipient, and include a short code sample showing a retry loop.",
    ),
    NllCase(
        "toothache", False, ("medical", "allergy", "schedule"),
        (
            E("Can you help me keep track of some health things?",
              "Of course. What would you like me to note?"),
            E("I take warfarin every evening for atrial fibrillation, so my doctor said no "
              "ibuprofen or aspirin.",
              "Noted: you take warfarin, and you must avoid ibuprofen and aspirin.",
              gist="the user described a medication they take."),
            E("Also I'm allergic to penicillin: I got hives from amoxicillin last year.",
              "Noted: penicillin allergy, including amoxicillin.",
              gist="the user mentioned a reaction to a medicine."),
            E("My dentist, Dr. Lindqvist, only sees emergencies on Tuesdays between 9:30 and "
              "11:00.",
              "Dr. Lindqvist: emergency slots Tuesdays 9:30 to 11:00.",
              gist="the user talked about their dentist."),
            E("I've been sleeping badly lately, any tips?",
              "Keep a regular bedtime, dim screens an hour before bed, and avoid late caffeine."),
        ),
        "My tooth really hurts and it might be infected. What can I take for the pain, what "
        "might the dentist prescribe, and when should I go?",
    ),
    NllCase(
        "moving", False, ("budget", "preference", "contact", "deadline"),
        (
            E("I need to find a new flat in Leeds.",
              "Happy to help with the flat search. What matters most to you?"),
            E("My absolute maximum is £950 a month including bills.",
              "Maximum £950 per month, bills included.",
              gist="the user mentioned money for the flat."),
            E("I'm vegetarian and I cook a lot, so I want a proper kitchen with a gas hob, and "
              "it must be pet-friendly because of my cat Miso.",
              "A real kitchen with a gas hob, pet-friendly for Miso. Noted.",
              gist="the user described what they want in a flat."),
            E("My current landlord is Mr. Haddad, 0113 496 0721; I must give him notice.",
              "Mr. Haddad, 0113 496 0721, needs your notice.",
              gist="the user mentioned their landlord."),
            E("My lease ends on 30 June and I must be out by then.",
              "Lease ends 30 June: you need to move out by that date.",
              gist="the user talked about their lease."),
            E("Leeds has nice parks, right?",
              "Yes, Roundhay Park is one of the largest city parks in Europe."),
        ),
        "Write me a step-by-step plan for the flat search, with dates, the price filter to "
        "use, and who I need to call.",
    ),
    NllCase(
        "control", True, (),
        (
            E("I watched a documentary about octopuses yesterday.",
              "Octopuses are fascinating: three hearts and blue blood!",
              gist="the user talked about a documentary they watched."),
            E("They said an octopus can taste with its arms.",
              "Right, their suckers have chemoreceptors, so they taste what they touch.",
              gist="the user shared a fact from the documentary."),
            E("I also started learning to cook this month.",
              "That's great! Cooking is a useful skill to build."),
        ),
        "How do I make a simple soft-boiled egg? Give me the steps.",
    ),
)
"""The experiment's conversations: four experimental, then the control."""

FACT_TYPES = ("allergy", "budget", "deadline", "medical", "preference", "schedule", "contact")
