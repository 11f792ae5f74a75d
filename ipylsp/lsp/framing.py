"""Content-Length framing (the LSP base protocol), with caps.

A server that writes garbage, a header block over 8 KiB or a body over the configured size gets
a `FramingError` naming what was wrong; the caller treats the connection as lost, because after
a bad frame the byte stream cannot be trusted to resynchronise.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

MAX_HEADER_BYTES = 8 * 1024
DEFAULT_MAX_BODY_BYTES = 64 * 1024 * 1024


class FramingError(Exception):
    """The peer broke the base protocol; the stream is unusable from here on."""


def encode_message(message: dict[str, Any]) -> bytes:
    """One frame. Non-ASCII stays UTF-8 (`ensure_ascii=False`): the length counts bytes."""
    body = json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode(
        "utf-8", "surrogatepass"
    )
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def _describe(raw: bytes) -> str:
    text = raw[:60].decode("ascii", "backslashreplace")
    return repr(text) + ("..." if len(raw) > 60 else "")


async def read_frame(
    reader: asyncio.StreamReader, *, max_body: int = DEFAULT_MAX_BODY_BYTES
) -> bytes | None:
    """The next frame's body, or None at a clean end of stream (EOF between frames)."""
    header_bytes = 0
    length: int | None = None
    while True:
        try:
            line = await reader.readuntil(b"\n")
        except asyncio.IncompleteReadError as exc:
            if not exc.partial and header_bytes == 0:
                return None
            raise FramingError(
                f"stream ended inside a header block: {_describe(exc.partial)}"
            ) from None
        except asyncio.LimitOverrunError:
            raise FramingError("header line longer than the stream's line limit") from None
        header_bytes += len(line)
        if header_bytes > MAX_HEADER_BYTES:
            raise FramingError(f"header block larger than {MAX_HEADER_BYTES} bytes")
        stripped = line.strip()
        if not stripped:
            if length is None:
                if header_bytes <= 2:  # a stray blank line between frames: tolerate
                    header_bytes = 0
                    continue
                raise FramingError("header block without Content-Length")
            break
        name, sep, value = stripped.partition(b":")
        if not sep:
            raise FramingError(f"not an LSP header line: {_describe(stripped)}")
        if name.strip().lower() == b"content-length":
            try:
                length = int(value.strip())
            except ValueError:
                raise FramingError(f"bad Content-Length: {_describe(value.strip())}") from None
            if length < 0:
                raise FramingError(f"negative Content-Length: {length}")
            if length > max_body:
                raise FramingError(
                    f"message of {length} bytes exceeds the limit of {max_body} bytes "
                    "(IPyLSP.max_message_bytes)"
                )
    try:
        return await reader.readexactly(length)
    except asyncio.IncompleteReadError as exc:
        raise FramingError(
            f"stream ended inside a message body ({len(exc.partial)} of {length} bytes)"
        ) from None
