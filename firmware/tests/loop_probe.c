/* A loop reading the same 64 bytes again and again (a probe of the caches' behaviour). */
#include "soc.h"

static volatile int8_t local[64];

int main(void) {
    uint32_t s = 0;
    progress(1);
    for (int i = 0; i < 512; ++i) s += (uint32_t)local[i & 63];
    progress(2);
    return s == 1234567 ? 1 : 0;
}
