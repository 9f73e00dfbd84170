/* Access to the SoC: registers, the UART, the cycle counter, exit. */
#ifndef TESSERA_SOC_H
#define TESSERA_SOC_H

#include <stdint.h>

#include "soc_map.h"

static inline uint32_t mmio_read(uint32_t addr) { return *(volatile uint32_t *)addr; }
static inline void mmio_write(uint32_t addr, uint32_t value) { *(volatile uint32_t *)addr = value; }

static inline uint32_t sysctrl_read(uint32_t offset) { return mmio_read(SYSCTRL_BASE + offset); }
/* A 64-bit system-controller register (the low word's read captures the whole value). */
uint64_t sysctrl_read64(uint32_t offset);
static inline uint64_t cycles(void) { return sysctrl_read64(SYSCTRL_CYCLES); }
static inline void progress(uint32_t value) { mmio_write(SYSCTRL_BASE + SYSCTRL_PROGRESS, value); }
/* Stop: the simulation ends with this code (0: success). */
void soc_exit(uint32_t code) __attribute__((noreturn));

/* Registers of accelerator k. */
static inline uint32_t accel_read(unsigned k, uint32_t offset) {
    return mmio_read(ACCEL_BASE + k * ACCEL_STRIDE + offset);
}
static inline void accel_write(unsigned k, uint32_t offset, uint32_t value) {
    mmio_write(ACCEL_BASE + k * ACCEL_STRIDE + offset, value);
}
uint64_t accel_read64(unsigned k, uint32_t offset);

/* Wait for fast interrupt k (mip bit 16 + k): the accelerator's irq line. */
static inline void wait_irq(unsigned k) {
    uint32_t mip;
    do {
        __asm__ volatile("csrr %0, mip" : "=r"(mip));
    } while (!(mip >> (16 + k) & 1));
}

/* A processor address of external-memory bus address a. */
static inline void *dram(uint32_t a) { return (void *)(DRAM_BASE + a); }

void uart_divisor(uint32_t cycles_per_bit);
void uart_putc(char c);
void uart_puts(const char *s);
void uart_put_dec(int32_t value);
void uart_put_udec(uint64_t value);
void uart_put_hex(uint32_t value);

#endif
