"""Types of the causal_conv1d task, as the runner supplies them."""
from typing import TypedDict, TypeVar

import torch

input_t = TypeVar("input_t", bound=tuple[torch.Tensor, torch.Tensor, torch.Tensor])
output_t = TypeVar("output_t", bound=torch.Tensor)


class TestSpec(TypedDict):
    B: int
    D: int
    S: int
    W: int
    seed: int
