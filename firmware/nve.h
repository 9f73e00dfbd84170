/* The NVE peripheral's driver (builds with SocConfig.nve): settings, LUT, and a run that
   streams the input words through the stream port and collects the output words, all by
   register accesses (docs/nve.md, "The NVE on the SoC"). */
#ifndef TESSERA_NVE_H
#define TESSERA_NVE_H

#include <stdint.h>

#include "soc.h"

static inline uint32_t nve_read(uint32_t offset) { return mmio_read(NVE_BASE + offset); }
static inline void nve_write(uint32_t offset, uint32_t value) {
    mmio_write(NVE_BASE + offset, value);
}

/* The setting registers of a run; agu holds NVE_AGU_MODES - 1 (inc, toggle) pairs. */
struct nve_settings {
    uint32_t program_size, loop_start, loop_end, iterations, shift;
    const uint32_t *agu;
};

/* What a run did: the NVE's registers after it, and the words moved. */
struct nve_result {
    uint32_t status, error, error_cycle, cycles, stalls, busy_cycles, loaded;
    uint32_t outputs;   /* output words read (those beyond the room were dropped) */
    uint32_t last;      /* the last word read carried last */
    uint32_t sent;      /* input words sent */
};

/* Write the settings (only while the NVE is idle: a write while busy is a bus error). */
void nve_settings(const struct nve_settings *s);
/* Write the 1024 LUT entries: 256 words, entry 4r + k in byte k of word r. */
void nve_write_lut(const uint32_t *words);
/* Start a run (load: send the program's words first, they lead `in`) and stream `n_in`
   64-bit input words (low half first) from `in`, keeping up to `room` output words in
   `out`; returns when the NVE has ended the run (completed, refused or stopped by an error:
   r->error says which). Words the NVE did not take are withdrawn. */
void nve_run(int load, const uint32_t *in, uint32_t n_in, uint32_t *out, uint32_t room,
             struct nve_result *r);

#endif
