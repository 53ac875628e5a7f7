"""Test setup: the Triton interpreter when there is no GPU, and what the tests share (a fake
popcorn-cli on PATH, the CLI run as a user runs it).

pyproject.toml puts the workspace root on the path. TRITON_INTERPRET must be set before triton.jit
runs, so before any kernel module is imported. Helion's interpreter refuses to run beside Triton's,
so Helion tests run in their own processes.
"""
import contextlib
import http.server
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import threading
from pathlib import Path

import pytest
import torch

import eval as harness

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "tests" / "samples"

# Every history line and saved popcorn answer of the run goes to a scratch folder, in this process and
# in every CLI it starts, never into the workspace's results/ (results_left_alone checks it).
os.environ["WORKSPACE_HISTORY"] = (str(Path(tempfile.mkdtemp(prefix="workspace-tests-")) / "history.jsonl"))

HAS_GPU = torch.cuda.is_available()
if not HAS_GPU:
    os.environ.setdefault("TRITON_INTERPRET", "1")

DEVICE = "cuda" if HAS_GPU else "cpu"
# A submission file the preflight accepts: the directives and a plain-PyTorch kernel.
DIRECTIVES = "#!POPCORN leaderboard causal_conv1d\n#!POPCORN gpu B200_Nebius\n"
GOOD_BODY = """
import torch
from task import input_t, output_t


def custom_kernel(data: input_t) -> output_t:
    x, weight, bias = data
    W = weight.shape[1]
    padded = torch.nn.functional.pad(x, (W - 1, 0))
    return torch.nn.functional.conv1d(padded, weight.unsqueeze(1), bias, groups=x.shape[1])
"""

def _results_listing() -> dict:
    return {str(p.relative_to(ROOT)): p.stat().st_mtime_ns for p in (ROOT / "results").rglob("*")}


@pytest.fixture(scope="session", autouse=True)
def results_left_alone():
    """Tests use temporary folders only: the workspace's own results/ is the same after the run."""
    before = _results_listing()
    yield
    after = _results_listing()
    changed = sorted(set(before.items()) ^ set(after.items()))
    assert not changed, f"the tests changed the workspace's results/: {changed[:5]}"


needs_gpu = pytest.mark.skipif(not HAS_GPU, reason="needs a CUDA GPU (graph capture and timing); none is visible")
GPU_REASON = "needs a CUDA GPU"  # every GPU test's skip reason starts so; the `gpu` mark follows from it


def pytest_configure(config):
    config.addinivalue_line("markers", "gpu: skips without CUDA; `scripts/device_run.sh pytest` runs every one")


def pytest_collection_modifyitems(items):
    """Marks `gpu` every test that skips without a CUDA GPU, so the device step selects them all by -m gpu."""
    for item in items:
        if any(str(mark.kwargs.get("reason", "")).startswith(GPU_REASON) for mark in item.iter_markers("skipif")):
            item.add_marker(pytest.mark.gpu)


def make_inputs(B, D, S, W, seed=0, device=DEVICE):
    gen = torch.Generator(device="cpu").manual_seed(seed)
    x = torch.randn(B, D, S, generator=gen)
    weight = torch.randn(D, W, generator=gen)
    bias = torch.randn(D, generator=gen)
    return x.to(device), weight.to(device), bias.to(device)


def conv_float64(x, weight, bias):
    """The definition, term by term, in float64 on the CPU: independent of F.conv1d."""
    x, weight, bias = (t.detach().cpu().double() for t in (x, weight, bias))
    B, D, S = x.shape
    W = weight.shape[1]
    out = bias[None, :, None].expand(B, D, S).clone()
    for k in range(W):
        shift = W - 1 - k  # tap k reads x[t - shift]
        if shift < S:
            out[:, :, shift:] += weight[None, :, k, None] * x[:, :, : S - shift]
    return out


def task_shapes(key: str) -> list[tuple[int, int, int, int]]:
    """(B, D, S, W) of task.yml's tests or benchmarks: the one source of the cases."""
    return [(c.args["B"], c.args["D"], c.args["S"], c.args["W"]) for c in harness.cases_from_task(key)]


def run_cli(args, env_extra, input_text=None, cwd=ROOT):
    env = dict(os.environ, **env_extra)
    env.pop("POPCORN_FD", None)
    return subprocess.run([sys.executable, str(ROOT / "scripts" / "cli.py"), *args], cwd=cwd, env=env,
                          capture_output=True, text=True, input=input_text, timeout=600)


@pytest.fixture
def fake_popcorn(tmp_path):
    """A popcorn-cli on PATH that records its arguments and prints $FAKE_OUTPUT (stdout and the -o file)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    record = tmp_path / "popcorn_args.json"
    script = bin_dir / "popcorn-cli"
    script.write_text(textwrap.dedent(f"""\
        #!{sys.executable}
        import json, os, signal, sys, time
        signal.signal(signal.SIGINT, lambda *a: os._exit(130))  # as popcorn: Ctrl-C ends it without a word
        json.dump(sys.argv[1:], open({str(record)!r}, "w"))
        text = open(os.environ["FAKE_OUTPUT"], "rb").read()
        sys.stdout.buffer.write(text)
        sys.stdout.flush()
        if "-o" in sys.argv:
            open(sys.argv[sys.argv.index("-o") + 1], "wb").write(text)
        time.sleep(float(os.environ.get("FAKE_SLEEP", "0")))
        sys.exit(int(os.environ.get("FAKE_EXIT", "0")))
    """))
    script.chmod(0o755)
    env = {"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "WORKSPACE_HISTORY": str(tmp_path / "h.jsonl")}
    return env, record, tmp_path


def candidate(tmp, body=GOOD_BODY, name="candidate.py"):
    path = tmp / name
    path.write_text(DIRECTIVES + body)
    return path


@contextlib.contextmanager
def json_server(answer):
    """A server on 127.0.0.1 only, stopped on leaving: answer(path, cli_id) -> (status, JSON-able body).
    Yields its URL and the list of (path, cli_id) it was asked."""
    seen = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            seen.append((self.path, self.headers.get("X-Popcorn-Cli-Id")))
            status, body = answer(self.path, seen[-1][1])
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            if body is not None:
                self.wfile.write(json.dumps(body).encode())

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", seen
    finally:
        server.shutdown()
        server.server_close()
