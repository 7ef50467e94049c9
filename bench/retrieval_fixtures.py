"""Generated long conversations in the LoCoMo JSON format, for ``bench_retrieval.py``.

The public LoCoMo data set carries no licence, so the project writes its own conversations in
that format instead (``generate(seed, ...)``, deterministic). Each conversation is between two
people over many dated sessions; some turns state facts about a speaker (a new dog, a trip, a
promotion …) among chit-chat and *distractor* turns that share words with the facts (the other
speaker's neighbour's dog, a trip someone else took). Questions are worded differently from the
evidence (a "pet" for a dog, an "instrument" for a cello) and fall into LoCoMo's categories:

1 multi-hop (two evidence turns from different sessions), 2 temporal (when did it happen: the
evidence turn says "last weekend", the answer is a date), 3 open-domain (an inference from the
evidence), 4 single-hop (one evidence turn).

Version 2 (the default; ``version=1`` reproduces the first generator exactly) fixes two ways in
which version 1 was no honest measure (``specs/memory-longterm.md``, "Quality benchmark"):

* every single-hop question of version 1 shared no content word with its evidence — unlike
  people's questions (and LoCoMo's, where keyword search alone finds 0.56 of the evidence), so
  a keyword list could only add noise. Now about half of them (seeded) are asked as people ask
  after hearing the fact, reusing one of its words ("What is the name of Caroline's puppy?");
  the rest stay paraphrases;
* the only distractor of a fact was the *other* speaker's remark in the same session. Now the
  subject also talks about the same topic in another session without the fact ("I keep
  browsing puppy photos online …"): same speaker, same topic, wrong turn — the hard case.

Format (as LoCoMo's): ``[{"sample_id", "conversation": {"speaker_a", "speaker_b",
"session_N_date_time": "1:56 pm on 8 May, 2023", "session_N": [{"speaker", "dia_id": "DN:i",
"text"}]}, "qa": [{"question", "answer", "evidence": ["DN:i"], "category"}]}]``.
"""

from __future__ import annotations

import random
from datetime import datetime, timedelta
from typing import Any

NAMES = ["Caroline", "Melanie", "Jon", "Gina", "Priya", "Tomas", "Aiko", "Dmitri", "Lena", "Omar"]

