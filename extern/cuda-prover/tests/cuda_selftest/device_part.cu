// Whole device parts (cp::groth16_device::device_part, prepare, trim) on
// a random circuit and key, against the CPU references, and timed.
#include "common.hpp"

// ---------------------------------------------------------------- device_part

struct circuit_data {
    std::vector<blst_fr> a, b, c, inputs, aux;
    std::vector<uint64_t> a_aux, b_in, b_aux;
    cp_circuit c_abi;
    cp::circuit_job job;
};

static size_t popcount(const std::vector<uint64_t> &v) {
    size_t n = 0;
    for (auto w : v)
        n += __builtin_popcountll(w);
    return n;
}

// Random witness (not satisfying: the device part does not check it).
static void make_circuit(circuit_data &d, size_t nc, size_t ni, size_t na, int zpct, int opct,
                         uint64_t seed) {
    rng_t g(seed);
    d.a.resize(nc);
    d.b.resize(nc);
    d.c.resize(nc);
    for (size_t i = 0; i < nc; i++) {
        d.a[i] = fr_rand(g);
        d.b[i] = fr_rand(g);
        d.c[i] = fr_rand(g);
    }
    d.inputs = scalars_mix(ni, 0, 0, seed + 1);
    d.inputs[0] = fr_u64(1);
    d.aux = scalars_mix(na, zpct, opct, seed + 2);
    auto bits = [&](size_t n, int pct) {
        std::vector<uint64_t> v((n + 63) / 64, 0);
        for (size_t i = 0; i < n; i++)
            if ((int)(g.next() % 100) < pct)
                v[i / 64] |= 1ull << (i % 64);
        return v;
    };
    d.a_aux = bits(na, 70);
    d.b_in = bits(ni, 60);
    d.b_in[0] |= 1;
    d.b_aux = bits(na, 50);
    std::memset(&d.c_abi, 0, sizeof(d.c_abi));
    d.c_abi.a = (const cp_fr *)d.a.data();
    d.c_abi.b = (const cp_fr *)d.b.data();
    d.c_abi.c = (const cp_fr *)d.c.data();
    d.c_abi.num_constraints = nc;
    d.c_abi.inputs = (const cp_fr *)d.inputs.data();
    d.c_abi.num_inputs = ni;
    d.c_abi.aux = (const cp_fr *)d.aux.data();
    d.c_abi.num_aux = na;
    d.c_abi.a_aux_density = d.a_aux.data();
    d.c_abi.b_input_density = d.b_in.data();
    d.c_abi.b_aux_density = d.b_aux.data();
    d.c_abi.tag = -1;
    uint32_t lg = 0;
    while ((size_t(1) << lg) < nc)
        lg++;
    d.job.a = d.a.data();
    d.job.b = d.b.data();
    d.job.c = d.c.data();
    d.job.num_constraints = nc;
    d.job.inputs = d.inputs.data();
    d.job.num_inputs = ni;
    d.job.aux = d.aux.data();
    d.job.num_aux = na;
    d.job.a_aux_density = d.a_aux.data();
    d.job.b_input_density = d.b_in.data();
    d.job.b_aux_density = d.b_aux.data();
    d.job.lg_domain = lg;
    d.job.a_aux_count = popcount(d.a_aux);
    d.job.b_input_count = popcount(d.b_in);
    d.job.b_aux_count = popcount(d.b_aux);
}

static void make_key(cp::proving_key &k, const circuit_data &d, size_t distinct) {
    const size_t m = size_t(1) << d.job.lg_domain;
    const size_t na = d.c_abi.num_inputs + d.job.a_aux_count;
    const size_t nb = d.job.b_input_count + d.job.b_aux_count;
    auto g1 = g1_points(std::min(distinct, std::max<size_t>(m, d.aux.size())),
                        std::max({m, d.aux.size(), na, nb}), 21);
    k.ic.assign(g1.begin() + 2, g1.begin() + 2 + d.c_abi.num_inputs);
    k.h.assign(g1.begin() + 1, g1.begin() + m);  // shifted so arrays differ
    k.l.assign(g1.begin(), g1.begin() + d.aux.size());
    std::reverse(k.l.begin(), k.l.end());
    k.a.assign(g1.begin(), g1.begin() + na);
    k.b_g1.assign(g1.rbegin(), g1.rbegin() + nb);
    const auto g2 = g2_points(std::min<size_t>(nb, 1 << 14), nb, 22);
    k.b_g2.assign(g2.begin(), g2.end());
}

