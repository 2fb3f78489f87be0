/* CRC-32C for beam_prep's native TFRecord framing (implementation: _crc32c.c). */
#ifndef BEAM_PREP_CRC32C_H
#define BEAM_PREP_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/* Builds the tables and picks the SSE4.2 path when the CPU has it; call once at import. */
void bp_crc32c_init(void);

/* Whether bp_crc32c uses the SSE4.2 crc32 instruction. */
int bp_crc32c_hardware(void);

/* CRC-32C of p[0:n] continuing from crc (0 for a fresh CRC); software forces the tables. */
uint32_t bp_crc32c(uint32_t crc, const uint8_t *p, size_t n, int software);

/* TFRecord's masked CRC: rotate right by 15 bits, add a constant. */
static inline uint32_t bp_crc32c_masked(uint32_t c) {
    return ((c >> 15) | (c << 17)) + 0xA282EAD8u;
}

#endif
