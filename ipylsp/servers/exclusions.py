"""Which files a server will not check by its own rules, though it is given them.

ruff and ty answer a file their file selection excludes with no diagnostics at all, and pyrefly
with its unused-import hints only: ipylsp would show such a file as clean. Each of these rows
names the directories its server skips by default (`ServerSpec.excludes`); this module reads
what the user's configuration at the server's root adds or takes away, the server's way, and
says of a path why it is skipped and how to have it checked. A check then says
`UNKNOWN [ruff] excluded (...)` for that (server, file) instead of asking it (`BatchLookups`).

The rules, as the installed servers apply them (tests/test_excluded.py):

- ruff: its configuration at the root (`.ruff.toml`, `ruff.toml`, then `[tool.ruff]` in
  `pyproject.toml`): `exclude` replaces the defaults, `extend-exclude` and `lint.exclude` add
  to them. A pattern matches a directory below the root, or the file, by its name or by its
  path anchored at the root; `*` crosses `/`. Nothing above the root counts.
- ty: `[src]` in `ty.toml`, else `[tool.ty.src]` in `pyproject.toml`: `exclude` adds to the
  defaults (`**/<name>/`), `!pattern` takes one back, the last match wins, and a directory
  excluded takes its files with it; with `include`, only what it names is checked. Patterns
  are anchored at the root, gitignore-like: `*` stays within a name, `**` spans directories, a
  trailing `/` names a directory.
- pyrefly: `pyrefly.toml`, else `[tool.pyrefly]` in `pyproject.toml`: `project-excludes`
  adds to the defaults, which count anywhere in the absolute path unless
  `disable-project-excludes-heuristics`; its patterns are anchored at the root, `*` crosses
  `/`.

A configuration with a pattern that does not translate (a class left open or with nothing in
it: `[!]`, `[^]`, `a[!]b`, `x[b`; a reversed range: `[z-a]`) is one the servers refuse: ruff,
ty and pyrefly then keep their defaults, as if it set no exclusions at all (its other patterns
and switches neither), and so do these rules; reading it never raises. Their glob dialects
differ on a few patterns, read here one way for all three: pyrefly takes `[^]` and `[z-a]`;
ty refuses `[!]]`, and ruff and ty refuse an unclosed `{` (read here as the character).

Not read: a configuration that the root's `extend`s, one a server would find elsewhere than its
root, and settings given to the server itself (`IPyLSP.servers`). Reads files through
`config_files.table` (one `stat` per file while it is unchanged); knows nothing of checks.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ipylsp.model.server_spec import ServerSpec
from ipylsp.servers import config_files

__all__ = ["Excluded", "Rules", "rules"]


@dataclass(frozen=True, slots=True)
class Excluded:
    """Why a server skips a file (`why`, a cause), and how to have it checked (`fix`)."""

    why: str
    fix: str


@dataclass(frozen=True, slots=True)
class _Pattern:
    """One exclusion: a default directory name (`default`) or a pattern the user wrote in
    `key` of `where`."""

    text: str
    regex: re.Pattern[str]
    default: str = ""
    key: str = ""
    where: str = ""
    negated: bool = False
    directory: bool = False
    """Matches directories only (ty: a trailing `/`)."""
    by_name: re.Pattern[str] | None = None
    """ruff: the pattern also matches a directory's or the file's name alone."""


@dataclass(frozen=True, slots=True)
class Rules:
    """One server's exclusions at one root: `match(path)` says why it skips a file, or None."""

    root: Path
    match: Callable[[Path], Excluded | None]


def rules(spec: ServerSpec, root: Path) -> Rules | None:
    """`spec`'s exclusions where it is rooted at `root`, with its configuration there; None
    for a server that checks every file it is given."""
    excludes = spec.excludes
    if excludes is None:
        return None
    if excludes.rules == "ruff":
        return Rules(root, _ruff(root, excludes.dirs))
    if excludes.rules == "ty":
        return Rules(root, _ty(root, excludes.dirs))
    return Rules(root, _pyrefly(root, excludes.dirs))


# ---------------------------------------------------------------------------------------- ruff

_RUFF_FILES = ((".ruff.toml", ""), ("ruff.toml", ""), ("pyproject.toml", "tool.ruff"))


def _ruff(root: Path, dirs: tuple[str, ...]) -> Callable[[Path], Excluded | None]:
    config, where = _first(root, _RUFF_FILES)
    try:
        patterns = _ruff_all(root, dirs, config, where)
    except _Untranslatable:  # ruff refuses the configuration: its defaults apply
        patterns = _ruff_all(root, dirs, {}, "")

    def match(path: Path) -> Excluded | None:
        for candidate in _below(root, path):
            name = candidate.name
            for pattern in patterns:
                if pattern.default:
                    hit = pattern.regex.fullmatch(name)
                else:
                    hit = pattern.regex.fullmatch(str(candidate))
                    if hit is None and pattern.by_name is not None:
                        hit = pattern.by_name.fullmatch(name)
                if hit is None:
                    continue
                if pattern.default:
                    return Excluded(
                        f"ruff does not check files under {_shown(root, candidate)}/ (its "
                        f"default `exclude`)",
                        f"ruff checks them once `exclude` ([tool.ruff] in pyproject.toml, or "
                        f'ruff.toml) lists its defaults without "{pattern.default}" (`ruff '
                        f"check --show-settings` prints them)",
                    )
                return _by_user("ruff", "check", pattern)
        return None

    return match


