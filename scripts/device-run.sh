#!/usr/bin/env bash
# Runs on the GPU machine from the repository root (copied there as
# device-bin/run.sh by scripts/device-tests.sh). Logs go to OUTDIR.
# Modes: tests, bench, stream, scaling, all (those four), c2 (bench-c2),
# large (built-in circuits past 2^22; LARGE="chain:24 bits:24"),
# keyload-a / keyload-b (the 32 GiB key written, then loaded through its
# digest and with every point checked; the C2 resident and under 14 GiB).
set -uo pipefail
what=${1:-all}
out=${2:-device-out}
mkdir -p "$out" params-cache
bin=device-bin
export CP_PARAMS_DIR=$PWD/params-cache CP_REQUIRE_GPU=1 RUST_BACKTRACE=1
export CP_CUDA_MAX_LOG=${CP_CUDA_MAX_LOG:-20}
nvidia-smi --query-gpu=index,name,memory.used,memory.total --format=csv | tee "$out/nvidia-smi.txt"
"$bin/cuda-prover" devices 2>&1 | tee "$out/devices.txt"
if [ "$what" = tests ] || [ "$what" = all ]; then
    for t in "$bin"/test-*; do
        echo "== $t"
        "$t" --test-threads 1 --nocapture 2>&1 | tee "$out/$(basename "$t").log" | grep -E "^test |result|identical|SKIPPED|trim:|panicked|device 0" || true
    done
fi
if [ "$what" = tests ] || [ "$what" = all ]; then
    "$bin/cuda-prover" prove --circuit bits --log-constraints 16 --partitions 16 \
        --params-dir params-cache --report "$out/cli-report.json" --metrics "$out/cli-metrics.prom" \
        2>&1 | tail -n 25 | tee "$out/cli.log"
fi
if [ "$what" = bench ] || [ "$what" = all ]; then
    "$bin/bench-prover" --logs "${BENCH_LOGS:-16,18,20}" --circuits chain,bits \
        --backends cuda,host,bellperson --throughput-backends cuda --partitions 16 \
        --workers-per-device 4 --synthesis-threads 8 \
        --params-dir params-cache --json "$out/bench.json" 2>&1 | grep -v "still generating" | tee "$out/bench.log"
fi
if [ "$what" = stream ] || [ "$what" = all ]; then
    # Keys larger than the memory limit: resident vs streamed device parts
    # with the limit at the working set plus a quarter of the key.
    "$bin/bench-prover" --logs "${STREAM_LOGS:-18,20}" --circuits chain,bits --backends cuda \
        --device-memory-limit key/4 --params-dir params-cache --json "$out/stream.json" \
        2>&1 | grep -v "still generating" | tee "$out/stream.log"
fi
if [ "$what" = scaling ] || [ "$what" = all ]; then
    # Host backend: 1, 2, 4 simulated devices sharing this machine's cores.
    "$bin/bench-scaling" --backend host --host-devices 4 --sets "0;0,1;0,1,2,3" \
        --circuit bits --log 14 --partitions 16 --params-dir params-cache \
        --json "$out/scaling-host.json" 2>&1 | tee "$out/scaling-host.log"
    # One GPU, one and several workers.
    for w in 1 2 4; do
        "$bin/bench-scaling" --backend cuda --sets "0" --circuit "${SCALING_CIRCUIT:-chain}" \
            --log "${SCALING_LOG:-18}" --partitions 16 --workers-per-device $w --params-dir params-cache \
            --json "$out/scaling-cuda-w$w.json" 2>&1 | tee "$out/scaling-cuda-w$w.log"
    done
