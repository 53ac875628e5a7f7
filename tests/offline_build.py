"""A Triton kernel built for a GPU on the CPU (sm_90 the H100 and H200, sm_100 the B200; Triton's wheel carries
ptxas and cuobjdump, so no GPU is needed), read for what the warp-shuffle kernels rely on. Run in a child process
without TRITON_INTERPRET: the build tests call `read` from a script that prints its record as JSON, through `run`."""
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

TESTS = Path(__file__).resolve().parent

VECTOR_LOAD = r"\bLDG\.E[.A-Z]*\.128\b"


def read(fn, signature: dict, constexprs: dict, attrs: dict, num_warps: int, arch: int = 90) -> dict:
    """The build's shuffle operands (their tensor types), every layout it names, and counts off its SASS: SHFL,
    BAR.SYNC, 16-byte loads, and those issued before the first SHFL."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    kernel = triton.compile(ASTSource(fn=fn, signature=signature, constexprs=constexprs, attrs=attrs),
                            target=GPUTarget("cuda", arch, 32), options=dict(num_warps=num_warps))
    ttgir = kernel.asm["ttgir"]
    cubin = os.path.join(tempfile.mkdtemp(), "kernel.cubin")
    with open(cubin, "wb") as f:
        f.write(kernel.asm["cubin"])
    tool = os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin", "cuobjdump")
    sass = subprocess.run([tool, "-sass", cubin], capture_output=True, text=True, check=True).stdout
    before_shfl = sass[:sass.index("SHFL.IDX")] if "SHFL.IDX" in sass else sass
    return {"operands": sorted(set(re.findall(r"elementwise_inline_asm \"shfl[^\n]*: (tensor<[^>]*>)", ttgir))),
            "layouts": dict(re.findall(r"^(#\w+) = (.*)$", ttgir, re.M)),
            "shfl": len(re.findall(r"\bSHFL\.IDX\b", sass)), "bar": len(re.findall(r"\bBAR\.SYNC\b", sass)),
            "vector_loads": len(re.findall(VECTOR_LOAD, sass)),
            "vector_loads_before_first_shfl": len(re.findall(VECTOR_LOAD, before_shfl))}


def run(script: str, *argv) -> dict:
    """The record a build script prints last, the script run in a child without either interpreter, with the
    workspace and tests/ importable."""
    env = {k: v for k, v in os.environ.items() if k not in ("TRITON_INTERPRET", "HELION_INTERPRET")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(TESTS.parent), str(TESTS), env.get("PYTHONPATH")]))
    done = subprocess.run([sys.executable, "-c", script, *map(str, argv)], cwd=TESTS.parent, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])
