"""submission.py: right on every shape the runner may send, and clear about bad input."""
import re

import pytest
import torch

import submission
from conftest import DEVICE, conv_float64, make_inputs

TASK_TESTS = [(1, 64, 64, 4), (2, 128, 128, 4), (1, 256, 256, 3), (1, 128, 64, 8), (4, 64, 128, 4)]
# Hidden-shape style: S < W, W = 1, 8 and 16, D = 1, B > 1, odd and non-multiple-of-4 sizes,
# rows longer than one program's block (several chunks a row).
RANDOM_SHAPES = [
    (1, 3, 2, 4), (2, 2, 1, 3), (1, 2, 5, 8), (1, 1, 7, 16),  # S < W
    (1, 4, 37, 1), (2, 3, 64, 1),  # W = 1
    (1, 3, 45, 8), (2, 2, 100, 16),  # wide W, several groups back
    (1, 1, 2500, 4), (3, 1, 33, 4),  # D = 1, several chunks a row
    (3, 5, 131, 4), (2, 7, 1030, 3), (1, 6, 257, 5), (5, 3, 19, 2),  # odd sizes
]


def check(data):
    out = submission.custom_kernel(data)
    assert out.shape == data[0].shape and out.dtype == torch.float32
    torch.testing.assert_close(out.double().cpu(), conv_float64(*data), rtol=1e-4, atol=1e-4)
    return out


@pytest.mark.parametrize("B,D,S,W", TASK_TESTS)
def test_task_test_shapes(B, D, S, W):
    check(make_inputs(B, D, S, W, seed=S + W))


@pytest.mark.parametrize("B,D,S,W", RANDOM_SHAPES)
def test_random_shapes(B, D, S, W):
    check(make_inputs(B, D, S, W, seed=B * 1000 + D * 10 + S))


def test_non_contiguous_inputs_are_handled():
    x, weight, bias = make_inputs(2, 6, 40, 4, seed=9)
    x_strided = x.transpose(1, 2).contiguous().transpose(1, 2)  # same values, channels-last strides
    weight_strided = weight.t().contiguous().t()
    assert not x_strided.is_contiguous() and not weight_strided.is_contiguous()
    check((x_strided, weight_strided, bias))


def test_inputs_are_left_untouched_and_the_output_is_fresh():
    data = make_inputs(1, 4, 50, 4, seed=10)
    before = [t.clone() for t in data]
    out = check(data)
    assert all(torch.equal(a, b) for a, b in zip(before, data))
    assert all(out.data_ptr() != t.data_ptr() for t in data)


def test_two_calls_on_different_inputs_each_get_their_own_answer():
    first = make_inputs(1, 4, 64, 4, seed=11)
    second = make_inputs(1, 4, 64, 4, seed=12)
    check(first)
    check(second)


def test_empty_sequence_gives_an_empty_output():
    x, weight, bias = make_inputs(1, 3, 1, 4)
    out = submission.custom_kernel((x[:, :, :0], weight, bias))
    assert out.shape == (1, 3, 0)


def _valid():
    return make_inputs(1, 4, 16, 4)


@pytest.mark.parametrize("mutate,message", [
    (lambda x, w, b: (x.double(), w, b), "x must be float32"),
    (lambda x, w, b: (x, w.half(), b), "weight must be float32"),
    (lambda x, w, b: (x[0], w, b), "x must have 3 dimensions"),
    (lambda x, w, b: (x, w[:, :, None], b), "weight must have 2 dimensions"),
    (lambda x, w, b: (x, w[:3], b), "weight is [3, W] but x has D = 4"),
    (lambda x, w, b: (x, w[:, :0], b), "W must be >= 1"),
    (lambda x, w, b: (x, w, b[:2]), "bias has 2 entries but x has D = 4"),
    (lambda x, w, b: (x, w, b.tolist()), "bias must be a torch.Tensor"),
    (lambda x, w, b: (x, w), "expects data = (x, weight, bias)"),
])
def test_bad_input_raises_a_value_error_naming_the_problem(mutate, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        submission.custom_kernel(mutate(*_valid()))


def test_cpu_tensors_without_the_interpreter_are_refused(monkeypatch):
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    x, weight, bias = make_inputs(1, 2, 8, 4, device="cpu")
    with pytest.raises(ValueError, match="need a CUDA device"):
        submission.custom_kernel((x, weight, bias))


def test_config_table_is_plain_valid_data():
    for key, (block, warps) in submission.CONFIGS.items():
        gpu, B, D, S, W = key
        assert gpu in ("h100", "h200", "b200") and min(B, D, S, W) >= 1
        assert block & (block - 1) == 0 and block >= 64, key
        assert warps in (1, 2, 4, 8), key


@pytest.mark.parametrize("S", [1, 3, 64, 1000, 2048, 100000])
def test_heuristic_config_fits_the_row(S):
    block, warps = submission.pick_config("some-new-gpu", 1, 8, S, 4)
    assert block & (block - 1) == 0 and 64 <= block <= 1024
    assert block <= max(64, 2 * S)
    assert warps == 1


def test_a_tuned_entry_wins_over_the_heuristic():
    assert submission.pick_config("h200", 1, 2560, 4096, 4) == submission.CONFIGS[("h200", 1, 2560, 4096, 4)]
