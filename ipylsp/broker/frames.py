"""The broker socket's messages: a 4-byte big-endian length, then that many bytes of UTF-8
JSON; a message over `MAX_FRAME` is refused before it is read. A client's reads and writes
keep to a deadline (`socket` timeouts set from it), so no call waits on a broker beyond its
budget. The broker's side of a call connection is read and written by its context's loop
(`broker/connection.py`: `Unframing`, `encode`), whose writes a client that does not read
holds in that connection's buffer, never the loop.

A request is `{"call": name, "args": {...}}`, with `"within"`: the seconds the client waits
for its answer; its answer `{"ok": value}` or `{"error": {"kind": ..., "message": ...}}`,
with `"journal"` when the call changed what the session owes its client (`ledger`), after any
number of `{"progress": line}` when the request says `"progress": true` (what a long call
waits for: servers starting). The first request of a connection is `hello` (the secret, the
build, the client's context).

Standard library only: `_socket`, not `socket`, and `json_text`, not `json` (a thin client
pays for each import: `socket` brings in `enum` and `selectors`, `json` brings in `re`); the
sockets are `socket.socket`s or their `_socket.socket` base, whose methods these are.
"""

from __future__ import annotations

import _socket
import struct
import time

from ipylsp import json_text

TYPE_CHECKING = False  # `typing.TYPE_CHECKING`, without importing typing (see ipylsp/__init__)
if TYPE_CHECKING:
    from _socket import socket
    from typing import Any

MAX_FRAME = 256 * 1024 * 1024
"""The largest message either side accepts (a report of many files, a big file's text)."""

_HEADER = struct.Struct(">I")


class FrameError(OSError):
    """The peer closed, sent what is not a message, or did not answer in time."""


class Late(FrameError):
    """The deadline passed before the peer read or answered."""


def send(sock: socket, message: dict[str, Any], deadline: float | None = None) -> None:
    data = encode(message)
    _timeout(sock, deadline)
    try:
        sock.sendall(data)
    except TimeoutError:
        raise Late("the peer did not read in time") from None


def encode(message: dict[str, Any]) -> bytes:
    """`message` as a frame's bytes; `FrameError` when it is over `MAX_FRAME`."""
    body = json_text.dumps(message).encode("utf-8", "surrogatepass")
    if len(body) > MAX_FRAME:
        raise FrameError(f"message of {len(body)} bytes is over {MAX_FRAME}")
    return _HEADER.pack(len(body)) + body


def error(kind: str, message: str) -> dict[str, Any]:
    """An answer that is an error of `kind` (the module doc's form)."""
    return {"error": {"kind": kind, "message": message}}


class Unframing:
    """Messages from bytes as they arrive (a connection an event loop reads): `feed` them,
    then take what is whole with `next`."""

    def __init__(self) -> None:
        self._buffer = bytearray()

    def feed(self, data: bytes) -> None:
        self._buffer += data

    def next(self) -> dict[str, Any] | None:
        """The next whole message, None until one is; `FrameError` for one over `MAX_FRAME`
        (refused from its length) or not a message."""
        if len(self._buffer) < _HEADER.size:
            return None
        (size,) = _HEADER.unpack_from(self._buffer)
        if size > MAX_FRAME:
            raise FrameError(f"message of {size} bytes is over {MAX_FRAME}")
        end = _HEADER.size + size
        if len(self._buffer) < end:
            return None
        body = bytes(self._buffer[_HEADER.size:end])
        del self._buffer[:end]
        return _decoded(body)


def receive(sock: socket, deadline: float | None = None) -> dict[str, Any]:
    """The next message; `FrameError` when the peer closed, overran, or `deadline` passed."""
    return _decoded(receive_bytes(sock, deadline))


def _decoded(body: bytes) -> dict[str, Any]:
    try:
        message = json_text.loads(body.decode("utf-8", "surrogatepass"))
    except ValueError as exc:
        raise FrameError(f"not a message: {exc}") from None
    if not isinstance(message, dict):
        raise FrameError("not a message: not a JSON object")
    return message


def receive_bytes(sock: socket, deadline: float | None = None) -> bytes:
    """The next message's bytes, unread (`receive`)."""
    (size,) = _HEADER.unpack(_exactly(sock, _HEADER.size, deadline))
    if size > MAX_FRAME:
        raise FrameError(f"message of {size} bytes is over {MAX_FRAME}")
    return _exactly(sock, size, deadline)


def peer_uid(sock: socket) -> int:
    """The user of the process at the other end of a connected Unix socket."""
    creds = sock.getsockopt(_socket.SOL_SOCKET, _socket.SO_PEERCRED, struct.calcsize("3i"))
    return int(struct.unpack("3i", creds)[1])


def _timeout(sock: socket, deadline: float | None) -> None:
    if deadline is None:
        sock.settimeout(None)
        return
    left = deadline - time.monotonic()
    if left <= 0:
        raise Late("no answer in time")
    sock.settimeout(left)


def _exactly(sock: socket, size: int, deadline: float | None) -> bytes:
    chunks: list[bytes] = []
    left = size
    while left:
        _timeout(sock, deadline)
        try:
            chunk = sock.recv(min(left, 1 << 20))
        except TimeoutError:
            raise Late("no answer in time") from None
        if not chunk:
            raise FrameError("the peer closed the connection")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)
