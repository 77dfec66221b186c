"""The contract, walked over every registered plan and its spec.

For each plan: valid descriptors select; each case matches the float64 reference with poisoned
outputs; malformed descriptors and args raise the declared typed error; empty problems launch
nothing; a too-small workspace raises WorkspaceTooSmall; a plan claiming determinism reruns
bit-identically; preferences that exclude every candidate raise Unsupported listing reasons.
"""

from __future__ import annotations

import itertools

import pytest
import torch

import baracuda as bc
from baracuda.core import registry
from baracuda.core.errors import BaracudaError, Unsupported, WorkspaceTooSmall
from baracuda.core.spec import run_case
from conftest import DEVICE, SCALES

PLANS = registry.plans()
SPECS = {p.__name__: registry.spec_for(p) for p in PLANS}


def _cases(scale):
    for plan in PLANS:
        spec = SPECS[plan.__name__]
        if spec is None:
            continue
        for i, case in enumerate(spec.cases(scale)):
            case_id = f"{plan.family}-{plan.__name__}-{scale}-{i}-{case.name}"
            yield pytest.param(plan, case, id=case_id)


ALL_CASES = [c for s in SCALES for c in _cases(s)]


def test_families_import_cleanly():
    assert registry.import_errors() == {}, registry.import_errors()


@pytest.mark.parametrize("plan", PLANS, ids=lambda p: f"{p.family}-{p.__name__}")
def test_plan_is_complete(plan):
    assert SPECS[plan.__name__] is not None, f"{plan.__name__} has no registered PlanSpec"
    assert plan.candidates, f"{plan.__name__} has no candidates"
    assert plan.__doc__ and "Precision" in plan.__doc__, f"{plan.__name__}: doc lacks Precision"
    assert hasattr(bc, plan.__name__), f"{plan.__name__} not re-exported from baracuda"
    if plan.partner is not None:
        partner = registry.plan_named(plan.partner)
        assert partner.partner == plan.__name__ or partner.is_backward != plan.is_backward
    assert list(SPECS[plan.__name__].cases("small")), f"{plan.__name__} has no small cases"


#: reruns of a deterministic plan's case compared bit for bit with its first run (the GPU,
#: where scheduling varies, takes more)
RERUNS = 2 if DEVICE.type != "cpu" else 1


@pytest.mark.parametrize("plan,case", ALL_CASES)
def test_case_matches_reference_and_reruns_bitwise(plan, case):
    """The case against its float64 reference; a plan declaring itself deterministic then
    reruns the same inputs and must reproduce its outputs bit for bit."""
    selected = plan.select(case.desc, case.preference)
    deterministic = selected.precision_guarantee.deterministic
    result = run_case(plan, case, DEVICE, seed=7, reruns=RERUNS if deterministic else 0)
    assert result.ok, result.summary()
    assert result.reruns_identical in (None, True), "reruns differ bitwise"


def _malformed_desc():
    for plan in PLANS:
        spec = SPECS[plan.__name__]
        for m in (spec.malformed_descriptors() if spec else ()):
            yield pytest.param(plan, m, id=f"{plan.family}-{plan.__name__}-{m.name}")


@pytest.mark.parametrize("plan,bad", list(_malformed_desc()))
def test_malformed_descriptor_raises_typed_error(plan, bad):
    with pytest.raises(bad.error) as info:
        plan.select(bad.build())  # build() inside: construction may raise first
    assert isinstance(info.value, BaracudaError)
    # raised by select (the plan's name) or, for a string naming no enum member, already by
    # the descriptor's construction (its name)
    names = (plan.__name__, plan.descriptor_type.__name__, "ElementKind")
    assert any(n in str(info.value) for n in names), str(info.value)


def _first_cases():
    for plan in PLANS:
        spec = SPECS[plan.__name__]
        if spec is None:
            continue
        for case in itertools.islice(spec.cases("small"), 1):
            yield pytest.param(plan, case, id=f"{plan.family}-{plan.__name__}")


FIRST = list(_first_cases())


@pytest.mark.parametrize("plan,case", FIRST)
def test_malformed_args_raise_typed_error(plan, case):
    spec = SPECS[plan.__name__]
    selected = plan.select(case.desc, case.preference)
    bad_list = list(spec.malformed_args(case, DEVICE))
    assert bad_list, f"{plan.__name__} spec lists no malformed args"
    for bad in bad_list:
        with pytest.raises(bad.error) as info:
            selected.can_implement(bad.build())
        assert isinstance(info.value, BaracudaError), bad.name
        with pytest.raises(bad.error):
            selected.run(bad.build(), workspace=_ws(selected, 1 << 20))


