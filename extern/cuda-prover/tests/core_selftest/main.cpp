// Standalone self-test of the cuda-prover C++ core (host backend and the
// shared orchestration), linked against a libblst built from source. Run it
// with tests/run-selftest.sh.
//
// Covers: Fr constants, NTT round trip and NTT == naive DFT, host MSM against
// naive sums (G1, G2, with densities, zeros/ones/duplicates), the H
// polynomial identity at a random point, params parsing (round trip,
// truncation, corruption, trailing bytes, missing file), gpu_index routing on
// a 4-device host context, fault injection, per-device mutex serialization,
// statistics and trim, the chunk sequence of a streamed key, and an
// end-to-end Groth16 proof checked with the pairing equation against a key
// generated here from known toxic waste.
//
// Files:
//   common.hpp, common.cpp  random values and points, key and circuit
//                           helpers, a host context (the check macros,
//                           take() and key_parts: ../support/)
//   field_ntt.cpp           Fr constants, NTT, the H polynomial
//   msm.cpp                 host MSM against naive sums
//   params.cpp              params parsing
//   routing.cpp             gpu_index routing, errors, faults, stats, trim,
//                           prepare, context options
//   mutex.cpp               per-device mutex serialization
//   dispatch.cpp            the dispatcher's `after` and shared passes
//   stream_plan.cpp         plan_stream, plan_shared, stream_sequence
//   witness_pool.cpp        the witness pool
//   witness_pack.cpp        the packed witness: pack, unpack
//   groth16.cpp             end-to-end Groth16 with the pairing check
//   main.cpp                the order the tests run in
#include "common.hpp"

int main() {
    test_field();
    test_ntt();
    test_h();
    test_msm();
    test_params();
    test_routing();
    test_mutex();
    test_dispatch_after();
    test_stream_sequence();
    test_plan_stream_steep_temp();
    test_plan_shared();
    test_dispatch_share();
    test_witness_pool();
    test_witness_pack();
    test_groth16();
    if (g_failures) {
        std::printf("core_selftest: %d FAILURES\n", g_failures);
        return 1;
    }
    std::printf("core_selftest: all passed\n");
    return 0;
}
