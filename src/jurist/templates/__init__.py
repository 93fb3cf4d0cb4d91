"""Prompt templates, scales and the verdict parser.

>>> from jurist.templates import get_template
>>> get_template("true_false_uncertain").parse("I am not sure").score
0.5
>>> get_template("mt_bench").parse("Solid answer. Rating: [[9]]").score
0.9
"""

from jurist.templates import (  # noqa: F401  (registration)
    _builtin,
    _grounded,
    _mtbench,
    _prometheus,
    _thought,
    _trajectory,
)
from jurist.templates._chat import LENIENT, ChatMessage, FunctionCall, ToolCall, parse_messages
from jurist.templates._conversation import (
    DEFAULT_MAX_TOOL_CHARS,
    PLACE,
    Turn,
    check_item,
    conversation_fields,
    render_conversation,
    supplies,
)
from jurist.templates._forms import VerdictForm
from jurist.templates._images import image_refs, load_image
from jurist.templates._parse import (
    CONFLICT_RULES,  # noqa: F401  (importable, not public)
    Conflict,
    ParsedVerdict,
    parse_verdict,
    split_reasoning,
)
from jurist.templates._registry import get_template, list_templates, register_template
from jurist.templates._scale import Label, LabelScale, NumericScale, Scale
from jurist.templates._template import (  # describe_scale: importable, not public
    PARSE_INLINE_MAX,
    Template,
    describe_scale,  # noqa: F401
    labels_scale,
)
from jurist.templates._values import field_text
from jurist.templates._yaml import load_template

__all__ = [
    "DEFAULT_MAX_TOOL_CHARS",
    "LENIENT",
    "PARSE_INLINE_MAX",
    "PLACE",
    "ChatMessage",
    "Conflict",
    "FunctionCall",
    "Label",
    "LabelScale",
    "NumericScale",
    "ParsedVerdict",
    "Scale",
    "Template",
    "ToolCall",
    "Turn",
    "VerdictForm",
    "check_item",
    "conversation_fields",
    "field_text",
    "get_template",
    "image_refs",
    "labels_scale",
    "list_templates",
    "load_image",
    "load_template",
    "parse_messages",
    "parse_verdict",
    "register_template",
    "render_conversation",
    "split_reasoning",
    "supplies",
]
