"""The reward paths ``rewards.py`` times, each checking that every reward is right.

Each function judges ``n`` distinct rollouts (distinct, so nothing is coalesced or cached)
against the stub judge (``Score: 0.8`` after the stub's latency) and returns its wall time.
"""

from __future__ import annotations

import asyncio
import gc
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiohttp

from jurist.rewards import (
    batch_compute_score,
    compute_score,
    compute_score_async,
    reward_judge_from_kwargs,
    trl_reward_func,
)

ROOT = Path(__file__).resolve().parent.parent


LAST_CPU = [0.0]
"""CPU seconds of this process (all its threads) in the last timed section."""
LAST_GC = [0.0, 0.0]
"""Seconds this process spent in garbage collections in the last timed section: all
generations, and full (generation 2) collections alone."""
_GC = [0.0, 0.0, 0.0]  # all, full, start of the one running


def _gc_timer(phase: str, info: dict[str, Any]) -> None:
    if phase == "start":
        _GC[2] = time.perf_counter()
        return
    took = time.perf_counter() - _GC[2]
    _GC[0] += took
    if info["generation"] == 2:
        _GC[1] += took


gc.callbacks.append(_gc_timer)


class Clock:
    """Wall, process-CPU and garbage-collection time from creation to :meth:`stop`.

    A clock starts after a full collection: this process holds torch and verl for the verl
    paths (about 510,000 objects, about 0.3 s a full collection), and a collection owed by
    one path's work landed in whichever path ran next (the floor, or the stream's client:
    0.30 s in one run of a pair, 0.0 in the other, the other way round the next time), so
    each path now pays only the collections its own work triggers.
    """

    def __init__(self) -> None:
        gc.collect()
        self.wall0, self.cpu0 = time.perf_counter(), time.process_time()
        self.gc0 = (_GC[0], _GC[1])

    def stop(self) -> float:
        """The wall seconds; the CPU seconds go to :data:`LAST_CPU`, the collections' to
        :data:`LAST_GC`."""
        LAST_CPU[0] = time.process_time() - self.cpu0
        LAST_GC[0], LAST_GC[1] = _GC[0] - self.gc0[0], _GC[1] - self.gc0[1]
        return time.perf_counter() - self.wall0


def rollouts(n: int, tag: str) -> tuple[list[str], list[str], list[str], list[dict[str, str]]]:
    """``n`` distinct rollouts: data sources, solutions, references, extra infos."""
    sols = [f"{tag} rollout {i}: the answer is {i % 97}" for i in range(n)]
    refs = [str(i % 89) for i in range(n)]
    infos = [{"question": f"{tag} question {i}?"} for i in range(n)]
    return ["bench"] * n, sols, refs, infos


def check(values: list[Any], n: int, what: str) -> None:
    bad = [v for v in values if v != 0.8]
    if len(values) != n or bad:
        raise SystemExit(f"{what}: {len(bad)} of {len(values)} rewards are wrong: {bad[:3]}")


def loop(kwargs: dict[str, Any], n: int) -> float:
    """``compute_score`` once per rollout, one after another (verl's sync path)."""
    src, sols, refs, infos = rollouts(n, "loop")
    clock = Clock()
    out = [compute_score(src[i], sols[i], refs[i], infos[i], **kwargs) for i in range(n)]
    wall = clock.stop()
    check([o["score"] for o in out], n, "per-sample loop")
    return wall


def batch(kwargs: dict[str, Any], n: int, tag: str) -> float:
    """``batch_compute_score`` over all ``n`` (verl's legacy batch manager)."""
    src, sols, refs, infos = rollouts(n, tag)
    clock = Clock()
    out = batch_compute_score(src, sols, refs, infos, **kwargs)
    wall = clock.stop()
    check([o["score"] for o in out], n, f"batch {tag}")
    return wall


