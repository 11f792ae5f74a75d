"""ipylsp's JSON contracts, checked against their one source (`ipylsp/schemas/*.schema.json`).

`validate_report`, `validate_marks` and `validate_status` raise `jsonschema.ValidationError`
on a payload the schema does not describe. `install` makes every report and status view this
test process renders check itself (their `to_json`, wherever it is called from); kernels'
payloads are checked where the tests read them (`tests/test_cells_kernel.py`,
`tests/test_cell_marks_kernel.py`, `tests/test_ipython_kernel.py`).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

SCHEMAS = Path(__file__).resolve().parent.parent / "ipylsp" / "schemas"


@functools.cache
def _validators() -> dict[str, Any]:
    import jsonschema
    from referencing import Registry, Resource

    schemas = {p.name: json.loads(p.read_text(encoding="utf-8"))
               for p in SCHEMAS.glob("*.schema.json")}
    registry: Registry[Any] = Registry().with_resources(
        (name, Resource.from_contents(schema)) for name, schema in schemas.items())
    return {name.removesuffix(".schema.json"): jsonschema.Draft202012Validator(
        schema, registry=registry) for name, schema in schemas.items()}


def schema(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((SCHEMAS / f"{name}.schema.json").read_text("utf-8"))
    return loaded


def validate_report(payload: object) -> None:
    _validators()["diagnostics"].validate(payload)


def validate_marks(payload: object) -> None:
    _validators()["marks"].validate(payload)


def validate_status(payload: object) -> None:
    _validators()["status"].validate(payload)


def install() -> None:
    """Every `to_json` of this process validates what it returns: the report's, and the
    status view's (the status route's answer, the rows status files and `lsp_status`
    carry)."""
    import ipylsp.analysis.report as package
    from ipylsp.analysis.report import schema as module
    from ipylsp.service.admin.server_table import StatusView

    status_json = StatusView.to_json
    if not getattr(status_json, "validated", False):
        def validated_status(view: StatusView) -> dict[str, Any]:
            payload = status_json(view)
            validate_status(payload)
            return payload

        validated_status.validated = True  # type: ignore[attr-defined]
        StatusView.to_json = validated_status  # type: ignore[method-assign,assignment]

    original = module.to_json
    if getattr(original, "validated", False):
        return

    @functools.wraps(original)
    def to_json(*args: Any, **kwargs: Any) -> dict[str, object]:
        payload = original(*args, **kwargs)
        validate_report(payload)
        return payload

    to_json.validated = True  # type: ignore[attr-defined]
    validated: Callable[..., dict[str, object]] = to_json
    module.to_json = validated
    package.to_json = validated
