"""Prompt templates, scales and the verdict parser.

>>> from jurist.templates import get_template
>>> get_template("true_false_uncertain").parse("I am not sure").score
0.5
"""

from jurist.templates._builtin import get_template, list_templates, register_template
from jurist.templates._parse import ParsedVerdict, parse_verdict, split_reasoning
from jurist.templates._scale import Label, LabelScale, NumericScale, Scale
from jurist.templates._template import Template, labels_scale

__all__ = [
    "Label",
    "LabelScale",
    "NumericScale",
    "ParsedVerdict",
    "Scale",
    "Template",
    "get_template",
    "labels_scale",
    "list_templates",
    "parse_verdict",
    "register_template",
    "split_reasoning",
]