def _ws(plan, extra=0):
    n = plan.workspace_size() + extra
    return torch.empty(n, dtype=torch.uint8, device=DEVICE) if n else None


@pytest.mark.parametrize("plan,case", FIRST)
def test_workspace_honoured(plan, case):
    selected = plan.select(case.desc, case.preference)
    need = selected.workspace_size()
    assert isinstance(need, int) and need >= 0
    args = case.make_args(DEVICE, torch.Generator().manual_seed(3))
    if need == 0 or selected.is_empty(args):
        return
    with pytest.raises(WorkspaceTooSmall):
        selected.run(args, workspace=torch.empty(need - 1, dtype=torch.uint8, device=DEVICE))
    with pytest.raises(WorkspaceTooSmall):
        selected.run(args, workspace=None)


@pytest.mark.parametrize("plan,case", FIRST)
def test_preference_exclusions_are_unsupported(plan, case):
    # A backend with no candidate in this plan is refused with every candidate's reason.
    backends = {c.backend for c in plan.candidates}
    missing = [b for b in bc.BackendKind if b not in backends]
    if not missing:
        pytest.skip("every backend has a candidate")
    with pytest.raises(Unsupported) as info:
        plan.select(case.desc, bc.PlanPreference(prefer_backend=missing[0]))
    for cand in plan.candidates:
        assert cand.name in str(info.value)


@pytest.mark.parametrize("plan,case", FIRST)
def test_sku_is_hashable_and_complete(plan, case):
    selected = plan.select(case.desc, case.preference)
    sku = selected.sku
    hash(sku)
    assert sku.candidate and sku.backend in bc.BackendKind
    assert selected.precision_guarantee is sku.precision_guarantee
    assert plan.select(case.desc, case.preference) is selected  # cached per descriptor
    hash(case.desc)



#: A descriptor each Hopper-only candidate (the Gluon kernels) takes on sm_90.
_HOPPER_ONLY = {
    "gluon_smem_exchange_softmax": lambda: bc.SoftmaxDescriptor(
        bc.SoftmaxKind.SOFTMAX, (8, 65536), 1, torch.bfloat16),
    "gluon_smem_exchange_cross_entropy_fused": lambda: bc.CrossEntropyLossDescriptor(
        (8, 65536), torch.bfloat16),
    "gluon_smem_exchange_rms_norm": lambda: bc.RMSNormDescriptor(
        (8, 65536), (1,), True, 1e-5, torch.bfloat16),
    "gluon_smem_exchange_layer_norm": lambda: bc.LayerNormDescriptor(
        (8, 65536), (1,), True, True, 1e-5, torch.bfloat16),
    "gluon_smem_exchange_rms_norm_backward": lambda: bc.RMSNormBackwardDescriptor(
        (8, 65536), (1,), True, torch.bfloat16),
    "gluon_smem_exchange_layer_norm_backward": lambda: bc.LayerNormBackwardDescriptor(
        (8, 65536), (1,), True, True, torch.bfloat16),
}


def _hopper_only_candidates():
    registry.discover()
    return [(plan, cand) for plan in registry.plans() for cand in plan.candidates
            if cand.name.startswith("gluon_")]


def test_every_hopper_only_candidate_has_a_refusal_case():
    assert sorted(c.name for _, c in _hopper_only_candidates()) == sorted(_HOPPER_ONLY)


@pytest.mark.parametrize("plan,cand", _hopper_only_candidates(),
                         ids=lambda v: getattr(v, "name", getattr(v, "__name__", str(v))))
def test_a_hopper_candidates_refusal_reaches_the_user(plan, cand, monkeypatch):
    """With a Hopper-only candidate as the plan's only one, selecting for an older GPU raises
    Unsupported naming it and saying what it needs and got; on sm_90 it is selected."""
    from baracuda.core.vocab import ArchSku, PlanPreference

    desc = _HOPPER_ONLY[cand.name]()
    monkeypatch.setattr(plan, "candidates", [cand])
    with pytest.raises(Unsupported) as err:
        plan._select(desc, PlanPreference(), ArchSku.SM80)
    message = str(err.value)
    assert cand.name in message and "needs sm_90" in message and "got sm80" in message
    assert plan._select(desc, PlanPreference(), ArchSku.SM90).candidate is cand
