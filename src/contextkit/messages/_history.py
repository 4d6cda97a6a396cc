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


class _Items(list[T]):
    """The shared list, with how many of its leading items a validation has checked (items are
    only ever appended, so the checked start stays checked)."""

    __slots__ = ("checked",)

    def __init__(self, items: Iterable[T] = ()) -> None:
        super().__init__(items)
        self.checked = 0

    def __reduce__(self) -> tuple[Any, ...]:
        return (_Items, (list(self),))


class History(Sequence[T], Generic[T]):
    """The first ``len(self)`` messages of a list shared with the histories it extends."""

    __slots__ = ("_hash", "_items", "_n")

    _items: _Items[T]
    _n: int
    _hash: int | None

    def __init__(self, messages: Iterable[T] = ()) -> None:
        self._items = _Items(messages)
        self._n = len(self._items)
        self._hash = None

    @classmethod
    def _view(cls, items: _Items[T], n: int) -> History[T]:
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
        # Negative bounds count from the history's end, not from the shared list's.
        first, end, _ = slice(start, stop).indices(self._n)
        return self._items.index(value, first, end)

    def count(self, value: Any) -> int:
        return self._list().count(value)

    def _list(self) -> list[T]:
        """The messages as a list of their own: a copy of the first ``len(self)`` (one atomic
        slice; the shared list itself could grow under a comparison in another thread)."""
        return self._items[: self._n]

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
        fork = _Items(items[:n])
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
        args = get_args(source)
        item = args[0] if args else Any  # a bare History (its JSON schema): any items
        messages = handler.generate_schema(tuple[item, ...])  # type: ignore[valid-type]
        return core_schema.no_info_wrap_validator_function(
            _validate,
            messages,
            serialization=core_schema.plain_serializer_function_ser_schema(
                tuple, return_schema=messages
            ),
        )


def same_prefix(a: Sequence[T], b: Sequence[T], n: int) -> bool:
    """``a[:n] == b[:n]`` (the same objects or equal ones; ``n`` at most either length): O(1)
    for two histories of one list, else the last item first (the common miss) and then one
    list comparison in C (which tests identity before equality)."""
    if n == 0 or (isinstance(a, History) and a.shares(b)):
        return True
    last = n - 1
    if a[last] is not b[last] and a[last] != b[last]:
        return False  # the common miss, decided in O(1)
    return _head(a, n) == _head(b, n)


def _head(messages: Sequence[T], n: int) -> list[T]:
    """The first ``n`` items as a list of their own (one slice in C for a history or a tuple)."""
    if isinstance(messages, History):
        return messages._items[:n]
    if isinstance(messages, (tuple, list)):
        return list(messages[:n])
    return list(islice(messages, n))


def _validate(value: Any, handler: core_schema.ValidatorFunctionWrapHandler) -> History[Any]:
    if isinstance(value, History):
        # Its items are validated once per list: a request that extends a validated history
        # costs the new items only. Items the validator would turn into others (dicts, say)
        # give a history of their own.
        items, n = value._items, value._n
        if items.checked >= n:
            return value
        fresh = items[items.checked : n]
        checked = handler(tuple(fresh))
        if all(a is b for a, b in zip(checked, fresh, strict=True)):
            with _GROW:
                items.checked = max(items.checked, n)
            return value
        return History(handler(tuple(value)))
    if isinstance(value, list):
        value = tuple(value)
    history: History[Any] = History(handler(value))
    history._items.checked = history._n
    return history


__all__ = ["History", "same_prefix"]
