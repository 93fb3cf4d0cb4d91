"""jurist: LLM-as-a-judge, fast, cheap and reproducible.

>>> import jurist
>>> judge = jurist.LLMJudge(jurist.get_model("mock:judge", outputs=["4"]), template="likert")
>>> judge.judge_sync([{"prompt": "2+2?", "response": "4"}]).scores
[0.75]
"""

from jurist._version import __version__
from jurist.errors import JuristError
from jurist.judges import JudgeResults, LLMJudge
from jurist.models import Model, get_model
from jurist.templates import Template, get_template, list_templates
from jurist.types import Completion, Judgment, Message, Request, Usage

__all__ = [
    "Completion",
    "JudgeResults",
    "Judgment",
    "JuristError",
    "LLMJudge",
    "Message",
    "Model",
    "Request",
    "Template",
    "Usage",
    "__version__",
    "get_model",
    "get_template",
    "list_templates",
]
