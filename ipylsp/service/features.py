"""Language features beyond diagnostics: hover, definition, references, completions, symbols.

Positions in and out are 0-based lines and code-point columns; the wire's encoding is
converted with `analysis.positions` using the text of the file each position belongs to.
The first server of the file that advertises the feature answers.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ipylsp.analysis.model import Unknown, UnknownReason
from ipylsp.analysis.positions import Encoding, LineIndex
from ipylsp.lsp import languages, registry
from ipylsp.lsp.client import ClientError, LanguageClient
from ipylsp.lsp.documents import path_to_uri, uri_to_path
from ipylsp.service.baseline import read_text
from ipylsp.service.checker import Checker, display_path

MAX_ITEMS = 100

PROVIDERS = {
    "hover": ("hoverProvider", "textDocument/hover"),
    "definition": ("definitionProvider", "textDocument/definition"),
    "references": ("referencesProvider", "textDocument/references"),
    "completions": ("completionProvider", "textDocument/completion"),
    "symbols": ("documentSymbolProvider", "textDocument/documentSymbol"),
}

SYMBOL_KINDS = {
    1: "file", 2: "module", 3: "namespace", 4: "package", 5: "class", 6: "method",
    7: "property", 8: "field", 9: "constructor", 10: "enum", 11: "interface", 12: "function",
    13: "variable", 14: "constant", 15: "string", 16: "number", 17: "boolean", 18: "array",
    19: "object", 20: "key", 21: "null", 22: "enum member", 23: "struct", 24: "event",
    25: "operator", 26: "type parameter",
}


@dataclass(frozen=True, slots=True)
class Location:
    path: Path
    line: int
    column: int


@dataclass(frozen=True, slots=True)
class Symbol:
    name: str
    kind: str
    line: int
    column: int
    depth: int = 0


@dataclass(frozen=True, slots=True)
class FeatureResult:
    """What one feature request produced; `error` says why there is nothing."""

    kind: str
    server_id: str | None = None
    text: str = ""
    locations: tuple[Location, ...] = ()
    items: tuple[str, ...] = ()
    symbols: tuple[Symbol, ...] = ()
    error: str = ""

    def format(self, root: Path | None = None) -> str:
        """The answer as people and agents read it: 1-based positions, paths relative to root."""
        if self.error:
            return f"{self.kind}: {self.error}"
        if self.kind == "hover":
            return self.text or "(no hover information)"
        if self.kind == "completions":
            return "\n".join(self.items) or "(no completions)"
        if self.kind == "symbols":
            lines = [
                f"{'  ' * s.depth}{s.kind} {s.name} [{s.line + 1}:{s.column + 1}]"
                for s in self.symbols
            ]
            return "\n".join(lines) or "(no symbols)"
        lines = [
            f"{display_path(loc.path, root)}:{loc.line + 1}:{loc.column + 1}"
            for loc in self.locations
        ]
        return "\n".join(lines) or f"(no {self.kind})"

    def __str__(self) -> str:
        return self.format(Path.cwd())


class FeatureError(Exception):
    pass


async def request_feature(
    checker: Checker,
    kind: str,
    path: Path,
    line: int,
    column: int,
    deadline: float,
) -> FeatureResult:
    if kind not in PROVIDERS:
        raise ValueError(f"unknown feature {kind!r}")
    text = read_text(path)
    if text is None:
        return FeatureResult(kind, error=f"no such file: {path}")
    language_id = languages.language_id(path)
    if language_id is None:
        return FeatureResult(kind, error=f"no language server knows {path.name}")
    capability, method = PROVIDERS[kind]
    errors: list[str] = []
    for spec in registry.servers_for(path, checker.settings, checker.installed):
        slot = checker.slot_for(spec, path)
        if isinstance(slot, Unknown):
            errors.append(f"{spec.id}: {slot.reason.value}: {slot.detail}")
            continue
        try:
            client = await checker.pool.acquire(slot, deadline)
            if not client.server_capabilities.get(capability):
                continue
            await client.sync_document(path, text, language_id)
            params = _params(kind, client, path, text, line, column)
            result = await client.request(method, params, max(deadline - _now(), 0.1))
        except ClientError as exc:
            errors.append(f"{spec.id}: {exc.reason.value}: {exc.detail}")
            if exc.reason is UnknownReason.TIMED_OUT:
                await checker.pool.record_timeout(slot)
            continue
        return _parse(kind, spec.id, client.encoding, path, text, result)
    detail = "; ".join(errors) or f"no server for {path.name} offers {kind}"
    return FeatureResult(kind, error=detail)


def _now() -> float:
    import time

    return time.monotonic()


def _params(
    kind: str, client: LanguageClient, path: Path, text: str, line: int, column: int
) -> dict[str, Any]:
    document = {"uri": path_to_uri(path)}
    if kind == "symbols":
        return {"textDocument": document}
    character = LineIndex(text).to_wire(line, column, client.encoding)
    params: dict[str, Any] = {
        "textDocument": document,
        "position": {"line": line, "character": character},
    }
    if kind == "references":
        params["context"] = {"includeDeclaration": True}
    return params


def _parse(
    kind: str, server_id: str, encoding: Encoding, path: Path, text: str, result: Any
) -> FeatureResult:
    if kind == "hover":
        return FeatureResult(kind, server_id, text=_hover_text(result))
    if kind in ("definition", "references"):
        return FeatureResult(kind, server_id, locations=_locations(result, encoding, path, text))
    if kind == "completions":
        raw = result.get("items", []) if isinstance(result, dict) else result or []
        labels = [str(i.get("label")) for i in raw if isinstance(i, dict) and i.get("label")]
        return FeatureResult(kind, server_id, items=tuple(labels[:MAX_ITEMS]))
    index = LineIndex(text)
    return FeatureResult(kind, server_id, symbols=tuple(_symbols(result, index, encoding, 0)))


def _hover_text(result: Any) -> str:
    if not isinstance(result, dict):
        return ""
    contents = result.get("contents")
    parts = contents if isinstance(contents, list) else [contents]
    texts = []
    for part in parts:
        if isinstance(part, str):
            texts.append(part)
        elif isinstance(part, dict) and isinstance(part.get("value"), str):
            texts.append(part["value"])
    return "\n".join(t.strip() for t in texts if t and t.strip())


def _locations(result: Any, encoding: Encoding, path: Path, text: str) -> tuple[Location, ...]:
    raw = result if isinstance(result, list) else [result] if result else []
    found: list[Location] = []
    indexes: dict[Path, LineIndex] = {path: LineIndex(text)}
    for item in raw[:MAX_ITEMS]:
        if not isinstance(item, dict):
            continue
        uri = item.get("uri") or item.get("targetUri")
        rng = item.get("range") or item.get("targetSelectionRange")
        target = uri_to_path(str(uri)) if uri else None
        if target is None or not isinstance(rng, dict):
            continue
        start = rng.get("start") or {}
        line, units = start.get("line"), start.get("character")
        if not isinstance(line, int) or not isinstance(units, int):
            continue
        if target not in indexes:
            other = read_text(target) if target.is_file() else None
            indexes[target] = LineIndex(other or "")
        found.append(Location(target, line, indexes[target].to_column(line, units, encoding)))
    return tuple(found)


def _symbols(result: Any, index: LineIndex, encoding: Encoding, depth: int) -> list[Symbol]:
    out: list[Symbol] = []
    for item in result if isinstance(result, list) else []:
        if not isinstance(item, dict):
            continue
        rng = item.get("selectionRange") or item.get("range") or (
            (item.get("location") or {}).get("range")
        )
        start = (rng or {}).get("start") or {}
        line, units = start.get("line", 0), start.get("character", 0)
        if not isinstance(line, int) or not isinstance(units, int):
            continue
        out.append(
            Symbol(
                name=str(item.get("name", "")),
                kind=SYMBOL_KINDS.get(item.get("kind", 0), "symbol"),
                line=line,
                column=index.to_column(line, units, encoding),
                depth=depth,
            )
        )
        out.extend(_symbols(item.get("children"), index, encoding, depth + 1))
        if len(out) >= MAX_ITEMS:
            break
    return out[:MAX_ITEMS]
