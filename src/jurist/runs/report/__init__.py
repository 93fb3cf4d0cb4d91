"""The self-contained HTML report of a run: summary, charts, the item browser.

:meth:`jurist.runs.Run.report` writes it; :func:`write_side_by_side` writes the page
of several runs, two of them item by item; the page's template (``report.html``) and its
script (``report.js``) are package data beside these modules.
"""

from jurist.runs.report._page import write_report
from jurist.runs.report._side_by_side import write_side_by_side

__all__ = ["write_report", "write_side_by_side"]
