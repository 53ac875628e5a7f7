"""variants/lane_shuffle.py built for the GPU, here on the CPU: Triton compiles for sm_90 without one (its
wheel carries ptxas and cuobjdump). The interpreter the other tests run it under takes the `tl.gather` path
and no PTX, so only a build shows that the GPU path compiles and that the compiler keeps what the
shuffles assume: row l of each 1-D [NW * 32] operand in lane l of warp l // 32 (results/NOTES.md, v42h: a
3-D operand did not keep it under Triton 3.6)."""
import re

import pytest

import offline_build

BUILD = r"""
import json, sys
import offline_build
from variants import lane_shuffle
W, V, NW, EVEN = (int(a) for a in sys.argv[1:5])
signature = dict.fromkeys(["x_ptr", "w_ptr", "b_ptr", "out_ptr"], "*fp32")
signature.update(dict.fromkeys(["D", "S", "rows", "spans_per_row"], "i32"))
constants = dict(W=W, V=V, NW=NW, EVEN=bool(EVEN), EVICT="evict_first", INTERPRET=False)
signature.update(dict.fromkeys(constants, "constexpr"))
aligned = {(i,): [["tt.divisibility", 16]] for i in (0, 1, 2, 3, 5)}  # what the JIT sees at 16-byte aligned inputs
print(json.dumps(offline_build.read(lane_shuffle.lane_shuffle_kernel, signature, constants, aligned, NW)))
"""


def shuffled_columns(W: int) -> int:
    """Columns a lane takes from another per group: of the group q back, those a tap reads (r >= 4q - W + 1)."""
    return sum(1 for q in range(1, (W + 2) // 4 + 1) for r in range(4) if 4 * q - r <= W - 1)


@pytest.mark.parametrize("W, V, NW, EVEN", [(4, 16, 2, 1), (4, 4, 8, 1), (4, 16, 1, 0), (13, 4, 2, 0), (3, 8, 1, 1)],
                         ids=lambda v: str(v))
def test_the_gpu_build_shuffles_one_row_a_lane_after_all_its_loads(W, V, NW, EVEN):
    built = offline_build.run(BUILD, W, V, NW, EVEN)
    assert built["operands"], "no inline-asm shuffle in the build"
    for operand in built["operands"]:
        shape, layout = re.fullmatch(r"tensor<(\d+)xf32, (#\w+)>", operand).groups()
        assert int(shape) == NW * 32, f"a shuffle operand is {operand}, not 1-D [NW * 32]"
        assert re.search(rf"threadsPerWarp = \[32\], warpsPerCTA = \[{NW}\]", built["layouts"][layout]), \
            f"{operand}: {built['layouts'][layout]} does not put row l in lane l"
    assert built["shfl"] == V * shuffled_columns(W)
    # Every slot 16 bytes a lane, and the halo slot too unless the taps read only its aligned upper half (W = 3).
    assert V <= built["vector_loads"] <= V + 1
    # All of them issued before the first shuffle, which waits on the first load (NOTES v42c: ptxas sank six of
    # seventeen below it at V = 16 without the barrier after the loads, and each waited a round trip more).
    assert built["vector_loads_before_first_shfl"] == built["vector_loads"]
