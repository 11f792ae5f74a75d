"""`ipylsp.json_text`: the same text as `json`, both ways, without importing it."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import pytest

from ipylsp import json_text

VALUES = [
    {"call": "check", "args": {"files": [{"path": "/w/a.py", "before": "x = 1\n"}],
                               "timeout": 30.0, "severity": None, "as_json": False}},
    ["é", "\u2028", "\x00\x1f", '"\\', "\ud800", "日本"],
    [0, -1, 2**70, 1.5, -0.0, 1e300, 5e-324, True, False, None],
    [[], {}, [[{}]], {"": ""}],
    ("a", ("b",)),
    "a lone string\n",
    7,
    None,
]


@pytest.mark.parametrize("value", VALUES)
def test_dumps_is_json_dumps_byte_for_byte(value: object) -> None:
    assert json_text.dumps(value) == json.dumps(value, ensure_ascii=False, separators=(",", ":"))


@pytest.mark.parametrize("value", VALUES)
def test_loads_reads_back_what_json_reads(value: object) -> None:
    text = json.dumps(value, ensure_ascii=False)
    assert json_text.loads(text) == json.loads(text)
    assert json_text.loads(f" \n{text}\t\r ") == json.loads(text)


def test_constants_as_json_reads_them() -> None:
    read = json_text.loads("[NaN, Infinity, -Infinity]")
    assert math.isnan(read[0]) and read[1:] == [math.inf, -math.inf]


@pytest.mark.parametrize("text", ["", "  ", "{", "[1,]", "1 2", "nul", '{"a" 1}', '"\\x"',
                                  "[1]x", '"a\nb"'])
def test_what_json_refuses_is_refused_with_its_error(text: str) -> None:
    with pytest.raises(json.JSONDecodeError) as expected:
        json.loads(text)
    with pytest.raises(json.JSONDecodeError) as got:
        json_text.loads(text)
    assert (got.value.msg, got.value.pos) == (expected.value.msg, expected.value.pos)


def test_what_json_cannot_write_is_a_type_or_value_error() -> None:
    with pytest.raises(TypeError, match="not JSON serializable"):
        json_text.dumps([object()])
    with pytest.raises(TypeError):
        json_text.dumps({1j: 2})
    cycle: list[object] = []
    cycle.append(cycle)
    with pytest.raises(ValueError, match="Circular reference"):
        json_text.dumps(cycle)
    assert json_text.dumps(["after an error, the next call is whole"]) == (
        '["after an error, the next call is whole"]')


@pytest.mark.real
def test_imports_neither_json_nor_re() -> None:
    code = ("import sys; from ipylsp import json_text;"
            "json_text.loads(json_text.dumps({'a': [1]}));"
            "print(sorted({'json', 're', 'enum'} & set(sys.modules)))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
