"""Bias audits of a pairwise judge on the user's own data (``jurist audit``).

Probes: position (the reply shown first), verbosity (a reply padded with filler),
format (the same sentences as a markdown list) and self-preference (the judge's own model's
replies, against a reference judge). Each gives an effect, a percentile bootstrap interval
and a verdict against a threshold; see :func:`audit` and :class:`AuditReport`.
"""

from jurist.audit._audit import DEFAULT_THRESHOLD, PROBES, audit, audit_sync
from jurist.audit._report import AuditReport, ProbeResult, Verdict
from jurist.audit._transforms import FILLER, as_markdown, pad

__all__ = [
    "DEFAULT_THRESHOLD",
    "FILLER",
    "PROBES",
    "AuditReport",
    "ProbeResult",
    "Verdict",
    "as_markdown",
    "audit",
    "audit_sync",
    "pad",
]
