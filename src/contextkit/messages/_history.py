"""A request's messages as a view of one growing history, shared with the requests it extends.

An agent's requests grow by a message or two per call, and a recording holds every one of them:
as tuples, a session of n calls holds n²/2 references (25 M at 5,000 calls: 200 MB, and the
time to copy them and to let the cyclic collector walk them). A :class:`History` is the first
``n`` messages of a list that later requests extend in place, so every request of a thread holds
the same list and a count: memory and the time to build the requests grow with the messages of
the thread, not with their square.

Contract:

- A :class:`History` is an immutable sequence: the messages it shows never change. It compares
  equal to another history or a tuple of equal messages (and hashes as that tuple), as the tuple
  it replaces did; it is not equal to a list (neither was the tuple).
- :meth:`History.extended` appends in place when the history is the end of its list (the usual
  call: the newest request is extended by the next), shares the list when the messages after the
  history's end are the very objects given (a retry, or another reader of the same recording),
  and copies the history into a new list otherwise (a branch). It never changes what an existing
  history shows. An empty history never extends its list in place (the field default is one
  shared instance).
- A slice from the start (``history[:k]``) is a history on the same list; any other slice is a
  new history of its own. Iteration stops at the history's end even while the list grows.
- Pickles as its list and count, so a session pickles each thread's list once.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator, Sequence
from itertools import islice
from typing import Any, Generic, TypeVar, get_args, overload

from pydantic import GetCoreSchemaHandler
from pydantic_core import core_schema

T = TypeVar("T")
"""The items: messages (:class:`~contextkit.messages.Message`); nothing here depends on them."""

_GROW = threading.Lock()
"""Held while a history checks the end of its list and extends it (two threads extending views of
one list must not both append)."""


class History(Sequence[T], Generic[T]):
    """The first ``len(self)`` messages of a list shared with the histories it extends."""

    __slots__ = ("_hash", "_items", "_n")

    _items: list[T]
    _n: int
    _hash: int | None

    def __init__(self, messages: Iterable[T] = ()) -> None:
        self._items = list(messages)
        self._n = len(self._items)
        self._hash = None

    @classmethod
    def _view(cls, items: list[T], n: int) -> History[T]:
        view = object.__new__(cls)
        view._items, view._n, view._hash = items, n, None
        return view

    @classmethod
    def of(cls, messages: Iterable[T]) -> History[T]:
        """``messages`` as a history: the same object when it is one."""
        return messages if isinstance(messages, History) else cls(messages)

    # --- the sequence ---------------------------------------------------------------------------

    def __len__(self) -> int:
        return self._n

    @overload
    def __getitem__(self, index: int) -> T: ...

    @overload
    def __getitem__(self, index: slice) -> History[T]: ...

    def __getitem__(self, index: int | slice) -> T | History[T]:
        n = self._n
        if isinstance(index, slice):
            start, stop, step = index.indices(n)
            if start == 0 and step == 1:
                return self if stop == n else History._view(self._items, max(stop, 0))
            return History(self._items[start:stop:step] if step > 0 else self._list()[index])
        if index < 0:
            index += n
        if not 0 <= index < n:
            raise IndexError("history index out of range")
        return self._items[index]

    def __iter__(self) -> Iterator[T]:
        return islice(self._items, self._n)

    def __reversed__(self) -> Iterator[T]:
        # From the history's own end: skipping what later views appended would cost their count.
        return map(self._items.__getitem__, range(self._n - 1, -1, -1))

    def __contains__(self, value: object) -> bool:
        return any(m is value or m == value for m in islice(self._items, self._n))

    def index(self, value: Any, start: int = 0, stop: int | None = None) -> int:
        end = self._n if stop is None else min(stop, self._n)
        return self._items.index(value, start, end)

    def count(self, value: Any) -> int:
        return self._list().count(value)

    def _list(self) -> list[T]:
        """The messages as a list: the shared list itself when the history is all of it (read
        only), else a copy of the first ``len(self)``."""
        items = self._items
        return items if len(items) == self._n else items[: self._n]

    # --- growing --------------------------------------------------------------------------------

    def extended(self, messages: Iterable[T]) -> History[T]:
        """This history followed by ``messages`` (see the module contract for when the list is
        shared)."""
        new = messages if isinstance(messages, (list, tuple, History)) else tuple(messages)
        k = len(new)
        if k == 0:
            return self
        items, n = self._items, self._n
        if n:
            with _GROW:
                if len(items) == n:
                    items.extend(new)
                    return History._view(items, n + k)
                if len(items) >= n + k and all(
                    a is b for a, b in zip(islice(items, n, n + k), new, strict=True)
                ):
                    return History._view(items, n + k)
        fork = items[:n]
        fork.extend(new)
        return History._view(fork, n + k)

    def shares(self, other: Sequence[object]) -> bool:
        """Whether ``other`` is a history of the same list (then the shorter begins the longer)."""
        return isinstance(other, History) and other._items is self._items

    # --- value semantics ------------------------------------------------------------------------

    def __eq__(self, other: object) -> bool:
        if isinstance(other, History):
            if other._n != self._n:
                return False
            return other._items is self._items or self._list() == other._list()
        if isinstance(other, tuple):
            return len(other) == self._n and self._list() == list(other)
        return NotImplemented

    def __ne__(self, other: object) -> bool:
        equal = self.__eq__(other)
        return equal if equal is NotImplemented else not equal

    def __hash__(self) -> int:
        if self._hash is None:
            self._hash = hash(tuple(self._list()))
        return self._hash

    def __add__(self, other: object) -> History[T]:
        if isinstance(other, (tuple, History)):
            return self.extended(other)
        return NotImplemented

    def __radd__(self, other: object) -> History[T]:
        if isinstance(other, tuple):
            return History((*other, *self._list()))
        return NotImplemented

    def __repr__(self) -> str:
        return f"History({self._list()!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (History._view, (self._items, self._n))

    # --- pydantic ------------------------------------------------------------------------------

    @classmethod
    def __get_pydantic_core_schema__(
        cls, source: Any, handler: GetCoreSchemaHandler
    ) -> core_schema.CoreSchema:
        # ``source``: the annotated ``Sequence[Message]``; validated and written as a tuple of it.
        (item,) = get_args(source)
        messages = handler.generate_schema(tuple[item, ...])  # type: ignore[valid-type]
        return core_schema.no_info_wrap_validator_function(
            _validate,
            messages,
            serialization=core_schema.plain_serializer_function_ser_schema(
                tuple, return_schema=messages
            ),
        )


def same_prefix(a: Sequence[T], b: Sequence[T], n: int) -> bool:
    """``a[:n] == b[:n]`` (the same objects or equal ones; ``n`` at most either length) without
    copying a tuple: O(1) for two histories of one list, one comparison in C otherwise."""
    if n == 0 or (isinstance(a, History) and a.shares(b)):
        return True
    last = n - 1
    if a[last] is not b[last] and a[last] != b[last]:
        return False  # the common miss, decided in O(1)
    if isinstance(a, tuple) and isinstance(b, tuple):
        short, long = (a, b) if len(a) <= len(b) else (b, a)
        if len(short) == n:
            # ``<=`` walks both tuples in C as ``==`` does and, all of the shorter equal, decides
            # by the sizes; at a pair that differs it orders two messages, which they do not
            # support (TypeError: not a prefix). A slice of the longer would copy it.
            try:
                return short <= long
            except TypeError:
                return False
    return _head(a, n) == _head(b, n)


def _head(messages: Sequence[T], n: int) -> list[T] | tuple[T, ...]:
    if isinstance(messages, History):
        items = messages._items
        return items if len(items) == n else items[:n]
    if isinstance(messages, tuple) and len(messages) == n:
        return list(messages)
    return list(islice(messages, n))


def _validate(value: Any, handler: core_schema.ValidatorFunctionWrapHandler) -> History[Any]:
    if isinstance(value, History):
        return value
    if isinstance(value, list):
        value = tuple(value)
    return History(handler(value))


__all__ = ["History", "same_prefix"]
