// Owns: shapes (cp_shape_*): copying and validating a circuit's A, B, C
// matrices and deriving the densities a proving key is built from.
#include <algorithm>
#include <atomic>
#include <cstring>

#include "core.hpp"
#include "field.hpp"
#include "parallel.hpp"
#include "status.hpp"

namespace cp {

uint64_t shape::device_bytes() const {
    const uint64_t offsets = 3 * (num_constraints + 1) * sizeof(uint64_t);
    const uint64_t entries = nonzeros() * sizeof(cp_shape_entry);
    const uint64_t words = 2 * ((num_aux + 63) / 64) + (num_inputs + 63) / 64;
    return offsets + entries + coeffs.size() * sizeof(blst_fr) +
           words * (sizeof(uint64_t) + sizeof(uint32_t));
}

namespace {

std::atomic<uint64_t> g_next_shape_id{1};

// Checks one matrix and copies it; marks the columns it uses.
void take_matrix(const char *name, const cp_shape_matrix &in, const shape &sh, uint64_t ncoeff,
                 shape_matrix &out, std::vector<uint64_t> *input_bits,
                 std::vector<uint64_t> *aux_bits, int threads) {
    auto bad = [&](const std::string &why) {
        fail(CP_ERR_INVALID_ARGUMENT, std::string("cp_shape_new: matrix ") + name + ": " + why);
    };
    const uint64_t rows = sh.num_constraints;
    if (!in.row_ptr) bad("row_ptr is NULL");
    if (in.row_ptr[0] != 0) bad("row_ptr[0] is " + std::to_string(in.row_ptr[0]) + ", not 0");
    out.longest_row = 0;
    for (uint64_t i = 0; i < rows; i++) {
        if (in.row_ptr[i + 1] < in.row_ptr[i])
            bad("row_ptr decreases at row " + std::to_string(i));
        out.longest_row = std::max(out.longest_row, in.row_ptr[i + 1] - in.row_ptr[i]);
    }
    const uint64_t nnz = in.row_ptr[rows];
    // Every entry names a column of one row; more entries than that is a
    // corrupt offset, not a circuit.
    const uint64_t cols = sh.num_inputs + sh.num_aux;
    if (cols > 0 && nnz / cols > rows) bad(std::to_string(nnz) + " entries do not fit the matrix");
    if (nnz > 0 && !in.entries) bad("entries is NULL with " + std::to_string(nnz) + " entries");
    out.row_ptr.assign(in.row_ptr, in.row_ptr + rows + 1);
    out.entries.assign(in.entries, in.entries + nnz);

    std::atomic<uint64_t> first_bad{UINT64_MAX};
    parallel_for(nnz, threads, 1 << 16, [&](size_t lo, size_t hi, size_t) {
        for (size_t j = lo; j < hi; j++) {
            const cp_shape_entry &e = out.entries[j];
            if (e.col >= cols || e.coeff >= ncoeff + 2) {
                uint64_t cur = first_bad.load();
                while (j < cur && !first_bad.compare_exchange_weak(cur, j)) {
                }
                return;
            }
        }
    });
    if (first_bad.load() != UINT64_MAX) {
        const cp_shape_entry &e = out.entries[first_bad.load()];
        bad("entry " + std::to_string(first_bad.load()) + " has column " + std::to_string(e.col) +
            " (of " + std::to_string(cols) + ") and coefficient code " + std::to_string(e.coeff) +
            " (of " + std::to_string(ncoeff + 2) + ")");
    }
    for (const cp_shape_entry &e : out.entries) {
        if (e.col < sh.num_inputs) {
            if (input_bits) (*input_bits)[e.col / 64] |= uint64_t(1) << (e.col % 64);
        } else if (aux_bits) {
            const uint64_t i = e.col - sh.num_inputs;
            (*aux_bits)[i / 64] |= uint64_t(1) << (i % 64);
        }
    }
}

void shape_new(const cp_shape_parts *parts, cp_shape **out) {
    if (out) *out = nullptr;
    if (!parts || !out) fail(CP_ERR_INVALID_ARGUMENT, "cp_shape_new: NULL argument");
    auto bad = [&](const std::string &why) { fail(CP_ERR_INVALID_ARGUMENT, "cp_shape_new: " + why); };
    if (parts->num_inputs < 1) bad("num_inputs is 0 (input 0 must be ONE)");
    if (parts->num_constraints < parts->num_inputs)
        bad("num_constraints " + std::to_string(parts->num_constraints) + " is less than num_inputs " +
            std::to_string(parts->num_inputs) + " (one input_i * 0 = 0 row per input)");
    if (parts->num_constraints > (uint64_t(1) << MAX_LG_DOMAIN))
        bad("num_constraints " + std::to_string(parts->num_constraints) +
            " needs a domain larger than the largest, 2^" + std::to_string(MAX_LG_DOMAIN));
    if (parts->num_aux > UINT32_MAX || parts->num_inputs + parts->num_aux > UINT32_MAX)
        bad("more than 2^32 - 1 variables");
    if (parts->num_coeffs > 0 && !parts->coeffs) bad("coeffs is NULL");
    if (parts->num_coeffs > UINT32_MAX - 2) bad("more than 2^32 - 3 coefficients");

    std::unique_ptr<cp_shape> h(new cp_shape);
    shape &sh = h->sh;
    sh.id = g_next_shape_id.fetch_add(1);
    sh.num_constraints = parts->num_constraints;
    sh.num_inputs = parts->num_inputs;
    sh.num_aux = parts->num_aux;
    sh.coeffs.resize(parts->num_coeffs);
    if (parts->num_coeffs)
        std::memcpy(sh.coeffs.data(), parts->coeffs, parts->num_coeffs * sizeof(blst_fr));
    for (size_t k = 0; k < sh.coeffs.size(); k++)
        if (fr_is_zero(sh.coeffs[k]))
            bad("coeffs[" + std::to_string(k) + "] is zero: leave zero entries out");
    sh.a_aux_density.assign((sh.num_aux + 63) / 64, 0);
    sh.b_aux_density.assign((sh.num_aux + 63) / 64, 0);
    sh.b_input_density.assign((sh.num_inputs + 63) / 64, 0);
    const int threads = hardware_threads();
    // Inputs are dense in A by the input_i * 0 = 0 rows, and C has no query
    // of its own: only A's aux and B's columns are densities.
    take_matrix("A", parts->a, sh, parts->num_coeffs, sh.a, nullptr, &sh.a_aux_density, threads);
    take_matrix("B", parts->b, sh, parts->num_coeffs, sh.b, &sh.b_input_density, &sh.b_aux_density,
                threads);
    take_matrix("C", parts->c, sh, parts->num_coeffs, sh.c, nullptr, nullptr, threads);
    sh.a_aux_count = popcount_bits(sh.a_aux_density.data(), sh.num_aux);
    sh.b_input_count = popcount_bits(sh.b_input_density.data(), sh.num_inputs);
    sh.b_aux_count = popcount_bits(sh.b_aux_density.data(), sh.num_aux);
    *out = h.release();
}

}  // namespace
}  // namespace cp

using namespace cp;

extern "C" {

cp_status cp_shape_new(const cp_shape_parts *parts, cp_shape **out) {
    return guard("cp_shape_new", [&] { shape_new(parts, out); });
}

void cp_shape_free(cp_shape *s) {
    guard_void([&] { delete s; });
}

cp_status cp_shape_info_get(const cp_shape *s, cp_shape_info *out) {
    return guard("cp_shape_info_get", [&] {
        if (!s || !out) fail(CP_ERR_INVALID_ARGUMENT, "cp_shape_info_get: NULL argument");
        const shape &sh = s->sh;
        out->num_constraints = sh.num_constraints;
        out->num_inputs = sh.num_inputs;
        out->num_aux = sh.num_aux;
        out->nonzeros = sh.nonzeros();
        out->a_aux_count = sh.a_aux_count;
        out->b_input_count = sh.b_input_count;
        out->b_aux_count = sh.b_aux_count;
        out->device_bytes = sh.device_bytes();
    });
}

}  // extern "C"