def _ruff_all(
    root: Path, dirs: tuple[str, ...], config: dict[str, Any], where: str
) -> list[_Pattern]:
    """ruff's defaults unless `exclude` replaces them, then the user's patterns in `config`."""
    lint = config.get("lint")
    replaced = _strings(config.get("exclude"))
    return [
        *(_Pattern(d, _name(d), default=d) for d in dirs if replaced is None),
        *_ruff_patterns(root, replaced or (), "exclude", where),
        *_ruff_patterns(root, _strings(config.get("extend-exclude")) or (), "extend-exclude",
                        where),
        *_ruff_patterns(root, _strings(lint.get("exclude") if isinstance(lint, dict) else None)
                        or (), "lint.exclude", where),
    ]


def _ruff_patterns(
    root: Path, texts: tuple[str, ...], key: str, where: str
) -> list[_Pattern]:
    """ruff's user patterns: a path anchored at the root (or absolute), or a name."""
    return [
        _Pattern(text, _anchored(root, text), key=key, where=where,
                 by_name=_regex(_translate(text, star_crosses=True)))
        for text in texts
    ]


# ------------------------------------------------------------------------------------------ ty

_TY_FILES = (("ty.toml", "src"), ("pyproject.toml", "tool.ty.src"))


def _ty(root: Path, dirs: tuple[str, ...]) -> Callable[[Path], Excluded | None]:
    config, where = _first(root, _TY_FILES)
    if not where:  # no [src] table: whichever file ty would read says nothing of it
        where = "ty.toml" if (root / "ty.toml").is_file() else "pyproject.toml"
    try:
        patterns, included = _ty_all(dirs, config, where)
    except _Untranslatable:  # ty refuses the configuration: its defaults apply
        patterns, included = _ty_all(dirs, {}, where)

    def match(path: Path) -> Excluded | None:
        try:
            parts = path.relative_to(root).parts
        except ValueError:
            return None
        folders = ["/".join(parts[:k]) for k in range(1, len(parts))]
        every = [(f, True) for f in folders] + [("/".join(parts), False)]
        if included is not None and not any(
            p.regex.fullmatch(rel) for rel, is_dir in every for p in included
            if is_dir or not p.directory
        ):
            return Excluded(
                f"ty checks only the files `src.include` names (in {where})",
                f'add "{parts[0]}" to it to have ty check this file',
            )
        for rel, is_dir in every:
            last = None
            for pattern in patterns:
                if (is_dir or not pattern.directory) and pattern.regex.fullmatch(rel):
                    last = pattern
            if last is None or last.negated:
                continue
            if last.default:
                return Excluded(
                    f"ty does not check files under {rel}/ (its default `src.exclude`)",
                    f'add "!**/{last.default}/" to `src.exclude` ([tool.ty.src] in '
                    f"pyproject.toml, or [src] in ty.toml) to have ty check them",
                )
            return _by_user("ty", "check", last)
        return None

    return match


def _ty_all(
    dirs: tuple[str, ...], config: dict[str, Any], where: str
) -> tuple[list[_Pattern], list[_Pattern] | None]:
    """ty's defaults and the user's `exclude` in `config`; its `include`, None when not set."""
    patterns = [
        *(_gitignore(f"**/{d}/", default=d) for d in dirs),
        *(_gitignore(t, key="src.exclude", where=where)
          for t in _strings(config.get("exclude")) or ()),
    ]
    includes = _strings(config.get("include"))
    return patterns, [_gitignore(t) for t in includes] if includes is not None else None


def _gitignore(text: str, *, default: str = "", key: str = "", where: str = "") -> _Pattern:
    """A ty pattern: anchored at the root; `!` takes back, a trailing `/` names a directory."""
    negated = text.startswith("!")
    body = text[1:] if negated else text
    directory = body.endswith("/")
    body = body.rstrip("/").removeprefix("./").lstrip("/")
    return _Pattern(
        text, _regex(_translate(body, star_crosses=False)), default=default, key=key,
        where=where, negated=negated, directory=directory,
    )


# ------------------------------------------------------------------------------------- pyrefly

_PYREFLY_FILES = (("pyrefly.toml", ""), ("pyproject.toml", "tool.pyrefly"))


