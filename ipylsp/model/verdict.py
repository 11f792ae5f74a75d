"""`Verdict`: what a check prints on a command line and its exit code, a plain value the broker
sends a thin client (`analysis/report/verdict.py` makes it). A plain class with slots, so that
the thin client that reads one imports nothing else (not even `typing`)."""

from __future__ import annotations

EXIT_CLEAN, EXIT_PROBLEMS, EXIT_FAILURE = 0, 1, 2
"""0 clean, 1 problems shown, 2 a file not checked or a server without an answer."""


class Verdict:
    __slots__ = ("exit", "stderr", "stdout")

    def __init__(self, stdout: str, stderr: tuple[str, ...] = (), exit: int = EXIT_CLEAN
                 ) -> None:
        self.stdout = stdout
        """The report as printed ("" when the text block is empty: clean)."""
        self.stderr = stderr
        self.exit = exit

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Verdict) and (self.stdout, self.stderr, self.exit) == (
            other.stdout, other.stderr, other.exit)

    def __hash__(self) -> int:
        return hash((self.stdout, self.stderr, self.exit))

    def __repr__(self) -> str:
        return f"Verdict({self.stdout!r}, {self.stderr!r}, {self.exit!r})"

    @classmethod
    def from_wire(cls, data: object) -> Verdict:
        """The verdict a broker sent (`to_wire` of one); `ValueError` when it is not one."""
        if not isinstance(data, dict):
            raise ValueError("a verdict is an object")
        stdout, stderr, code = data.get("stdout"), data.get("stderr"), data.get("exit")
        if (not isinstance(stdout, str) or not isinstance(stderr, list)
                or not all(isinstance(line, str) for line in stderr)
                or not isinstance(code, int) or isinstance(code, bool)):
            raise ValueError("not a verdict")
        return cls(stdout, tuple(stderr), code)

    def to_wire(self) -> dict[str, object]:
        return {"stdout": self.stdout, "stderr": list(self.stderr), "exit": self.exit}
