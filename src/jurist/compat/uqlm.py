"""Drop-ins for uqlm's ``LLMJudge`` and ``LLMPanel``, thin layers over jurist's judges.

uqlm users keep their code: the constructor, ``judge_responses`` and ``generate_responses``
take uqlm's documented arguments and return uqlm's shapes, and the likert template reads
uqlm's verdict phrases ("partially correct" is 0.5) besides ratings 1-5 (see
:mod:`jurist.compat._uqlm_likert`). Differences from uqlm, on purpose: verdicts are read
with jurist's parsing policy (whole words, longest phrase first, so "Incorrect" is never
"correct"); ``template_ques_ans`` and ``keywords_to_scores_dict`` are honoured with any
``scoring_template``; ``retries=N`` re-asks at most N more times; scores that could not be
read are NaN, as in uqlm's DataFrame, while a call that fails raises its error, as uqlm's
judge raises its LLM's (never a NaN that hides it); a ``continuous`` answer is read as the
number it is ("0.8" of 0-100 is 0.008; uqlm joins its digits: 0.08). docs/uqlm.md lists
every difference and why.

>>> from jurist.compat.uqlm import LLMJudge
>>> judge = LLMJudge(llm="mock:judge")
>>> judge.scoring_template
'true_false_uncertain'

:class:`LLMJudge` lives in :mod:`jurist.compat._uqlm_judge` and :class:`LLMPanel`, which runs
several judges over :class:`jurist.Panel`, in :mod:`jurist.compat._uqlm_panel`; this module
gathers them (it is the only import path users need).
"""

from jurist.compat._uqlm_judge import LLMJudge
from jurist.compat._uqlm_panel import LLMPanel, UQResult

__all__ = ["LLMJudge", "LLMPanel", "UQResult"]
