"""What every feature request shares: where it points (`At`), the wire's position and
document identifier, sending it with lsprotocol's params, and turning the answer's wire
columns into code points (`Columns`). A failure is a `ClientError`; choosing the server is
the service's job."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ipylsp.lsp import protocol
from ipylsp.lsp.documents import path_to_uri
from ipylsp.model.positions import Encoding, LineIndex

if TYPE_CHECKING:
    from ipylsp.lsp.client import LanguageClient

MAX_ITEMS = 100
"""Most items kept of one answer (places, symbols, completions)."""

TextSource = Callable[[Path], "str | None"]
"""The text of a file a server's answer points into (None: unreadable), for its columns."""


@dataclass(frozen=True, slots=True)
class At:
    """A position in a document the server has open with `text`."""

    path: Path
    text: str
    line: int
    column: int


def supports(client: LanguageClient, capability: str) -> bool:
    """Whether the server advertised `capability` (e.g. "hoverProvider")."""
    return bool(client.server_capabilities.get(capability))


def position(client: LanguageClient, at: At) -> Any:
    """`at` as the wire's Position, in the encoding the server negotiated."""
    t = protocol.types()
    character = LineIndex(at.text).to_wire(at.line, at.column, client.encoding)
    return t.Position(line=at.line, character=character)


def document(path: Path) -> Any:
    """The TextDocumentIdentifier of a file."""
    return protocol.types().TextDocumentIdentifier(uri=path_to_uri(path))


async def ask(
    client: LanguageClient, method: str, params: Any, response: type[Any], timeout: float
) -> Any:
    """Send a request built from lsprotocol params; its answer structured as `response`."""
    result = await client.request(method, protocol.params(params), timeout)
    return protocol.answer(method, result, response)


class Columns:
    """Wire columns -> code points, one `LineIndex` per file an answer points into."""

    def __init__(self, encoding: Encoding, texts: TextSource, known: At | None = None) -> None:
        """`known`: the queried document, whose text the server has (not read again)."""
        self._encoding = encoding
        self._texts = texts
        self._indexes: dict[Path, LineIndex] = (
            {known.path: LineIndex(known.text)} if known is not None else {}
        )

    def column(self, path: Path, line: int, units: int) -> int:
        index = self._indexes.get(path)
        if index is None:
            index = self._indexes[path] = LineIndex(self._texts(path) or "")
        return index.to_column(line, units, self._encoding)
