"""Fact extraction for recall: the identifiers, file paths, numbers and error strings of a text.

:func:`extract_facts` gives every fact of a text; :class:`_RunFacts` remembers facts per run of
path characters over a session, and :class:`_WantedFacts` finds only the facts of a fixed wanted
set (those some recorded response uses) for less work. Both give exactly what the patterns give
over the whole text (see their docstrings for why). Scoring lives in :mod:`._recall`.
"""

from __future__ import annotations

import re
import string
from collections.abc import Iterable
from collections.abc import Set as AbstractSet
from itertools import chain, compress, product
from operator import eq, itemgetter, not_

# Each pattern is written so that the regex engine can skip ahead cheaply (a literal or a
# character set first, lookbehinds after it); they match exactly what the plain forms match:
# _PATH  (?:[\w.-]+/)+[\w.-]+\.[A-Za-z]\w{0,5}\b | \b[\w-]+\.(?:py|js|...)\b
# _NUMBER (?<![\w.])\d{3,}(?:\.\d+)?(?![\w.])   _IDENT \b[A-Za-z_][A-Za-z0-9_]{5,}\b
# _ERROR \b[A-Z]\w*(?:Error|Exception)\b(?::[^\n]{1,120})?
_PATH = re.compile(
    r"(?:[\w.-]+/)+[\w.-]+\.[A-Za-z]\w{0,5}\b|\b[\w-]+\.(?:py|js|ts|tsx|rs|go|java|md|json|toml|ya?ml|txt|c|h|cpp|rb|sh|cfg|ini|html|css)\b"
)
_PATH_RUN = re.compile(r"(?<![\w./-])[\w./-]*?\.[A-Za-z][\w./-]*")
"""Maximal runs of path characters holding a dot before a letter: a path match never crosses a
run's ends (the characters around a run are non-word, as the ``\b`` in ``_PATH`` need), so
``_PATH`` over the runs finds what it finds over the text, without trying every word. The
lookbehind starts a run only at its first character and the lazy scan finds its first dot once
(a greedy scan from every position of a long dotless run was quadratic in the run)."""
_ERROR = re.compile(r"[A-Z](?<!\w[A-Z])\w*(?:Error|Exception)\b(?::[^\n]{1,120})?")
_NUMBER = re.compile(r"\d(?<![\w.]\d)\d{2,}(?:\.\d+)?(?![\w.])")
_IDENT = re.compile(r"[A-Za-z_](?<!\w[A-Za-z_])[A-Za-z0-9_]{5,}\b")
_STOP = frozenset(
    {
        "return",
        "import",
        "should",
        "python",
        "string",
        "number",
        "object",
        "function",
        "because",
    }
)
_STOP_CASES = frozenset(
    "".join(letters) for word in _STOP for letters in product(*((c, c.upper()) for c in word))
)
"""Every spelling of a stop word in either case (what ``word.lower() in _STOP`` accepts)."""
_REJECT = re.compile(r"\n(_*+[A-Z]*+_*+|_*+[a-z]*+_*+|[A-Za-z][a-z]*+_*+)(?![^\n])")
"""Over words of ``_IDENT``'s shape, each after a newline: those with no digit, no inner
underscore and no mixed case (no upper-case letter after the first, or no lower-case letter).
An identifier is such a word that is none of these and no stop word (``_STOP_CASES``): snake
case, a digit, or mixed case. One scan judges many words (the newline lets it skip ahead)."""
_TOKENS = re.compile(rf"\n|{_IDENT.pattern}|{_NUMBER.pattern}")
r"""Identifier-shaped words, numbers and separators. The two patterns start on disjoint
characters and a word match spans a whole ``\w`` run, so one scan finds what two find."""
_PATH_RUNS = re.compile(rf"\n|{_PATH_RUN.pattern}")
_PATHS = re.compile(rf"\n|(?<![\w.-]){_PATH.pattern}")
r"""``_PATH`` with its first branch tried only after a character outside ``[\w.-]``: the rest
of a segment cannot start a match (if that branch matches at i+1 and the character at i is in
``[\w.-]``, it matches at i too, with a longer first segment; and a match never ends where
another could start, as the greedy repetition would have taken both). Without the guard it
rescans the rest of a path from every character, quadratic in the path's length."""
_RUN_BYTES = bytes(
    c if c >= 0x80 or chr(c) in string.ascii_letters + string.digits + "_./-" else 0x20
    for c in range(256)
)
r"""A ``bytes.translate`` table for UTF-8 text: ASCII characters outside ``[\w./-]`` become
spaces (multi-byte characters pass unchanged, so the result still decodes)."""


