"""The :class:`Model` base class every backend implements, and :class:`WrapperModel`.

A backend implements one abstract async method, :meth:`Model.complete`. Everything else is
a hook with a default: :meth:`Model.candidate_scores` (one forward pass over candidate
strings, for logprob scoring), :meth:`Model.aclose`, and the declared
:class:`Capabilities`. Wrappers (retry, limits, cache) are models that hold another model
and delegate to it.
"""

from __future__ import annotations

import abc
import asyncio
import copy
from collections.abc import Sequence
from typing import Any, Self

from pydantic import BaseModel, ConfigDict

from jurist._secrets import shown_name
from jurist.errors import CapabilityError
from jurist.models._decisions import Decider
from jurist.models._transport import ModelSpec
from jurist.types import CandidateScores, Completion, Request

__all__ = ["Capabilities", "Model", "WrapperModel", "refuse_images"]


def refuse_images(spec: str, request: Request) -> None:
    """Stop a request with images before a text-only backend drops them without a word.

    >>> from jurist.types import ImagePart, Message
    >>> img = ImagePart(url="https://x/cat.png", sha256="ab", ref="https://x/cat.png")
    >>> refuse_images("hf:tiny", Request(messages=(Message(role="user", content="q",
    ...                                                    images=(img,)),)))
    Traceback (most recent call last):
    ...
    jurist.errors.CapabilityError: hf:tiny takes no image input (capabilities.images is False); ...
    """
    images = request.images
    if images:
        refs = ", ".join(repr(i.ref) for i in images[:3]) + (", ..." if len(images) > 3 else "")
        raise CapabilityError(
            f"{spec} takes no image input (capabilities.images is False); the request "
            f"carries {len(images)} image(s): {refs}",
            model=spec,
        )


class Capabilities(BaseModel):
    """What a backend can do.

    ``logprobs``: token logprobs on generated text; ``top_logprobs``: the most alternatives
    per position it returns (0: none); ``json_schema``: constrained JSON output;
    ``candidate_scores``: :meth:`Model.candidate_scores`; ``max_batch``: the largest batch it
    runs at once (``None``: no limit of its own); ``remote``: calls leave the process;
    ``images``: it takes image parts in messages (:attr:`jurist.types.Message.images`);
    ``batch_api``: its requests can travel through its provider's batch API (its
    ``batch_hooks()``, :mod:`jurist.models._batch_hooks`); ``batch_files``: they can be
    written as Batch API lines for an offline engine (``vllm run-batch``); ``thinking``: it
    honours :attr:`jurist.types.Request.reasoning` (a thinking effort or budget), translated
    into its own parameters; ``scalar``: it is a scalar reward model, whose completion is a
    score (:attr:`jurist.types.Completion.score`, the reward of the whole conversation it
    is sent, its last message the response under judgment), not text.
    """

    model_config = ConfigDict(frozen=True)

    logprobs: bool = False
    top_logprobs: int = 0
    json_schema: bool = False
    candidate_scores: bool = False
    max_batch: int | None = None
    remote: bool = False
    images: bool = False
    batch_api: bool = False
    batch_files: bool = False
    thinking: bool = False
    scalar: bool = False


