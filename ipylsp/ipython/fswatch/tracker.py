"""What a child-write tracker is: the protocol, its result (`ChildChanges`), its failure.

Its own module so that both trackers (`inotify`, `scan`) and the watcher share these types
without importing each other.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol


@dataclass(slots=True)
class ChildChange:
    created: bool  # the path did not exist when the tracker was armed
    moved_from: str | None = None  # a path that existed when armed and was renamed here


@dataclass(slots=True)
class ChildChanges:
    paths: dict[str, ChildChange] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)  # why the result may be incomplete

    def touch(self, path: str, *, created: bool = False) -> ChildChange:
        change = self.paths.get(path)
        if change is None:
            change = self.paths[path] = ChildChange(created=created)
        return change

    def origin(self, path: str) -> str | None:
        """Where the content at `path` came from, if it existed when armed."""
        change = self.paths.get(path)
        if change is None:
            return path
        if change.moved_from is not None:
            return change.moved_from
        return None if change.created else path


class TrackerUnavailable(Exception):
    """The tracker cannot work here (no inotify, watch limit, workspace over the caps)."""


class ChildTracker(Protocol):
    mode: str
    failed: str | None  # the tracker cannot go on (the watcher switches to another)

    def idle(self) -> None:
        """Between cells: keep up with the tree, forget file events."""

    def arm(self, roots: tuple[str, ...]) -> None:
        """A child is about to be spawned: changes from now on count."""

    def touched(self, path: str) -> bool:
        """Whether `path` changed since `arm` (a kernel write after a child's write)."""

    def collect(self) -> ChildChanges:
        """End of the cell: what changed since `arm`."""

    def close(self) -> None: ...
