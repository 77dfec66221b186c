"""backends/factory_args: the factory arguments read as torch reads them."""

from __future__ import annotations

import pytest
import torch

from baracuda.backends.factory_args import check_options, device_of, finish, on_host, size_of
from baracuda.core.errors import ArgumentTypeError, InvalidProblem, Unsupported


def test_size_of_takes_ints_or_one_sequence():
    assert size_of("f", (2, 3)) == (2, 3)
    assert size_of("f", ([2, 3],)) == (2, 3)
    assert size_of("f", (torch.Size([4]),)) == (4,)
    assert size_of("f", (torch.tensor(5),)) == (5,)
    assert size_of("f", ()) == ()


@pytest.mark.parametrize("size,error", [((2, -1), InvalidProblem), ((2.0,), ArgumentTypeError),
                                        ((True,), ArgumentTypeError)])
def test_size_of_refuses_what_torch_refuses(size, error):
    with pytest.raises(error):
        size_of("f", size)


def test_a_negative_size_is_also_torchs_runtime_error():
    with pytest.raises(RuntimeError, match="negative dimension"):
        size_of("f", (-1,))


def test_options_device_and_grad():
    check_options("f", torch.strided, False)
    with pytest.raises(Unsupported, match="layout"):
        check_options("f", torch.sparse_coo)
    with pytest.raises(Unsupported, match="pin_memory"):
        check_options("f", None, True)
    assert device_of(None) is None and device_of("cpu") == torch.device("cpu")
    assert isinstance(on_host(torch.device("cpu")), bool)
    assert finish(torch.zeros(2), True).requires_grad
    assert not finish(torch.zeros(2), False).requires_grad
