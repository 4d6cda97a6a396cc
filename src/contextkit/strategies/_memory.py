"""Memory files (CLAUDE.md-style): their text travels in the cached prefix of every call.

Contract of :class:`PrependMemoryFiles`:

- Placement: one text block per file, in the order given, appended to the *system* prompt after
  the harness's own system blocks. Why the system and not the first user message: the system comes
  before every message in cache order, so the memory sits in the cached prefix; no other strategy
  edits the system, so the memory survives windows and summaries untouched; and a breakpoint the
  harness puts on its own system prompt stays valid when a memory file changes (only what follows
  is re-written).
- Each block reads ``<memory-file path="...">\\n...\\n</memory-file>``: byte-identical from call to
  call while the file is unchanged, so the prefix cache keeps hitting.
- Files are re-read when they change: the reader compares (mtime, size) and only then reads.
  The reader is a collaborator (:class:`MemoryReader`); tests inject their own.
- Idempotent: blocks already in the view for these files are replaced, never duplicated; when the
  files are unchanged the same view object comes back. A missing file is a
  :class:`~contextkit.errors.ConfigError` naming it, unless ``required`` is False (then skipped).
- This strategy adds tokens by design; it is the one built-in that can make a view larger.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal, Protocol, runtime_checkable

from pydantic import Field, PrivateAttr

from contextkit.errors import ConfigError
from contextkit.messages import Block, Conversation, TextBlock
from contextkit.strategies._base import CallFacts, Compacted, Receipt
from contextkit.strategies._strategy_model import StrategyModel

MEMORY_OPEN = '<memory-file path="'
MEMORY_CLOSE = "</memory-file>"


@runtime_checkable
class MemoryReader(Protocol):
    def read(self, path: str) -> str | None:
        """The file's text, or None when it does not exist."""
        ...


class FileMemoryReader:
    """Reads files from disk, re-reading only when (mtime, size) changed."""

    def __init__(self) -> None:
        self._cache: dict[str, tuple[tuple[int, int], str]] = {}

    def read(self, path: str) -> str | None:
        try:
            stat = os.stat(path)
        except FileNotFoundError:
            self._cache.pop(path, None)
            return None
        key = (stat.st_mtime_ns, stat.st_size)
        hit = self._cache.get(path)
        if hit is not None and hit[0] == key:
            return hit[1]
        text = Path(path).read_text(encoding="utf-8", errors="replace")
        self._cache[path] = (key, text)
        return text


def memory_block(path: str, text: str) -> TextBlock:
    return TextBlock(text=f'{MEMORY_OPEN}{path}">\n{text}\n{MEMORY_CLOSE}')


def is_memory_block(block: Block) -> bool:
    return isinstance(block, TextBlock) and block.text.startswith(MEMORY_OPEN)


class PrependMemoryFiles(StrategyModel):
    """Put memory files in the system prompt, kept fresh and byte-stable."""

    kind: Literal["memory-files"] = "memory-files"
    paths: tuple[str, ...]
    required: bool = True
    reader: Any = Field(None, exclude=True, repr=False)
    """A :class:`MemoryReader`; None reads from disk (:class:`FileMemoryReader`)."""
    _default_reader: FileMemoryReader = PrivateAttr(default_factory=FileMemoryReader)

    def _read(self, path: str) -> str | None:
        reader: MemoryReader = self.reader if self.reader is not None else self._default_reader
        text = reader.read(path)
        if text is None and self.required:
            raise ConfigError(
                f"{path}: memory file not found (fix the path, or set required = false)"
            )
        return text

    def __call__(self, view: Conversation, facts: CallFacts, /) -> Compacted:
        fresh = [memory_block(p, t) for p in self.paths if (t := self._read(p)) is not None]
        own = tuple(b for b in view.system_blocks if not is_memory_block(b))
        old = tuple(b for b in view.system_blocks if is_memory_block(b))
        if [b.text for b in old if isinstance(b, TextBlock)] == [b.text for b in fresh]:
            return Compacted(view=view)
        system: tuple[Block, ...] = (*own, *fresh)
        new = view.model_copy(update={"system": system or None})
        counter = facts.counter
        receipt = Receipt(
            strategy=self.kind,
            action="prepended",
            # Negative: this strategy adds tokens (the net effect stays a plain sum).
            tokens_freed=counter.count_conversation(view) - counter.count_conversation(new),
            detail=f"{len(fresh)} memory file(s): " + ", ".join(self.paths),
        )
        return Compacted(view=new, receipts=(receipt,))


__all__ = [
    "MEMORY_CLOSE",
    "MEMORY_OPEN",
    "FileMemoryReader",
    "MemoryReader",
    "PrependMemoryFiles",
    "is_memory_block",
    "memory_block",
]
