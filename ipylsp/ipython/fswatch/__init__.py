"""Finding what child processes wrote: inotify (Linux) or a stat snapshot.

An audit hook cannot see the writes of ``!cmd``, ``%%bash`` or ``subprocess.run``. The watcher
therefore *arms* a tracker when a cell spawns its first child (from inside the audit hook, so
before the child exists) and *collects* at the end of the cell:

- `InotifyTracker` (preferred): one inotify instance, a watch on every directory of the roots
  (minus skipped ones), created on first use and kept across cells. Arming drains the queue
  (new directories get watches before the child runs; earlier file events are dropped);
  collecting reads what the queue holds. A cell with a child that wrote nothing costs a couple
  of ``read()`` calls. Events are queued by the kernel synchronously with the write, so once the
  child has exited its events are there: no sleeping.
- `ScanTracker` (fallback): a (mtime_ns, ctime_ns, size, inode) snapshot of every file of the
  roots taken when armed, compared with a second walk at the end. Costs two walks per cell with
  children; used when inotify is unavailable (not Linux, ``max_user_instances`` reached) or the
  watch limit (``/proc/sys/fs/inotify/max_user_watches``) is hit.

Both report, per path, whether the file did not exist when armed (``created``) and, for a
rename of a file that did exist, where it came from (``moved_from``). Neither reads contents.

Modules: `tracker` (the protocol and result types), `inotify` (the inotify tracker), `scan`
(the stat-snapshot tracker and the tree walk both use). Their public names are re-exported
here, the path the watcher and the tests import from.
"""

from __future__ import annotations

from ipylsp.ipython.fswatch.inotify import IN_CLOEXEC as IN_CLOEXEC
from ipylsp.ipython.fswatch.inotify import IN_CLOSE_WRITE as IN_CLOSE_WRITE
from ipylsp.ipython.fswatch.inotify import IN_CREATE as IN_CREATE
from ipylsp.ipython.fswatch.inotify import IN_DELETE as IN_DELETE
from ipylsp.ipython.fswatch.inotify import IN_DELETE_SELF as IN_DELETE_SELF
from ipylsp.ipython.fswatch.inotify import IN_DONT_FOLLOW as IN_DONT_FOLLOW
from ipylsp.ipython.fswatch.inotify import IN_EXCL_UNLINK as IN_EXCL_UNLINK
from ipylsp.ipython.fswatch.inotify import IN_IGNORED as IN_IGNORED
from ipylsp.ipython.fswatch.inotify import IN_ISDIR as IN_ISDIR
from ipylsp.ipython.fswatch.inotify import IN_MODIFY as IN_MODIFY
from ipylsp.ipython.fswatch.inotify import IN_MOVE_SELF as IN_MOVE_SELF
from ipylsp.ipython.fswatch.inotify import IN_MOVED_FROM as IN_MOVED_FROM
from ipylsp.ipython.fswatch.inotify import IN_MOVED_TO as IN_MOVED_TO
from ipylsp.ipython.fswatch.inotify import IN_NONBLOCK as IN_NONBLOCK
from ipylsp.ipython.fswatch.inotify import IN_ONLYDIR as IN_ONLYDIR
from ipylsp.ipython.fswatch.inotify import IN_Q_OVERFLOW as IN_Q_OVERFLOW
from ipylsp.ipython.fswatch.inotify import WATCH_MASK as WATCH_MASK
from ipylsp.ipython.fswatch.inotify import InotifyTracker as InotifyTracker
from ipylsp.ipython.fswatch.inotify import max_user_watches as max_user_watches
from ipylsp.ipython.fswatch.scan import ScanTracker as ScanTracker
from ipylsp.ipython.fswatch.scan import Signature as Signature
from ipylsp.ipython.fswatch.scan import mtime_changes as mtime_changes
from ipylsp.ipython.fswatch.scan import snapshot as snapshot
from ipylsp.ipython.fswatch.tracker import ChildChange as ChildChange
from ipylsp.ipython.fswatch.tracker import ChildChanges as ChildChanges
from ipylsp.ipython.fswatch.tracker import ChildTracker as ChildTracker
from ipylsp.ipython.fswatch.tracker import TrackerUnavailable as TrackerUnavailable
