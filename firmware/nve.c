#include "nve.h"

#define STATUS_BUSY (1u << NVE_STATUS_BUSY_SHIFT)
#define PORT_IN_READY 1u
#define PORT_OUT_VALID 2u
#define PORT_OUT_LAST 4u

static inline uint32_t port_read(uint32_t offset) {
    return mmio_read(NVE_BASE + NVE_PORT_OFFSET + offset);
}
static inline void port_write(uint32_t offset, uint32_t value) {
    mmio_write(NVE_BASE + NVE_PORT_OFFSET + offset, value);
}

void nve_settings(const struct nve_settings *s) {
    nve_write(NVE_PROGRAM_SIZE, s->program_size);
    nve_write(NVE_LOOP_START, s->loop_start);
    nve_write(NVE_LOOP_END, s->loop_end);
    nve_write(NVE_ITERATIONS, s->iterations);
    nve_write(NVE_SHIFT, s->shift);
    for (uint32_t mode = 1; mode < NVE_AGU_MODES; mode++) {
        nve_write(NVE_AGU1_INC + 8 * (mode - 1), s->agu[2 * (mode - 1)]);
        nve_write(NVE_AGU1_TOGGLE + 8 * (mode - 1), s->agu[2 * (mode - 1) + 1]);
    }
}

void nve_write_lut(const uint32_t *words) {
    for (uint32_t r = 0; r < 256; r++) nve_write(NVE_LUT_OFFSET + 4 * r, words[r]);
}

void nve_run(int load, const uint32_t *in, uint32_t n_in, uint32_t *out, uint32_t room,
             struct nve_result *r) {
    uint32_t sent = 0, got = 0, last = 0;
    nve_write(NVE_CTRL, (1u << NVE_CTRL_START_SHIFT) | (load ? 1u << NVE_CTRL_LOAD_SHIFT : 0));
    for (;;) {
        uint32_t port = port_read(NVE_PORT_STATUS);
        if (port & PORT_OUT_VALID) {
            uint32_t lo = port_read(NVE_PORT_OUT_LO);
            uint32_t hi = port_read(NVE_PORT_OUT_HI); /* takes the word */
            if (got < room) {
                out[2 * got] = lo;
                out[2 * got + 1] = hi;
            }
            got++;
            last = (port & PORT_OUT_LAST) != 0;
            continue;
        }
        if (sent < n_in && (port & PORT_IN_READY)) {
            port_write(NVE_PORT_IN_LO, in[2 * sent]);
            port_write(NVE_PORT_IN_HI, in[2 * sent + 1]);
            sent++;
            continue;
        }
        /* nothing to move: the run is over once the NVE is idle (it ends after its last
           output word has left) */
        if (!(nve_read(NVE_STATUS) & STATUS_BUSY)) break;
    }
    r->status = nve_read(NVE_STATUS);
    r->error = nve_read(NVE_ERROR);
    r->error_cycle = nve_read(NVE_ERROR_CYCLE);
    r->cycles = nve_read(NVE_CYCLES);
    r->stalls = nve_read(NVE_STALLS);
    r->busy_cycles = nve_read(NVE_BUSY_CYCLES);
    r->loaded = nve_read(NVE_LOADED);
    r->outputs = got;
    r->last = last;
    r->sent = sent;
    /* a run that ended early (an error) leaves input words behind: drop the port's, then
       the NVE's input's (an abort while idle changes nothing else); clear done and error */
    port_write(NVE_PORT_CLEAR, 1);
    nve_write(NVE_CTRL, 1u << NVE_CTRL_ABORT_SHIFT);
    nve_write(NVE_STATUS, (1u << NVE_STATUS_DONE_SHIFT) | (1u << NVE_STATUS_ERROR_SHIFT));
}
