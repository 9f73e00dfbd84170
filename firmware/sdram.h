/* The external memory's start-up. On a board with a LiteDRAM controller (MEMCTRL_BYTES != 0,
   built with the controller's generated headers: boards/sdram.py), run its initialisation
   sequence through the controller's control port, hand the memory to the controller and check
   a few words; elsewhere (the simulated SoC, whose memory needs nothing) there is nothing to
   do. */
#ifndef TESSERA_SDRAM_H
#define TESSERA_SDRAM_H

#include <stdint.h>

#include "soc_map.h"

#if MEMCTRL_BYTES
/* LiteDRAM's generated headers address its registers from CSR_BASE with these accessors */
#define CSR_BASE MEMCTRL_BASE
#define CSR_ACCESSORS_DEFINED
static inline void csr_write_simple(unsigned long value, unsigned long addr) {
    *(volatile uint32_t *)addr = (uint32_t)value;
}
static inline unsigned long csr_read_simple(unsigned long addr) {
    return *(volatile uint32_t *)addr;
}
#include <generated/csr.h>
#include <generated/sdram_phy.h>

/* Returns 1 when the memory works. */
uint32_t sdram_init(void);
#else
static inline uint32_t sdram_init(void) { return 1; }
#endif

#endif
