"""One writer per checkpoint path: an exclusive ``flock`` on ``<path>.lock``, the path with its
links resolved (so an alias locks the same file), checked before every write (see
:mod:`contextkit.engine._checkpoint`)."""

from __future__ import annotations

import fcntl
import os
import weakref
from pathlib import Path

from contextkit.engine._errors import CheckpointError


class PathLock:
    """An exclusive ``flock`` on ``<path>.lock``, held while a writer of this process uses it."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        real = path.resolve()  # an alias (a linked path or folder) locks the same file
        self.path = path
        self.lock_path = real.with_name(real.name + ".lock")
        self.fd = self._take()
        self.owner: object = None

    def _take(self) -> int:
        flags = os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0)
        fd = os.open(self.lock_path, flags, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.read(fd, 32).decode("ascii", "replace").strip()
            os.close(fd)
            who = f"process {holder}" if holder.isdigit() else "another process"
            raise CheckpointError(
                f"{self.path}: checkpoint in use by another writer ({who} holds "
                f"{self.lock_path.name}); one engine per checkpoint path: give this one another "
                "path, or stop the other"
            ) from None
        except OSError:
            os.close(fd)
            raise
        os.ftruncate(fd, 0)
        os.write(fd, str(os.getpid()).encode())
        return fd

    def check(self) -> None:
        """Before a write: the lock file at the path is still the one this lock holds. When it was
        removed or replaced (another writer could then have taken a new one), take the one now
        there, or stop with a CheckpointError when another writer holds it."""
        try:
            there = os.stat(self.lock_path, follow_symlinks=False)
        except FileNotFoundError:
            there = None
        held = os.fstat(self.fd)
        if there is not None and (there.st_dev, there.st_ino) == (held.st_dev, held.st_ino):
            return
        fd = self._take()  # a CheckpointError when another writer took the path meanwhile
        os.close(self.fd)
        self.fd = fd

    def __del__(self) -> None:
        fd = getattr(self, "fd", None)  # absent when __init__ failed
        if fd is not None:
            os.close(fd)  # releases the flock


_LOCKS: weakref.WeakValueDictionary[str, PathLock] = weakref.WeakValueDictionary()


def take_lock(path: Path, token: object) -> PathLock:
    key = str(path.resolve())
    lock = _LOCKS.get(key)
    if lock is None:
        lock = _LOCKS[key] = PathLock(path)
    lock.owner = token  # the newest writer of this process takes the path over
    return lock


__all__ = ["PathLock", "take_lock"]