fi
if [ "$what" = c2 ]; then
    # The 2 KiB C2 through one engine and prover per path (run 0 readies
    # the device; later runs show a ready device's queue wait), and
    # bellperson's CPU prover on the same TEST parameters.
    # C2_ARGS adds flags, e.g. "--synthesis witness --key-in-memory" for a
    # 32 GiB sector (its 47 GiB TEST key made on the GPU, never on disk);
    # device memory and utilization sampled by nvidia-smi every second.
    nvidia-smi --query-gpu=timestamp,memory.used,utilization.gpu --format=csv -l 1 \
        > "$out/c2-${C2_SECTOR:-2KiB}-smi.csv" &
    smi=$!
    timed=""
    [ -x /usr/bin/time ] && timed="/usr/bin/time -v"
    # shellcheck disable=SC2086
    $timed "$bin/bench-c2" --backends "${C2_BACKENDS:-cuda}" --runs "${C2_RUNS:-4}" \
        --sector-size "${C2_SECTOR:-2KiB}" --params-dir fc-params ${C2_ARGS:-} \
        --json "$out/c2-${C2_SECTOR:-2KiB}.json" 2>&1 | tee "$out/c2.log"
    kill $smi
fi
if [ "$what" = large ]; then
    # Built-in circuits beyond 2^22: key made here (shape generator),
    # proofs on the GPU, device memory sampled by nvidia-smi every 0.5 s.
    for spec in ${LARGE:-chain:24}; do
        c=${spec%:*} l=${spec#*:}
        nvidia-smi --query-gpu=timestamp,index,memory.used,utilization.gpu --format=csv -lms 500 \
            > "$out/large-$c-$l-smi.csv" &
        smi=$!
        timed=""
        [ -x /usr/bin/time ] && timed="/usr/bin/time -v"
        $timed "$bin/cuda-prover" prove --circuit "$c" --log-constraints "$l" \
            --partitions "${LARGE_PARTITIONS:-4}" --params-dir params-cache \
            --report "$out/large-$c-$l.json" > "$out/large-$c-$l.log" 2>&1
        echo "exit $?" >> "$out/large-$c-$l.log"
        kill $smi
        grep -vE "still" "$out/large-$c-$l.log" | tail -n 40
        rm -f params-cache/"$c-2^$l".*
    done
fi
if [ "$what" = keyload-a ] || [ "$what" = keyload-b ]; then
    # The 32 GiB PoRep TEST key on disk (63 GiB free needed), loaded by
    # `cuda-prover-filecoin c2` twice: through the digest record the
    # generator wrote (resident key), then with the record removed (every
    # point checked, on the GPU) under a 14 GiB device limit. Two calls of
    # at most 10 minutes: keyload-a makes the key and the C1, keyload-b
    # proves; params-cache/ stays between calls on a warm machine.
    W=$PWD/params-cache P=$PWD/params-cache/fcp32
    nvidia-smi --query-gpu=timestamp,memory.used,utilization.gpu --format=csv -l 1 \
        > "$out/$what-smi.csv" &
    smi=$!
    c2_load() { # name, time limit, extra args
        local name=$1 limit=$2; shift 2
        read -r _ pid _ sid < <(tail -n 1 "$W/c1.log")
        CUDA_PROVER_FILECOIN_TEST_PARAMS=$P /usr/bin/time -v timeout "$limit" \
            "$bin/cuda-prover-filecoin" c2 --c1 "$W/c1.json" --prover-id "$pid" --sector-id "$sid" \
            --out "$W/proof-$name" --test-params --synthesis witness \
            --report "$out/c2-$name.json" "$@" > "$out/c2-$name.log" 2>&1
        echo "c2 $name exit $?"
        grep -E "key load|verified|rror|Maximum resident|Elapsed" "$out/c2-$name.log"
    }
    if [ "$what" = keyload-a ]; then
        /usr/bin/time -v "$bin/cuda-prover-filecoin" test-params --sector-size 32GiB \
            --circuits porep --dir "$P" --keygen-device 0 > "$out/test-params.log" 2>&1
        echo "test-params exit $?"
        grep -E "Maximum resident|Elapsed" "$out/test-params.log"
        "$bin/cuda-prover-filecoin" test-c1 --sector-size 32GiB --seed 1 --out "$W/c1.json" \
            > "$W/c1.log" 2>&1
        tail -n 1 "$W/c1.log"
        ls -la "$P"
    else
        c2_load digest 230 --prepare-ahead 1
        rm -f "$P"/*.params.verified
        CP_TRACE_PASS=1 c2_load full-14g 330 --prepare-ahead 1 --device-memory-limit 14GiB
    fi
    kill $smi
fi