async def gathered(kwargs: dict[str, Any], n: int, tag: str) -> float:
    """``compute_score_async`` once per rollout, all gathered on one loop: the reward
    loop's calls without verl's own per-sample work (slicing, decoding)."""
    src, sols, refs, infos = rollouts(n, tag)
    clock = Clock()
    out = await asyncio.gather(
        *(compute_score_async(src[i], sols[i], refs[i], infos[i], **kwargs) for i in range(n))
    )
    wall = clock.stop()
    check([o["score"] for o in out], n, f"compute_score_async {tag}")
    return wall


def process_cpu(pid: int) -> float | None:
    """CPU seconds (user + system) a process has used so far; None off Linux."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class TRLPath:
    """A ``trl_reward_func`` called as ``GRPOTrainer`` calls it, the whole batch at once."""

    def __init__(self, kwargs: dict[str, Any]) -> None:
        self.fn = trl_reward_func(**kwargs)

    def __call__(self, n: int, tag: str) -> float:
        _, sols, refs, infos = rollouts(n, tag)
        prompts = [i["question"] for i in infos]
        clock = Clock()
        out = self.fn(prompts=prompts, completions=sols, answer=refs)
        wall = clock.stop()
        check(out, n, f"trl {tag}")
        return wall

    def close(self) -> None:
        self.fn.close()


IDEAL_REWARD = """import asyncio

_bound = None


async def compute_score(data_source, solution_str, ground_truth, extra_info=None,
                        latency=0.2, concurrency=256, **kwargs):
    \"\"\"A reward that costs nothing: it waits the judge's latency under the same bound.\"\"\"
    global _bound
    if _bound is None:
        _bound = asyncio.Semaphore(concurrency)
    async with _bound:
        await asyncio.sleep(latency)
    return {"score": 0.8}
