"""The self-contained HTML report of a run: summary, charts, the item browser.

:meth:`jurist.runs.Run.report` writes it; the page's template (``report.html``) and its
script (``report.js``) are package data beside these modules.
"""

from jurist.runs.report._page import write_report

__all__ = ["write_report"]
