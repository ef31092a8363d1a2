// Owns: the BLS12-381 constants of the batched point kernels (the
// subgroup tests and the windows of a fixed-base product), in blst's limb
// layout (Montgomery form, little-endian 64-bit limbs), shared by the CUDA
// kernels (cuda/point_batch.cu) and the host check of those constants
// (tests/point_batch_selftest.cpp), so that a wrong constant fails where
// there is no GPU.
//
// The tests (Scott, "A note on group membership tests for G1, G2 and GT on
// BLS pairing-friendly curves", eprint 2021/1130; the ones blst's in_g1 and
// in_g2 make), with z = -0xd201000000010000 the curve's parameter:
//   G1: P is in G1 iff sigma^2(P) == -[z^2]P, sigma(x, y) = (beta x, y),
//       beta the cube root of unity blst uses (so sigma^2 multiplies x by
//       beta^2).
//   G2: P is in G2 iff psi(P) == [z]P, psi(x, y) = (conj(x) PSI_X,
//       conj(y) PSI_Y).
#pragma once

#include <cstdint>

namespace cp {
namespace curve {

// |z| and |z|^2 (128 bits: high, low).
constexpr uint64_t Z_ABS = 0xd201000000010000ull;
constexpr uint64_t Z_SQ_HI = 0xac45a4010001a402ull;
constexpr uint64_t Z_SQ_LO = 0x0000000100000000ull;

// beta^2 (Montgomery form).
constexpr uint64_t BETA_SQ[6] = {0x30f1361b798a64e8ull, 0xf3b8ddab7ece5a2aull,
                                 0x16a8ca3ac61577f7ull, 0xc26a2ff874fd029bull,
                                 0x3636b76660701c6eull, 0x051ba4ab241b6160ull};

// PSI_X = 1/(1+i)^((p-1)/3): real part 0, imaginary part below.
constexpr uint64_t PSI_X_IM[6] = {0x890dc9e4867545c3ull, 0x2af322533285a5d5ull,
                                  0x50880866309b7e2cull, 0xa20d1b8c7e881024ull,
                                  0x14e4f04fe2db9068ull, 0x14e56d3f1564853aull};
// PSI_Y = 1/(1+i)^((p-1)/2): real, imaginary.
constexpr uint64_t PSI_Y_RE[6] = {0x3e2f585da55c9ad1ull, 0x4294213d86c18183ull,
                                  0x382844c88b623732ull, 0x92ad2afd19103e18ull,
                                  0x1d794e4fac7cf0b9ull, 0x0bd592fc7d825ec8ull};
constexpr uint64_t PSI_Y_IM[6] = {0x7bcfa7a25aa30fdaull, 0xdc17dec12a927e7cull,
                                  0x2f088dd86b4ebef1ull, 0xd1ca2087da74d4a7ull,
                                  0x2da2596696cebc1dull, 0x0e2b7eedbbfd87d2ull};

// A fixed-base product cuts a scalar into WINDOWS signed digits of
// WINDOW_BITS bits (|digit| <= HALF); a table row k holds d * 2^(16k) * G
// for d = 1..=HALF. 16 windows cover any scalar below 2^255 with no carry
// out of the last (the group order is below 2^255).
constexpr unsigned WINDOW_BITS = 16;
constexpr unsigned WINDOWS = 16;
constexpr unsigned HALF = 1u << (WINDOW_BITS - 1);

}  // namespace curve
}  // namespace cp
