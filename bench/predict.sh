#!/bin/sh
# Predicted against measured step time on this machine, with measured
# profiles: for each model and placement, `autotmc build` (the prediction
# from this machine's profile database) and the program's median step
# (its results record), one line each in bench/out/predict.tsv.
#
#   bench/predict.sh [MODELS] [PLACEMENTS] [ITERS]
#       (defaults: "mlp:16:0 test_vgg:64:0 resnet50:8:64 resnet50:2:64",
#        "all-fast auto:1:1 auto:4:1 async:4:1", 10)
#
# A model is NAME:BATCH:SIZE (SIZE 0: the model's own input size); a
# placement is an optimizer, with a --ratio after its first colon. The
# profiles go to bench/out/predict-profiles.db (measured first where
# missing; a few minutes). AUTOTMC names the compiler (default ./autotmc).
# ratio = measured / predicted: 1.15 is the issue's bound either way.
set -eu
cd "$(dirname "$0")/.."
models=${1:-mlp:16:0 test_vgg:64:0 resnet50:8:64 resnet50:2:64}
placements=${2:-all-fast auto:1:1 auto:4:1 async:4:1}
iters=${3:-10}
autotmc=${AUTOTMC:-./autotmc}
db=bench/out/predict-profiles.db
out=bench/out/predict.tsv
work=$(mktemp -d "${TMPDIR:-/tmp}/predict.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p bench/out
[ -s "$out" ] || printf 'model\tbatch\tsize\tplacement\tpredicted_s\tmeasured_s\tratio\tmoves\tfast_pool\tscratch\tlimit\n' >"$out"
for m in $models; do
    name=${m%%:*} rest=${m#*:}
    batch=${rest%%:*} size=${rest#*:}
    defs="-D batch=$batch"
    [ "$size" = 0 ] || defs="$defs -D size=$size"
    # shellcheck disable=SC2086
    "$autotmc" profile "examples/$name.net" $defs --profile-db "$db" --quiet
    for p in $placements; do
        opt=${p%%:*} args="--optimizer $opt"
        [ "$opt" = "$p" ] || args="$args --ratio ${p#*:} --solver-time 30"
        # shellcheck disable=SC2086
        "$autotmc" build "examples/$name.net" $defs $args --profile-db "$db" -o "$work/prog" >"$work/build" 2>&1 ||
            { echo "build failed: $name $p" >&2; tail -3 "$work/build" >&2; continue; }
        "$work/prog" --iters "$iters" --slow-dir "$work" --results "$work/r.json" --quiet >/dev/null 2>"$work/run" ||
            { echo "run failed: $name $p" >&2; tail -3 "$work/run" >&2; continue; }
        python3 - "$work/r.json" "$name" "$batch" "$size" "$p" >>"$out" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
pred, meas = r["predicted_runtime"], r["actual_runtime"]
print("\t".join(sys.argv[2:6] + ["%.6f" % pred, "%.6f" % meas, "%.3f" % (meas / pred),
                                  str(r.get("num_moves", 0)), str(r["dram_alloc_size"]),
                                  str(r["kernel_scratch_size"]), str(r["dram_limit"])]))
PY
        tail -n 1 "$out"
    done
done
