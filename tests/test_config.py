"""One declaration of every knob: `IPyLSP`'s traits are made from the fields of `Settings` that
carry a `Knob` (name, type, default, minimum, help), `to_settings` makes them a `Settings` again,
a bad value is refused with the same error as when the traits were written by hand, and the
knob table of the docs lists every knob with its default, and nothing else."""

from __future__ import annotations

import ast
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from traitlets import Dict, Enum, List, TraitError

from ipylsp.config import IPyLSP
from ipylsp.model.server_spec import InstallRecipe, ServerOverride, ServerSpec
from ipylsp.model.settings import DEFAULT_LANGUAGE_SERVERS, WORKSPACE_MARKERS, Settings, knobs

REPO = Path(__file__).resolve().parent.parent
KNOB_TABLE = "| knob | default | meaning |"

TRAIT_TYPES = {
    "enabled": "Bool", "check_cells": "Bool", "show_clean": "Bool", "check_shell_writes": "Bool",
    "jupyter_ai_tools": "Bool", "wait_budget": "Float", "idle_timeout": "Float",
    "max_open_documents": "Int", "severity": "Enum", "max_files_per_check": "Int",
    "max_per_file": "Int", "max_per_report": "Int", "max_report_chars": "Int",
    "max_answer_chars": "Int", "cell_history": "Int", "language_servers": "Dict",
    "servers": "Dict", "custom_servers": "Dict", "semantic_after_syntax_error": "Bool",
    "install_strategy": "Enum", "data_dir": "Unicode", "store": "Bool", "store_path": "Unicode",
    "store_max_mb": "Float", "max_file_mb": "Float", "workspace_markers": "List",
    "trusted_roots": "List", "broker": "Bool", "broker_idle": "Float",
}
"""The traits as they were written by hand before they were made from `Settings`."""
MINIMUMS = {"wait_budget": 0.1, "idle_timeout": 0, "max_open_documents": 1,
            "max_files_per_check": 0, "max_per_file": 1, "max_per_report": 1,
            "max_report_chars": 0, "max_answer_chars": 0, "cell_history": 0, "store_max_mb": 0,
            "max_file_mb": 0, "broker_idle": 1}


def test_every_knob_is_a_trait_of_its_fields_type_default_minimum_and_help() -> None:
    traits = IPyLSP.class_traits(config=True)
    assert {name: type(trait).__name__ for name, trait in traits.items()} == TRAIT_TYPES
    assert set(knobs()) == set(TRAIT_TYPES)
    assert {name: getattr(t, "min", None) for name, t in traits.items()
            if getattr(t, "min", None) is not None} == MINIMUMS
    for name, (_, knob) in knobs().items():
        assert traits[name].help == knob.help, name
    assert isinstance(traits["severity"], Enum) and traits["severity"].values == [
        "error", "warning", "all"]
    assert isinstance(traits["install_strategy"], Enum)
    assert traits["install_strategy"].values == ["manual", "auto"]
    config = IPyLSP()
    assert config.workspace_markers == list(WORKSPACE_MARKERS)
    assert (config.trusted_roots, config.data_dir, config.store_path) == ([], "", "")
    assert (config.language_servers, config.servers, config.custom_servers) == ({}, {}, {})
    assert (config.wait_budget, config.max_per_file, config.severity) == (10.0, 20, "error")
    assert config.to_settings() == Settings()
    # the core's own fields are no knobs
    for internal in ("initialize_timeout", "request_timeout", "shutdown_grace",
                     "max_message_bytes", "max_restarts", "max_timeouts", "directory",
                     "extra_specs"):
        assert internal not in traits


