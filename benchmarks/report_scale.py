"""The HTML report at scale: time to write it, its size, and the time a browser takes to open it.

A run of N items (default 100,000) is made with ``jurist.evaluate`` and the zero-latency
mock model: a 1-5 ``likert`` judge whose verdict is the item's human label, off by one for
every 7th item, and an unparseable answer for every 50th; items carry a 1-5 ``human``
label and a few hundred characters of text (some with ``</script>`` in it). Then:

1. **write**: ``run.report(labels="human")``, timed (``time.perf_counter``), and the file's
   size in MB.
2. **open**: headless Chromium (a fresh profile each time) opens three views: the plain
   page, a filtered view (``#status=failed``) and a text search (``#q=...``, which builds
   the search index). Two figures per view: the page's script writes ``data-ready-ms``
   on ``<body>``, the time from the start of navigation to the first page of rows on
   screen (HTML parse, JSON parse, filter, render), read with ``--dump-dom``; and the
   wall time of a whole Chromium run that loads the view and takes a screenshot
   (Chromium's own start included: it is measured alone on ``about:blank``). The
   ``--dump-dom`` run itself is not timed: printing a DOM that holds the data block
   takes longer than loading it.

Run::

    python benchmarks/report_scale.py                 # 100,000 items, ~2-3 min
    python benchmarks/report_scale.py --items 1000 --keep /tmp/report1k

There are no targets: the numbers are reported (and written as JSON to
``benchmarks/results/report_scale-<time>.json``).
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import jurist
from jurist.types import Request

HERE = Path(__file__).resolve().parent
WORDS = [
    "the",
    "judge",
    "reads",
    "every",
    "answer",
    "and",
    "weighs",
    "how",
    "well",
    "it",
    "meets",
    "the",
    "question",
    "asked",
]


def items(n: int) -> list[dict[str, Any]]:
    out = []
    for i in range(n):
        label = 1 + (i * 7919) % 5
        body = " ".join(WORDS[(i + k) % len(WORDS)] for k in range(40))
        tail = " </script><script>alert(1)</script>" if i % 97 == 0 else ""
        out.append(
            {
                "prompt": f"Question {i}: explain item {i} in a few sentences.",
                "response": f"[ref {label}] Answer {i}: {body}{tail}",
                "human": label,
            }
        )
    return out


def judge_text(request: Request) -> str:
    text = request.messages[-1].content
    i = int(re.search(r"Question (\d+)", text).group(1))  # type: ignore[union-attr]
    label = int(re.search(r"\[ref (\d)\]", text).group(1))  # type: ignore[union-attr]
    if i % 50 == 49:
        return "I cannot rate this."
    if i % 7 == 3:
        return str(label + 1 if label < 5 else label - 1)
    return str(label)


def chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        if path := shutil.which(name):
            return path
    return None


def open_page(browser: str, url: str, profile: Path, out: Path | None) -> tuple[float, str]:
    """Chromium's wall time to load ``url`` and take a screenshot (``out`` given), or to
    load it and print the DOM (``out`` None: slow for a large page, the DOM holds the
    data block), with that output."""
    start = time.perf_counter()
    proc = subprocess.run(
        [
            browser,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            f"--user-data-dir={profile}",
            "--window-size=1200,900",
            "--virtual-time-budget=60000",
            f"--screenshot={out}" if out else "--dump-dom",
            url,
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise RuntimeError(f"chromium failed on {url}: {proc.stderr[-2000:]}")
    return wall, proc.stdout


def body_attr(dom: str, name: str) -> str | None:
    body = dom.split("<body", 1)[1].split(">", 1)[0] if "<body" in dom else ""
    m = re.search(rf'{name}="([^"]*)"', body)
    return m.group(1) if m else None


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--items", type=int, default=100_000)
    ap.add_argument("--keep", type=Path, help="make the run in this folder and keep it")
    args = ap.parse_args()
    folder = args.keep or Path(tempfile.mkdtemp(prefix="jurist-report-scale-"))
    result: dict[str, Any] = {"items": args.items}

    model = jurist.get_model("mock:judge", outputs=judge_text, record=False)
    judge = jurist.LLMJudge(model, template="likert")
    t0 = time.perf_counter()
    run = jurist.evaluate(items(args.items), judge, run_dir=folder / "run", progress=False)
    result["evaluate_s"] = round(time.perf_counter() - t0, 2)

    t0 = time.perf_counter()
    report = run.report(labels="human")
    result["write_s"] = round(time.perf_counter() - t0, 2)
    result["size_mb"] = round(report.stat().st_size / 1e6, 2)
    print(
        f"{args.items} items: evaluate {result['evaluate_s']} s, report written in "
        f"{result['write_s']} s, {result['size_mb']} MB"
    )

    browser = chromium()
    if browser is None:
        print("no chromium on PATH: browser timings skipped")
    else:
        with tempfile.TemporaryDirectory() as tmp:
            profiles = Path(tmp)
            blank, _ = open_page(browser, "about:blank", profiles / "blank", profiles / "b.png")
            result["chromium_blank_s"] = round(blank, 2)
            views = {"plain": "", "failed": "#status=failed", "search": "#q=answer%2077"}
            for name, fragment in views.items():
                url = report.as_uri() + fragment
                wall, _ = open_page(browser, url, profiles / f"s-{name}", profiles / f"{name}.png")
                _, dom = open_page(browser, url, profiles / f"d-{name}", None)
                ready = body_attr(dom, "data-ready-ms")
                shown = body_attr(dom, "data-shown")
                result[f"open_{name}"] = {
                    "ready_ms": None if ready is None else int(ready),
                    "screenshot_wall_s": round(wall, 2),
                    "items_shown": None if shown is None else int(shown),
                }
                print(
                    f"open {name:7s}: first page of rows on screen {ready} ms after navigation "
                    f"began; chromium load + screenshot {wall:.2f} s (blank page {blank:.2f} s); "
                    f"{shown} items match"
                )
    out = HERE / "results" / f"report_scale-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(result, indent=2))
    print(f"results: {out}")
    if args.keep is None:
        shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
