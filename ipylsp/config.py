"""`IPyLSP`: the one traitlets Configurable, one trait per knob of `Settings`.

Read the same way by the IPython extension (`c.IPyLSP.x` in ipython_config.py, `%config
IPyLSP.x = y` at run time) and anything else that loads traitlets config. Its traits are made
from the fields of `Settings` that carry a `Knob` (a knob is added there alone), and
`to_settings()` turns it back into one: the surfaces read `Settings`, never the traits.
"""

from __future__ import annotations

import types
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Union, get_args, get_origin, get_type_hints

from traitlets import Bool, Dict, Enum, Float, Int, List, TraitError, TraitType, Unicode, validate
from traitlets.config import Configurable
from traitlets.traitlets import MetaHasTraits

from ipylsp.model.settings import Knob, Settings, knobs
from ipylsp.settings_files import config_files


@dataclass(frozen=True, slots=True)
class _Trait:
    """One knob as traitlets sees it, and the way back to its field."""

    field: str
    trait: TraitType[Any, Any]
    value: Callable[[Any], Any]
    """The trait's value -> the field's."""


def _expanded(text: Any) -> Path | None:
    return Path(str(text)).expanduser() if text else None


def _trait(field: str, hint: Any, default: Any, declared: Knob) -> _Trait:
    """The trait of one knob, from its field's type and default and its `Knob`: a bool, an
    int or a float (with its minimum), a `Literal`'s choices, a path or none (a string, ""
    for none), a tuple of strings or of paths (a list; paths resolved), or a dict that
    `Knob.parse` makes the field's value of (validated by it as it is set)."""
    text = declared.help
    if declared.parse is not None:
        return _Trait(field, Dict(help=text), declared.parse)
    args = get_args(hint)
    if hint is bool:
        return _Trait(field, Bool(default, help=text), bool)
    if hint is int:
        least = None if declared.minimum is None else int(declared.minimum)
        return _Trait(field, Int(default, min=least, help=text), int)
    if hint is float:
        return _Trait(field, Float(default, min=declared.minimum, help=text), float)
    if hint is str:
        return _Trait(field, Unicode(default, help=text), str)
    if get_origin(hint) is Literal:
        return _Trait(field, Enum(list(args), default, help=text), str)
    if get_origin(hint) in (Union, types.UnionType) and set(args) == {Path, type(None)}:
        return _Trait(field, Unicode("" if default is None else str(default), help=text),
                      _expanded)
    if get_origin(hint) is tuple and args[1:] == (Ellipsis,) and args[0] in (str, Path):
        items = List(Unicode(), default_value=[str(x) for x in default], help=text)
        if args[0] is str:
            return _Trait(field, items, lambda value: tuple(str(x) for x in value))
        return _Trait(field, items,
                      lambda value: tuple(Path(str(p)).expanduser().resolve() for p in value))
    raise TypeError(f"Settings.{field}: no trait for a knob of type {hint}")


def _traits() -> dict[str, _Trait]:
    hints, defaults = get_type_hints(Settings), Settings()
    made = {name: _trait(f.name, hints[f.name], getattr(defaults, f.name), declared)
            for name, (f, declared) in knobs().items()}
    for made_trait in made.values():
        made_trait.trait.tag(config=True)
    return made


TRAITS: Mapping[str, _Trait] = _traits()
"""Every knob's trait by its name."""


class _KnobsFirst(MetaHasTraits):
    """Traitlets' metaclass, the class's namespace starting with one trait per knob (traitlets
    sets a trait up as it makes the class: it cannot be added afterwards). A subclass
    inherits them."""

    @classmethod
    def __prepare__(
        mcs, name: str, bases: tuple[type, ...], /, **kwds: Any
    ) -> dict[str, object]:
        if any(isinstance(base, _KnobsFirst) for base in bases):
            return {}
        return {knob: made.trait for knob, made in TRAITS.items()}


class IPyLSP(Configurable, metaclass=_KnobsFirst):
    """Language-server diagnostics after every notebook cell that writes files."""

    @validate(*(knob for knob, made in TRAITS.items() if isinstance(made.trait, Dict)))
    def _parses(self, proposal: dict[str, Any]) -> Any:
        """A dict knob's value is one its `Knob.parse` takes (its `ValueError` says why not)."""
        TRAITS[proposal["trait"].name].value(proposal["value"])
        return proposal["value"]

    def to_settings(self) -> Settings:
        """The settings these traits say (the core's own fields at their defaults)."""
        return Settings(**{t.field: t.value(getattr(self, name)) for name, t in TRAITS.items()})


def load_settings(extra: Path | None = None) -> Settings:
    """Settings for processes without an IPython profile (the CLI): the `IPyLSP` section of
    the Jupyter config dirs' `ipylsp_config.py`/`.json`, then of `extra`."""
    from traitlets.config import Config
    from traitlets.config.loader import JSONFileConfigLoader, PyFileConfigLoader

    merged = Config()
    for path in [*config_files(), *([extra] if extra is not None else [])]:
        if not path.is_file():
            raise ValueError(f"no such config file: {path}")
        loader_class = JSONFileConfigLoader if path.suffix == ".json" else PyFileConfigLoader
        loader = loader_class(path.name, path=str(path.parent))
        merged.merge(loader.load_config())
    try:
        return IPyLSP(config=merged).to_settings()
    except TraitError as exc:
        raise ValueError(str(exc)) from None