def test_to_settings_reads_every_knob() -> None:
    home = Path.home()
    config = IPyLSP(
        enabled=False, check_cells=False, show_clean=True, check_shell_writes=False,
        jupyter_ai_tools=True, wait_budget=2.5, idle_timeout=0, max_open_documents=3,
        severity="all", max_files_per_check=0, max_per_file=4, max_per_report=5,
        max_report_chars=0, max_answer_chars=100, cell_history=7,
        language_servers={"go": ["gopls"]}, servers={"ty": {"disabled": True}},
        custom_servers={"mine": {"command": ["mine", "--stdio"], "languages": ["python"]}},
        semantic_after_syntax_error=True, install_strategy="auto", data_dir="~/data",
        store=False, store_path="~/s.sqlite3", store_max_mb=1.5, max_file_mb=0.5,
        workspace_markers=["my.marker"], trusted_roots=["~/mnt/../shared"],
    )
    assert config.to_settings() == Settings(
        enabled=False, check_cells=False, show_clean=True, check_shell_writes=False,
        jupyter_ai_tools=True, wait_budget=2.5, idle_timeout=0.0, max_open_documents=3,
        severity="all", max_files_per_check=0, max_per_file=4, max_per_report=5,
        max_report_chars=0, max_answer_chars=100, cell_history=7,
        language_servers={"go": ("gopls",)}, servers={"ty": ServerOverride(disabled=True)},
        extra_specs=(ServerSpec(id="mine", name="mine", languages=("python",),
                                command=("mine", "--stdio"), install=InstallRecipe("path")),),
        semantic_after_syntax_error=True, install_strategy="auto", data_dir=home / "data",
        store=False, store_path=home / "s.sqlite3", store_max_mb=1.5, max_file_mb=0.5,
        workspace_markers=("my.marker",), trusted_roots=((home / "shared").resolve(),),
    )
    # no servers named for any language: the default ones (as before the traits were made)
    assert IPyLSP(language_servers={}).to_settings().language_servers == DEFAULT_LANGUAGE_SERVERS


@pytest.mark.parametrize(
    ("name", "value", "error"),
    [
        ("wait_budget", 0.0, "The value of the 'wait_budget' trait of an IPyLSP instance should "
         "not be less than 0.1, but a value of 0.0 was specified"),
        ("max_per_file", 0, "The value of the 'max_per_file' trait of an IPyLSP instance should "
         "not be less than 1, but a value of 0 was specified"),
        ("max_per_file", 1.5, "The 'max_per_file' trait of an IPyLSP instance expected an int, "
         "not the float 1.5."),
        ("idle_timeout", -1, "The value of the 'idle_timeout' trait of an IPyLSP instance should "
         "not be less than 0, but a value of -1.0 was specified"),
        ("severity", "loud", "The 'severity' trait of an IPyLSP instance expected any of "
         "['error', 'warning', 'all'], not the str 'loud'."),
        ("show_clean", 2, "The 'show_clean' trait of an IPyLSP instance expected a boolean, not "
         "the int 2."),
        ("data_dir", 1, "The 'data_dir' trait of an IPyLSP instance expected a unicode string, "
         "not the int 1."),
        ("trusted_roots", [1], "The 'trusted_roots' trait of an IPyLSP instance contains an "
         "Unicode of a List which expected a unicode string, not the int 1."),
        ("language_servers", "x", "The 'language_servers' trait of an IPyLSP instance expected "
         "a dict, not the str 'x'."),
    ],
)
def test_a_bad_value_is_refused_by_its_trait(name: str, value: Any, error: str) -> None:
    with pytest.raises(TraitError) as refused:
        setattr(IPyLSP(), name, value)
    assert str(refused.value) == error


