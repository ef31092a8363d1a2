// The device part of run.hpp.
#include "groth16/run.hpp"

#include <algorithm>
#include <cstring>
#include <exception>
#include <memory>

#include "groth16/checks.hpp"

namespace cp {
namespace {

// One item's record for a shared pass (dispatch_share): what a leader of
// any call needs to run it.
struct shared_item {
    const proving_key *key;
    const circuit_job *job;
    device_partials *out;
    cp_timings *t;
    int32_t *device;
};

// share_key::kind of Groth16 device parts (payloads are shared_item).
const char groth16_parts = 0;

// Groth16 device parts as items that may share a pass over a streamed key.
dispatch_share groth16_sharing(const proving_key &key, const std::vector<circuit_job> &run,
                               std::vector<shared_item> &records) {
    dispatch_share sh;
    sh.key = [&key, &run](size_t k) {
        share_key sk;
        sk.kind = &groth16_parts;
        sk.key = &key;
        sk.shape = run[k].sh;
        return sk;
    };
    sh.payload = [&records](size_t k) -> void * { return &records[k]; };
    sh.limit = [](void *const *payloads, size_t n, device &dev) {
        const shared_item &first = *static_cast<shared_item *>(payloads[0]);
        return dev.groth16().shared_pass_limit(*first.key, *first.job, n);
    };
    sh.run = [](void *const *payloads, size_t n, int ordinal, device &dev,
                std::exception_ptr *errs) {
        std::vector<const circuit_job *> jobs(n);
        std::vector<device_partials *> outs(n);
        std::vector<cp_timings *> ts(n);
        for (size_t i = 0; i < n; i++) {
            shared_item &it = *static_cast<shared_item *>(payloads[i]);
            jobs[i] = it.job;
            outs[i] = it.out;
            ts[i] = it.t;
            *it.device = ordinal;
        }
        const proving_key &k = *static_cast<shared_item *>(payloads[0])->key;
        dev.groth16().shared_part(k, jobs.data(), n, outs.data(), ts.data(), errs);
    };
    return sh;
}

}  // namespace

// The device part of every job over its route, into a new pending proof.
cp_pending *run_jobs(cp_context &ctx, const proving_key &key, const std::vector<circuit_job> &jobs,
                     const std::vector<blinding> &bl, const route &rt, cp_mutex *mutex) {
    std::unique_ptr<cp_pending> p(new cp_pending);
    p->entries.resize(jobs.size());
    p->alpha_g1 = key.alpha_g1;
    p->beta_g1 = key.beta_g1;
    p->delta_g1 = key.delta_g1;
    p->beta_g2 = key.beta_g2;
    p->delta_g2 = key.delta_g2;
    std::vector<dispatch_item> items(jobs.size());
    for (size_t k = 0; k < jobs.size(); k++) {
        items[k].tag = jobs[k].tag;
        items[k].name = circuit_name(k, jobs[k].tag);
        cp_pending::entry &e = p->entries[k];
        std::memset(&e.timings, 0, sizeof e.timings);
        std::memcpy(&e.r, bl[k].r, sizeof e.r);
        std::memcpy(&e.s, bl[k].s, sizeof e.s);
    }
    std::vector<item_times> times;
    // A witness-only job's witness goes into a buffer its device lends
    // (groth16_device::lend_witness), copied or packed, before the device's
    // mutex is taken, and the lease starts what it can of the upload; it ends with the item's
    // device part. Without a lease the device part reads the caller's
    // memory. A device part that returns a tail (device_tail) is finished
    // after the device's mutex is released, and its lease ends then.
    std::vector<circuit_job> run(jobs);
    std::vector<std::unique_ptr<witness_lease>> leases(jobs.size());
    std::vector<std::unique_ptr<device_tail>> tails(jobs.size());
    // Items of this call and of other callers on the same device with the
    // same key and shape may share one pass (device::shared_pass_limit).
    std::vector<shared_item> records(jobs.size());
    for (size_t k = 0; k < jobs.size(); k++) {
        cp_pending::entry &e = p->entries[k];
        records[k] = shared_item{&key, &run[k], &e.parts, &e.timings, &e.device};
    }
    const dispatch_share sharing = groth16_sharing(key, run, records);
    dispatch(ctx, rt, items, mutex,
             [&](size_t k, int ordinal, device &dev) {
                 cp_pending::entry &e = p->entries[k];
                 e.device = ordinal;
                 tails[k] = dev.groth16().device_part(key, run[k], e.parts, e.timings);
                 if (!tails[k]) leases[k].reset();
             },
             times,
             [&](size_t k, int, device &dev) {
                 circuit_job &j = run[k];
                 if (!j.sh) return;
                 leases[k] = dev.groth16().lend_witness(j.num_inputs, j.num_aux);
                 if (!leases[k]) return;
                 // Copied, or packed (its values read twice, the second
                 // time sparsely), on up to 8 of the context's threads.
                 leases[k]->fill(j, std::min(ctx.threads, 8));
                 leases[k]->filled(j);
             },
             [&](size_t k, int, device &) {
                 if (tails[k]) {
                     tails[k]->finish();
                     tails[k].reset();
                 }
                 leases[k].reset();
             },
             &sharing);
    for (size_t k = 0; k < jobs.size(); k++) {
        p->entries[k].timings.wait_ns = times[k].wait_ns;
        p->entries[k].timings.device_ns = times[k].device_ns;
    }
    return p.release();
}

}  // namespace cp
