"""The README's CPU example runs as written (on this machine's device when it has CUDA, the
tensors stay on the CPU as the example creates them)."""

from __future__ import annotations

import pathlib
import re

README = pathlib.Path(__file__).resolve().parents[1] / "README.md"


def test_readme_cpu_example_runs_as_written(capsys):
    text = README.read_text()
    section = text.split("## On a CPU", 1)[1]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    exec(compile(code, "README.md (On a CPU)", "exec"), {})
    assert "triton" in capsys.readouterr().out
