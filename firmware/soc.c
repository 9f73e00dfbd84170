#include "soc.h"

uint64_t sysctrl_read64(uint32_t offset) {
    uint32_t lo = sysctrl_read(offset);
    uint32_t hi = sysctrl_read(offset + 4);
    return (uint64_t)hi << 32 | lo;
}

uint64_t accel_read64(unsigned k, uint32_t offset) {
    /* the accelerator's counters change only at a list's end (a list shorter than these two
       reads could tear them) */
    uint32_t lo = accel_read(k, offset);
    uint32_t hi = accel_read(k, offset + 4);
    return (uint64_t)hi << 32 | lo;
}

void soc_exit(uint32_t code) {
    /* let the UART finish its last character */
    while (!(mmio_read(UART_BASE + UART_STATUS) & 1)) {
    }
    mmio_write(SYSCTRL_BASE + SYSCTRL_EXIT, code);
    for (;;) {
    }
}

void uart_divisor(uint32_t cycles_per_bit) {
    mmio_write(UART_BASE + UART_DIVISOR, cycles_per_bit);
}

void uart_putc(char c) {
    while (!(mmio_read(UART_BASE + UART_STATUS) & 1)) {
    }
    mmio_write(UART_BASE + UART_TX, (uint8_t)c);
}

void uart_puts(const char *s) {
    while (*s) uart_putc(*s++);
}

void uart_put_udec(uint64_t value) {
    char digits[21];
    int n = 0;
    do {
        digits[n++] = (char)('0' + value % 10);
        value /= 10;
    } while (value);
    while (n) uart_putc(digits[--n]);
}

void uart_put_dec(int32_t value) {
    if (value < 0) {
        uart_putc('-');
        uart_put_udec((uint64_t)(-(int64_t)value));
    } else {
        uart_put_udec((uint64_t)value);
    }
}

void uart_put_hex(uint32_t value) {
    for (int shift = 28; shift >= 0; shift -= 4) uart_putc("0123456789abcdef"[value >> shift & 15]);
}

/* Called by the trap vector (start.S) on any exception: cause, the instruction's address
   and the faulting address; reported on the UART, then the run stops with code 0xE000 +
   cause. */
void trap_handler(uint32_t cause, uint32_t epc, uint32_t tval) __attribute__((noreturn));
void trap_handler(uint32_t cause, uint32_t epc, uint32_t tval) {
    uart_puts("\ntrap: mcause ");
    uart_put_hex(cause);
    uart_puts(" mepc ");
    uart_put_hex(epc);
    uart_puts(" mtval ");
    uart_put_hex(tval);
    uart_putc('\n');
    soc_exit(0xE000 + cause);
}