def extract_facts(text: str) -> frozenset[str]:
    """Identifiers, paths, numbers and error strings in ``text`` (see :class:`_RunFacts`)."""
    return _RunFacts().facts(text)


def _runs(text: str) -> frozenset[str]:
    """The distinct runs of ``text``: what lies between ASCII characters outside ``[\\w./-]``
    and whitespace, cut in C (UTF-8, ``bytes.translate``, ``split``). A frozenset: the facts
    :meth:`_RunFacts.of_runs` intersects out of it are one (no copy to return)."""
    return frozenset(_runs_in_order(text))


def _runs_in_order(text: str) -> list[str]:
    """The runs of ``text`` (see :func:`_runs`), in order, repeated."""
    return (
        text.encode("utf-8", "surrogatepass")
        .translate(_RUN_BYTES)
        .decode("utf-8", "surrogatepass")
        .split()
    )


class _RunFacts:
    r"""Facts per run, remembered for a session: the patterns run once over the runs that no
    earlier text held, and a text's facts are the union over its runs (and its error strings).

    Why runs: no path, number or identifier match holds a character outside ``[\w./-]``, and
    the lookarounds and ``\b`` treat one as they treat the text's ends (it is neither ``\w``
    nor ``.``), so the patterns find over the distinct runs, joined by newlines, what they find
    over the text. (Non-ASCII characters stay inside runs, where the patterns judge them as
    in the text.) Runs repeat across a session's messages far more than lines or words do.
    Only error strings (whose message runs on past spaces) are read from the text itself.
    A run's facts do not depend on which runs are learned with it, so texts can be learned in
    one batch (:meth:`learn`) and answered after (:meth:`of_runs`).

    Each scan runs over the new runs joined by newlines, with ``\n`` as an alternative: the
    matches come with one separator between runs, so joining them with spaces and splitting at
    the newlines gives, in C, each run's facts (facts hold no whitespace). Most runs hold no
    fact or are their only fact (``selves``: a set intersection finds them in a text)."""

    def __init__(self) -> None:
        self.seen: set[str] = set()
        self.selves: set[str] = set()
        """runs whose facts are just the run itself"""
        self.compound: dict[str, tuple[str, ...]] = {}
        """the other runs that hold facts, with their facts"""
        self.holders: set[str] = set()
        """the keys of ``compound``, as a set: set operations on dict views go through the
        generic protocols, several times slower"""
        self.judged: set[str] = set()
        self.rejected: set[str] = set()
        """identifier-shaped words that are not identifiers (see ``_REJECT``)"""

    def facts(self, text: str) -> frozenset[str]:
        runs = _runs(text)
        self.learn(runs)
        return self.of_runs(runs, text)

    def learn(self, runs: AbstractSet[str]) -> None:
        """Learn the runs not seen before."""
        new = runs - self.seen
        if new:
            self._learn(list(new))

    def of_runs(self, runs: frozenset[str], text: str) -> frozenset[str]:
        """The facts of ``text``, whose runs (all learned) are ``runs``."""
        found = runs & self.selves
        more = _errors(text)
        held = runs & self.holders
        if held:
            more.extend(chain.from_iterable(map(self.compound.__getitem__, held)))
        return found.union(more) if more else found

    def _learn(self, runs: list[str]) -> None:
        self.seen.update(runs)
        tokens = _TOKENS.findall("\n".join(runs))
        self._judge(tokens)
        rejected = self.rejected
        chunks = _chunks([t for t in tokens if t not in rejected])
        for i, paths in _paths(runs):
            chunks[i] = f"{chunks[i]} {paths}" if chunks[i] else paths
        alone = list(map(eq, runs, chunks))
        self.selves.update(compress(runs, alone))
        # The others that hold facts, filtered in C (most runs hold none or only themselves).
        others = filter(itemgetter(1), compress(zip(runs, chunks, strict=True), map(not_, alone)))
        held = {run: tuple(chunk.split()) for run, chunk in others}
        self.compound.update(held)
        self.holders.update(held)

    def _judge(self, tokens: list[str]) -> None:
        """Collect the rejected words among tokens not seen before (numbers are never)."""
        fresh = set(tokens) - self.judged
        self.judged |= fresh
        fresh.discard("\n")
        self.rejected |= fresh & _STOP_CASES
        self.rejected.update(_REJECT.findall("\n" + "\n".join(fresh)))


def _chunks(tokens: list[str]) -> list[str]:
    r"""Per run, its tokens space-separated, from the tokens found in runs joined by newlines
    (with one ``"\n"`` token between consecutive runs). Tokens hold no whitespace, so the
    spaces next to a newline are the joins around a separator: dropped, in C."""
    return " ".join(tokens).replace(" \n", "\n").replace("\n ", "\n").split("\n")


