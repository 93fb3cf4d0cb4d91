"""``python -m jurist.pipeline.suites.schema [FILE]``: write the suite file's JSON Schema
(default: print it). The published copy is ``schemas/suite.schema.json``."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from jurist.pipeline.suites._model import suite_schema

__all__ = ["schema_text"]


def schema_text() -> str:
    """The schema as the published file holds it (sorted keys, two-space indent)."""
    return json.dumps(suite_schema(), indent=2, sort_keys=True, ensure_ascii=False) + "\n"


if __name__ == "__main__":
    if len(sys.argv) > 1:
        Path(sys.argv[1]).write_text(schema_text(), encoding="utf-8")
    else:
        sys.stdout.write(schema_text())