"""


class VerlLoopPath:
    """verl 0.9's ``RewardLoopWorker`` (one worker) with ``compute_score_async``, or with
    ``ideal=True`` a reward that costs nothing (:data:`IDEAL_REWARD`): verl's own floor.

    The trainer's config is composed from verl's ``ppo_trainer.yaml``; the rollouts are a
    ``DataProto`` of token ids from a tiny local tokenizer, decoded by verl as in training.
    """

    def __init__(self, kwargs: dict[str, Any], workdir: Path, *, ideal: bool = False) -> None:
        import verl
        from hydra import compose, initialize_config_dir
        from verl.experimental.reward_loop.reward_loop import RewardLoopWorker

        from jurist.testing import build_tiny_model

        tok_dir = workdir / "tiny"
        if not (tok_dir / "tokenizer.json").exists():
            build_tiny_model(tok_dir)
        fn_file = workdir / ("ideal_reward.py" if ideal else "my_reward.py")
        fn_file.write_text(
            IDEAL_REWARD if ideal else "from jurist.rewards import compute_score_async\n"
        )
        name = "compute_score" if ideal else "compute_score_async"
        kw = "+reward.custom_reward_function.reward_kwargs"
        overrides = [
            f"actor_rollout_ref.model.path={tok_dir}",
            f"reward.custom_reward_function.path={fn_file}",
            f"reward.custom_reward_function.name={name}",
            *(f"{kw}.{k}={v}" for k, v in kwargs.items()),
        ]
        config_dir = str(Path(verl.__file__).parent / "trainer" / "config")
        with initialize_config_dir(config_dir=config_dir, version_base=None):
            config = compose("ppo_trainer", overrides=overrides)
        self.worker = RewardLoopWorker(config)

    def data(self, n: int, tag: str) -> Any:
        import numpy as np
        import torch
        from verl import DataProto

        tok = self.worker.input_tokenizer
        _, sols, refs, infos = rollouts(n, tag)
        ids = [tok(s, add_special_tokens=False)["input_ids"] for s in sols]
        width = max(len(i) for i in ids)
        responses = torch.zeros((n, width), dtype=torch.long)
        mask = torch.zeros((n, 2 + width), dtype=torch.long)
        mask[:, :2] = 1
        for row, i in enumerate(ids):
            responses[row, : len(i)] = torch.tensor(i)
            mask[row, 2 : 2 + len(i)] = 1
        return DataProto.from_dict(
            tensors={
                "prompts": torch.ones((n, 2), dtype=torch.long),
                "responses": responses,
                "attention_mask": mask,
            },
            non_tensors={
                "data_source": np.array(["bench"] * n, dtype=object),
                "reward_model": np.array([{"ground_truth": r} for r in refs], dtype=object),
                "extra_info": np.array(infos, dtype=object),
            },
        )

    def __call__(self, n: int, tag: str) -> float:
        data = self.data(n, tag)  # built before the clock starts: the rollout's output
        worker = self.worker
        clock = Clock()
        out = worker.loop.run_until_complete(worker.compute_score_batch(data))
        wall = clock.stop()
        check([o["reward_score"] for o in out], n, f"verl reward loop {tag}")
        return wall


def judge_bodies(kwargs: dict[str, Any], n: int, tag: str) -> list[bytes]:
    """The chat bodies jurist's reward judge sends for ``rollouts(n, tag)``: the reward
    template rendered for each rollout's response, reference and question, with the
    judge's sampling, as it asks once the stub's text answers have turned JSON off."""
    rj = reward_judge_from_kwargs(**kwargs)
    judge = rj.judge.with_options(output="text")
    name = str(kwargs["model"]).partition(":")[2]
    _, sols, refs, infos = rollouts(n, tag)
    bodies = []
    for sol, ref, info in zip(sols, refs, infos, strict=True):
        item = {"response": sol, "prompt": info["question"], "reference": ref}
        messages = [{"role": m.role, "content": m.content} for m in judge.messages(item)]
        body = {
            "model": name,
            "messages": messages,
            "max_tokens": judge.max_tokens,
            "temperature": judge.temperature,
        }
        bodies.append(json.dumps(body).encode())
    return bodies


async def floor(base_url: str, bodies: list[bytes], concurrency: int, verdict: str) -> float:
    """Bare aiohttp posting ``bodies`` (built beforehand), ``concurrency`` at once (as
    many workers, each posting the next body when its answer is in), each answer read and
    its verdict checked: the same requests as a reward path, no jurist."""
    headers = {"Content-Type": "application/json", "Authorization": "Bearer x"}
    connector = aiohttp.TCPConnector(limit=1000)
    url = f"{base_url}/chat/completions"
    texts: list[str] = [""] * len(bodies)
    async with aiohttp.ClientSession(connector=connector, headers=headers) as session:

        async def run(indices: Iterator[int]) -> None:
            async def worker() -> None:
                for i in indices:
                    async with session.post(url, data=bodies[i]) as r:
                        payload = json.loads(await r.read())
                    texts[i] = payload["choices"][0]["message"]["content"]

            await asyncio.gather(*(worker() for _ in range(min(concurrency, len(bodies)))))

        await run(iter(range(min(concurrency, len(bodies)))))  # open the pool
        clock = Clock()
        await run(iter(range(len(bodies))))
        wall = clock.stop()
    if texts != [verdict] * len(bodies):
        raise SystemExit(f"floor: {sum(t != verdict for t in texts)} answers were not {verdict!r}")
    return wall


# -- the reward server ------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_server(base_url: str, concurrency: int) -> tuple[subprocess.Popen[str], str]:
    """``jurist serve-reward`` in a subprocess, once it answers ``/health``."""
    port = free_port()
    cmd = [sys.executable, "-m", "jurist", "serve-reward", "--model", "openai:x"]
    cmd += ["--base-url", base_url, "--api-key", "x", "--concurrency", str(concurrency)]
    cmd += ["--port", str(port)]
    return wait_healthy(cmd, port)


def start_ideal_server(latency: float, concurrency: int) -> tuple[subprocess.Popen[str], str]:
    """``_ideal_reward_server.py`` (a reward server that costs nothing) in a subprocess."""
    port = free_port()
    cmd = [sys.executable, str(Path(__file__).resolve().parent / "_ideal_reward_server.py")]
    cmd += ["--port", str(port), "--latency", str(latency), "--concurrency", str(concurrency)]
    return wait_healthy(cmd, port)


def wait_healthy(cmd: list[str], port: int) -> tuple[subprocess.Popen[str], str]:
    """Start ``cmd`` and wait until ``/health`` on ``port`` answers."""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            out = proc.stdout.read() if proc.stdout else ""
            raise RuntimeError(f"{cmd[1:3]} exited ({proc.returncode}): {out[-2000:]}")
        try:
            with urllib.request.urlopen(f"{url}/health", timeout=2) as resp:
                if resp.status == 200:
                    return proc, url
        except OSError:
            time.sleep(0.2)
    proc.terminate()
    raise RuntimeError(f"{cmd[1:3]} did not answer /health within 60 s")


def openrlhf_body(n: int, tag: str) -> tuple[list[str], list[str], list[str]]:
    """OpenRLHF's fields: query (prompt + response), prompts, labels."""
    _, sols, refs, infos = rollouts(n, tag)
    prompts = [f"<|user|>{i['question']}<|assistant|>" for i in infos]
    return [p + s for p, s in zip(prompts, sols, strict=True)], prompts, refs


