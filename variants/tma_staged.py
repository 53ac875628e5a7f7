"""Variant: x staged through shared memory by the bulk tensor copy engine (TMA), in a pipelined
persistent loop (issue 17, direction "stage x through shared memory with asynchronous bulk copies";
NOTES v9).

submission.py's loads land in registers, so the bytes a program keeps in flight cost registers, and
the registers cap the programs an SM holds (78 a thread: 25 one-warp programs). Here a tile of R rows
by BLOCK outputs is read with tensor descriptors: the copy engine writes it into shared memory, and
the compiler's software pipeliner (num_stages) issues the next tiles' copies while this one is
computed and stored. So the bytes in flight sit in shared memory, not in registers, and a fixed grid
of PER_SM programs a SM has no last partial wave (PER_SM = 0: one program per tile instead).

The left neighbours: the tile is read once more, shifted left by one 16-byte group (two more for
W > 5), so the group before each group sits at the same place in the shifted copy; the copy engine
fills the part left of the row's start with zeros. The shifted read hits L2: DRAM traffic is a
copy's, and the L2 to SM traffic is twice it.

Tensor descriptors need 16-byte aligned rows (S a multiple of 4, x and out 16-byte aligned); other
inputs use submission.py's kernel. CONFIG_SPACE: (R * BLOCK outputs a tile, num_warps, R, num_stages,
PER_SM); TMA_TILE=... overrides the default.
"""
import os

import triton
import triton.language as tl
from triton.tools.tensor_descriptor import TensorDescriptor

from variants import _submission_base

_base = _submission_base.load("submission_for_tma")
add_taps = _base.add_taps
TMA_TILE = tuple(int(v) for v in os.environ.get("TMA_TILE", "1024,4,4,3,4").split(","))


@triton.jit
def columns(group):
    """[R, N, 4] -> its four columns, each [R, N], without leaving the thread's registers."""
    r: tl.constexpr = group.shape[0]
    n: tl.constexpr = group.shape[1]
    even, odd = tl.split(group.reshape(r, n, 2, 2))
    c0, c2 = tl.split(even)
    c1, c3 = tl.split(odd)
    return c0, c1, c2, c3


@triton.jit
def tma_staged_kernel(x_desc, out_desc, w_ptr, b_ptr, D, chunks_per_row, n_tiles,
                      W: tl.constexpr, R: tl.constexpr, BLOCK: tl.constexpr, NUM_STAGES: tl.constexpr):
    N: tl.constexpr = BLOCK // 4
    for tile in tl.range(tl.program_id(0), n_tiles, tl.num_programs(0), num_stages=NUM_STAGES):
        row_block = tile // chunks_per_row
        col = (tile - row_block * chunks_per_row) * BLOCK
        row0 = row_block * R
        d = (row0 + tl.arange(0, R)) % D  # rows past the last are never stored; any valid d serves them
        w_rows = w_ptr + d[:, None] * W
        o0 = tl.zeros([R, N], dtype=tl.float32) + tl.load(b_ptr + d)[:, None]
        o1 = o0
        o2 = o0
        o3 = o0
        # The read shifted by q groups holds, at group n, the group q before it (lags 4q - 3 .. 4q + 3).
        for q in tl.static_range((W + 6) // 4):
            cols = columns(x_desc.load([row0, col - 4 * q]).reshape(R, N, 4))
            o0 = add_taps(o0, cols, w_rows, W, q, 0)
            o1 = add_taps(o1, cols, w_rows, W, q, 1)
            o2 = add_taps(o2, cols, w_rows, W, q, 2)
            o3 = add_taps(o3, cols, w_rows, W, q, 3)
        out_desc.store([row0, col], tl.join(tl.join(o0, o2), tl.join(o1, o3)).reshape(R, BLOCK))


# (outputs a tile, num_warps, R, num_stages, PER_SM): a tile is R rows of BLOCK = outputs / R, BLOCK <= 256
# (the copy engine's widest box); PER_SM 0 is one program per tile.
CONFIG_SPACE = [
    (1024, 4, 4, 3, 4), (1024, 4, 4, 3, 8), (1024, 4, 4, 4, 4), (1024, 2, 4, 3, 8), (1024, 4, 8, 3, 4),
    (2048, 4, 8, 3, 4), (2048, 4, 8, 2, 4), (2048, 8, 8, 3, 2), (4096, 8, 16, 2, 2), (4096, 4, 16, 2, 2),
    (512, 1, 2, 3, 16), (512, 2, 2, 4, 8), (1024, 4, 4, 1, 0), (2048, 4, 8, 1, 0), (4096, 8, 16, 1, 0),
]


def launch_serves(x, weight, out) -> bool:
    """Whether launch() can take this input: tensor descriptors need 16-byte aligned rows and base addresses."""
    return x.shape[-1] % 4 == 0 and x.data_ptr() % 16 == 0 and out.data_ptr() % 16 == 0


def launch(x, weight, bias, out, outputs: int, num_warps: int, rows_a_tile: int, num_stages: int, per_sm: int) -> None:
    B, D, S = x.shape
    block = min(outputs // rows_a_tile, max(16, triton.next_power_of_2(S)))
    x_desc = TensorDescriptor.from_tensor(x.view(B * D, S), [rows_a_tile, block])
    out_desc = TensorDescriptor.from_tensor(out.view(B * D, S), [rows_a_tile, block])
    chunks = triton.cdiv(S, block)
    n_tiles = triton.cdiv(B * D, rows_a_tile) * chunks
    grid = n_tiles if per_sm == 0 else min(n_tiles, per_sm * _submission_base.sm_count(x.device))
    tma_staged_kernel[(grid,)](x_desc, out_desc, weight, bias, D, chunks, n_tiles, W=weight.shape[1], R=rows_a_tile,
                               BLOCK=block, NUM_STAGES=num_stages, num_warps=num_warps)


custom_kernel, tile_for = _submission_base.custom_kernel_over(_base, launch, launch_serves, lambda x: TMA_TILE)