static std::vector<blst_fr> filtered(const std::vector<blst_fr> &v, const std::vector<uint64_t> &bits) {
    std::vector<blst_fr> out;
    for (size_t i = 0; i < v.size(); i++)
        if ((bits[i / 64] >> (i % 64)) & 1)
            out.push_back(v[i]);
    return out;
}

static void check_abb(const cp::proving_key &k, const circuit_data &d, const cp::device_partials &p,
                      const std::string &label);

static void check_partials(const cp::proving_key &k, const circuit_data &d,
                           const cp::device_partials &p, const std::string &label) {
    const uint32_t lg = d.job.lg_domain;
    const size_t m = size_t(1) << lg;
    auto pad = [&](std::vector<blst_fr> v) { v.resize(m, FR_ZERO); return v; };
    auto h = cpu_h(pad(d.a), pad(d.b), pad(d.c), lg, false);
    // The backend may return h and l as one sum (the proof uses only h + l).
    blst_p1 hl_got, hl_want;
    blst_p1_add_or_double(&hl_got, &p.h, &p.l);
    blst_p1 hw = cpu_msm_g1(k.h.data(), h.data(), m - 1);
    blst_p1 lw = cpu_msm_g1(k.l.data(), d.aux.data(), d.aux.size());
    blst_p1_add_or_double(&hl_want, &hw, &lw);
    report(eq1(hl_got, hl_want), label + ": h + l");
    check_abb(k, d, p, label);
}

static void check_abb(const cp::proving_key &k, const circuit_data &d, const cp::device_partials &p,
                      const std::string &label) {
    auto sa = d.inputs;
    auto fa = filtered(d.aux, d.a_aux);
    sa.insert(sa.end(), fa.begin(), fa.end());
    report(eq1(p.a, cpu_msm_g1(k.a.data(), sa.data(), sa.size())), label + ": a");
    auto sb = filtered(d.inputs, d.b_in);
    auto fb = filtered(d.aux, d.b_aux);
    sb.insert(sb.end(), fb.begin(), fb.end());
    report(eq1(p.b_g1, cpu_msm_g1(k.b_g1.data(), sb.data(), sb.size())), label + ": b_g1");
    report(eq2(p.b_g2, cpu_msm_g2(k.b_g2.data(), sb.data(), sb.size())), label + ": b_g2");
}

static void print_timings(const char *label, const cp_timings &t, double wall) {
    // The MSMs run at the same time on their own streams: their times
    // overlap, the longest one counts.
    const uint64_t msm = std::max({t.msm_h_ns, t.msm_l_ns, t.msm_a_ns, t.msm_b_g1_ns,
                                   t.msm_b_g2_ns});
    const double sum = (t.upload_ns + t.ntt_ns + msm + t.batch_add_ns) / 1e6;
    std::printf("TIME device_part %s: wall %.1f ms | upload %.1f ntt %.1f msm_h %.1f msm_l %.1f "
                "msm_a %.1f msm_b_g1 %.1f msm_b_g2 %.1f batch_add %.1f | unattributed %.1f ms "
                "| peak %.0f MiB\n",
                label, wall * 1e3, t.upload_ns / 1e6, t.ntt_ns / 1e6, t.msm_h_ns / 1e6,
                t.msm_l_ns / 1e6, t.msm_a_ns / 1e6, t.msm_b_g1_ns / 1e6, t.msm_b_g2_ns / 1e6,
                t.batch_add_ns / 1e6, wall * 1e3 - sum, t.peak_device_bytes / 1048576.0);
}

// A device part's tail, when it left one (a pass overlapped on the
// device's second lane), finished at once.
static void finish(std::unique_ptr<cp::device_tail> tail) {
    if (tail)
        tail->finish();
}

