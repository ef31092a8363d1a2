// Owns the self-tests' CHECK macro and its failure count g_failures: a
// failed check prints "  FAIL file:line: condition: " and its message, and
// counts one failure; main() reports the count. One counter per program
// (inline, C++17), however many of its files include this.
#pragma once

#include <cstdio>

inline int g_failures = 0;
#define CHECK(cond, ...)                                                  \
    do {                                                                  \
        if (!(cond)) {                                                    \
            g_failures++;                                                 \
            std::printf("  FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond); \
            std::printf(__VA_ARGS__);                                     \
            std::printf("\n");                                            \
        }                                                                 \
    } while (0)
