"""The README's CPU example runs as written. It is the interpreter's example (CPU tensors):
a machine with CUDA runs kernels natively and takes CUDA tensors, so it skips there."""

from __future__ import annotations

import pathlib
import re

import pytest
import torch

README = pathlib.Path(__file__).resolve().parents[1] / "README.md"


@pytest.mark.skipif(torch.cuda.is_available(),
                    reason="CPU tensors run under the Triton interpreter, which CUDA machines "
                           "do not use")
def test_readme_cpu_example_runs_as_written(capsys):
    text = README.read_text()
    section = text.split("## On a CPU", 1)[1]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    exec(compile(code, "README.md (On a CPU)", "exec"), {})
    assert "triton" in capsys.readouterr().out
