"""Click options made from the declarations in aclcheck.options (one declaration per
option: flag, type, default, help), for the commands that take them."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import click

from aclcheck import options as o
from aclcheck.options import Kind, Option

F = TypeVar("F", bound=Callable[..., Any])


def _type(opt: Option) -> Any:
    if opt.kind == Kind.FILE:
        return click.Path(dir_okay=False)
    if opt.kind == Kind.DIR:
        return click.Path(file_okay=False)
    if opt.kind == Kind.CHOICE:
        return click.Choice(opt.choices)
    if opt.kind == Kind.INT:
        return click.IntRange(min=int(opt.minimum)) if opt.minimum is not None else int
    if opt.kind == Kind.FLOAT:
        return click.FloatRange(min=opt.minimum) if opt.minimum is not None else float
    return None


def click_option(opt: Option) -> Callable[[F], F]:
    """The click option of one declaration."""
    flag = f"{opt.flag}/--no-{opt.flag[2:]}" if opt.kind == Kind.SWITCH else opt.flag
    decls = [d for d in (opt.short, flag, opt.name) if d]
    kwargs: dict[str, Any] = {"help": opt.help}
    if opt.kind == Kind.FLAG:
        kwargs["is_flag"] = True
    else:
        kwargs["default"] = opt.default if not opt.multiple else ()
        if opt.kind != Kind.SWITCH and _type(opt) is not None:
            kwargs["type"] = _type(opt)
    if opt.multiple:
        kwargs["multiple"] = True
    if opt.metavar:
        kwargs["metavar"] = opt.metavar
    if opt.show_default:
        kwargs["show_default"] = True
    if opt is o.IDS:  # an absent glob list is None, not (): no pattern, every id
        kwargs["callback"] = lambda ctx, param, value: value or None
    return click.option(*decls, **kwargs)


def click_options(declarations: Sequence[Option]) -> Callable[[F], F]:
    """A decorator adding the click options of `declarations`, in order."""
    def apply(fn: F) -> F:
        for opt in reversed(declarations):
            fn = click_option(opt)(fn)
        return fn
    return apply


def taken_by(command: str, declarations: Sequence[Option]) -> tuple[Option, ...]:
    """The declarations a command takes, in order."""
    return tuple(opt for opt in declarations if command in opt.commands)


#: The case filters of every command over a golden file (see aclcheck.suite.filters).
selection_options = click_options(o.SELECTION)
#: The options of the commands that judge calls made on the fly (shrink, hunt).
live_options = click_options(taken_by(o.SHRINK, (*o.IMPLEMENTATION, *o.JUDGEMENT,
                                                  *o.RUNNING)))
#: verify's option name -> its VerifyConfig field, where the two differ
RENAMED: dict[str, str] = {opt.name: opt.field for opt in o.SELECTION
                           if opt.field and opt.name != opt.field}
