"""The pending channel (service/pending.py): a hand-over forgets exactly what it handed over.

A cut hand-over keeps the rest for the next call, newest writes first; a character budget
that shows less than the count caps allow keeps what it did not show; what a later write
fixed, or the file no longer has, is never handed over.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from ipylsp.analysis.report import FormatOptions, format_text
from ipylsp.model.diagnostics import Diagnostic, FileReport, Range, Report, Severity
from ipylsp.service.outputs.pending import PendingChannel


def error(line: int, message: str = "bad", severity: Severity = Severity.ERROR) -> Diagnostic:
    return Diagnostic(Range.of(line, 0, line, 3), severity, message, "ty", "E1", "ty")


def file(name: str, *diagnostics: Diagnostic, fixed: tuple[Diagnostic, ...] = ()) -> FileReport:
    return FileReport(Path("/w") / name, name, diagnostics=diagnostics,
                      current=diagnostics, fixed=fixed, servers=("ty",))


def handed(report: Report) -> list[tuple[str, int]]:
    return [(f.display_path, d.range.start.line) for f in report.files for d in f.diagnostics]


def drain(channel: PendingChannel, **kwargs: object) -> list[list[tuple[str, int]]]:
    """Every hand-over until the channel is empty, each checked against the left count."""
    rounds: list[list[tuple[str, int]]] = []
    while True:
        before = len(channel)
        report, left = channel.take(**kwargs)  # type: ignore[arg-type]
        if not report.files:
            assert left == 0 == before
            return rounds
        rounds.append(handed(report))
        assert left == before - len(rounds[-1]) == len(channel)


def test_a_cut_hand_over_keeps_the_rest_for_the_next_call() -> None:
    channel = PendingChannel()
    channel.record(Report(files=tuple(file(f"old_{i}.py", error(0)) for i in range(25))))
    channel.record(Report(files=tuple(file(f"new_{i}.py", error(0)) for i in range(25))))
    first, left = channel.take()
    assert left == 20
    # newest writes first, each batch in its own order
    assert handed(first) == [(f"new_{i}.py", 0) for i in range(25)] + [
        (f"old_{i}.py", 0) for i in range(5)
    ]
    second, left = channel.take()
    assert (handed(second), left) == ([(f"old_{i}.py", 0) for i in range(5, 25)], 0)
    assert channel.take() == (Report(), 0)


def test_every_problem_is_handed_over_exactly_once() -> None:
    channel = PendingChannel()
    written = [file(f"f{i}.py", *(error(line, f"m{line}") for line in range(i % 13)))
               for i in range(40)]
    channel.record(Report(files=tuple(written)))
    rounds = drain(channel)
    everything = Counter(pair for hand in rounds for pair in hand)
    assert everything == Counter(
        (f.display_path, d.range.start.line) for f in written for d in f.diagnostics
    )
    assert max(everything.values()) == 1
    assert [len(hand) for hand in rounds[:7]] == [30] * 7  # 234 problems, 30 at a time
    assert all(len(hand) <= 30 for hand in rounds[7:])
    # at most 10 of a file per hand-over, the file's rest in the next one
    assert all(max(Counter(name for name, _ in hand).values()) <= 10 for hand in rounds)
    assert [len([n for n, _ in hand if n == "f12.py"]) for hand in rounds if
            any(n == "f12.py" for n, _ in hand)] == [10, 2]


def test_a_character_budget_keeps_what_it_did_not_show() -> None:
    """The magic hands over what its rendering shows: 30 long messages do not fit in 6,000
    characters, and what did not fit comes in the next hand-over."""
    channel = PendingChannel()
    long = "x" * 180
    written = [file(f"f{i}.py", error(0, f"{long} {i}")) for i in range(60)]
    channel.record(Report(files=tuple(written)))
    options = FormatOptions(severity="all")
    rounds = drain(channel, options=options)
    assert len(rounds[0]) < 30  # cut by the budget, not by the count cap
    assert sum(map(len, rounds)) == 60
    assert len({pair for hand in rounds for pair in hand}) == 60
    # what is handed over is what a budgeted rendering shows: nothing is hidden by it
    channel.record(Report(files=tuple(written)))
    report, _ = channel.take(options=options)
    unbudgeted = format_text(report, FormatOptions(severity="all", max_report_chars=0))
    assert unbudgeted == format_text(report, options)
    assert len(unbudgeted) <= options.max_report_chars


def test_fixed_and_gone_problems_are_not_handed_over() -> None:
    channel = PendingChannel()
    channel.record(Report(files=(file("a.py", error(0), error(1, "other")),)))
    rewritten = FileReport(Path("/w/a.py"), "a.py", current=(error(1, "other"),),
                           fixed=(error(0),), servers=("ty",))
    channel.record(Report(files=(rewritten,)))
    assert len(channel) == 1
    # the file was rewritten: its latest text no longer has the problem (not reported fixed)
    channel.record(Report(files=(file("b.py", error(3)),)))
    channel.record(Report(files=(FileReport(Path("/w/b.py"), "b.py", current=(error(5, "new"),),
                                            servers=("ty",)),)))
    report, left = channel.take()
    assert (handed(report), left) == ([("a.py", 1)], 0)


def test_a_moved_problem_is_handed_over_at_its_latest_place() -> None:
    channel = PendingChannel()
    channel.record(Report(files=(file("a.py", error(0)),)))
    moved = FileReport(Path("/w/a.py"), "a.py", current=(error(4),), servers=("ty",))
    channel.record(Report(files=(moved,)))
    assert handed(channel.take()[0]) == [("a.py", 4)]


def test_a_copy_that_follows_the_journal_owes_what_the_channel_owes() -> None:
    """A broker's client keeps a copy of what its session owes (`follow`, `replay`): the whole
    channel first, then each record and hand-over, cut ones and stale entries included; the
    copy hands over exactly what the channel would have."""
    session, copy = PendingChannel(), PendingChannel()
    session.record(Report(files=(file("old.py", error(0, "old")),)))
    session.follow(copy.replay)
    assert len(copy) == 1
    session.record(Report(files=(file("a.py", *(error(line, f"m{line}") for line in range(12))),
                                 file("b.py", error(0)))))
    session.record(Report(files=(FileReport(Path("/w/old.py"), "old.py", current=(),
                                            servers=("ty",)),)))  # old.py's problem is gone
    _, left = session.take()
    assert (left, len(copy)) == (2, 2)  # a.py's two beyond the 10 a hand-over takes
    assert copy.owed() == session.owed()
    session.follow(None)
    second, _ = session.take()
    assert handed(copy.take()[0]) == handed(second) == [("a.py", 10), ("a.py", 11)]
    assert len(copy) == 0


def test_a_channel_restored_from_what_another_owed_owes_the_same_once() -> None:
    """A new broker's session takes over the copy (`owed`, then `record` or `restore`): the
    same problems, newest writes first, each handed over once."""
    channel = PendingChannel()
    channel.record(Report(files=(file("a.py", error(0, "a0"), error(1, "a1")),)))
    channel.record(Report(files=(file("b.py", error(0, "b0")), file("c.py", error(3, "c3")))))
    owed = channel.owed()
    assert len(channel) == 4  # asking forgets nothing
    taken_over, restored = PendingChannel(), PendingChannel()
    taken_over.record(owed)
    restored.record(Report(files=(file("z.py", error(0, "gone")),)))
    restored.restore(owed)
    expected = [[("b.py", 0), ("c.py", 3), ("a.py", 0), ("a.py", 1)]]
    assert drain(taken_over) == drain(restored) == drain(channel) == expected


def test_a_hand_over_says_what_stays_pending_here_and_elsewhere() -> None:
    from ipylsp.model.settings import Settings

    channel = PendingChannel()
    channel.record(Report(files=tuple(file(f"f{i}.py", error(0)) for i in range(31))))
    shown = channel.hand_over(None, Settings(), "%lsp pending", more=4)
    assert shown.notes == ("... and 5 more pending: %lsp pending",)
    assert len(handed(shown)) == 30
    assert str(PendingChannel().hand_over(None, Settings(), "again")) == "nothing pending"
