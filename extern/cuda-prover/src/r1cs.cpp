#include "r1cs.hpp"

#include <atomic>

#include "field.hpp"
#include "parallel.hpp"

namespace cp {

void eval_rows(const shape &sh, const shape_matrix &m, const blst_fr *inputs, const blst_fr *aux,
               blst_fr *out, int threads) {
    eval_row_range(sh, m, inputs, aux, 0, sh.num_constraints, out, threads);
}

void eval_row_range(const shape &sh, const shape_matrix &m, const blst_fr *inputs,
                    const blst_fr *aux, size_t first, size_t last, blst_fr *out, int threads) {
    const uint64_t ni = sh.num_inputs;
    const uint64_t *rp = m.row_ptr.data();
    const cp_shape_entry *e = m.entries.data();
    const blst_fr *coeffs = sh.coeffs.data();
    parallel_for(last - first, threads, 1 << 12, [&](size_t lo, size_t hi, size_t) {
        for (size_t i = first + lo; i < first + hi; i++) {
            blst_fr acc = fr_zero();
            for (uint64_t j = rp[i]; j < rp[i + 1]; j++) {
                const uint32_t col = e[j].col;
                const blst_fr &v = col < ni ? inputs[col] : aux[col - ni];
                switch (e[j].coeff) {
                case CP_COEFF_ONE:
                    blst_fr_add(&acc, &acc, &v);
                    break;
                case CP_COEFF_MINUS_ONE:
                    blst_fr_sub(&acc, &acc, &v);
                    break;
                default: {
                    blst_fr t;
                    blst_fr_mul(&t, &v, &coeffs[e[j].coeff - 2]);
                    blst_fr_add(&acc, &acc, &t);
                }
                }
            }
            out[i - first] = acc;
        }
    });
}

size_t first_unsatisfied(const blst_fr *a, const blst_fr *b, const blst_fr *c, size_t n,
                         int threads) {
    std::atomic<size_t> first{SIZE_MAX};
    parallel_for(n, threads, 1 << 14, [&](size_t lo, size_t hi, size_t) {
        for (size_t i = lo; i < hi; i++) {
            if (i >= first.load(std::memory_order_relaxed)) return;
            blst_fr t;
            blst_fr_mul(&t, &a[i], &b[i]);
            if (!fr_eq(t, c[i])) {
                size_t cur = first.load();
                while (i < cur && !first.compare_exchange_weak(cur, i)) {
                }
                return;
            }
        }
    });
    return first.load();
}

}  // namespace cp
