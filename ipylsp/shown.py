"""Reports the Python API returns: a `Report` (every field and method as is) that prints as
the answer `%lsp` gives, the `<diagnostics>` block or one line when there is nothing to show,
rather than a dataclass dump of every diagnostic.

Here, beside the public API, because printing takes formatting options and the words of the
request ("no new problems" for a delta, "no problems" for everything); the model stays free of
the report renderers (tests/test_layers.py)."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

from ipylsp.analysis.report import FormatOptions, format_text, mime_bundle
from ipylsp.model.diagnostics import Report


@dataclass(frozen=True, slots=True, repr=False, eq=False)
class ShownReport(Report):
    """A `Report` whose repr is its text block (or `empty`); equal to the same report."""

    empty: str = "no problems"
    options: FormatOptions = field(default_factory=FormatOptions)

    @classmethod
    def of(cls, report: Report, options: FormatOptions, empty: str) -> ShownReport:
        values = {f.name: getattr(report, f.name) for f in fields(Report)}
        return cls(**values, empty=empty, options=options)

    def __eq__(self, other: object) -> bool:  # how it prints is no part of what it says
        if not isinstance(other, Report):
            return NotImplemented
        return all(getattr(self, f.name) == getattr(other, f.name) for f in fields(Report))

    __hash__ = Report.__hash__

    def __repr__(self) -> str:
        return format_text(self, self.options) or self.empty

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        return mime_bundle(self, self.options) or {"text/plain": self.empty}
