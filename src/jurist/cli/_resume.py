"""The command that resumes an interrupted run, printed without its keys and still working.

A key given on the command line (``--api-key KEY``, ``--model 'openai:j[api_key=KEY]'``,
``--base-url http://user:KEY@host/v1``) is never printed. Printing ``***`` in its place
would give a command that sends ``***``; instead each key becomes a shell variable the
user sets before running the command again: ``--api-key KEY`` is dropped (the CLI reads
``$JURIST_API_KEY``), and a key inside an argument becomes ``${JURIST_SECRET_1}`` in a
double-quoted argument, which the shell fills in.

>>> from jurist._secrets import remember_secret
>>> remember_secret("flag-key-0123456789")
>>> hint = resume_command(["judge", "d.jsonl", "--api-key", "flag-key-0123456789",
...                        "--base-url", "http://me:pw-0123456789@h/v1", "--out", "r 1"])
>>> hint.command
'jurist judge d.jsonl --base-url "http://me:${JURIST_SECRET_1}@h/v1" --out \\'r 1\\''
>>> hint.variables
{'JURIST_API_KEY': 'the key given with --api-key', 'JURIST_SECRET_1': 'the key in --base-url'}

"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field

__all__ = ["ResumeHint", "resume_command"]

API_KEY_ENV = "JURIST_API_KEY"
_API_KEY_FLAG = "--api-key"


@dataclass
class ResumeHint:
    """The command to run again, and the variables to set first (name -> which key)."""

    command: str
    variables: dict[str, str] = field(default_factory=dict)

    def say(self) -> str:
        """The command, after a line naming the variables to set (if any)."""
        if not self.variables:
            return f"run again:\n  {self.command}"
        named = ", ".join(f"{name} ({where})" for name, where in self.variables.items())
        return (
            f"set {named} in the environment (keys are not printed), then run again:\n"
            f"  {self.command}"
        )


def resume_command(argv: Sequence[str]) -> ResumeHint:
    """``jurist ARGV`` with every key replaced by a shell variable (see the module)."""
    from jurist._secrets import secrets_in

    names: dict[str, str] = {}  # key -> variable
    hint = ResumeHint(command="")
    words = ["jurist"]
    i = 0
    while i < len(argv):
        arg = argv[i]
        flag, eq, inline = arg.partition("=")
        if flag == _API_KEY_FLAG:
            value = inline if eq else (argv[i + 1] if i + 1 < len(argv) else "")
            names.setdefault(value, API_KEY_ENV)
            hint.variables.setdefault(API_KEY_ENV, f"the key given with {_API_KEY_FLAG}")
            i += 1 if eq else 2
            continue
        keys = secrets_in(arg)
        if not keys:
            words.append(shlex.quote(arg))
        else:
            flag_before = argv[i - 1] if i and argv[i - 1].startswith("--") else None
            where = f"the key in {flag_before or shlex.quote(flag)}"
            for key in keys:
                if key not in names:
                    names[key] = (
                        f"JURIST_SECRET_{sum(n != API_KEY_ENV for n in names.values()) + 1}"
                    )
                hint.variables.setdefault(names[key], where)
            words.append(_with_variables(arg, sorted(keys, key=len, reverse=True), names))
        i += 1
    hint.command = " ".join(words)
    return hint


def _with_variables(arg: str, keys: Sequence[str], names: dict[str, str]) -> str:
    """``arg`` double-quoted for a POSIX shell, each key in it replaced by its variable."""
    out, i = [], 0
    while i < len(arg):
        key = next((k for k in keys if arg.startswith(k, i)), None)
        if key is not None:
            out.append("${" + names[key] + "}")
            i += len(key)
            continue
        char = arg[i]
        out.append("\\" + char if char in '\\"$`' else char)
        i += 1
    return '"' + "".join(out) + '"'