# (fact id, evidence said by the subject, single-hop question, answer, open-domain question or None,
#  distractor said by the other speaker)
FACTS: list[tuple[str, str, str, str, str | None, str]] = [
    ("dog", "We finally adopted a golden retriever puppy, her name is Biscuit!",
     "What did {A} call the pet she got?", "Biscuit", "Does {A} have an animal at home to walk every day?",
     "My neighbour's dog barked all night again, I barely slept."),
    ("pottery", "I signed up for a pottery class at the community centre, my first bowl was lopsided.",
     "What crafts course did {A} enrol in?", "pottery", "Is {A} trying out hands-on creative hobbies?",
     "My cousin sells ceramic bowls at the market, they are pricey."),
    ("promotion", "Big news at work: I was promoted to head nurse on the children's ward.",
     "What new role did {A} get at the hospital?", "head nurse", "Does {A} work in healthcare?",
     "Work has been slow, nobody on my team got promoted this year."),
    ("hike", "We spent the whole weekend hiking the trails around Lake Tahoe, the views were unreal.",
     "Where did {A} go walking in the mountains?", "Lake Tahoe", "Would {A} enjoy a nature retreat?",
     "I saw photos of a lake on TV, looked cold."),
    ("cello", "I've started cello lessons again, practising scales every evening.",
     "Which instrument is {A} learning to play?", "cello", "Is {A} musical?",
     "The concert downstairs had a cello solo, it went on forever."),
    ("marathon", "I ran my first half marathon last weekend, finished in just under two hours!",
     "What race did {A} complete?", "a half marathon", "Is {A} into endurance sports?",
     "There was a marathon in town so the roads were closed all morning."),
    ("vegetarian", "Since the start of the year I have stopped eating meat altogether.",
     "What change did {A} make to her diet?", "became vegetarian", "Would {A} order a steak at a restaurant?",
     "I tried a new burger place, the meat was a bit dry."),
    ("move", "We moved into a new flat by the river, the boxes are still everywhere.",
     "Where is {A}'s new home?", "a flat by the river", None,
     "The river flooded the park near my office last spring."),
    ("sister", "My sister Hannah is getting married in the autumn and I'm the maid of honour!",
     "Whose wedding is {A} part of?", "her sister Hannah's", "Is {A} close to her family?",
     "A wedding party kept the whole hotel awake last night."),
    ("car", "My old car finally died, so I bought a second-hand Subaru.",
     "What vehicle did {A} buy?", "a second-hand Subaru", None,
     "Car prices are crazy right now, I'll keep my bike."),
    ("shelter", "On Sundays I volunteer at the animal shelter, walking the older dogs.",
     "Where does {A} help out on Sundays?", "the animal shelter", "Does {A} do charity work?",
     "The shelter near my place is closing for renovations."),
    ("novel", "I just finished reading 'The Overstory', I couldn't put it down.",
     "Which book did {A} recently get through?", "The Overstory", "Does {A} like reading fiction?",
     "My book club picked a thriller, not my thing."),
    ("garden", "I planted tomatoes and basil on the balcony, the first leaves are showing.",
     "What is {A} growing at home?", "tomatoes and basil", "Does {A} like gardening?",
     "The garden centre was packed on Saturday."),
    ("spanish", "I've been taking Spanish classes twice a week before work.",
     "Which language is {A} studying?", "Spanish", "Is {A} preparing to travel abroad?",
     "My colleague speaks four languages, it's intimidating."),
    ("kitten", "We brought home a little grey kitten from a friend, he sleeps on my keyboard.",
     "What animal joined {A}'s household recently?", "a grey kitten", None,
     "A stray cat keeps visiting our porch."),
    ("lisbon", "We just got back from five days in Lisbon, I ate far too many custard tarts.",
     "Which city did {A} travel to?", "Lisbon", "Does {A} enjoy travelling?",
     "My boss is flying to Lisbon for a conference next month."),
    ("degree", "I enrolled in an online degree in psychology, starting in September.",
     "What subject is {A} going to study?", "psychology", "Is {A} interested in how people think?",
     "My nephew dropped out of university after one term."),
    ("painting", "I painted a sunrise over the lake, it's hanging in the hallway now.",
     "What artwork did {A} make?", "a painting of a sunrise over the lake", "Is {A} artistic?",
     "They were painting the building's hallway all week, the smell!"),
]

# multi-hop pairs: (fact ids, question, answer)
MULTI_HOP = [
    (("dog", "kitten"), "Which animals has {A} taken in?", "a puppy and a kitten"),
    (("hike", "lisbon"), "Name two trips {A} mentioned.", "Lake Tahoe and Lisbon"),
    (("pottery", "painting"), "What creative things has {A} made?", "a pottery bowl and a painting"),
    (("marathon", "shelter"), "How does {A} spend her weekends?", "running and volunteering"),
    (("spanish", "degree"), "What is {A} studying?", "Spanish and psychology"),
    (("cello", "novel"), "What does {A} do in the evenings?", "cello practice and reading"),
]
TEMPORAL = {"dog": "When did {A} adopt her puppy?", "marathon": "When did {A} run the half marathon?",
            "promotion": "When was {A} promoted?", "lisbon": "When did {A} visit Lisbon?",
            "move": "When did {A} move house?", "car": "When did {A} buy the Subaru?",
            "hike": "When did {A} go to Lake Tahoe?", "kitten": "When did the kitten arrive at {A}'s?"}

