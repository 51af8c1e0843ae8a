#!/bin/sh
# The ILP on the large training graphs: for each model, ratio, optimizer and
# solver, `autotmc schedule --json` with Optane-modeled times (measured
# all-fast times of this machine plus the hw model's penalty), and one line
# of its solver figures in bench/out/solver.tsv.
#
#   bench/solver.sh [SOLVERS] [OPTIMIZERS] [MODELS]
#       (defaults: "cbc lp_solve", "static sync async",
#        "vgg19:64 resnet200:32 inception_v4:64 densenet264:32")
#
# AUTOTMC names the compiler (default ./autotmc; a copy keeps the runs
# apart from rebuilds of the tree).
#
# The profile of each model is measured first if the database lacks it
# (bench/out/solver-profiles.db; several minutes on two cores).
set -eu
cd "$(dirname "$0")/.."
solvers=${1:-cbc lp_solve}
optimizers=${2:-static sync async}
models=${3:-vgg19:64 resnet200:32 inception_v4:64 densenet264:32}
autotmc=${AUTOTMC:-./autotmc}
db=bench/out/solver-profiles.db
out=bench/out/solver.tsv
mkdir -p bench/out
[ -s "$out" ] || printf 'model\tbatch\tratio\toptimizer\tsolver\trows\tcolumns\tintegers\tnonzeros\tcreation_s\ttotal_s\tattempts\tstatus\tgap\tpredicted_s\tall_fast_s\twall_s\n' >"$out"
for m in $models; do
    model=${m%:*} batch=${m#*:}
    "$autotmc" profile "examples/$model.net" -D batch="$batch" --fast-only --profile-db "$db" --quiet
    fast=$("$autotmc" schedule "examples/$model.net" -D batch="$batch" --optimizer all-fast --hw optane-6dimm \
        --profile-db "$db" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["predicted_seconds"])')
    for ratio in 1:1 4:1 8:1; do
        for opt in $optimizers; do
            for solver in $solvers; do
                start=$(date +%s.%N)
                json=$("$autotmc" schedule "examples/$model.net" -D batch="$batch" --ratio "$ratio" \
                    --optimizer "$opt" --solver "$solver" --hw optane-6dimm --profile-db "$db" --json \
                    2>bench/out/solver.err) || {
                    printf '%s\t%s\t%s\t%s\t%s\tFAILED\t%s\n' "$model" "$batch" "$ratio" "$opt" "$solver" \
                        "$(tail -1 bench/out/solver.err)" | tee -a "$out"
                    continue
                }
                echo "$json" | python3 -c '
import json, sys, time
wall = time.time() - float(sys.argv[7])
d = json.load(sys.stdin); s = d["solver"]
print("\t".join(str(x) for x in sys.argv[1:6] + [s["rows"], s["columns"], s["integers"], s["nonzeros"],
      "%.2f" % s["creation_seconds"], "%.2f" % s["total_seconds"], s["attempts"], s["status"],
      "%.4f" % s["gap"], "%.4f" % d["predicted_seconds"], "%.4f" % float(sys.argv[6]), "%.1f" % wall]))
' "$model" "$batch" "$ratio" "$opt" "$solver" "$fast" "$start" | tee -a "$out"
            done
        done
    done
done
