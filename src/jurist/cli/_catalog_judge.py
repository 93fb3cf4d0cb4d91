"""``--judge NAME`` on ``judge``, ``compare`` and ``grade``: a catalog judge on the command line.

The name is a catalog entry with inline overrides allowed
(``--judge 'judges.likert.hf_qwen2_5_0_5b_instruct[temperature=0.2]'``, see
docs/catalog.md); user entries come from ``$JURIST_CATALOG``. The entry brings its model,
template and settings. ``--model`` given too replaces the entry's model (with the model
flags: base URL, key, timeout, cache...), as on ``serve-reward``; without it the entry's
model is built again through the same model flags (:meth:`ModelOptions.rebuild`: the
entry's server and settings hold, the key comes from ``--api-key`` or ``$JURIST_API_KEY``,
else ``$OPENAI_API_KEY``, and the timeout, retries, limits and cache are the command
line's), so a catalog judge is called as a ``--model`` one is; ``--template`` and
``--criteria`` name another judge, so they are refused beside ``--judge``. A judge flag
given on the command line (``--max-tokens``, ``--explanations``, ``--scoring``,
``--output``) applies to an entry that is one LLM judge; for any other kind (a panel) it is
refused, naming the override to write instead: nothing given is silently dropped.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from jurist.cli._model_options import ModelOptions
from jurist.errors import ConfigError

if TYPE_CHECKING:
    from jurist.judges import ItemJudge
    from jurist.models import Model

__all__ = ["catalog_judge", "catalog_models"]

HELP = (
    "A catalog judge instead of --template, overrides allowed: "
    "'judges.likert.NAME[temperature=0]' (user entries: $JURIST_CATALOG); --model replaces "
    "its model."
)


def _found(name: str) -> Any:
    from jurist import catalog

    return catalog.get(name)


def catalog_judge(
    name: str,
    *,
    kind: Literal["single", "pairwise"],
    options: ModelOptions,
    limits: bool = True,
    changes: dict[str, Any] | None = None,
) -> ItemJudge:
    """The catalog judge ``name`` for a command of ``kind``, with ``--model`` (when given)
    in place of its model and ``changes`` (judge flags given on the command line) applied."""
    from jurist.judges import ItemJudge, LLMJudge
    from jurist.judges._protocol import with_models_of

    found: ItemJudge = _found(name)
    if not isinstance(found, ItemJudge):
        raise ConfigError(
            f"--judge {name!r} is a {type(found).__name__}, not a judge (a judges.* entry)"
        )
    pairwise = {"response_a", "response_b"} <= set(found.required_fields)
    if pairwise != (kind == "pairwise"):
        want = "a pairwise judge (response_a, response_b)" if kind == "pairwise" else "a judge"
        raise ConfigError(
            f"--judge {name!r} judges fields {list(found.required_fields)}; this command "
            f"needs {want}"
        )
    given = dict(changes or {})
    if given:
        if not isinstance(found, LLMJudge):
            flags = ", ".join(f"--{k.replace('_', '-')}" for k in given)
            keys = ",".join(f"{k}=..." for k in given)
            raise ConfigError(
                f"--judge {name!r} is a {type(found).__name__}: {flags} cannot change it; "
                f"write the override into the name instead: '{name}[{keys}]'"
            )
        found = found.with_options(**given)  # an LLMJudge
    if options.models:
        model = options.build(limits=limits)
        found = with_models_of(found, lambda _: model)
    else:
        found = with_models_of(found, lambda m: options.rebuild(m, limits=limits))
    return found


def catalog_models(
    name: str, options: ModelOptions, *, limits: bool = True
) -> tuple[list[Model], float | None]:
    """``grade --judge NAME``: the entry's model(s) (a panel's, one per judge) grade, built
    again through the model flags (:meth:`ModelOptions.rebuild`), at the entry's
    temperature (``None``: it names none); ``--model`` beside it is refused (grade's judges
    are the --model flags)."""
    from jurist.judges._protocol import models_of

    if options.models:
        raise ConfigError("grade: --judge and --model both name the graders: give one")
    found = _found(name)
    models = [options.rebuild(m, limits=limits) for m in models_of(found)]
    if not models:
        raise ConfigError(f"--judge {name!r} names no model to grade with")
    temperature = getattr(found, "temperature", None)
    return models, temperature if isinstance(temperature, int | float) else None


def refuse_with_judge(name: str | None, **given: bool) -> None:
    """``--judge`` excludes the flags that name another judge (``template=True``...)."""
    if name is None:
        return
    clash = [flag for flag, on in given.items() if on]
    if clash:
        flags = " and ".join(f"--{f.replace('_', '-')}" for f in clash)
        raise ConfigError(
            f"--judge {name!r} brings its own template; {flags} name(s) another judge: give one"
        )
