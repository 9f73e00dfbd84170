/* The NVE peripheral from the processor: runs every job of the table the host wrote at
   NVE_JOBS (sw/nve/soc.py: settings, LUT, input words) through the NVE driver (nve.c) and
   writes each job's result record (the NVE's registers, the output words). Reports each run
   on the UART, an error with its code, pc and cycle; exits 0 once every job has run. */
#include "nve.h"
#include "nve_jobs.h"

#define JOB_MAGIC 0x4A45564Eu

static void report(uint32_t k, const struct nve_result *r, uint64_t cpu_cycles) {
    uart_puts("job ");
    uart_put_udec(k);
    uart_puts(": ");
    uart_put_udec(r->outputs);
    uart_puts(" words out, cycles ");
    uart_put_udec(r->cycles);
    uart_puts(" stalls ");
    uart_put_udec(r->stalls);
    uart_puts(" processor cycles ");
    uart_put_udec(cpu_cycles);
    if (r->error & NVE_ERROR_CODE_MASK) {
        uart_puts(", NVE error ");
        uart_put_udec(r->error & NVE_ERROR_CODE_MASK);
        uart_puts(" at pc ");
        uart_put_udec(r->error >> NVE_ERROR_PC_SHIFT);
        uart_puts(" cycle ");
        uart_put_udec(r->error_cycle);
    }
    uart_putc('\n');
}

int main(void) {
    const uint32_t *table = dram(NVE_JOBS);
    for (uint32_t k = 0; k < table[0]; k++) {
        const uint32_t *job = dram(table[1 + k]);
        if (job[0] != JOB_MAGIC) {
            uart_puts("bad job record\n");
            return 1;
        }
        uint64_t t0 = cycles();
        const uint32_t *agu = job + 11;
        const uint32_t *lut = agu + 2 * (NVE_AGU_MODES - 1);
        const uint32_t *in = lut + 256;
        struct nve_settings s = {job[1], job[2], job[3], job[4], job[5], agu};
        nve_settings(&s);
        if (job[10]) nve_write_lut(lut);
        uint32_t *result = dram(job[9]);
        struct nve_result r;
        nve_run((int)job[6], in, job[7], result + 11, job[8], &r);
        uint64_t t1 = cycles();
        result[0] = r.status;
        result[1] = r.error;
        result[2] = r.error_cycle;
        result[3] = r.cycles;
        result[4] = r.stalls;
        result[5] = r.busy_cycles;
        result[6] = r.loaded;
        result[7] = r.outputs;
        result[8] = r.last;
        result[9] = r.sent;
        result[10] = (uint32_t)(t1 - t0);
        report(k, &r, t1 - t0);
    }
    uart_puts("done\n");
    return 0;
}
