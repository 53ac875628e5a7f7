#!/usr/bin/env bash
# One device call: check and time everything, results under $OUT (one tarball + the log).
# Usage on the device: bash scripts/device_run.sh [STEP ...]
# steps: env eval runner tune tune-apply helion helion-eval compare (in the order given); COMPARE_ARGS, VARIANTS, HELION_ARGS, RUNNER_SUBMISSION pass through
set -uo pipefail
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT" results/device
export PYTHONUNBUFFERED=1 EVAL_COOLDOWN_S=${EVAL_COOLDOWN_S:-1}
LOG=results/device/log.txt
steps=${*:-env eval runner tune compare}
if [ -d .whl ] && ls .whl/*.whl >/dev/null 2>&1; then  # carried wheels (helion): the device has no network
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site
fi
printf 'B: 1; D: 64; S: 64; W: 4; seed: 4242\nB: 2; D: 128; S: 128; W: 4; seed: 5236\nB: 1; D: 256; S: 256; W: 3; seed: 1001\nB: 1; D: 128; S: 64; W: 8; seed: 5531\nB: 4; D: 64; S: 128; W: 4; seed: 9173\n' > results/device/tests.txt
printf 'B: 1; D: 1536; S: 2048; W: 4; seed: 2146\nB: 1; D: 2560; S: 2048; W: 4; seed: 3129\nB: 1; D: 2560; S: 4096; W: 4; seed: 54352\n' > results/device/benchmarks.txt
run() { echo "### $*" | tee -a "$LOG"; "$@" 2>&1 | tee -a "$LOG"; echo "### exit ${PIPESTATUS[0]}" | tee -a "$LOG"; }
for step in $steps; do
  case $step in
    env) run nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv
         run python3 -c "import torch, triton; print(torch.__version__, triton.__version__, torch.cuda.get_device_name())";;
    eval) run python3 eval.py both --json results/device/eval_both.json;;
    runner) sub=${RUNNER_SUBMISSION:-submission.py}; tag=$(basename "$sub" .py)  # as the runner: rechecks, secret seed, no autotuning
            for mode in test benchmark leaderboard profile; do
              file=results/device/tests.txt; [ $mode = test ] || file=results/device/benchmarks.txt
              res=results/device/runner_${tag}_$mode.txt
              echo "### runner $mode $sub" | tee -a "$LOG"
              HELION_DISALLOW_AUTOTUNING=1 POPCORN_FD=3 POPCORN_SEED=${POPCORN_SEED:-31337} python3 eval.py $mode $file --submission "$sub" 3>$res 2>&1 | tee -a "$LOG"
              echo "### exit ${PIPESTATUS[0]}" | tee -a "$LOG"; grep -v '\.report: ' $res | tee -a "$LOG"
            done
            python3 -c "import base64, sys; print('\n'.join(base64.b64decode(l.split(': ', 1)[1]).decode() for l in open(sys.argv[1]) if '.report: ' in l))" \
              results/device/runner_${tag}_profile.txt | tee -a "$LOG";;
    tune) run python3 scripts/cli.py tune --dry-run;;
    tune-apply) run python3 scripts/cli.py tune; cp submission.py results/device/submission_tuned.py;;
    helion) run timeout ${HELION_TIMEOUT:-300} python3 scripts/helion_autotune.py --write ${HELION_ARGS:-}
            cp submissions/submission_helion.py results/device/submission_helion_tuned.py
            run python3 eval.py test --submission submissions/submission_helion.py;;
    helion-eval) run python3 eval.py both --submission submissions/submission_helion.py --json results/device/eval_helion.json;;
    compare) run python3 scripts/cli.py compare --rounds ${ROUNDS:-2} ${COMPARE_ARGS:-} ${VARIANTS:-};;
  esac
done
tar czf "$OUT/results.tgz" results
cp "$LOG" "$OUT/log.txt"