def _paths(runs: list[str]) -> list[tuple[int, str]]:
    """(index, its paths space-separated) of the runs that hold paths: ``_PATH`` over the
    stretches ``_PATH_RUN`` finds in the runs that hold a dot (a path does)."""
    dotted = [i for i, run in enumerate(runs) if "." in run]
    if not dotted:
        return []
    stretches = _PATH_RUNS.findall("\n".join([runs[i] for i in dotted]))
    found = _chunks(_PATHS.findall(" ".join(stretches)))
    return [(i, paths) for i, paths in zip(dotted, found, strict=True) if paths]


def _errors(text: str) -> list[str]:
    r"""``_ERROR.findall(text)``, stripped, reading only the lines that hold "Error" or
    "Exception" (the pattern needs one of them, and a match never crosses a newline: ``\w``,
    ``[^\n]`` and the one-character lookbehind stop at it as at the text's ends). Each search
    starts where findall's would resume (or later on the same line, when no occurrence lies
    between), so a match's ": message" tail swallows what it swallows in findall."""
    found: list[str] = []
    err, exc = text.find("Error"), text.find("Exception")
    pos = end = 0
    while err >= 0 or exc >= 0:
        at = exc if err < 0 or 0 <= exc < err else err  # the first occurrence at or after pos
        if at >= end:
            end = text.find("\n", at)
            end = len(text) if end < 0 else end
        match = _ERROR.search(text, max(pos, text.rfind("\n", pos, at) + 1), end)
        if match is None:
            pos = end  # nothing starts on the rest of this line
        else:
            found.append(match.group().strip())
            pos = match.end()
        if 0 <= err < pos:
            err = text.find("Error", pos)
        if 0 <= exc < pos:
            exc = text.find("Exception", pos)
    return found


_SIMPLE = re.compile(r"[A-Za-z_][A-Za-z0-9_]{5,}|\d{3,}")
"""Facts that are one word: an identifier, or a number without decimals."""
_ERROR_HEAD = re.compile(r"[A-Z]\w*(?:Error|Exception)\b")
r"""How every error string starts (its *head*: the name, a whole ``\w`` word of the text)."""
_PIECE = re.compile(r"[A-Za-z0-9_]+")
_PIECES = str.maketrans("./-", "   ")
"""Cuts an ASCII run into its words."""