async def server_batched(url: str, n: int, tag: str) -> float:
    """One ``/get_reward`` request holding all ``n`` samples."""
    query, prompts, labels = openrlhf_body(n, tag)
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=600)) as session:
        clock = Clock()
        async with session.post(
            f"{url}/get_reward", json={"query": query, "prompts": prompts, "labels": labels}
        ) as resp:
            body = await resp.json()
        wall = clock.stop()
    check(body["rewards"], n, f"server batched {tag}")
    return wall


class OpenRLHFStream:
    """``n`` single-sample requests at once, sent by OpenRLHF 0.11.2's own executor
    (``SingleTurnAgentExecutor._fetch_rewards_via_http``, one call per rollout) when its
    wheel is given, else by the same pattern written out (a session and a connection per
    request, ``ClientTimeout(total=180)``, ``raise_for_status``, ``json()``)."""

    def __init__(self, url: str, wheel: str | None) -> None:
        self.url = f"{url}/get_reward"
        self.client = "pattern (no wheel)"
        self.executor: Any = None
        if wheel:
            sys.path.insert(0, str(ROOT))
            from tests._openrlhf import openrlhf_agent

            agent = openrlhf_agent(Path(wheel), Path(tempfile.mkdtemp(prefix="openrlhf-")))
            self.executor = agent.SingleTurnAgentExecutor(remote_rm_url=self.url)
            self.client = "openrlhf 0.11.2 SingleTurnAgentExecutor"

    async def _one(self, query: str, prompt: str, label: str) -> Any:
        if self.executor is not None:
            return (await self.executor._fetch_rewards_via_http([query], [prompt], [label]))[0]
        timeout = aiohttp.ClientTimeout(total=180)
        async with (
            aiohttp.ClientSession(timeout=timeout) as session,
            session.post(
                self.url, json={"query": [query], "prompts": [prompt], "labels": [label]}
            ) as resp,
        ):
            resp.raise_for_status()
            return await resp.json()

    async def __call__(self, n: int, tag: str) -> float:
        query, prompts, labels = openrlhf_body(n, tag)
        clock = Clock()
        out = await asyncio.gather(
            *(self._one(*x) for x in zip(query, prompts, labels, strict=True))
        )
        wall = clock.stop()
        check([o["rewards"][0] for o in out], n, f"server stream {tag}")
        return wall


def default_wheel() -> str | None:
    wheel = os.environ.get("JURIST_OPENRLHF_WHEEL")
    return wheel if wheel and Path(wheel).is_file() else None