# version 2: a question reusing a word of the evidence (as people ask), and the subject on the same
# topic in another session without the fact
LEXICAL: dict[str, tuple[str, str]] = {
    "dog": ("What is the name of {A}'s puppy?", "Biscuit"),
    "pottery": ("What did {A} make in her first pottery class?", "a lopsided bowl"),
    "promotion": ("What was {A} promoted to?", "head nurse"),
    "hike": ("Where did {A} go hiking?", "around Lake Tahoe"),
    "cello": ("Which lessons has {A} started again?", "cello lessons"),
    "marathon": ("How long did {A}'s first half marathon take?", "just under two hours"),
    "vegetarian": ("What has {A} stopped eating?", "meat"),
    "move": ("What is {A}'s new flat close to?", "the river"),
    "sister": ("Who is getting married in {A}'s family?", "her sister Hannah"),
    "car": ("What did {A} buy when her old car died?", "a second-hand Subaru"),
    "shelter": ("What does {A} do at the animal shelter?", "walks the older dogs"),
    "novel": ("Which book could {A} not put down?", "The Overstory"),
    "garden": ("What did {A} plant on her balcony?", "tomatoes and basil"),
    "spanish": ("How often does {A} have classes before work?", "twice a week"),
    "kitten": ("Where does {A}'s kitten sleep?", "on her keyboard"),
    "lisbon": ("What did {A} eat too many of in Lisbon?", "custard tarts"),
    "degree": ("What online degree did {A} enrol in?", "psychology"),
    "painting": ("What did {A} paint for the hallway?", "a sunrise over the lake"),
}
SAME_TOPIC: dict[str, str] = {
    "dog": "I keep browsing puppy photos online, maybe one day we'll get a dog.",
    "pottery": "I'd love to try something with my hands, maybe ceramics or woodwork.",
    "promotion": "Long shifts at the hospital again, the ward was short-staffed.",
    "hike": "I bought new hiking boots, they still pinch a bit.",
    "cello": "I found my old music stand in the attic, covered in dust.",
    "marathon": "Training is going okay, my knees complain after long runs.",
    "vegetarian": "I've been cooking a lot more with lentils and beans lately.",
    "move": "We've been viewing flats every weekend, nothing feels right yet.",
    "sister": "My sister and I went dress shopping, it took hours.",
    "car": "The car made a horrible noise again on the motorway.",
    "shelter": "The older dogs are the hardest to rehome, it breaks my heart.",
    "novel": "I have a stack of unread books on my nightstand.",
    "garden": "I bought some pots and soil, my balcony gets a lot of sun.",
    "spanish": "I downloaded a language app, but I keep forgetting to use it.",
    "kitten": "My friend's cat just had a litter of kittens.",
    "lisbon": "I'm looking at flights to Portugal for the spring.",
    "degree": "I've been reading a lot about psychology, it fascinates me.",
    "painting": "I dug out my old watercolours, my brush skills are rusty.",
}

PROMPTS = ["Any news since we last talked?", "So what have you been up to?", "How did the last few weeks go?",
           "What's new with you?", "Anything exciting happening?"]
CHATTER = ["Hey! How have you been?", "Pretty good, busy week though.", "That sounds amazing!",
           "Oh no, that's rough.", "Tell me more about it.", "Haha, classic.", "I know what you mean.",
           "What are you up to this weekend?", "Not much, just resting.", "The weather has been awful lately.",
           "I'm so tired today.", "Let's catch up again soon!", "Talk soon, take care.",
           "I've been binge-watching a baking show.", "Coffee this morning saved me.",
           "Work has been hectic, deadlines everywhere.", "I'm proud of you!", "That's such good news.",
           "How's your family doing?", "Everyone's fine, thanks for asking."]


def _when(date: datetime) -> str:
    hour = date.hour % 12 or 12
    return f"{hour}:{date.minute:02d} {'am' if date.hour < 12 else 'pm'} on {date.day} {date:%B}, {date.year}"


