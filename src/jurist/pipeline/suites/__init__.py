"""Suite files: these data, these judges, these bars, in one versioned YAML file.

``jurist run suite.yaml`` judges every dataset with every judge; each (dataset, judge)
pair is a *cell*, one resumable run folder (``<out>/<dataset>/<judge>``) written through
the one run path (:func:`jurist.engines.aevaluate`), checked against the bars that apply
to it, then summed up in one table and one page (``<out>/suite.html``). See
``docs/suites.md``; the file's JSON Schema is ``schemas/suite.schema.json``
(:func:`suite_schema`).
"""

from jurist.pipeline.suites._bars import BarResult, check_bars
from jurist.pipeline.suites._load import Cell, Suite, load_suite
from jurist.pipeline.suites._model import SuiteFile, suite_schema
from jurist.pipeline.suites._plan import Plan, cell_data, cell_fields, cell_judge, plan

__all__ = [
    "BarResult",
    "Cell",
    "Plan",
    "Suite",
    "SuiteFile",
    "cell_data",
    "cell_fields",
    "cell_judge",
    "check_bars",
    "load_suite",
    "plan",
    "suite_schema",
]
