// Owns take(), a cp_status's message as a string (the message freed), and
// EXPECT_CODE / EXPECT_OK, which CHECK a call's status code and print the
// message when it is not the one expected.
#pragma once

#include <string>

#include "check.hpp"
#include "cuda_prover.h"

inline std::string take(cp_status st) {
    std::string m = st.message ? st.message : "";
    cp_string_free(st.message);
    return m;
}
#define EXPECT_CODE(call, want)                                                                   \
    do {                                                                                          \
        cp_status st_ = (call);                                                                   \
        int got_ = st_.code;                                                                      \
        std::string msg_ = take(st_);                                                             \
        CHECK(got_ == (want), "expected code %d, got %d (%s)", (int)(want), got_, msg_.c_str()); \
    } while (0)
#define EXPECT_OK(call) EXPECT_CODE(call, CP_OK)
