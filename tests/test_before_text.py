"""How the check reads a file (`service/check/before_text.py` `read_text`): a file of at most
`max_file_mb` is read, a larger one is `FileRefused` in one sentence that never contradicts
itself. The large files are sparse: their size is real, nothing is written."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ipylsp.model.settings import MB, Settings
from ipylsp.service.check.before_text import FileRefused, read_text


def refusal(path: Path, max_file_mb: float) -> str:
    with pytest.raises(FileRefused) as refused:
        read_text(path, Settings(max_file_mb=max_file_mb).max_file_bytes)
    return refused.value.sentence("big.py")


def test_a_file_at_the_limit_is_read_and_one_byte_more_is_not(tmp_path: Path) -> None:
    """0.001 MB is 1,048 bytes: said in bytes, as `0.001 MB` would read the same for both."""
    path = tmp_path / "big.py"
    path.write_bytes(b"#" * 1047 + b"\n")
    assert read_text(path, Settings(max_file_mb=0.001).max_file_bytes) == "#" * 1047 + "\n"
    path.write_bytes(b"#" * 1048 + b"\n")
    assert refusal(path, 0.001) == (
        "not checked: big.py is 1,049 bytes, over the 1,048-byte limit (IPyLSP.max_file_mb)"
    )


@pytest.mark.parametrize(("size", "max_file_mb", "why"), [
    (MB + 1, 1, "is 1,048,577 bytes, over the 1,048,576-byte limit"),  # was "1 MB ... 1 MB"
    (8 * MB + 1, 8, "is 8,388,609 bytes, over the 8,388,608-byte limit"),
    (8 * MB + 4000, 8, "is 8,392,608 bytes, over the 8,388,608-byte limit"),  # 8.0038 MB
    (8 * MB + MB // 20, 8, "is 8.05 MB, over the 8 MB limit"),
    (9 * MB, 8, "is 9 MB, over the 8 MB limit"),
    (3 * MB // 2, 1, "is 1.5 MB, over the 1 MB limit"),
    (int(999.6 * MB), 999, "is 1,000 MB, over the 999 MB limit"),  # was "1e+03 MB"
])
def test_a_size_over_the_limit_never_reads_as_the_limit(
    tmp_path: Path, size: int, max_file_mb: float, why: str
) -> None:
    path = tmp_path / "big.py"
    with path.open("wb") as handle:
        os.truncate(handle.fileno(), size)
    assert refusal(path, max_file_mb) == f"not checked: big.py {why} (IPyLSP.max_file_mb)"
