"""reference.py and utils.py: the contract every kernel is judged by."""
import pytest
import torch

import reference
from conftest import conv_float64, make_inputs


@pytest.mark.parametrize("B,D,S,W", [(1, 4, 16, 4), (2, 3, 7, 3), (1, 2, 3, 5), (3, 1, 9, 1), (1, 5, 33, 8)])
def test_reference_matches_the_definition_in_float64(B, D, S, W):
    data = make_inputs(B, D, S, W, seed=B * 100 + S)
    out = reference.ref_kernel(data)
    assert out.shape == (B, D, S) and out.dtype == torch.float32
    torch.testing.assert_close(out.double().cpu(), conv_float64(*data), rtol=1e-5, atol=1e-5)


def test_generate_input_draws_x_then_weight_then_bias_from_one_seeded_generator():
    x, weight, bias = reference.generate_input(B=2, D=3, S=5, W=4, seed=77)
    device = x.device
    gen = torch.Generator(device=device).manual_seed(77)
    assert torch.equal(x, torch.randn(2, 3, 5, generator=gen, device=device))
    assert torch.equal(weight, torch.randn(3, 4, generator=gen, device=device))
    assert torch.equal(bias, torch.randn(3, generator=gen, device=device))
    assert all(t.dtype == torch.float32 and t.is_contiguous() for t in (x, weight, bias))


def test_generate_input_is_deterministic_and_seed_dependent():
    a = reference.generate_input(B=1, D=2, S=8, W=4, seed=5)
    b = reference.generate_input(B=1, D=2, S=8, W=4, seed=5)
    c = reference.generate_input(B=1, D=2, S=8, W=4, seed=6)
    assert all(torch.equal(p, q) for p, q in zip(a, b))
    assert not torch.equal(a[0], c[0])


def test_check_accepts_the_reference_and_values_inside_the_tolerance():
    data = reference.generate_input(B=1, D=4, S=32, W=4, seed=1)
    expected = reference.ref_kernel(data)
    assert reference.check_implementation(data, expected.clone()) == (True, "")
    inside = expected + 0.9 * (reference.ATOL + reference.RTOL * expected.abs())
    assert reference.check_implementation(data, inside)[0]


def test_check_names_the_count_and_first_mismatches():
    data = reference.generate_input(B=1, D=4, S=32, W=4, seed=2)
    out = reference.ref_kernel(data).clone()
    out[0, 1, 5] += 1.0
    out[0, 3, 7] -= 1.0
    ok, message = reference.check_implementation(data, out)
    assert not ok
    assert "Number of mismatched elements: 2" in message and "(0, 1, 5)" in message


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), float("-inf")])
def test_check_fails_on_nan_or_inf_where_the_reference_has_none(bad):
    data = reference.generate_input(B=1, D=2, S=16, W=4, seed=3)
    out = reference.ref_kernel(data).clone()
    out[0, 0, 0] = bad
    assert not reference.check_implementation(data, out)[0]


def test_check_fails_on_a_wrong_shape_or_a_non_tensor():
    data = reference.generate_input(B=1, D=2, S=16, W=4, seed=4)
    ok, message = reference.check_implementation(data, reference.ref_kernel(data)[:, :, :-1])
    assert not ok and "SIZE MISMATCH" in message
    ok, message = reference.check_implementation(data, [1.0])
    assert not ok and "NOT A TENSOR" in message
