#!/usr/bin/env bash
# Runs on the GPU machine from the repository root (copied there as
# device-bin/run.sh by scripts/device-tests.sh). Logs go to OUTDIR.
# Modes: tests, bench, stream, scaling, all (those four), c2 (bench-c2),
# large (built-in circuits past 2^22; LARGE="chain:24 bits:24"),
# keyload-a / keyload-b (the 32 GiB key written, then loaded through its
# digest and with every point checked; the C2 resident and under 14 GiB),
# serve-post (the daemon proves a 32 GiB C2 and a WinningPoSt beside it),
# msm-big (the core self-test's runs of several Pippenger batches, checked
# and timed at the 32 GiB C2's size; device-bin/cuda_selftest needed),
# sector-ab (the 32 GiB sector bench under two settings, A_ENV and B_ENV),
# sector-workers (the 32 GiB sector bench with two workers a device and
# with one, each with and without the overlapped H + L sort).
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
# One run of the sector mode below, bench only with the passes traced,
# named NAME and under the settings that follow ("VAR=value" each).
sector_as() { # NAME SETTING...
    local name=$1
    shift
    env "$@" CP_TRACE_PASS=1 SELFTEST=0 BENCH_ONLY=1 BENCH_NAME="$name" "$0" sector "$out"
}
if [ "$what" = sector-ab ]; then
    # The 32 GiB sector bench twice on one machine, the key made once: with
    # A_ENV, then with B_ENV (each "VAR=value ...", for its run only), named
    # A_NAME and B_NAME; e.g. B_ENV=CP_ONE_LANE=1 B_NAME=one-lane, or
    # B_ENV=CP_MSM_BATCH_BUCKETS=1 B_NAME=per-batch.
    # shellcheck disable=SC2086
    sector_as "${A_NAME:-a}" ${A_ENV:-}
    # shellcheck disable=SC2086
    sector_as "${B_NAME:-b}" ${B_ENV:-}
    grep -hE "device_busy_s" "$out"/bench-"${A_NAME:-a}".log "$out"/bench-"${B_NAME:-b}".log | cut -c1-330
fi
if [ "$what" = sector-workers ]; then
    # The 32 GiB sector bench, the key made once: two workers a device (the
    # next partition's upload, evaluation and NTTs beside this one's H + L
    # MSM, on the device's second pass lane) with the overlapped H + L sort
    # (CP_MSM_OVERLAP_SORT) and without, then one worker with and without,
    # each started while END (seconds since this script began, default 560)
    # leaves RUN_S (default 115) for it. Named w2-overlap, w2, w1-overlap, w1;
    # SPECS (NAME:WORKERS:SETTING ...) runs others, e.g. on a warm machine
    # that kept the key: SPECS="w1:1: w2:2:".
    for spec in ${SPECS:-w2-overlap:2:CP_MSM_OVERLAP_SORT=1 w2:2: w1-overlap:1:CP_MSM_OVERLAP_SORT=1 w1:1:}; do
        IFS=: read -r name workers setting <<< "$spec"
        [ "$SECONDS" -lt $((${END:-560} - ${RUN_S:-115})) ] || break
        # shellcheck disable=SC2086
        sector_as "$name" $setting SECTOR_ARGS="--workers-per-device $workers ${SECTOR_ARGS:-}"
    done
    for f in "$out"/bench-w*.log; do
        [ -e "$f" ] || continue
        echo "$(basename "$f" .log): $(grep -oE "(run [01]:|device_busy_s [^ ]+|end_to_end_s [^ ]+|peak_device_mib [^ ]+|peak_host_rss_mib [^ ]+|verified [^ ]+)" "$f" | paste -sd' ')"
    done
