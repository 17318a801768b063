/* loopbench app wrapper for zlib: run(n) compresses and decompresses n
 * deterministic 32 KiB text blocks and returns a hash of every compressed
 * stream. Written for loopbench; zlib itself is unmodified.
 *
 * Each step: generate block `step` (word salad from a fixed vocabulary and a
 * xorshift stream, so it compresses like text), deflate it at level 6,
 * inflate the result and compare with the input. A mismatch traps, so a
 * wrong engine can never return the expected hash. The hash is FNV-1a over
 * the compressed bytes and their lengths. No static state survives a call,
 * so run() can be called any number of times on one instance. */
#include <stdint.h>
#include <string.h>
#include "zlib.h"

#define BLOCK 32768

static unsigned char in_buf[BLOCK];
static unsigned char z_buf[BLOCK + BLOCK / 8 + 64];
static unsigned char out_buf[BLOCK];

static const char *const words[] = {
    "the", "engine", "loop", "memory", "branch", "call", "table", "stack",
    "value", "module", "export", "import", "function", "global", "local", "store",
    "load", "page", "byte", "word", "interpreter", "compiler", "register", "frame",
    "and", "of", "to", "in", "is", "a", "with", "for",
};

static uint64_t xs;
static uint32_t next_rand(void) {
    xs ^= xs >> 12;
    xs ^= xs << 25;
    xs ^= xs >> 27;
    return (uint32_t)((xs * 0x2545F4914F6CDD1DULL) >> 32);
}

static void fill_block(uint32_t step) {
    xs = 0x9E3779B97F4A7C15ULL ^ ((uint64_t)step * 0x100000001B3ULL) ^ 1;
    size_t i = 0;
    while (i < BLOCK) {
        uint32_t r = next_rand();
        const char *w = words[r % 32];
        size_t len = strlen(w);
        for (size_t k = 0; k < len && i < BLOCK; k++) in_buf[i++] = (unsigned char)w[k];
        if (i < BLOCK) in_buf[i++] = (r >> 8) % 13 == 0 ? '\n' : ' ';
        if ((r >> 16) % 97 == 0 && i + 4 < BLOCK) {
            /* an occasional number, so not everything is dictionary words */
            uint32_t v = r % 10000;
            for (int d = 0; d < 4; d++) { in_buf[i + 3 - d] = '0' + v % 10; v /= 10; }
            i += 4;
        }
    }
}

static uint32_t fnv(uint32_t h, const unsigned char *p, size_t n) {
    for (size_t i = 0; i < n; i++) { h ^= p[i]; h *= 16777619u; }
    return h;
}

__attribute__((export_name("run"))) int run(int n) {
    uint32_t h = 2166136261u;
    for (int step = 0; step < n; step++) {
        fill_block((uint32_t)step);
        uLongf zlen = sizeof z_buf;
        if (compress2(z_buf, &zlen, in_buf, BLOCK, 6) != Z_OK) __builtin_trap();
        uLongf olen = sizeof out_buf;
        if (uncompress(out_buf, &olen, z_buf, zlen) != Z_OK) __builtin_trap();
        if (olen != BLOCK || memcmp(out_buf, in_buf, BLOCK) != 0) __builtin_trap();
        uint32_t len32 = (uint32_t)zlen;
        h = fnv(h, (const unsigned char *)&len32, 4);
        h = fnv(h, z_buf, zlen);
    }
    return (int)h;
}