class _WantedFacts:
    r"""``extract_facts(text) & wanted`` for a fixed ``wanted`` (the facts some recorded response
    uses: no other fact can be needed), text after text, at less cost than all the facts.

    Why it is exact: an ASCII run (made of ``[A-Za-z0-9_./-]`` alone: other characters inside a
    run are non-ASCII, word characters or not) without ``.``, ``/`` or ``-`` that equals a
    one-word fact of ``wanted`` (``_SIMPLE``) is that fact in the text: the characters around a
    run are neither ``\w`` nor ``.``, which is what the identifier's ``\b`` and the number's
    lookarounds ask, and a wanted identifier passed the identifier rule where it was found.
    (So is an error string without a message: an ASCII one is also such an identifier.) Every
    other wanted fact is found as :class:`_RunFacts` finds it: in the other runs (learned once
    each, their wanted facts kept in ``selves`` and ``compound``) and in error strings. So the
    ASCII word runs, most runs of a session, are never scanned by a pattern: one set
    intersection finds their facts.

    Error strings are read only from a text that may hold a wanted one: its head (a whole
    ``\w`` word, so inside one run: a run equal to it, or a longer run holding it, noted in
    ``heads`` when first met), all its inner runs are runs of the text and the whole string
    occurs in it.

    ``runs.seen`` holds the runs met that are not ASCII words, each judged once when first met,
    and the runs a ``learned`` :class:`_RunFacts` brings (each learned in full by it)."""

    def __init__(self, wanted: frozenset[str], learned: _RunFacts | None = None) -> None:
        self.wanted = wanted
        self.runs = learned or _RunFacts()
        simple = {f for f in wanted if _SIMPLE.fullmatch(f)}
        others = [f for f in wanted if f not in simple]
        self.selves: set[str] = set(simple)
        """runs whose wanted facts are just the run itself"""
        self.compound: dict[str, tuple[str, ...]] = {}
        """the other runs that hold wanted facts, with those facts"""
        self.by_head: dict[str, list[tuple[str, frozenset[str]]]] = {}
        """the wanted facts an error string may give (not one-word), by head, with the runs the
        text must hold (the fact's runs between two others: whole runs of the text too; a
        subset check in C rules out most texts before a substring search)"""
        for fact in others:
            head = _ERROR_HEAD.match(fact)
            if head:
                inner = frozenset(_runs_in_order(fact)[1:-1])
                self.by_head.setdefault(head.group(), []).append((fact, inner))
        self.heads: dict[str, tuple[str, ...]] = {h: (h,) for h in self.by_head}
        """runs that may hold a head, with those heads"""
        self.rare: set[str] = set(self.heads)
        """the keys of ``compound`` and ``heads``: one C check (a set, not a dict view, which
        tests membership through the generic protocol) finds that a text holds none of them"""
        self.keys = frozenset(simple).union(
            max(_PIECE.findall(f), key=len) for f in others if f.isascii() and _PIECE.search(f)
        )
        """a word of each ASCII wanted fact (its longest): see :meth:`_learn`"""
        self._adopt(self.runs.seen)
        self._note_heads(self.runs.seen)

    def facts(self, text: str) -> frozenset[str]:
        # A frozenset of runs: the intersections below are frozensets (no copy to return).
        runs = frozenset(_runs_in_order(text))
        seen = self.runs.seen
        new = _unjudged(runs, seen, text)
        if new:
            seen.update(new)
            self._learn(new)
        found = runs & self.selves
        rare = runs & self.rare
        if not rare:
            return found
        compound, heads = self.compound, self.heads
        more = [f for r in rare if r in compound for f in compound[r]]
        with_heads = [r for r in rare if r in heads]
        if with_heads:
            more += self._errors(text, runs, with_heads)
        return found.union(more) if more else found

    def _learn(self, compound: list[str]) -> None:
        r"""Learn the new runs that may hold a wanted fact; note those that may hold a head.

        ``compound``: runs that are not ASCII words (those ``selves`` answers for). Every word
        (``\w`` run) of a fact the patterns find in a run is a whole word of the run: each fact
        starts after a non-word character (or with one) and ends with a word character before
        one (lookarounds, ``\b``, the path guard). So an ASCII run (whose non-word characters
        are ``./-``) holds a wanted fact only if it has the fact's key word: most runs, and
        most texts' new runs at once, are ruled out in C. Non-ASCII runs are always learned."""
        joined = " ".join(compound)
        if not joined.isascii() or not self.keys.isdisjoint(joined.translate(_PIECES).split()):
            keys = self.keys
            learn = [
                r
                for r in compound
                if not r.isascii() or not keys.isdisjoint(r.translate(_PIECES).split())
            ]
            if learn:
                self.runs._learn(learn)
                self._adopt(set(learn))
        if self.by_head and ("Error" in joined or "Exception" in joined):
            self._note_heads(compound)

    def _adopt(self, runs: AbstractSet[str]) -> None:
        """Keep the wanted facts of learned runs."""
        learned, wanted = self.runs, self.wanted
        self.selves |= learned.selves & runs & wanted
        for run in learned.holders & runs:
            facts = learned.compound[run]
            if not wanted.issuperset(facts):  # all wanted when learned from the responses
                facts = tuple(f for f in facts if f in wanted)
            if facts:
                self.compound[run] = facts
                self.rare.add(run)

    def _note_heads(self, runs: Iterable[str]) -> None:
        """Note the runs that hold a head (a whole word of a run: a substring of it)."""
        for run in runs:
            if "Error" in run or "Exception" in run:
                heads = tuple(h for h in self.by_head if h in run)
                if heads:
                    self.heads[run] = heads
                    self.rare.add(run)

    def _errors(self, text: str, runs: frozenset[str], with_heads: list[str]) -> list[str]:
        """The wanted error strings of ``text`` (its ``runs``, some ``with_heads``)."""
        for head in {h for run in with_heads for h in self.heads[run]}:
            for fact, inner in self.by_head[head]:
                if inner <= runs and fact in text:
                    return [f for f in _errors(text) if f in self.wanted]
        return []


def _unjudged(runs: frozenset[str], seen: set[str], text: str) -> list[str]:
    """The runs of ``text`` that are not ASCII words (``selves`` answers for those) and were
    never judged (a run judged before is in ``seen``).

    Only these few runs are looked up in ``seen``: taking out first every run met before (a
    lookup of each in a set of all runs met, comparing strings on each hit) cost more than
    the character tests. A text without "/" or "-" marks its non-words with "." alone."""
    if not text.isascii():
        return [
            r
            for r in runs
            if ("." in r or "/" in r or "-" in r or not r.isascii()) and r not in seen
        ]
    if "/" in text or "-" in text:
        return [r for r in runs if ("." in r or "/" in r or "-" in r) and r not in seen]
    return [r for r in runs if "." in r and r not in seen]


__all__ = ["extract_facts"]
