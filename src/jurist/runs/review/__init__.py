"""The review page: people label a run's items (``jurist review RUN``; ``docs/review.md``).

:func:`load_items` reads what the page shows from a run folder (the items as the report
shows them, the label scale, the judge's verdicts); :func:`serve` serves the page on
127.0.0.1 behind a random token and writes each label to the run's ``labels.jsonl`` as it
is given (:class:`~jurist.runs._label_writer.LabelWriter`); :func:`write_export` writes the
same page as one offline file whose labels download as the same JSON Lines.
"""

from jurist.runs.review._items import ReviewItems, ReviewScale, load_items, parse_scale
from jurist.runs.review._page import review_html
from jurist.runs.review._server import ReviewApp, import_labels, serve, write_export

__all__ = [
    "ReviewApp",
    "ReviewItems",
    "ReviewScale",
    "import_labels",
    "load_items",
    "parse_scale",
    "review_html",
    "serve",
    "write_export",
]
