"""A text quality model for examples/quality_score.orch: scores each page's text from 0 to 1 by
how much of it reads like prose (letters, words of plausible length, sentence ends).

An Orch python(...) operator is a plain class: the constructor gets the declaration's
constants (once per replica: load weights here), and a call gets one list per input and
returns one value per item. Try it without Orch:

    >>> from quality import Scorer
    >>> Scorer(min_words=3)(["The cat sat on the mat.", "%%% ### 123"])
"""

import re

WORD = re.compile(r"[A-Za-z]+")


class Scorer:
    def __init__(self, min_words=20):
        self.min_words = min_words

    def __call__(self, texts):
        return [self.score(text) for text in texts]

    def score(self, text):
        words = WORD.findall(text)
        if len(words) < self.min_words:
            return 0.0
        letters = sum(len(word) for word in words)
        visible = sum(1 for c in text if not c.isspace())
        letter_share = letters / visible if visible else 0.0
        mean_length = letters / len(words)
        plausible_words = 1.0 if 3.0 <= mean_length <= 8.0 else 0.5
        sentences = text.count(".") + text.count("!") + text.count("?")
        punctuated = min(1.0, sentences / max(1.0, len(words) / 25.0))
        return round(letter_share * plausible_words * (0.5 + 0.5 * punctuated), 4)
