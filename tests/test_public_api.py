"""What `import baracuda.torch` exposes: the torch functions of every family, nothing else."""

from __future__ import annotations

import importlib
import inspect

import baracuda.torch as bt
from baracuda.core import registry
from baracuda.tools.ops import frontend_function, frontend_names


def test_torch_namespace_holds_only_its_functions():
    public = sorted(n for n in vars(bt) if not (n.startswith("__") and n.endswith("__")))
    assert public == sorted(bt.__all__), set(public) ^ set(bt.__all__)
    assert len(set(bt.__all__)) == len(bt.__all__)
    names = frontend_names()
    assert len(set(names)) == len(names)
    for name in names:
        assert inspect.isfunction(frontend_function(name)), name
    for name in bt.__all__:  # a function, or a namespace of them (baracuda.torch.linalg)
        obj = getattr(bt, name)
        assert inspect.isfunction(obj) or sorted(vars(obj).get("__all__", ())), name
    for plumbing in ("importlib", "warnings", "annotations", "define_op", "run_plan",
                     "normalize_dim", "sys", "types"):
        assert not hasattr(bt, plumbing), plumbing


def test_torch_namespace_collects_every_family_torch_api():
    seen = set()
    for fam in registry.families():
        try:
            mod = importlib.import_module(f"baracuda.families.{fam}.torch_api")
        except ModuleNotFoundError:
            continue
        for name in getattr(mod, "__all__", ()):
            ours = frontend_function(name)
            assert getattr(ours, "__wrapped__", ours) is getattr(mod, name.replace(".", "_")), \
                (fam, name)
            seen.add(name)
    assert seen == set(frontend_names())
    assert {"softmax", "rms_norm", "scaled_dot_product_attention", "cross_entropy"} <= seen