void test_device_part(cp::device &dev) {
    cp::groth16_device &g16 = dev.groth16();
    // small shape, fully checked, twice (cache and key reuse)
    for (int shape = 0; shape < 2; shape++) {
        circuit_data d;
        make_circuit(d, 3000, 3, 2900, shape ? 45 : 0, shape ? 45 : 0, 40 + shape);
        cp::proving_key k;
        make_key(k, d, 1 << 16);
        const uint64_t up0 = g16.key_uploads();
        uint64_t al1 = 0;  // after the first proof (lane 0's cache, lane 1 opened)
        for (int rep = 0; rep < 2; rep++) {
            if (rep == 1)
                al1 = dev.cache_allocations();
            cp::device_partials p;
            cp_timings t;
            std::memset(&t, 0, sizeof(t));
            dev.bind_thread();
            finish(g16.device_part(k, d.job, p, t));
            check_partials(k, d, p, std::string("device_part 2^12 ") + (shape ? "bits" : "dense") +
                                        " run " + std::to_string(rep));
        }
        report(g16.key_uploads() == up0 + 1, "key uploaded once for two proofs");
        report(dev.cache_allocations() == al1, "the second proof reuses the caches");
    }
    // 2^20 shapes, timed (components are checked above and in the MSM/H tests)
    for (int shape = 0; shape < 2; shape++) {
        circuit_data d;
        const size_t nc = (size_t(1) << 20) - 64;
        make_circuit(d, nc, 2, nc - 8, shape ? 49 : 0, shape ? 49 : 0, 60 + shape);
        cp::proving_key k;
        make_key(k, d, 1 << 16);
        auto est = g16.estimate(k, nc);
        {
            // prepare uploads the key and sizes the cache: the first proof
            // after it pays neither.
            double t0 = now_s();
            dev.bind_thread();
            g16.prepare(k, nc, nullptr);
            double secs = now_s() - t0;
            const uint64_t up = g16.key_uploads(), al = dev.cache_allocations();
            cp::device_partials p;
            cp_timings t;
            std::memset(&t, 0, sizeof(t));
            double t1 = now_s();
            finish(g16.device_part(k, d.job, p, t));
            std::string label = std::string(shape ? "bits" : "chain") + " 2^20 first after prepare";
            print_timings(label.c_str(), t, now_s() - t1);
            std::printf("INFO prepare 2^20 %s: %.1f ms\n", shape ? "bits" : "chain", secs * 1e3);
            report(g16.key_uploads() == up && dev.cache_allocations() == al,
                   std::string("prepare 2^20 ") + (shape ? "bits" : "chain") +
                       ": the next proof uploads and allocates nothing");
        }
        for (int rep = 0; rep < 3; rep++) {
            cp::device_partials p;
            cp_timings t;
            std::memset(&t, 0, sizeof(t));
            double t0 = now_s();
            finish(g16.device_part(k, d.job, p, t));
            double wall = now_s() - t0;
            std::string label = std::string(shape ? "bits" : "chain") + " 2^20 run " +
                                std::to_string(rep);
            print_timings(label.c_str(), t, wall);
            if (rep == 2) {
                // a, b_g1, b_g2 against blst at full size (h + l is covered
                // at 2^12 and by the H and MSM tests at 2^20).
                double c0 = now_s();
                check_abb(k, d, p, std::string("device_part ") + label);
                std::printf("  (CPU reference took %.1f s)\n", now_s() - c0);
            }
        }
        std::printf("INFO estimate 2^20: working %.0f MiB, key %.0f MiB; cache %.0f MiB, "
                    "allocations %llu, uploads %llu\n",
                    est.working_bytes / 1048576.0, est.key_bytes / 1048576.0,
                    dev.cache_bytes() / 1048576.0, (unsigned long long)dev.cache_allocations(),
                    (unsigned long long)g16.key_uploads());
    }
    uint64_t freed = dev.trim();
    report(freed > 0 && dev.cache_bytes() == 0, "trim frees the cache (" +
                                                    std::to_string(freed >> 20) + " MiB)");
}