class Model(abc.ABC):
    """A language model that completes chat requests.

    Subclasses set ``provider`` and ``name`` and implement :meth:`complete`.
    ``identity()`` is what distinguishes this model's outputs from another's (provider,
    name, base URL, ...): caches key on it, so it must never hold a secret.
    """

    provider: str = "model"
    name: str = ""

    @property
    def capabilities(self) -> Capabilities:
        return Capabilities()

    def identity(self) -> dict[str, Any]:
        """What makes this model's outputs differ from another's; never a secret."""
        return {"provider": self.provider, "name": self.name}

    async def fingerprint(self) -> dict[str, Any] | None:
        """What identifies the weights behind this model beyond :meth:`identity`, or ``None``.

        Other weights can sit under the same name: a local folder whose files were replaced,
        a server restarted on another checkpoint under the same model name. The cache adds
        the fingerprint to its key so that their outputs are kept apart. A backend takes it
        once (per load of its weights) and keeps it: a local model's is read from its files
        (:mod:`jurist.models._fingerprint`), a server's is what the server reports of the
        model. It must come out the same in another process (a Ray actor rebuilding the
        model), never hold a secret, and never fail a call that could otherwise be served.
        The default, ``None``: the identity says it all (a scripted mock, an API whose
        name is the version).
        """
        return None

    @property
    def spec(self) -> str:
        """``provider:name``, as :func:`jurist.get_model` takes it, for display: every
        message, note, judge name and file shows a model by it, so a name that looks like
        a credential (a key pasted where the name goes) is ``provider:***`` (see
        :func:`jurist._secrets.shown_name`); ``name`` keeps it as given."""
        return f"{self.provider}:{shown_name(self.name)}"

    def secrets(self) -> dict[str, Any]:
        """The constructor options that give a copy of this model rebuilt in another
        process (a Ray actor) the credentials this one uses (``api_key``, ``headers``),
        kept out of :meth:`rebuild_options`; ``{}`` (the default) when it uses none.
        Held in memory only, never written, never part of :meth:`identity`."""
        return {}

    def rebuild_options(self) -> dict[str, Any]:
        """The constructor options (JSON values, never a secret) that build this backend
        again, with ``provider:name``, in another process (a Ray actor, a catalog entry):
        those given that differ from the defaults. The default, ``{}``: a backend built
        from its name alone."""
        return {}

    def rebuild_spec(self) -> ModelSpec:
        """What rebuilds this model, and the layers around it, in another process
        (:func:`~jurist.models.rebuild_model`, with :meth:`secrets`)."""
        return ModelSpec(provider=self.provider, name=self.name, options=self.rebuild_options())

    @abc.abstractmethod
    async def complete(self, request: Request) -> Completion:
        """Complete one request."""

    async def complete_many(self, requests: Sequence[Request]) -> list[Completion]:
        """Complete several requests concurrently; backends that batch may override."""
        return list(await asyncio.gather(*(self.complete(r) for r in requests)))

    async def candidate_scores(
        self, request: Request, candidates: Sequence[str]
    ) -> CandidateScores:
        """Score candidate continuations of ``request`` in one forward pass.

        Only backends whose capabilities say ``candidate_scores`` implement it.
        """
        raise CapabilityError(
            f"{self.spec} cannot score candidates in a forward pass", model=self.spec
        )

    async def prepare(self) -> None:  # noqa: B027 - a hook with a default
        """Make sure the model can serve: load weights, reach the server.

        Raises a clear :class:`~jurist.errors.ModelError` when it cannot, so a batch stops
        before its first item rather than failing every item. The default does nothing.
        """

    async def aclose(self) -> None:  # noqa: B027 - a hook with a default
        """Release connections, threads or memory the backend holds."""

    def deciders(self) -> dict[str, Decider]:
        """What this model decides from its server's answers during a run, by name (the
        openai backend's ``json_form``): a run records it and a resumed run restores it
        (see :mod:`jurist.models._decisions`). The default: nothing."""
        return {}

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.spec!r})"


class WrapperModel(Model):
    """A model that delegates to another; subclasses change one behaviour.

    Identity, capabilities and candidate scoring pass through to the wrapped model.
    """

    def __init__(self, wrapped: Model) -> None:
        self.wrapped = wrapped
        self.provider = wrapped.provider
        self.name = wrapped.name

    @property
    def capabilities(self) -> Capabilities:
        return self.wrapped.capabilities

    def identity(self) -> dict[str, Any]:
        return self.wrapped.identity()

    async def fingerprint(self) -> dict[str, Any] | None:
        return await self.wrapped.fingerprint()

    def secrets(self) -> dict[str, Any]:
        return self.wrapped.secrets()

    def rebuild_options(self) -> dict[str, Any]:
        return self.wrapped.rebuild_options()

    def layer(self) -> dict[str, Any]:
        """The :class:`~jurist.models.Transport` settings this wrapper stands for, so a
        stack can describe itself (:meth:`rebuild_spec`); a wrapper that no transport
        setting builds raises :class:`~jurist.errors.ConfigError` (the default)."""
        from jurist.errors import ConfigError

        raise ConfigError(
            f"{type(self).__name__} is no layer of the model stack (cache, retry, limits): "
            "a model wrapped in it cannot be rebuilt in another process"
        )

    def rebuild_spec(self) -> ModelSpec:
        inner = self.wrapped.rebuild_spec()
        transport = inner.transport.model_copy(update=self.layer())
        return inner.model_copy(update={"transport": transport})

    async def complete(self, request: Request) -> Completion:
        return await self.wrapped.complete(request)

    async def candidate_scores(
        self, request: Request, candidates: Sequence[str]
    ) -> CandidateScores:
        return await self.wrapped.candidate_scores(request, candidates)

    async def prepare(self) -> None:
        await self.wrapped.prepare()

    async def aclose(self) -> None:
        await self.wrapped.aclose()

    def deciders(self) -> dict[str, Decider]:
        return self.wrapped.deciders()

    def around(self, model: Model) -> Self:
        """A copy of this wrapper around ``model`` instead of :attr:`wrapped` (this one is
        unchanged). The copy shares this wrapper's state: a limiter's schedule, a cache's
        file and connection, a retry's random draws."""
        other = copy.copy(self)
        other.wrapped = model
        other.provider = model.provider
        other.name = model.name
        return other

    @property
    def innermost(self) -> Model:
        model: Model = self.wrapped
        while isinstance(model, WrapperModel):
            model = model.wrapped
        return model

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.wrapped!r})"
