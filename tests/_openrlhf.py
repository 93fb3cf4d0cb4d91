"""OpenRLHF's reward client, loaded from its wheel without installing openrlhf.

openrlhf 0.11.2 pins torch and vLLM, so it is not installed: ``openrlhf/utils/agent.py``
(the rollout executors that post to ``--reward.remote_url``) and the logging helper it
imports are extracted from the wheel and imported under their own names. Used by
``tests/rewards/test_reward_server_streams.py`` and ``benchmarks/rewards.py``.
"""

from __future__ import annotations

import importlib.util
import sys
import types
import zipfile
from pathlib import Path

__all__ = ["openrlhf_agent"]


def openrlhf_agent(wheel: Path, workdir: Path) -> types.ModuleType:
    """``openrlhf.utils.agent`` from the openrlhf 0.11.2 wheel, without its heavy package.

    ``openrlhf/utils/__init__.py`` imports DeepSpeed strategies; ``agent.py`` itself needs
    only asyncio, aiohttp and ``openrlhf.utils.logging_utils``.
    """
    root = workdir / "openrlhf_src"
    with zipfile.ZipFile(wheel) as z:
        for name in z.namelist():
            if name.endswith(("openrlhf/utils/agent.py", "openrlhf/utils/logging_utils.py")):
                target = root / "openrlhf" / "utils" / Path(name).name
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(z.read(name))
    for pkg in ("openrlhf", "openrlhf.utils"):
        module = types.ModuleType(pkg)
        module.__path__ = [str(root / Path(*pkg.split(".")))]
        sys.modules.setdefault(pkg, module)
    for name in ("logging_utils", "agent"):
        spec = importlib.util.spec_from_file_location(
            f"openrlhf.utils.{name}", root / "openrlhf" / "utils" / f"{name}.py"
        )
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)
    return sys.modules["openrlhf.utils.agent"]
