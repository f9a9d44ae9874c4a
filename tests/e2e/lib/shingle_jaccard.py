"""Exact Jaccard similarity of two texts' word 5-gram shingles, normalised as dedup.near does
(docs/operators.md, "dedup"): ASCII letters lowercased, words split at ASCII whitespace and
punctuation. An independent reference for the tests: no MinHash, the sets themselves."""
import string

SEPARATORS = set(b" \t\n\v\f\r") | set(string.punctuation.encode())


def shingles(text, ngram=5):
    words, word = [], bytearray()
    for byte in text.encode():
        if byte in SEPARATORS:
            if word:
                words.append(bytes(word).lower())
                word = bytearray()
        else:
            word.append(byte)
    if word:
        words.append(bytes(word).lower())
    if not words:
        return set()
    n = min(ngram, len(words))
    return {b" ".join(words[i:i + n]) for i in range(len(words) - n + 1)}


def jaccard(a, b):
    a, b = shingles(a), shingles(b)
    if not a and not b:
        return 1.0
    return len(a & b) / len(a | b)
