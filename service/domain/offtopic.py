"""Questions almost no document store can answer, for calibrating a store's relevancy scale.

Everyday topics (``EVERYDAY``) far from any company's documents, and
questions shaped like a documentation question about things no document
holds (``UNANSWERABLE_SHAPED``): future plans, other products, personal facts.
Their best scores against a store show what "nothing relevant" looks like in
that store's score space. A store that happens to cover one of these topics
(a recipe collection, a travel guide) still calibrates sensibly: the scale is
fitted to the off-topic 95th percentile, not to the highest score.
"""

from __future__ import annotations

EVERYDAY: tuple[str, ...] = (
    # cooking
    "How long should I boil an egg to get a runny yolk?",
    "What can I use instead of buttermilk in pancakes?",
    "How do I keep homemade bread from going stale so quickly?",
    "Which spices go well in a vegetarian chili?",
    "Why does my risotto turn out gluey?",
    "How long does cooked rice keep in the fridge?",
    # sports
    "Who won the football world cup in 1998?",
    "How many players are on a volleyball team on court?",
    "What is the offside rule in ice hockey?",
    "How should a beginner train for a first marathon?",
    "What does a birdie mean in golf?",
    "How long is a round in professional boxing?",
    # travel
    "What is the best time of year to visit Kyoto for the autumn leaves?",
    "Do I need a visa to visit Brazil as a tourist?",
    "Which train goes from Paris to Barcelona and how long does it take?",
    "What are the must-see sights in Lisbon in two days?",
    "How do I avoid jet lag on a long flight east?",
    "Is tap water safe to drink in Mexico City?",
    # weather and nature
    "Will it rain in Amsterdam this weekend?",
    "Why is the sky red at sunset?",
    "How do hurricanes get their names?",
    "What causes the northern lights?",
    "How cold does it get at the South Pole in winter?",
    "Why do leaves change colour in the autumn?",
    # pets
    "How often should I feed a six-month-old kitten?",
    "Why does my dog eat grass?",
    "How can I stop my cat from scratching the sofa?",
    "What vegetables are safe for rabbits to eat?",
    "How long do goldfish usually live?",
    "When should a puppy get its first vaccinations?",
    # gardening
    "When should I plant tulip bulbs?",
    "How often should I water tomato plants in summer?",
    "Why are the leaves on my basil turning yellow?",
    "How do I get rid of slugs without chemicals?",
    "What is the best way to prune a rose bush?",
    "Which herbs grow well on a shady balcony?",
    # history and trivia
    "In which year did the Berlin Wall fall?",
    "Who painted the ceiling of the Sistine Chapel?",
    "Why did the Roman Empire split into east and west?",
    "Who was the first woman to win a Nobel Prize?",
    "What is the tallest mountain in Africa?",
    "How many bones are there in the adult human body?",
    # personal finance
    "Should I pay off my mortgage early or invest the money?",
    "How does compound interest work on a savings account?",
    "What is a good credit score for buying a house?",
    "How much should I save each month for retirement at thirty?",
    "Is it better to lease or buy a car?",
    "How do I dispute a charge on my credit card?",
    # HR and working life, outside any one employer
    "How do I write a resignation letter that stays on good terms?",
    "What should I wear to a job interview at a start-up?",
    "How do I ask my landlord to fix a broken heater?",
    "How do I negotiate a higher salary at a new job offer?",
    # medicine and health
    "What is the normal resting heart rate for an adult?",
    "How long does a common cold usually last?",
    "Is it safe to take ibuprofen and paracetamol together?",
    "What are the early signs of dehydration in children?",
    "How much sleep does a teenager need?",
    "How can I treat a mild sunburn at home?",
    # household and everyday life
    "How do I remove a red wine stain from a carpet?",
    "Why does my washing machine smell bad?",
    "How do I unclog a kitchen sink without a plumber?",
    "What is the best way to descale a kettle?",
    "How do I change a flat tyre on a bicycle?",
    "How do I get my toddler to sleep through the night?",
    # entertainment and culture
    "What is the plot of the novel Moby-Dick?",
    "Which Beatles album came out first?",
    "How do I tune a guitar without a tuner?",
    "What are the rules of chess castling?",
    "Who directed the film Casablanca?",
    "How many episodes does the first season of Friends have?",
)

UNANSWERABLE_SHAPED: tuple[str, ...] = (
    "What will the company's revenue be in 2035?",
    "Who will be appointed chief executive next year?",
    "What are the release plans for version 99 of the product?",
    "How do I configure the feature in a competitor's product instead?",
    "What is my personal password for the system?",
    "What did the board decide in a meeting that was never recorded?",
    "What is the phone number of the author's neighbour?",
    "How many people will attend next decade's annual conference?",
    "Which lottery numbers will win this Saturday?",
    "What is the recipe for the cafeteria's secret soup?",
    "What was discussed at lunch yesterday between two colleagues?",
    "How does the undocumented internal prototype from 2040 work?",
    "What is the favourite colour of the person who wrote this?",
    "When will the office on Mars open?",
    "How much will the subscription cost after the price change nobody announced?",
    "What does page 900 of this document say?",
)

OFF_TOPIC_QUESTIONS: tuple[str, ...] = EVERYDAY + UNANSWERABLE_SHAPED
