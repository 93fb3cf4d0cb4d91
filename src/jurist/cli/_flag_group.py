"""One way to add a group of shared flags to a typer command.

The model options, the engine options and the run flags are each one group, declared once
and added to every command that takes them: :func:`add_flag_group` appends the group's
flags to the command's signature (keyword-only, in the group's order, so typer shows
them) and, when the command runs, takes their values out of its keyword arguments and
hands the command one object built from them, under the parameter the command names.

>>> from typing import Annotated
>>> import typer
>>> def show(*, pair: tuple[int, int]) -> tuple[int, int]:
...     return pair
>>> flags = {"a": (1, Annotated[int, typer.Option()]), "b": (2, Annotated[int, typer.Option()])}
>>> command = add_flag_group(show, "pair", flags, lambda v: (v["a"], v["b"]), what="pair")
>>> list(inspect.signature(command).parameters)
['a', 'b']
>>> command(a=3, b=4)
(3, 4)
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

__all__ = ["add_flag_group"]

F = TypeVar("F", bound=Callable[..., Any])


def add_flag_group(
    func: F,
    receiver: str,
    flags: Mapping[str, tuple[Any, Any]],
    build: Callable[[dict[str, Any]], Any],
    *,
    what: str,
) -> F:
    """``func`` with the flags ``flags`` (name -> (default, annotation)) in place of its
    parameter ``receiver``, which receives ``build`` of their values; ``what`` names the
    group in the errors a wrong command definition gets."""
    own = inspect.signature(func, eval_str=True)
    if receiver not in own.parameters:
        raise TypeError(f"{func.__name__} needs a {receiver!r} parameter for the {what}")
    clash = set(own.parameters) & set(flags)
    if clash:
        raise TypeError(f"{func.__name__} redefines shared {what} {sorted(clash)}")
    params = [p for name, p in own.parameters.items() if name != receiver]
    params += [
        inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=d, annotation=a)
        for name, (d, a) in flags.items()
    ]

    @functools.wraps(func)
    def command(*args: Any, **kwargs: Any) -> Any:
        values = {name: kwargs.pop(name) for name in flags}
        return func(*args, **{receiver: build(values)}, **kwargs)

    command.__signature__ = own.replace(parameters=params)  # type: ignore[attr-defined]
    command.__annotations__ = {p.name: p.annotation for p in params}
    if own.return_annotation is not inspect.Signature.empty:
        command.__annotations__["return"] = own.return_annotation
    return command  # type: ignore[return-value]