@pytest.mark.parametrize(
    ("name", "value", "error"),
    [
        ("language_servers", {"python": "ruff"}, "IPyLSP.language_servers['python'] must be a "
         "list of server ids, e.g. [\"ty\", \"ruff\"], not 'ruff'"),
        ("language_servers", {"python": [""]}, "IPyLSP.language_servers['python'] must be a "
         "list of server ids, e.g. [\"ty\", \"ruff\"], not ['']"),
        ("servers", {"pyright": 1}, "IPyLSP.servers['pyright'] must be a dict"),
        ("servers", {"pyright": {"bogus": 1}}, "unknown server option(s): bogus"),
        ("servers", {"pyright": {"command": "x"}},
         "'command' must be a list of strings, not a shell string"),
        ("custom_servers", {"m": 1}, "IPyLSP.custom_servers['m'] must be a dict"),
        ("custom_servers", {"m": {"command": []}},
         "custom server 'm': 'command' must be a non-empty list"),
        ("custom_servers", {"m": {"command": ["x"]}},
         "custom server 'm': 'languages' must be a non-empty list"),
    ],
)
def test_a_bad_dict_is_refused_as_it_is_set(name: str, value: Any, error: str) -> None:
    config = IPyLSP()
    with pytest.raises(ValueError) as refused:
        setattr(config, name, value)
    assert str(refused.value) == error
    assert getattr(config, name) == {}  # kept as it was
    with pytest.raises(ValueError, match=re.escape(error)):
        IPyLSP(**{name: value})


def test_a_subclass_keeps_the_knobs() -> None:
    class Mine(IPyLSP):
        pass

    assert Mine(severity="all").to_settings() == Settings(severity="all")
    assert IPyLSP.class_traits()["severity"].this_class is IPyLSP
    with pytest.raises(ValueError, match="must be a dict"):
        Mine(servers={"ty": 1})


def knob_table() -> dict[str, str]:
    """The docs' one knob table (README.md or docs/): each knob's default cell."""
    tables = []
    for path in [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]:
        text = path.read_text(encoding="utf-8")
        if KNOB_TABLE in text:
            rows = text.split(KNOB_TABLE, 1)[1].split("\n\n", 1)[0].strip().splitlines()[1:]
            tables.append(rows)
    assert len(tables) == 1, "one knob table in README.md and docs/"
    defaults: dict[str, str] = {}
    for row in tables[0]:
        names, default = (cell.strip() for cell in re.split(r"(?<!\\)\|", row)[1:3])
        split = default.split(" / ") if " / " in names else [default]
        for name, value in zip(names.split(" / "), split, strict=True):
            assert name.startswith("`") and name.endswith("`"), row
            defaults[name.strip("`")] = value.replace("\\|", "|")
    return defaults


IN_WORDS = {"data_dir": ("user data dir", "")}
"""Defaults the table says in words: (the words, the trait's default)."""


def test_the_knob_table_lists_every_knob_with_its_default_and_nothing_else() -> None:
    table = knob_table()
    assert sorted(table) == sorted(knobs())
    defaults = IPyLSP()
    for name, cell in table.items():
        field = knobs()[name][0].name
        if name in IN_WORDS:
            assert (cell, getattr(defaults, name)) == IN_WORDS[name]
        elif cell.endswith(", ..."):  # a few of a list's items
            items = [item.strip("`") for item in cell.removesuffix(", ...").split(", ")]
            assert set(items) <= set(getattr(defaults, name)), name
        else:
            assert cell.startswith("`") and cell.endswith("`"), (name, cell)
            value = ast.literal_eval(cell.strip("`"))
            said = IPyLSP(**{name: value}).to_settings()
            assert getattr(said, field) == getattr(Settings(), field), name


def test_service_configure_takes_settings() -> None:
    from ipylsp.service.service import Service

    service = Service(Settings(store=False))
    try:
        changed = replace(service.settings, cell_history=5, severity="all")
        assert service.configure(changed) is changed
        state = service._state
        assert state.settings is state.pool.settings is state.resolver.settings is changed
        assert state.answers.settings is changed
    finally:
        service.close()


def test_a_dict_knob_is_a_dict_and_a_list_knob_a_list() -> None:
    traits = IPyLSP.class_traits(config=True)
    assert all(isinstance(traits[name], Dict)
               for name in ("language_servers", "servers", "custom_servers"))
    assert all(isinstance(traits[name], List) for name in ("workspace_markers", "trusted_roots"))
