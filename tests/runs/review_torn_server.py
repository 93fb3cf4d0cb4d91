"""``python tests/runs/review_torn_server.py ARG...``: ``jurist review ARG...``, whose label
writer tears its ``TEAR``-th line: it writes the first half of the line to ``labels.jsonl``
(fsynced, so the half is really in the file), prints ``TORN`` and waits for ever, inside the
write, holding the file's lock: the test SIGKILLs the process there, in the middle of a
write (tests/runs/test_review_page.py). ``TEAR`` is the environment variable
``JURIST_TEST_TEAR`` (default 1)."""

from __future__ import annotations

import os
import sys
import threading

from jurist.cli._main import main as cli_main
from jurist.runs._label_writer import LabelWriter


def main() -> int:
    """Patch the writer (in this process only: never at import, so collecting this module
    for doctests changes nothing), then run ``jurist review ARG...``."""
    calls = [0]
    tear_at = int(os.environ.get("JURIST_TEST_TEAR", "1"))
    original = LabelWriter._append

    def tearing(self: LabelWriter, data: bytes) -> None:
        calls[0] += 1
        if calls[0] < tear_at:
            original(self, data)
            return
        half = len(data) // 2
        os.write(self._fd, data[:half])
        os.fsync(self._fd)
        print(f"TORN {half} of {len(data)} bytes", flush=True)
        threading.Event().wait()  # killed here

    LabelWriter._append = tearing  # type: ignore[method-assign]
    return cli_main(["review", *sys.argv[1:]])


if __name__ == "__main__":
    sys.exit(main())
