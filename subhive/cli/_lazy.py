"""Commands that load when they are called: ``subhive schema diff`` imports the schema command, not the root hive's
gRPC server, the agents' model clients or the decomposer (decision 0110).

A :class:`LazyGroup` knows every command's name, where it lives, and its place in ``subhive --help``; it imports a
command's module the first time click asks for that command. Listing every command (``--help``, shell completion
of command names) loads them all, so help is what typer would print for the same commands registered eagerly.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, MutableMapping
from importlib import import_module
from typing import Any

import typer
from typer._click import Command  # typer 0.29 vendors click: its commands are these
from typer.core import TyperGroup
from typer.main import get_command_from_info, get_group_from_info
from typer.models import CommandInfo, TyperInfo

__all__ = ["LazyGroup", "Where"]

#: ``(module, attribute)``: a ``typer.Typer`` becomes a command group, a function a command.
Where = tuple[str, str]


class _Commands(MutableMapping[str, Command]):
    """A group's commands by name, in help order, each built the first time it is looked up."""

    def __init__(self, loaded: MutableMapping[str, Command], group: LazyGroup) -> None:
        self._loaded = loaded
        self._group = group

    def _names(self) -> list[str]:
        table = self._group.lazy_commands
        return [*table, *(name for name in self._loaded if name not in table)]

    def __getitem__(self, name: str) -> Command:
        found = self._loaded.get(name)
        if found is None:
            where = self._group.lazy_commands.get(name)
            if where is None:
                raise KeyError(name)
            found = self._loaded[name] = self._group.build(name, where)
        return found

    def __setitem__(self, name: str, command: Command) -> None:
        self._loaded[name] = command

    def __delitem__(self, name: str) -> None:
        del self._loaded[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._names())

    def __len__(self) -> int:
        return len(self._names())

    def __contains__(self, name: object) -> bool:
        return name in self._loaded or name in self._group.lazy_commands


class LazyGroup(TyperGroup):
    """A typer group whose commands named in :attr:`lazy_commands` are imported on first use.

    Subclass it with the table: ``class Root(LazyGroup): lazy_commands = {"schema": ("subhive.cli._schema",
    "schema_app")}``, then ``typer.Typer(cls=Root)``. Commands registered on the app itself stay eager and are
    listed after the table's (typer lists a group's own commands in the order they were added).
    """

    #: name -> (module, attribute), in the order ``--help`` lists them.
    lazy_commands: Mapping[str, Where] = {}
    #: typer passes its app's ``pretty_exceptions_short`` to the commands it builds; the group does not know it.
    pretty_exceptions_short: bool = True

    def __init__(self, **attrs: Any) -> None:
        super().__init__(**attrs)
        self.commands = _Commands(self.commands, self)

    def build(self, name: str, where: Where) -> Command:
        """The click command for ``name``, built from its module the way ``add_typer``/``command`` would."""
        module, attribute = where
        target = getattr(import_module(module), attribute)
        if isinstance(target, typer.Typer):
            return get_group_from_info(
                TyperInfo(target, name=name),
                pretty_exceptions_short=self.pretty_exceptions_short,
                rich_markup_mode=self.rich_markup_mode,
                suggest_commands=self.suggest_commands,
            )
        return get_command_from_info(
            CommandInfo(name=name, callback=target),
            pretty_exceptions_short=self.pretty_exceptions_short,
            rich_markup_mode=self.rich_markup_mode,
        )
