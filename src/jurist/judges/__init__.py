"""Judges: configuration plus async calls that return judgments.

>>> from jurist.judges import LLMJudge
>>> LLMJudge("mock:j", template="likert").template.name
'likert'
"""

from jurist.judges._llm_judge import LLMJudge
from jurist.judges._protocol import ItemJudge, ItemOutcome
from jurist.judges._results import JudgeResults

__all__ = ["ItemJudge", "ItemOutcome", "JudgeResults", "LLMJudge"]