def _pyrefly(root: Path, dirs: tuple[str, ...]) -> Callable[[Path], Excluded | None]:
    config, where = _first(root, _PYREFLY_FILES)
    texts = _strings(config.get("project-excludes", config.get("project_excludes"))) or ()
    try:
        patterns = [_Pattern(t, _anchored(root, t), key="project-excludes", where=where)
                    for t in texts]
    except _Untranslatable:  # pyrefly refuses the configuration: its defaults apply
        config, patterns = {}, []
    heuristics = not (
        config.get("disable-project-excludes-heuristics")
        or config.get("disable_project_excludes_heuristics")
    )

    def match(path: Path) -> Excluded | None:
        if heuristics:
            for folder in reversed(path.parents):
                if folder.name in dirs:
                    return Excluded(
                        f"pyrefly does not type-check files under {_shown(root, folder)}/ "
                        f"(its default `project-excludes`)",
                        "set `disable-project-excludes-heuristics = true` in pyrefly.toml (or "
                        "[tool.pyrefly] in pyproject.toml) to have pyrefly check them",
                    )
        for candidate in _below(root, path):
            for pattern in patterns:
                if pattern.regex.fullmatch(str(candidate)):
                    return _by_user("pyrefly", "type-check", pattern)
        return None

    return match


# ---------------------------------------------------------------------------------- shared

def _by_user(server: str, verb: str, pattern: _Pattern) -> Excluded:
    return Excluded(
        f'{server} does not {verb} files matching "{pattern.text}" (`{pattern.key}` in '
        f"{pattern.where})",
        f'remove "{pattern.text}" from it to have {server} check them',
    )


def _first(root: Path, files: tuple[tuple[str, str], ...]) -> tuple[dict[str, Any], str]:
    """The first of `files` (name, TOML table) at `root` that has the table, and its name."""
    for name, section in files:
        found = config_files.table(root / name, section)
        if found is not None:
            return found, name
    return {}, ""


def _strings(value: object) -> tuple[str, ...] | None:
    """A list of strings from a configuration, None when it is not one (not set)."""
    if not isinstance(value, list):
        return None
    return tuple(v for v in value if isinstance(v, str))


def _below(root: Path, path: Path) -> list[Path]:
    """The directories between `root` and `path` (from the top), then `path`: what a server
    rooted at `root` matches its patterns against. None when `path` is not below `root`."""
    try:
        parts = path.relative_to(root).parts
    except ValueError:
        return []
    return [root.joinpath(*parts[:k]) for k in range(1, len(parts) + 1)]


def _shown(root: Path, folder: Path) -> str:
    """A directory relative to the root, or absolute above it."""
    try:
        return folder.relative_to(root).as_posix() or str(folder)
    except ValueError:
        return str(folder)


def _name(name: str) -> re.Pattern[str]:
    return re.compile(re.escape(name))


def _anchored(root: Path, text: str) -> re.Pattern[str]:
    """A pattern of ruff's or pyrefly's as an absolute path: below the root unless absolute;
    `*` crosses `/`."""
    if text.startswith("/"):
        return _regex(_translate(text, star_crosses=True))
    relative = _translate(text.removeprefix("./"), star_crosses=True)
    return _regex(f"{re.escape(str(root))}/{relative}")


class _Untranslatable(Exception):
    """A user's pattern that is no valid glob here: the configuration that holds it is one its
    server refuses (the module's docstring)."""


def _regex(regex: str) -> re.Pattern[str]:
    """`regex` compiled; `_Untranslatable` when a glob became no valid regular expression (a
    class with nothing in it, `[!]`; a reversed range, `[z-a]`) or one too deep to compile."""
    try:
        return re.compile(regex)
    except (re.error, RecursionError, OverflowError) as exc:
        raise _Untranslatable(str(exc)) from None


def _translate(pattern: str, *, star_crosses: bool) -> str:
    """A glob as a regular expression: `**/` any directories (or none), `**` anything, `*`
    and `?` within a name unless `star_crosses`, `[...]` a class (`[!...]` negated), `{a,b}`
    either, `\\` the next character as it is. `_Untranslatable` for a class left open (a `]`
    first in it is one of its characters: `[!]` is open)."""
    out = []
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif c == "*":
            out.append(".*" if star_crosses else "[^/]*")
            i += 1
        elif c == "?":
            out.append("." if star_crosses else "[^/]")
            i += 1
        elif c == "[" and (
            end := pattern.find("]", i + (3 if pattern.startswith(("[!", "[^"), i) else 2))
        ) != -1:  # a `]` first in the class is one of its characters
            body = pattern[i + 1:end]
            negated = body[0] in "!^"
            body = body[1:] if negated else body
            chars = "".join(ch if ch == "-" else re.escape(ch) for ch in body)
            out.append(f"[{'^' if negated else ''}{chars}]")
            i = end + 1
        elif c == "[":
            raise _Untranslatable(f"a class left open in {pattern!r}")
        elif c == "{" and (end := pattern.find("}", i)) != -1:
            options = pattern[i + 1:end].split(",")
            out.append(
                "(?:" + "|".join(_translate(o, star_crosses=star_crosses) for o in options) + ")"
            )
            i = end + 1
        elif c == "\\" and i + 1 < n:
            out.append(re.escape(pattern[i + 1]))
            i += 2
        else:
            out.append(re.escape(c))
            i += 1
    return "".join(out)
