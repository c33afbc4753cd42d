/* The edges of annex's C readers, for their fuzz targets (tests/fuzz/native_coverage.py).
 *
 * gcc's -fsanitize-coverage=trace-pc calls __sanitizer_cov_trace_pc at every edge of the code
 * it compiles (graph.c, canonical.c, built apart for fuzzing); this records each call's
 * return address (the edge), hashed into EDGES slots. libFuzzer (atheris) implements the
 * counters of clang's instrumentation, not this gcc callback: after each call the fuzz target
 * takes the slots hit (annex_edges_take) and reports each to atheris as a branch of its own,
 * so the C's coverage guides the fuzzer although no clang built it. This file itself is
 * compiled without instrumentation (it would call itself).
 */
#include <stdint.h>

#define EDGES 8192

static uint8_t hit[EDGES];
static uint32_t order[EDGES];
static uint32_t count;

void __sanitizer_cov_trace_pc(void) {
    uintptr_t pc = (uintptr_t)__builtin_return_address(0);
    uint32_t slot = (uint32_t)((pc ^ (pc >> 13)) * 2654435761u) % EDGES;
    if (!hit[slot]) {
        hit[slot] = 1;
        order[count++] = slot;
    }
}

/* The slots hit since the last call, into ``out`` (room for EDGES); how many. */
int32_t annex_edges_take(uint32_t *out) {
    uint32_t taken = count;
    for (uint32_t k = 0; k < taken; k++) {
        out[k] = order[k];
        hit[order[k]] = 0;
    }
    count = 0;
    return (int32_t)taken;
}
