"""The data that crosses jurist's layers: messages, requests, completions, judgments.

All are pydantic v2 models. Requests and completions are what a :class:`~jurist.models.Model`
takes and returns; a :class:`Judgment` is what a judge returns for one item.

>>> req = Request(messages=[Message(role="user", content="hi")], max_tokens=5)
>>> req.messages[0].content
'hi'
>>> (Usage(prompt_tokens=3, completion_tokens=1) + Usage(prompt_tokens=2)).total_tokens
6
"""

from __future__ import annotations

from typing import Any, Literal, TypeVar

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    field_validator,
    model_serializer,
)

from jurist._secrets import shown_name

__all__ = [
    "CandidateScores",
    "Completion",
    "ImagePart",
    "Judgment",
    "Message",
    "OutputFormatUsed",
    "Reasoning",
    "Request",
    "Role",
    "ScoringMode",
    "TokenLogprob",
    "TopLogprob",
    "Usage",
]

M = TypeVar("M", bound=BaseModel)

Role = Literal["system", "user", "assistant"]
ScoringMode = Literal["parse", "logprobs"]
OutputFormatUsed = Literal["json", "text"]


class ImagePart(BaseModel):
    """One image sent with a message, as an OpenAI-format ``image_url`` part.

    ``url`` is what is sent: a ``data:`` URI (a local file is read and sent as one) or an
    ``http(s)`` URL. ``sha256`` is the hash of the image's bytes (of the URL's text for a
    remote image, which is never fetched here): caches key on it, never on ``url``, so a
    key stays short and covers the content. ``ref`` is the image as the item named it (a
    path, a URL, or ``sha256:<hex>`` for inline data), for messages and the run store.
    """

    model_config = ConfigDict(frozen=True)

    url: str
    sha256: str
    ref: str
    detail: Literal["auto", "low", "high"] | None = None

    def openai_part(self) -> dict[str, Any]:
        """The part as OpenAI's chat format writes it.

        >>> ImagePart(url="https://x/a.png", sha256="ab", ref="https://x/a.png").openai_part()
        {'type': 'image_url', 'image_url': {'url': 'https://x/a.png'}}
        """
        inner: dict[str, Any] = {"url": self.url}
        if self.detail is not None:
            inner["detail"] = self.detail
        return {"type": "image_url", "image_url": inner}


