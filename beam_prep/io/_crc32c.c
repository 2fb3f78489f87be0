/*
 * CRC-32C (Castagnoli) for beam_prep's native TFRecord framing: slice-by-8 tables, or the SSE4.2
 * crc32 instruction when the CPU has it (detected at run time by bp_crc32c_init, so the module
 * builds and runs on any CPU). Declared in _crc32c.h; compiled into the _tfexample extension.
 */
#include <stdint.h>
#include <string.h>

#include "_crc32c.h"

/* Reflected polynomial 0x82F63B78. */

static uint32_t crc_tables[8][256];
static int crc_use_hw = 0;

static void tables_init(void) {
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++) c = (c >> 1) ^ (0x82F63B78u & (0u - (c & 1u)));
        crc_tables[0][i] = c;
    }
    for (int t = 1; t < 8; t++)
        for (int i = 0; i < 256; i++)
            crc_tables[t][i] = (crc_tables[t - 1][i] >> 8) ^ crc_tables[0][crc_tables[t - 1][i] & 0xFF];
}

/* Slice-by-8 over the raw (unmasked, un-inverted) register. */
static uint32_t crc_update_sw(uint32_t c, const uint8_t *p, size_t n) {
    while (n && ((uintptr_t)p & 7)) {
        c = (c >> 8) ^ crc_tables[0][(c ^ *p++) & 0xFF];
        n--;
    }
    while (n >= 8) {
        uint32_t lo, hi;
        memcpy(&lo, p, 4); /* little-endian hosts only, like frame() */
        memcpy(&hi, p + 4, 4);
        lo ^= c;
        c = crc_tables[7][lo & 0xFF] ^ crc_tables[6][(lo >> 8) & 0xFF] ^
            crc_tables[5][(lo >> 16) & 0xFF] ^ crc_tables[4][lo >> 24] ^
            crc_tables[3][hi & 0xFF] ^ crc_tables[2][(hi >> 8) & 0xFF] ^
            crc_tables[1][(hi >> 16) & 0xFF] ^ crc_tables[0][hi >> 24];
        p += 8;
        n -= 8;
    }
    while (n--) c = (c >> 8) ^ crc_tables[0][(c ^ *p++) & 0xFF];
    return c;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <nmmintrin.h>
#define CRC_HAVE_HW 1
__attribute__((target("sse4.2"))) static uint32_t crc_update_hw(uint32_t c, const uint8_t *p,
                                                               size_t n) {
    uint64_t c64 = c;
    while (n && ((uintptr_t)p & 7)) {
        c64 = _mm_crc32_u8((uint32_t)c64, *p++);
        n--;
    }
    while (n >= 8) {
        uint64_t v;
        memcpy(&v, p, 8);
        c64 = _mm_crc32_u64(c64, v);
        p += 8;
        n -= 8;
    }
    while (n--) c64 = _mm_crc32_u8((uint32_t)c64, *p++);
    return (uint32_t)c64;
}
#else
#define CRC_HAVE_HW 0
#endif

uint32_t bp_crc32c(uint32_t crc, const uint8_t *p, size_t n, int software) {
    uint32_t c = ~crc;
#if CRC_HAVE_HW
    if (crc_use_hw && !software) return ~crc_update_hw(c, p, n);
#endif
    (void)software;
    return ~crc_update_sw(c, p, n);
}

int bp_crc32c_hardware(void) { return crc_use_hw; }

void bp_crc32c_init(void) {
    tables_init();
#if CRC_HAVE_HW
    __builtin_cpu_init();
    crc_use_hw = __builtin_cpu_supports("sse4.2") ? 1 : 0;
#endif
}
