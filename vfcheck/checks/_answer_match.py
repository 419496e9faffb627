"""Whether a reply contains a task's answer: what `exploit.search` holds its replies to.

`exploit.search` reports a reply that earns the reference answer's reward without the
answer. A reward that finds the answer written another way ("1,000" for 1000, `\\frac{1}{2}`
for 0.5, fullwidth or Arabic-Indic digits, "Paris" inside a sentence, 51.0 or 5.1e1 for 51)
is right to pay it, so "contains" is read generously: a false exploit costs more than a
missed one, and the search only plays replies that do not contain the answer. A reply
contains answer A when, both read after NFKC, casefolding and with every decimal digit
written in ASCII:

1. A's alphanumerics occur in the reply's alphanumerics (`hello world` in `Hello, World!`,
   `51` in `1513`: a lenient substring reward may rightly pay those); an answer of one or
   two letters (a choice `B`, `no`) must be one of the reply's words instead, since nearly
   every text holds the letter;
2. or A is a number and the reply writes a number within 5 % of it, or that rounds to it
   when A is an integer (separators, signs, exponents, fractions `3/4` and `\\frac{3}{4}`
   read): a reward with a tolerance is right to pay a near value. A designed tolerance
   wider than that (an estimate within a factor of two) is reported; accept it with
   `allow`.

An answer with no alphanumerics (`?`) is looked for as written. Pure: no verifiers import.
"""

from __future__ import annotations

import re
import unicodedata
from fractions import Fraction

RELATIVE_TOLERANCE = 0.05
"""A number within this share of a numeric answer is that answer."""
_SEPARATOR = re.compile(r"(?<=\d)[,_'\u2009\u202f ](?=\d{3}(?!\d))")
_FRACTION = re.compile(r"\\[dt]?frac\{\s*([-+]?\d+(?:\.\d+)?)\s*\}\{\s*([-+]?\d+(?:\.\d+)?)\s*\}"
                       r"|([-+]?\d+(?:\.\d+)?)\s*/\s*(\d+(?:\.\d+)?)")
_NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:e[-+]?\d+)?")
_WORD = re.compile(r"[^\W_]+")


def contains_answer(reply: str, answer: str) -> bool:
    """Whether `reply` contains `answer` (the module's docstring says how it is read)."""
    text, wanted = normal(reply), normal(answer)
    key = alphanumerics(wanted)
    if not key:
        return bool(wanted.strip()) and wanted.strip() in text
    if len(key) <= 2 and not key.isdigit():
        return key in _WORD.findall(text)
    if key in alphanumerics(text):
        return True
    value = number(wanted)
    return value is not None and any(near(found, value) for found in numbers(text))


def normal(text: str) -> str:
    """`text` after NFKC and casefolding, every decimal digit in ASCII, and no separator
    between thousands (`1,000` and `1 000` read `1000`)."""
    text = unicodedata.normalize("NFKC", text).casefold()
    text = "".join(str(unicodedata.digit(c)) if c.isdecimal() and not c.isascii() else c
                   for c in text)
    return _SEPARATOR.sub("", text)


def alphanumerics(text: str) -> str:
    return "".join(c for c in text if c.isalnum())


def number(text: str) -> float | None:
    """`text` as one number (`51`, ` -2.5e3 `, `3/4`, `\\frac{3}{4}`), or None."""
    found = numbers(text.strip())
    if len(found) != 1:
        return None
    rest = _FRACTION.sub("", text) if _FRACTION.search(text) else _NUMBER.sub("", text)
    return found[0] if not alphanumerics(rest.replace("frac", "")) else None


def numbers(text: str) -> list[float]:
    """Every number `text` writes, fractions as their value (normalised text)."""
    found: list[float] = []
    for match in _FRACTION.finditer(text):
        top, bottom = (match.group(1), match.group(2)) if match.group(1) else (
            match.group(3), match.group(4))
        if float(bottom) != 0:
            found.append(float(Fraction(top) / Fraction(bottom)))
    for match in _NUMBER.finditer(_FRACTION.sub(" ", text)):
        try:
            found.append(float(match.group()))
        except ValueError:
            continue
    return found


def near(found: float, value: float) -> bool:
    """Whether `found` is `value` for a reward with a tolerance: within 5 %, or rounding
    to it when `value` is an integer."""
    if abs(found - value) <= RELATIVE_TOLERANCE * abs(value):
        return True
    return value.is_integer() and abs(found - value) < 0.5