fi
if [ "$what" = msm-big ]; then
    # The core self-test's Pippenger runs of several batches against blst
    # (buckets carried across batches and not), then the same runs timed at
    # the 32 GiB C2's size (BIG_LG, default 27: an H + L of 2^28 scalars).
    timeout 300 "$bin/cuda_selftest" carried > "$out/selftest-carried.log" 2>&1
    echo "cuda_selftest carried exit $?"
    grep -E "FAIL|failure" "$out/selftest-carried.log" | tail -n 12
    timeout "${BIG_LIMIT:-240}" "$bin/cuda_selftest" big "${BIG_LG:-27}" > "$out/selftest-big.log" 2>&1
    echo "cuda_selftest big exit $?"
    grep -E "TIME|PROFILE|FAIL|failure|INFO" "$out/selftest-big.log" | cut -c1-330
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
# The daemon with the 32 GiB PoRep and WinningPoSt keys preloaded (as
# Curio runs cuzk): a 32 GiB C2 submitted, then, once it runs, a 32 GiB
# WinningPoSt (a test-post fixture) with a deadline; both awaited, their
# reports and the daemon's metrics kept. Args: work dir, key dir, prover
# id and sector id of the test C1.
serve_post() {
    local W=$1 P=$2 pid=$3 sid=$4 svc=$bin/cuda-prover-service fc=$bin/cuda-prover-filecoin
    /usr/bin/time -v "$fc" test-params --sector-size 32GiB --circuits winning-post --dir "$P" \
        --keygen-device 0 > "$out/test-params-winning.log" 2>&1
    echo "winning-post test-params exit $?"
    "$fc" test-post --kind winning --sector-size 32GiB --seed 2 --out "$W/winning.json" \
        > "$out/test-post.log" 2>&1
    echo "test-post exit $?"
    tail -n 3 "$out/test-post.log"
    fincore "$P"/*.params "$P"/*.params.shape > "$out/fincore-serve.txt" 2>&1 || true
    local t0=$SECONDS
    setsid /usr/bin/time -v "$svc" serve --params-dir "$W" --filecoin-test-params "$P" \
        --preload c2:32GiB --preload winning-post:32GiB --max-filecoin-request-mib 256 \
        --metrics-listen 127.0.0.1:9411 > "$out/serve.log" 2>&1 &
    "$svc" health --wait-s 240
    echo "daemon serving after $((SECONDS - t0)) s"
    "$svc" status > "$out/status-ready.txt" 2>&1
    local c2 post
    c2=$("$svc" submit --filecoin-c2 "$W/c1.json" --prover-id "$pid" --sector-id "$sid" \
        --sector-size 32GiB --request-id c2-32g | tail -n 1)
    echo "c2 job $c2"
    # The WinningPoSt once the C2 has a partition on the device.
    for _ in $(seq 1 120); do
        "$svc" status 2>&1 | grep -q "^running: [1-9]" && break
        sleep 1
    done
    sleep "${POST_AFTER_S:-15}"
    post=$("$svc" submit --filecoin-post "$W/winning.json" --deadline-ms "${POST_DEADLINE_MS:-20000}" \
        --request-id winning-32g | tail -n 1)
    echo "winning-post job $post submitted $((SECONDS - t0)) s after the start"
    timeout 120 "$svc" await "$post" --report "$out/winning-report.json" 2>&1 | tail -n 8
    timeout 300 "$svc" await "$c2" --report "$out/c2-report.json" --proof-out "$W/proof-serve" 2>&1 | tail -n 8
    curl -s http://127.0.0.1:9411/metrics > "$out/metrics.prom" 2>/dev/null || true
    "$svc" shutdown > /dev/null 2>&1
    sleep 3
    grep -E "Maximum resident|Elapsed" "$out/serve.log"
}

if [ "$what" = keyload-a ] || [ "$what" = keyload-b ] || [ "$what" = serve-post ] ||
    [ "$what" = sector ]; then
    # The 32 GiB PoRep TEST key on disk (63 GiB free needed), made here
    # unless a warm machine kept it (params-cache/ stays between calls).
    # keyload-a: `cuda-prover-filecoin c2` with the key loaded through the
    # digest record the generator wrote (resident key), again with the MSM
    # as it was (CP_MSM_NO_DENSE_HEAD, CP_MSM_WIDTH_OF_ALL), then the GPU
    # tests of the key checks. keyload-b: the record removed (every point checked
    # on the GPU) and the C2 under a 14 GiB device limit. serve-post: the
    # daemon with the key preloaded proves the C2 while a 32 GiB
    # WinningPoSt (a test-post fixture) is submitted with a deadline.
    # sector: bench-c2 of the 32 GiB C2 (key through the digest, load times
    # logged; run 1 the steady state; FIRST_LOAD=1: every point checked
    # first), then serve-post (BENCH_ONLY=1: not), then the core self-test
    # when device-bin/cuda_selftest is there (SELFTEST=0: not).
    W=$PWD/params-cache P=$PWD/params-cache/fcp32
    nvidia-smi --query-gpu=timestamp,memory.used,utilization.gpu --format=csv -l 1 \
        > "$out/$what-smi.csv" &
    smi=$!
    if [ ! -f "$P/.complete" ]; then
        rm -rf "$P"
        /usr/bin/time -v "$bin/cuda-prover-filecoin" test-params --sector-size 32GiB \
            --circuits porep --dir "$P" --keygen-device 0 > "$out/test-params.log" 2>&1
        rc=$?
        echo "test-params exit $rc"
        grep -E "shape|QAP|alloc|points|write|Maximum resident|Elapsed" "$out/test-params.log" | tail -n 12
        [ $rc = 0 ] && touch "$P/.complete"
        ls -la "$P"
    fi
    if [ ! -s "$W/c1.json" ]; then
        "$bin/cuda-prover-filecoin" test-c1 --sector-size 32GiB --seed 1 --out "$W/c1.json" \
            > "$W/c1.log" 2>&1
        tail -n 1 "$W/c1.log"
    fi
    read -r _ pid _ sid < <(tail -n 1 "$W/c1.log")
    # bench-c2 over the key on disk (loaded through its digest, times
    # logged): run 0 readies the device, run 1 is the steady state.
    # CP_MSM_* and CP_TRACE_PASS in the environment pass through;
    # SECTOR_ARGS adds bench-c2 flags (e.g. --configs "ahead=1;limit=22GiB",
    # or --workers-per-device 2: two workers a device, whose second lane
    # then opens whenever it fits and takes the next partition while this
    # one's MSMs run,
    # or --configs "ahead=1;ahead=1,witness=gadget" for the PoRep witness
    # made from values beside bellperson's SHA-256 gadget).
    bench_sector() { # name
        fincore "$P"/*.params "$P"/*.params.shape > "$out/fincore-$1.txt" 2>&1 || true
        # shellcheck disable=SC2086
        RUST_LOG=cuda_prover_groth16=info /usr/bin/time -v timeout "${C2_LIMIT:-230}" \
            "$bin/bench-c2" --backends cuda --runs "${SECTOR_RUNS:-2}" --sector-size 32GiB --params-dir "$P" \
            --synthesis witness --prepare-ahead 1 ${SECTOR_ARGS:-} --json "$out/c2-32GiB-$1.json" \
            > "$out/bench-$1.log" 2>&1
        echo "bench-c2 $1 exit $?"
        grep -E "key loaded|shape read|run [01]:|Maximum resident|Elapsed" "$out/bench-$1.log" | cut -c1-400
    }
    c2_load() { # name, time limit, extra args
        local name=$1 limit=$2; shift 2
        # How much of the key and shape files the page cache holds.
        fincore "$P"/*.params "$P"/*.params.shape > "$out/fincore-$name.txt" 2>&1 || true
        CUDA_PROVER_FILECOIN_TEST_PARAMS=$P /usr/bin/time -v timeout "$limit" \
            "$bin/cuda-prover-filecoin" c2 --c1 "$W/c1.json" --prover-id "$pid" --sector-id "$sid" \
            --out "$W/proof-$name" --test-params --synthesis witness \
            --report "$out/c2-$name.json" "$@" > "$out/c2-$name.log" 2>&1
        echo "c2 $name exit $?"
        grep -E "key|verified|rror|Maximum resident|Elapsed|plan" "$out/c2-$name.log" | tail -n 30
    }
    if [ "$what" = keyload-a ]; then
        for t in "$bin"/test-key_checks "$bin"/test-cuda; do
            timeout 60 "$t" subgroup --test-threads 1 --nocapture 2>&1 | tee "$out/$(basename "$t")-subgroup.log" \
                | grep -E "^test |result|panicked" || true
        done
        CP_TRACE_PASS=1 c2_load digest "${C2_LIMIT:-230}" --prepare-ahead 1
        # The same C2 with the MSM as it was before the dense-head split
        # and the per-batch width (same machine, for the comparison).
        CP_MSM_NO_DENSE_HEAD=1 CP_MSM_WIDTH_OF_ALL=1 c2_load msm-before "${C2_LIMIT:-230}" --prepare-ahead 1
    elif [ "$what" = keyload-b ]; then
        rm -f "$P"/*.params.verified
        CP_TRACE_PASS=1 c2_load full-14g "${C2_LIMIT:-330}" --prepare-ahead 1 --device-memory-limit 14GiB
    elif [ "$what" = serve-post ]; then
        serve_post "$W" "$P" "$pid" "$sid"
    else
        # FIRST_LOAD=1: the key's verified record removed first, so that
        # bench-c2's load checks every point (on the GPU) and writes it again.
        [ "${FIRST_LOAD:-0}" = 1 ] && rm -f "$P"/*.params.verified
        bench_sector "${BENCH_NAME:-sector}"
        [ "${BENCH_ONLY:-0}" = 1 ] || serve_post "$W" "$P" "$pid" "$sid"
        if [ -x "$bin/cuda_selftest" ] && [ "${SELFTEST:-1}" = 1 ]; then
            timeout "${SELFTEST_LIMIT:-120}" "$bin/cuda_selftest" quick > "$out/selftest.log" 2>&1
            echo "cuda_selftest quick exit $?"
            grep -E "FAIL|dense head|failure" "$out/selftest.log" | tail -n 12
        fi
    fi
    kill $smi
fi
