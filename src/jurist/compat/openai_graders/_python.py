"""``python`` graders: the grader's ``grade(sample, item)`` run in a separate Python
process, only when the user opts in (``allow_python=True``, ``--allow-python-graders``).

The child is this interpreter in isolated mode (``-I``: no user site, no ``PYTHONPATH``,
not the working folder), started in a fresh temporary folder, with its address space
bounded (``RLIMIT_AS``, default 2 GiB, as OpenAI's runtime) and its CPU time bounded
(``RLIMIT_CPU``), and killed when the wall-clock bound passes (default 120 s, OpenAI's
two minutes). It reads the source, the sample and the item as JSON on stdin and writes its
grade as JSON on stdout. Anything but a finite number (an exception, a bound hit, a
string) is an error naming the cause: OpenAI marked such a grade invalid and scored 0;
jurist records it as a failed judgment (and a reward gives its ``failure_value``, 0).
"""

from __future__ import annotations

import asyncio
import math
import os
import sys
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import orjson

__all__ = ["PythonLimits", "run_python_grader"]

_CHILD = r"""
import json, math, sys
data = json.loads(sys.stdin.read())
ns = {"__name__": "grader"}
try:
    exec(compile(data["source"], "<grader>", "exec"), ns)
    grade = ns.get("grade")
    if not callable(grade):
        raise NameError("the source defines no grade(sample, item) function")
    value = grade(data["sample"], data["item"])
    value = float(value)
    if not math.isfinite(value):
        raise ValueError(f"grade() returned {value}")
    out = {"value": value}
except BaseException as e:
    out = {"error": f"{type(e).__name__}: {e}"[:500]}
sys.stdout.write("\n" + json.dumps(out))
"""


@dataclass(frozen=True)
class PythonLimits:
    """The bounds of one ``python`` grader run."""

    seconds: float = 120.0
    memory_bytes: int = 2 * 1024**3


def _limit(limits: PythonLimits) -> Any:
    def apply() -> None:  # runs in the child, before exec
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (limits.memory_bytes, limits.memory_bytes))
        cpu = max(1, math.ceil(limits.seconds))
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))

    return apply


async def run_python_grader(
    source: str, sample: Mapping[str, Any], item: Mapping[str, Any], limits: PythonLimits
) -> tuple[float | None, str | None]:
    """``(grade, None)``, or ``(None, why)`` when the grader gave no valid grade."""
    payload = orjson.dumps(
        {"source": source, "sample": dict(sample), "item": dict(item)}, default=str
    )
    with tempfile.TemporaryDirectory(prefix="jurist-grader-") as folder:
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-I",
            "-c",
            _CHILD,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            cwd=folder,
            env={"PATH": os.environ.get("PATH", ""), "PYTHONHASHSEED": "0"},
            preexec_fn=_limit(limits),
        )
        try:
            out, err = await asyncio.wait_for(proc.communicate(payload), limits.seconds)
        except TimeoutError:
            proc.kill()
            await proc.wait()
            return None, f"python grader ran past {limits.seconds:g} s and was stopped"
    lines = out.decode("utf-8", "replace").strip().splitlines()
    try:
        result = orjson.loads(lines[-1]) if lines else None
    except orjson.JSONDecodeError:
        result = None
    if not isinstance(result, dict):
        tail = err.decode("utf-8", "replace").strip().splitlines()[-1:] or ["no output"]
        return None, f"python grader exited {proc.returncode}: {tail[0][:300]}"
    if "error" in result:
        return None, f"python grader: {result['error']}"
    return float(result["value"]), None
