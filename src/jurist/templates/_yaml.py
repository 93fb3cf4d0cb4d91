"""Custom templates defined in YAML.

A template file names its messages (with ``{field}`` placeholders in the last one, the
item), its scale, and how the verdict is read::

    name: helpful
    description: is the reply helpful? Yes / No
    fields: [prompt, response]
    messages:
      - role: system
        content: |
          Decide whether the reply helps the user. End with "Verdict: Yes" or "Verdict: No".
      - role: user
        content: |
          <question>{prompt}</question>
          <reply>{response}</reply>
    scale:
      labels: {"Yes": 1.0, "No": 0.0}     # or a list of {name, score, aliases}
      # range: {low: 1, high: 5, integer: true}
    parser:
      type: form                          # the verdict form (default), or labels
      open: "Verdict: "                   # regex: pattern with one group; json: key
                                          # claims: a verdict per claim, their mean
    conflict: last                        # fail (default), first or last

Keys: ``name`` (default: the file's stem), ``description``, ``kind`` (single / pairwise),
``fields``, ``optional_fields``, ``sections``, ``messages``, ``scale``, ``parser``,
``conflict`` (``fail``, ``first`` or ``last``: what different verdicts in one output mean),
``output``, ``output_explained``, ``max_tokens``, ``max_tokens_explained``. Every problem
is a :class:`~jurist.errors.ConfigError` naming the file, the line and the key.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from jurist.templates._template import Template

__all__ = ["load_template", "template_from_dict"]


def load_template(path: str | Path) -> Template:
    """Read a custom template from a YAML file; errors name the file, line and key.

    >>> import tempfile, textwrap, pathlib
    >>> text = textwrap.dedent('''
    ...     name: helpful
    ...     messages:
    ...       - {role: system, content: 'Is the reply helpful? End with "Verdict: Yes" or "No".'}
    ...       - {role: user, content: "<reply>{response}</reply>"}
    ...     fields: [response]
    ...     scale: {labels: {"Yes": 1.0, "No": 0.0}}
    ...     parser: {type: labels, open: "Verdict: "}
    ... ''')
    >>> f = pathlib.Path(tempfile.mkdtemp()) / "helpful.yaml"
    >>> _ = f.write_text(text)
    >>> load_template(f).parse("It answers the question.\\nVerdict: Yes").score
    1.0
    """
    return Template.from_yaml(path)


def template_from_dict(
    data: dict[str, Any],
    *,
    source: str = "<template>",
    default_name: str = "custom",
    lines: dict[str, int] | None = None,
) -> Template:
    """Build a template from the mapping a YAML file holds (see :func:`load_template`)."""
    return Template.from_dict(data, source=source, default_name=default_name, lines=lines)