class Message(BaseModel):
    """One chat message; ``images`` go after the text (see :meth:`openai_content`)."""

    model_config = ConfigDict(frozen=True)

    role: Role
    content: str
    images: tuple[ImagePart, ...] = ()

    @model_serializer(mode="wrap")
    def _dump(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # no images: dumped as before images existed (cache keys, run manifests unchanged)
        data: dict[str, Any] = handler(self)
        if not self.images:
            data.pop("images", None)
        return data

    def openai_content(self) -> str | list[dict[str, Any]]:
        """The content in OpenAI's chat format: the text alone, or with images a list of
        parts (the text part, then one ``image_url`` part per image).

        >>> img = ImagePart(url="https://x/a.png", sha256="ab", ref="a")
        >>> [p["type"] for p in Message(role="user", content="hi", images=(img,)).openai_content()]
        ['text', 'image_url']
        """
        if not self.images:
            return self.content
        return [{"type": "text", "text": self.content}, *(i.openai_part() for i in self.images)]


_UNKEYED = {"timeout", "repeat"}


ReasoningEffort = Literal["none", "low", "medium", "high"]


class Reasoning(BaseModel):
    """How long a thinking model may think before its verdict: an effort level or a token
    budget (one of the two), translated by each backend into its own parameters.

    ``effort="none"`` asks for no thinking at all (where a model can think or not);
    ``budget_tokens`` is the most the thinking may spend. :meth:`parse` reads the CLI's
    and catalog's spelling (``none|low|medium|high|TOKENS``).

    >>> Reasoning.parse("high").effort
    'high'
    >>> Reasoning.parse("2048").budget_tokens
    2048
    >>> Reasoning.parse(None) is None
    True
    """

    model_config = ConfigDict(frozen=True)

    effort: ReasoningEffort | None = None
    budget_tokens: int | None = Field(default=None, ge=1)

    def model_post_init(self, context: Any, /) -> None:
        if (self.effort is None) == (self.budget_tokens is None):
            raise ValueError(
                "reasoning: give an effort (none, low, medium, high) or a token budget"
            )

    @classmethod
    def parse(cls, value: str | int | dict[str, Any] | Reasoning | None) -> Reasoning | None:
        """``None`` stays ``None``; an int or a digit string is a token budget; a word is
        an effort; a mapping is validated as the model."""
        if value is None or isinstance(value, Reasoning):
            return value
        if isinstance(value, bool):
            raise ValueError(f"reasoning: {value!r} is neither an effort nor a token budget")
        if isinstance(value, int):
            return cls(budget_tokens=value)
        if isinstance(value, str):
            text = value.strip().lower()
            if text.isdigit():
                return cls(budget_tokens=int(text))
            if text in ("none", "low", "medium", "high"):
                return cls(effort=text)  # type: ignore[arg-type]
            raise ValueError(
                f"reasoning: {value!r} is not none, low, medium, high or a number of tokens"
            )
        return cls.model_validate(value)


class Request(BaseModel):
    """What a model is asked to do: messages plus everything that shapes the output.

    ``timeout`` bounds one attempt and does not change the output, so caches ignore it.
    ``extra`` carries provider-specific body fields (a llama.cpp ``grammar``, say) and is
    part of the cache key. ``attempt`` is the judge's re-ask number for an unparseable
    verdict: never sent to the model, but part of the cache key, so each re-ask is cached
    apart and a rerun replays the same sequence. ``repeat`` is the engine's repeat number
    of the item (``repeats=N``): never sent either, and part of the cache key only when
    not 0, so each repeat is a draw of its own while repeat 0 keys as a run without
    repeats does. ``reasoning`` (a thinking budget or effort) is part of the key when set.
    """

    model_config = ConfigDict(frozen=True)

    messages: tuple[Message, ...]
    max_tokens: int | None = None
    temperature: float | None = None
    top_p: float | None = None
    seed: int | None = None
    stop: tuple[str, ...] | None = None
    logprobs: bool = False
    top_logprobs: int | None = None
    json_schema: dict[str, Any] | None = None
    reasoning: Reasoning | None = None
    extra: dict[str, Any] = Field(default_factory=dict)
    attempt: int = 0
    timeout: float | None = None
    repeat: int = 0

    def cache_fields(self) -> dict[str, Any]:
        """The fields that change the output: everything but ``timeout`` (and ``repeat``
        when it is 0); an image counts by its content hash and detail, never by its (long)
        data URI.

        >>> img = ImagePart(url="data:image/png;base64,AAAA", sha256="ab12", ref="a.png")
        >>> Request(messages=(Message(role="user", content="q", images=(img,)),)
        ...         ).cache_fields()["messages"][0]["images"]
        [{'sha256': 'ab12', 'detail': None}]
        """
        data = self.model_dump(mode="json", exclude={"timeout"} if self.repeat else _UNKEYED)
        if data["reasoning"] is None:  # keys of requests without it stay as they were
            del data["reasoning"]
        for message in data["messages"]:
            if "images" in message:
                message["images"] = [
                    {"sha256": i["sha256"], "detail": i["detail"]} for i in message["images"]
                ]
        return data

    @property
    def images(self) -> tuple[ImagePart, ...]:
        """Every image the request sends, in message order."""
        return tuple(i for m in self.messages for i in m.images)


class TopLogprob(BaseModel):
    """One alternative token at a position, with its log-probability."""

    model_config = ConfigDict(frozen=True)

    token: str
    logprob: float


class TokenLogprob(BaseModel):
    """A generated token, its log-probability and the top alternatives at its position."""

    model_config = ConfigDict(frozen=True)

    token: str
    logprob: float
    top: tuple[TopLogprob, ...] = ()


class Usage(BaseModel):
    """Token counts of one call, or of many added together.

    ``calls`` counts completions received (a cache hit is not one: it counts in
    ``cache_hits``); ``attempts`` counts the requests sent to a backend, failed ones and
    retries included, so ``attempts - calls`` requests got no completion.
    ``batch_calls`` counts the completions among ``calls`` that a provider's batch API
    served (billed at its batch rate). ``cached_tokens`` (prompt tokens a provider read
    from its prompt cache) and ``cache_write_tokens`` (prompt tokens it wrote to it,
    Anthropic's ``cache_creation_input_tokens``) are both part of ``prompt_tokens``.
    ``reasoning_tokens`` counts the completion tokens a thinking model spent on its
    thinking: part of ``completion_tokens`` (billed as output), counted apart so that what
    the thinking cost can be shown.
    """

    model_config = ConfigDict(frozen=True)

    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0
    calls: int = 0
    cache_hits: int = 0
    attempts: int = 0
    batch_calls: int = 0
    cache_write_tokens: int = 0
    reasoning_tokens: int = 0

    @model_serializer(mode="wrap")
    def _dump(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # no cache writes: dumped as before they were counted (records, cache entries)
        data: dict[str, Any] = handler(self)
        if not self.cache_write_tokens:
            data.pop("cache_write_tokens", None)
        return data

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            completion_tokens=self.completion_tokens + other.completion_tokens,
            cached_tokens=self.cached_tokens + other.cached_tokens,
            calls=self.calls + other.calls,
            cache_hits=self.cache_hits + other.cache_hits,
            attempts=self.attempts + other.attempts,
            batch_calls=self.batch_calls + other.batch_calls,
            cache_write_tokens=self.cache_write_tokens + other.cache_write_tokens,
            reasoning_tokens=self.reasoning_tokens + other.reasoning_tokens,
        )


class Completion(BaseModel):
    """What a model returned for one request.

    ``attempts`` counts the calls made to produce it (retries included); ``cached`` says it
    came from a cache, with ``usage`` kept as it was when first produced. ``format_note``
    says the backend sent the request's JSON schema in another form than configured,
    because the server refused that form (see :mod:`jurist.models._json_form`); judges
    copy it to their ``output_note``. ``score``: what a scalar reward model
    (:attr:`~jurist.models.Capabilities.scalar`) gives for the conversation it was sent,
    its raw reward (then ``text`` is empty); ``None`` from a model that writes text.
    """

    model_config = ConfigDict(frozen=True)

    text: str
    logprobs: tuple[TokenLogprob, ...] | None = None
    usage: Usage = Usage()
    finish_reason: str | None = None
    latency: float = 0.0
    model: str | None = None
    reasoning: str | None = None
    cached: bool = False
    attempts: int = 1
    format_note: str | None = None
    score: float | None = None

    @field_validator("model")
    @classmethod
    def _no_key_as_model(cls, value: str | None) -> str | None:
        # the name the server echoes: a key given as the model name is not kept (caches)
        return None if value is None else shown_name(value)

    @property
    def billed_usage(self) -> Usage:
        """``usage`` with ``attempts`` taken from :attr:`attempts`: what a judge adds up.

        >>> Completion(text="x", usage=Usage(calls=1), attempts=3).billed_usage.attempts
        3
        """
        return _billed(self.usage, self.attempts)


class CandidateScores(BaseModel):
    """Next-token scores of candidate strings after a prompt.

    ``logprobs`` holds the log-probability of each candidate's whole token sequence;
    ``probs`` the same renormalised over the candidates (it sums to 1); ``coverage`` the
    total probability the model put on the candidates before renormalising.

    ``usage``, ``attempts`` and ``cached`` account for the forward pass as a
    :class:`Completion` does for a call: the prompt's tokens and ``calls=1`` when computed,
    ``calls=0``, ``cache_hits=1``, ``attempts=0`` and ``cached=True`` from a cache.
    """

    model_config = ConfigDict(frozen=True)

    logprobs: dict[str, float]
    probs: dict[str, float]
    coverage: float
    usage: Usage = Usage(calls=1)
    attempts: int = 1
    cached: bool = False

    @property
    def billed_usage(self) -> Usage:
        """``usage`` with ``attempts`` taken from :attr:`attempts` (see :class:`Completion`)."""
        return _billed(self.usage, self.attempts)


def _billed(usage: Usage, attempts: int) -> Usage:
    if usage.attempts == attempts:
        return usage
    # a validated construction costs about half of model_copy (a judge's hot path)
    return Usage(
        prompt_tokens=usage.prompt_tokens,
        completion_tokens=usage.completion_tokens,
        cached_tokens=usage.cached_tokens,
        calls=usage.calls,
        cache_hits=usage.cache_hits,
        attempts=attempts,
        cache_write_tokens=usage.cache_write_tokens,
        batch_calls=usage.batch_calls,
        reasoning_tokens=usage.reasoning_tokens,
    )


class Judgment(BaseModel):
    """A judge's verdict on one item.

    ``score`` is normalised to [0, 1], or ``None`` when no verdict could be had; then
    ``error`` says why, prefixed by its category (``"parse: ..."``, ``"api: ..."``,
    ``"timeout: ..."``). ``verdict`` is the verdict as the template's scale names it
    (a label, or the number on the scale's own range).

    ``scoring`` says how the score was made: ``"parse"`` (read from the text) or
    ``"logprobs"`` (the expected score over the verdicts' probabilities, then
    ``distribution`` holds verdict -> probability, ``confidence`` the top verdict's
    probability and ``coverage`` the probability the model put on the scale at all).
    ``scoring_note`` says why logprob scoring was not used where it was asked for.
    ``low_coverage`` is True when ``coverage`` was below the judge's ``min_coverage``: the
    judgment then failed (``error``), fell back to the parsed verdict (``scoring_note``), or
    kept its weighed score flagged (``low_coverage="flag"``).

    ``output_format`` says which format the verdict was read in: ``"json"`` (a JSON object
    the judge asked for) or ``"text"`` (the template's text format); ``output_note`` says
    why a judge that asked for JSON read text instead (``output="auto"`` with a server
    that ignores the JSON schema; see :mod:`jurist.judges._output`), and that the backend
    sent the schema in a fallback form because the server refused the configured one
    (:attr:`Completion.format_note`).

    ``reasoning`` is the judge's thinking trace (a thinking model's ``reasoning_content``,
    thinking blocks or ``<think>`` text), bounded, unless the judge was told not to keep
    it; ``thinking_note`` says how a reply cut inside its thinking was recovered (see
    :mod:`jurist.judges._thinking`).
    """

    model_config = ConfigDict(frozen=True)

    score: float | None
    verdict: str | float | None = None
    explanation: str | None = None
    error: str | None = None
    judge_prompt: str = ""
    response: str | None = None
    attempts: int = 0
    usage: Usage = Usage()
    scoring: ScoringMode = "parse"
    distribution: dict[str, float] | None = None
    confidence: float | None = None
    coverage: float | None = None
    low_coverage: bool = False
    scoring_note: str | None = None
    latency: float = 0.0
    cached: bool = False
    output_format: OutputFormatUsed | None = None
    output_note: str | None = None
    reasoning: str | None = None
    thinking_note: str | None = None

    @property
    def ok(self) -> bool:
        return self.score is not None


# -- the hot path's own constructions -----------------------------------------------------

_new_object = object.__new__
# the setters of BaseModel's four slots, called directly (cheaper than object.__setattr__)
_set_dict = BaseModel.__dict__["__dict__"].__set__
_set_fields_set = BaseModel.__dict__["__pydantic_fields_set__"].__set__
_set_extra = BaseModel.__dict__["__pydantic_extra__"].__set__
_set_private = BaseModel.__dict__["__pydantic_private__"].__set__
# a model class -> (every field with its default, in declaration order; the fields whose
# default is made per object by a factory; the set of every field's name)
_FIELDS: dict[type[BaseModel], tuple[dict[str, Any], tuple[tuple[str, Any], ...], set[str]]] = {}


def _fields_of(
    cls: type[BaseModel],
) -> tuple[dict[str, Any], tuple[tuple[str, Any], ...], set[str]]:
    if not cls.model_config.get("frozen"):  # the one set of names is shared: never added to
        raise TypeError(f"assembled() builds frozen models only, not {cls.__name__}")
    defaults: dict[str, Any] = {}
    factories: list[tuple[str, Any]] = []
    for name, info in cls.model_fields.items():
        defaults[name] = info.default  # PydanticUndefined for a required field
        if info.default_factory is not None:
            factories.append((name, info.default_factory))
    found = _FIELDS[cls] = (defaults, tuple(factories), set(defaults))
    return found


def assembled(cls: type[M], values: dict[str, Any]) -> M:
    """An instance of the frozen model ``cls`` holding ``values`` as given, the other
    fields at their defaults: what ``cls(**values)`` builds when ``values`` are valid,
    without validating them. For the per-call hot path's own objects only (a call's
    :class:`Usage` and :class:`Completion`, a judge's :class:`Request` and
    :class:`Judgment`, a rendered user :class:`Message`), where this code made every value
    with its declared type: a
    validated construction costs 1.5 to 2 times as much, and pydantic's ``model_construct``
    several times more. Anything read from elsewhere is validated, or checked by its caller
    first. ``tests/test_types_assembled.py`` holds every such use to the validated
    construction (equal, dumped alike).

    Every field of an assembled object counts as set (``model_fields_set``), as for one
    validated from its own dump; the set is one per class (a frozen model never adds to
    it, and a copy gets its own).

    >>> assembled(Usage, {"prompt_tokens": 3, "calls": 1}) == Usage(prompt_tokens=3, calls=1)
    True
    """
    defaults, factories, names = _FIELDS.get(cls) or _fields_of(cls)
    data = {**defaults, **values}
    for name, factory in factories:
        if name not in values:
            data[name] = factory()
    obj = _new_object(cls)
    _set_dict(obj, data)
    _set_fields_set(obj, names)
    _set_extra(obj, None)
    _set_private(obj, None)
    return obj
