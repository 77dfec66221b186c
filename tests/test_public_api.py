"""What `import baracuda.torch` exposes: the torch functions of every family, nothing else."""

from __future__ import annotations

import importlib
import inspect

import baracuda.torch as bt
from baracuda.core import registry


def test_torch_namespace_holds_only_its_functions():
    public = sorted(n for n in vars(bt) if not (n.startswith("__") and n.endswith("__")))
    assert public == sorted(bt.__all__), set(public) ^ set(bt.__all__)
    assert len(set(bt.__all__)) == len(bt.__all__)
    for name in bt.__all__:
        assert inspect.isfunction(getattr(bt, name)), (name, type(getattr(bt, name)))
    for plumbing in ("importlib", "warnings", "annotations", "define_op", "run_plan",
                     "normalize_dim"):
        assert not hasattr(bt, plumbing), plumbing


def test_torch_namespace_collects_every_family_torch_api():
    seen = set()
    for fam in registry.families():
        try:
            mod = importlib.import_module(f"baracuda.families.{fam}.torch_api")
        except ModuleNotFoundError:
            continue
        for name in getattr(mod, "__all__", ()):
            ours = getattr(bt, name)
            assert getattr(ours, "__wrapped__", ours) is getattr(mod, name), (fam, name)
            seen.add(name)
    assert seen == set(bt.__all__)
    assert {"softmax", "rms_norm", "scaled_dot_product_attention", "cross_entropy"} <= seen
