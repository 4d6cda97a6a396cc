"""The text a patch of Codex's ``apply_patch`` tool must find in the files it updates.

Contract: a patch is the ``*** Begin Patch`` / ``*** End Patch`` envelope of the OpenAI
Responses ``apply_patch`` tool (a free-text tool input, or a shell command that pipes one into
``apply_patch``). Each ``*** Update File:`` section holds hunks, each opened by ``@@`` (maybe
with an anchor after it); a hunk's context lines (`` `` prefix) and removed lines (``-``) are, in
order and without the ``+`` lines between them, a stretch of the file as it was: the patch could
only be written from a view that showed it, like an ``Edit``'s ``old_string``. Added and deleted
files (``*** Add File:``, ``*** Delete File:``) need nothing. A hunk with no context or removed
line (only additions) needs nothing. The lines are compared as written (the tool itself forgives
trailing whitespace; a view that differs only there counts as not holding the hunk).
"""

from __future__ import annotations

from collections.abc import Iterator

BEGIN = "*** Begin Patch"
_SECTION = "*** "
_UPDATE = "*** Update File:"
_END_OF_FILE = "*** End of File"


def is_patch(text: str) -> bool:
    return BEGIN in text


def patch_old_texts(text: str) -> Iterator[str]:
    """The old text of every hunk of every updated file in ``text`` (in order, empty ones left
    out); nothing when ``text`` holds no patch."""
    start = text.find(BEGIN)
    if start < 0:
        return
    updating = False
    hunk: list[str] = []
    for line in text[start + len(BEGIN) :].splitlines():
        if line.startswith(_SECTION) and line != _END_OF_FILE:  # a file section or the end
            yield from _done(hunk)
            hunk = []
            updating = line.startswith(_UPDATE)
            continue
        if not updating:
            continue
        if line.startswith("@@"):
            yield from _done(hunk)
            hunk = []
        elif line.startswith((" ", "-")):
            hunk.append(line[1:])
        elif line == "":  # an empty context line written without its space
            hunk.append("")
    yield from _done(hunk)


def _done(hunk: list[str]) -> Iterator[str]:
    while hunk and not hunk[-1]:  # trailing empty lines: the file need not end with them
        hunk = hunk[:-1]
    old = "\n".join(hunk)
    if old.strip():
        yield old


__all__ = ["BEGIN", "is_patch", "patch_old_texts"]
