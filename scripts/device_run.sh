#!/usr/bin/env bash
# One device call: check and time everything; the log and a tarball of results/device under $OUT (both
# rewritten after every step, so a call cut short by its time limit still brings back the steps that finished).
# Usage on the device: bash scripts/device_run.sh [STEP ...]
# Steps, run in the order given (default: env pytest eval runner compare):
#   env          the GPU, versions, and whether this torch can tell a CUDA-graph capture
#   pytest       the kernel's tests on the GPU, then every GPU test (marked gpu: they skip without CUDA);
#                PYTEST_ARGS passed through (e.g. -k NAME)
#   eval         eval.py both on submission.py
#   runner       runner mode (POPCORN_FD, secret seed) on RUNNER_SUBMISSION: test, benchmark, leaderboard, profile
#   leaderboard  runner mode, leaderboard only, published seeds, on RUNNER_SUBMISSION (beside judge's public score)
#   judge        cli.py judge on RUNNER_SUBMISSION: the runner's whole chain, public and secret
#   compare      cli.py compare, COMPARE_ARGS passed through (e.g. --variant FILE --shapes large)
#   profile      cli.py profile on the leaderboard cases PROFILE_CASES (default 0 1 2), then on the shapes
#                PROFILE_SHAPES (default none; e.g. 4x2560x4096), each beside its fastest copy
#   kernel-files the kernel-file tests on the GPU (KERNEL_FILES_K narrows them, e.g. to one variant), and the
#                shuffle kernels' offline build tests (sm_90, sm_100), whose Helion half runs only under Triton 3.6
#   ncu-tiles    cli.py profile --tile: submission.py's Triton and CUDA tiles beside a copy at each, on
#                1x2560x4096 at NCU_TILES and on the other two leaderboard cases at NCU_CASE_TILES (CSV under results/device/ncu)
#   tiles        cli.py tiles on TILES_FILES (default submission.py), TILES_ARGS passed through, once per flush
#                of TILES_FLUSHES (default memset, the runner's; "memset read" for both, read's under tiles_read)
#   tune         cli.py tune --dry-run
#   search       cli.py search-check: the first-call search in 3 fresh processes beside tune's sweep
#   helion-tune  cli.py helion-tune (HELION_ARGS passed through)
#   helion-lanes cli.py helion-tune-lanes: the Helion file's lane-kernel candidates (lanes_configs.json)
#   helion-eval  eval.py both on the Helion submission
set -uo pipefail
OUT=${OUT:-/tmp/out}
DEV=results/device
mkdir -p "$OUT" "$DEV"
export PYTHONUNBUFFERED=1 EVAL_COOLDOWN_S=${EVAL_COOLDOWN_S:-1}
LOG=$OUT/log.txt  # written as it goes, so a call cut short still brings its log back
steps=${*:-env pytest eval runner compare}
# A SIGTERM to the call's process group (`timeout N bash scripts/device_run.sh ...`) reaches the step's command,
# which writes what it finished (compare keeps its whole rounds, tiles and search-check their whole cases); tee
# ignores it, so the command's last lines still reach the log, and the trap packs results/device before the
# script ends.
pack() { tar czf "$OUT/device.tgz" $DEV; }
trap 'echo "### stopped by SIGTERM in step ${step:-setup}" >> "$LOG"; pack; exit 143' TERM
log() { (trap '' TERM; exec tee -a "$LOG"); }
run() { echo "### $*" | log; "$@" 2>&1 | log; echo "### exit ${PIPESTATUS[0]}" | log; }
if ls .whl/*.whl >/dev/null 2>&1; then  # carried wheels (helion): the device has no network
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    && export PYTHONPATH=/tmp/site
fi
python3 scripts/cli.py cases tests > $DEV/tests.txt
python3 scripts/cli.py cases benchmarks > $DEV/benchmarks.txt
for step in $steps; do
  case $step in
    env) run nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv
         run python3 -c "import torch, triton; print(torch.__version__, triton.__version__, torch.cuda.get_device_name());
import submission; g = torch.cuda.CUDAGraph(); x = torch.zeros(4, device='cuda'); d = x.device
with torch.cuda.graph(g): inside = submission.capturing(d); x.add_(1)
g.replay(); torch.cuda.synchronize()
print('capture probe: outside', submission.capturing(d), 'inside', inside, 'graph still good:', x.tolist() == [1.0] * 4)";;
    pytest) run python3 -m pytest -q -rs tests/test_submission.py ${PYTEST_ARGS:-}
            run python3 -m pytest -q -rs tests -m gpu ${PYTEST_ARGS:-};;
    eval) run python3 eval.py both --json $DEV/eval_both.json;;
    runner) sub=${RUNNER_SUBMISSION:-submission.py}; tag=$(basename "$sub" .py)
            for mode in test benchmark leaderboard profile; do
              file=$DEV/tests.txt; [ $mode = test ] || file=$DEV/benchmarks.txt
              res=$DEV/runner_${tag}_$mode.txt
              echo "### runner $mode $sub" | log
              POPCORN_FD=3 POPCORN_SEED=${POPCORN_SEED:-31337} python3 eval.py $mode $file --submission "$sub" 3>$res 2>&1 | log
              echo "### exit ${PIPESTATUS[0]}" | log; grep -v '\.report: ' $res | log
            done;;
    leaderboard) sub=${RUNNER_SUBMISSION:-submission.py}; res=$DEV/runner_leaderboard_public.txt
            echo "### runner leaderboard (published seeds) $sub" | log
            POPCORN_FD=3 python3 eval.py leaderboard $DEV/benchmarks.txt --submission "$sub" 3>$res 2>&1 | log
            echo "### exit ${PIPESTATUS[0]}" | log; log < $res;;
    judge) run python3 scripts/cli.py judge ${RUNNER_SUBMISSION:-submission.py} --json $DEV/judge.json;;
    compare) run python3 scripts/cli.py compare --rounds ${ROUNDS:-2} --out $DEV/compare ${COMPARE_ARGS:-};;
    profile) for case in ${PROFILE_CASES:-0 1 2}; do run python3 scripts/cli.py profile --case $case --out $DEV/profile; done
             for shape in ${PROFILE_SHAPES:-}; do run python3 scripts/cli.py profile --shape $shape --out $DEV/profile; done;;
    kernel-files) run python3 -m pytest -q tests/test_kernel_files.py ${KERNEL_FILES_K:+-k "$KERNEL_FILES_K"}
                  run python3 -m pytest -q -rs tests/test_lane_shuffle.py tests/test_helion_lanes.py;;
    ncu-tiles) for t in ${NCU_TILES:-256/1 512/1 1024/1 2048/1 2048/2 4096/2 4096/4}; do sweep="${sweep:-} --tile $t"; done
               for t in ${NCU_CASE_TILES:-1024/1 2048/1 4096/4}; do per_case="${per_case:-} --tile $t"; done
               run python3 scripts/cli.py profile --case 2 $sweep --build cuda --out $DEV/ncu
               for case in 0 1; do run python3 scripts/cli.py profile --case $case $per_case --build cuda --out $DEV/ncu; done;;
    tiles) for flush in ${TILES_FLUSHES:-memset}; do
             out=$DEV/tiles; [ "$flush" = memset ] || out=$DEV/tiles_$flush
             run python3 scripts/cli.py tiles ${TILES_FILES:-submission.py} --out $out --flush $flush ${TILES_ARGS:-}
           done;;
    tune) run python3 scripts/cli.py tune --dry-run;;
    search) run python3 scripts/cli.py search-check --out $DEV/search_check ${SEARCH_ARGS:-};;
    helion-tune) case " ${HELION_ARGS:-} " in  # a dry run writes nothing, so it takes no --out
                     *" --dry-run "*) run python3 scripts/cli.py helion-tune ${HELION_ARGS:-};;
                     *) run python3 scripts/cli.py helion-tune --out $DEV/helion ${HELION_ARGS:-};; esac;;
    helion-lanes) run python3 scripts/cli.py helion-tune-lanes --out $DEV/helion_lanes;;
    helion-eval) run python3 eval.py both --submission submissions/submission_helion.py --json $DEV/eval_helion.json;;
    *) echo "### unknown step $step" | log;;
  esac
  pack  # after every step, so a call cut short still brings back what finished
done