def generate(seed: int = 14, conversations: int = 3, sessions: int = 12, turns: int = 10,
             prompted: bool = False, version: int = 2) -> list[dict[str, Any]]:
    """``prompted``: every fact answers a question of the other speaker ("Any news?");
    ``version``: 1 = the first generator (kept for comparison), 2 = lexical questions and
    same-topic distractors too (module docstring)."""
    if version not in (1, 2):
        raise ValueError(f"version must be 1 or 2, found {version!r}")
    rng = random.Random(seed)
    more = random.Random(f"{seed}-v2")  # version 2's choices: version 1's draws stay the same
    samples = []
    for number in range(conversations):
        a, b = rng.sample(NAMES, 2)
        start = datetime(2023, 1, 2, 9, 0) + timedelta(days=rng.randrange(0, 120))
        facts = rng.sample(FACTS, min(len(FACTS), sessions + 4))
        # each fact is placed in a session; the subject is speaker a for most facts, b for some
        paired = {fact_id for pair, _, _ in MULTI_HOP for fact_id in pair}
        placement = {fact[0]: (rng.randrange(sessions), a if index % 4 or fact[0] in paired else b)
                     for index, fact in enumerate(facts)}
        conversation: dict[str, Any] = {"speaker_a": a, "speaker_b": b}
        # version 2: the subject on the same topic, in another session
        aside = {fact[0]: more.choice([s for s in range(sessions) if s != placement[fact[0]][0]])
                 for fact in facts} if version == 2 and sessions > 1 else {}
        evidence: dict[str, str] = {}
        dates: dict[int, datetime] = {}
        when = start
        for session in range(sessions):
            when = when + timedelta(days=rng.randrange(5, 21), hours=rng.randrange(0, 9), minutes=rng.randrange(60))
            dates[session] = when
            lines: list[tuple[str, str, str | None]] = [
                (a if i % 2 == 0 else b, rng.choice(CHATTER), None) for i in range(turns)]
            for fact in facts:
                where, subject = placement[fact[0]]
                if where == session:  # the fact and the reaction to it, then a distractor anywhere
                    other = b if subject == a else a
                    at = rng.randrange(1, len(lines))
                    if prompted:  # the other speaker asks, the fact answers (as people talk)
                        lines.insert(at, (other, rng.choice(PROMPTS), None))
                        at += 1
                    lines[at:at] = [(subject, fact[1], fact[0]),
                                    (other, rng.choice(["That's wonderful!", "Wow, good for you!", "No way, really?"]),
                                     None)]
                    lines.insert(rng.randrange(1, len(lines)), (other, fact[5], None))
            for fact in facts:
                if aside.get(fact[0]) == session:
                    lines.insert(more.randrange(1, len(lines) + 1), (placement[fact[0]][1], SAME_TOPIC[fact[0]], None))
            dialogue = []
            for index, (speaker, text, fact_id) in enumerate(lines, start=1):
                dia_id = f"D{session + 1}:{index}"
                dialogue.append({"speaker": speaker, "dia_id": dia_id, "text": text})
                if fact_id:
                    evidence[fact_id] = dia_id
            conversation[f"session_{session + 1}_date_time"] = _when(when)
            conversation[f"session_{session + 1}"] = dialogue
        qa = []
        by_id = {fact[0]: fact for fact in facts}
        for fact_id, (session, subject) in placement.items():
            fact = by_id[fact_id]
            question, answer = fact[2], fact[3]
            if version == 2 and more.random() < 0.5:
                question, answer = LEXICAL[fact_id]
            qa.append({"question": question.format(A=subject), "answer": answer, "evidence": [evidence[fact_id]],
                       "category": 4})
            if fact[4]:
                qa.append({"question": fact[4].format(A=subject), "answer": "yes", "evidence": [evidence[fact_id]],
                           "category": 3})
            if fact_id in TEMPORAL:
                qa.append({"question": TEMPORAL[fact_id].format(A=subject),
                           "answer": f"around {dates[session]:%d %B %Y}", "evidence": [evidence[fact_id]],
                           "category": 2})
        for pair, question, answer in MULTI_HOP:
            if all(fact_id in placement for fact_id in pair) and placement[pair[0]][1] == placement[pair[1]][1]:
                qa.append({"question": question.format(A=placement[pair[0]][1]), "answer": answer,
                           "evidence": [evidence[fact_id] for fact_id in pair], "category": 1})
        samples.append({"sample_id": f"gen-{seed}-{number}", "conversation": conversation, "qa": qa})
    return samples
