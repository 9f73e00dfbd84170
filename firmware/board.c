/* The board monitor: initialise the external memory (on boards whose memory controller needs
   it), then serve the host tool's requests on the UART (hls_ref/board_link.py, docs/board.md):
   identify the board, write and read external memory, run the model image there. */
#include "board_link.h"
#include "image.h"
#include "sdram.h"
#include "soc.h"

static uint8_t payload[MAX_PAYLOAD];

/* Fletcher's two running sums modulo 2^16 (hls_ref.board_link.link_check). */
typedef struct {
    uint32_t a, b;
} Check;

static inline void check_byte(Check *c, uint8_t byte) {
    c->a = (c->a + byte) & 0xFFFF;
    c->b = (c->b + c->a) & 0xFFFF;
}

static inline uint32_t check_value(const Check *c) { return c->b << 16 | c->a; }

static uint32_t byte_cycles;   /* cycles of one UART byte (10 bits) */

/* The next received byte, or -1 if none arrives within IDLE_BYTE_TIMES byte times. */
static int receive(void) {
    if (mmio_read(UART_BASE + UART_STATUS) & 2) return (int)(mmio_read(UART_BASE + UART_RX) & 0xFF);
    uint32_t start = sysctrl_read(SYSCTRL_CYCLES);
    while (!(mmio_read(UART_BASE + UART_STATUS) & 2)) {
        if (sysctrl_read(SYSCTRL_CYCLES) - start > IDLE_BYTE_TIMES * byte_cycles) return -1;
    }
    return (int)(mmio_read(UART_BASE + UART_RX) & 0xFF);
}

static int receive_word(uint32_t *word, Check *c) {
    uint32_t value = 0;
    for (int i = 0; i < 4; ++i) {
        int byte = receive();
        if (byte < 0) return 0;
        if (c) check_byte(c, (uint8_t)byte);
        value |= (uint32_t)byte << (8 * i);
    }
    *word = value;
    return 1;
}

static void send_byte(uint8_t byte, Check *c) {
    uart_putc((char)byte);
    if (c) check_byte(c, byte);
}

static void send_word(uint32_t word, Check *c) {
    for (int i = 0; i < 4; ++i) send_byte((uint8_t)(word >> (8 * i)), c);
}

/* A response whose payload is `length` bytes at `data` (a processor address). */
static void respond(uint32_t status, const volatile uint8_t *data, uint32_t length) {
    Check c = {0, 0};
    uart_putc((char)RESPONSE_SYNC);
    send_byte((uint8_t)status, &c);
    send_word(length, &c);
    for (uint32_t i = 0; i < length; ++i) send_byte(data[i], &c);
    send_word(check_value(&c), 0);
}

static void respond_words(uint32_t status, const uint32_t *words, uint32_t count) {
    respond(status, (const volatile uint8_t *)words, 4 * count);
}

static int in_memory(uint32_t address, uint32_t length) {
    return length <= MAX_PAYLOAD && address <= DRAM_BYTES && length <= DRAM_BYTES - address;
}

static void hello(void) {
    const uint32_t words[8] = {
        LINK_MAGIC, LINK_VERSION, DRAM_BYTES, RAM_BYTES,
        sysctrl_read(SYSCTRL_ACCELS), sysctrl_read(SYSCTRL_DATAPATHS), MAX_PAYLOAD, CLOCK_HZ,
    };
    respond_words(LINK_OK, words, 8);
}

/* Serve one request that began with REQUEST_SYNC. */
static void serve(void) {
    Check c = {0, 0};
    int command = receive();
    uint32_t address, length, check;
    if (command < 0) {
        respond(LINK_TIMEOUT, 0, 0);
        return;
    }
    check_byte(&c, (uint8_t)command);
    if (!receive_word(&address, &c) || !receive_word(&length, &c)) {
        respond(LINK_TIMEOUT, 0, 0);
        return;
    }
    uint32_t received = command == CMD_WRITE ? length : 0;
    if (received > MAX_PAYLOAD) {
        /* a length this large is either a corrupted header or a host error: the payload that
           may follow is drained by the timeout */
        while (receive() >= 0) {
        }
        respond(LINK_BAD_RANGE, 0, 0);
        return;
    }
    for (uint32_t i = 0; i < received; ++i) {
        int byte = receive();
        if (byte < 0) {
            respond(LINK_TIMEOUT, 0, 0);
            return;
        }
        payload[i] = (uint8_t)byte;
        check_byte(&c, (uint8_t)byte);
    }
    if (!receive_word(&check, 0)) {
        respond(LINK_TIMEOUT, 0, 0);
        return;
    }
    if (check != check_value(&c)) {
        respond(LINK_BAD_CHECK, 0, 0);
        return;
    }
    switch (command) {
    case CMD_HELLO:
        hello();
        break;
    case CMD_WRITE:
        if (!in_memory(address, length)) {
            respond(LINK_BAD_RANGE, 0, 0);
            break;
        }
        for (uint32_t i = 0; i < length; ++i) ((volatile uint8_t *)dram(address))[i] = payload[i];
        respond(LINK_OK, 0, 0);
        break;
    case CMD_READ:
        if (!in_memory(address, length)) {
            respond(LINK_BAD_RANGE, 0, 0);
            break;
        }
        respond(LINK_OK, (const volatile uint8_t *)dram(address), length);
        break;
    case CMD_RUN: {
        uint32_t status = run_image(dram(RUN_BLOCK));
        respond_words(LINK_OK, &status, 1);
        break;
    }
    case CMD_EXIT:
        respond(LINK_OK, 0, 0);
        soc_exit(address);
    default:
        respond(LINK_BAD_COMMAND, 0, 0);
    }
}

int main(void) {
    uart_divisor(BOARD_UART_DIVISOR);
    byte_cycles = 10 * BOARD_UART_DIVISOR;
    uint32_t sdram = sdram_init();
    uart_puts("tessera board monitor: ");
    uart_puts(sdram ? "external memory ready\n" : "external memory failed to initialise\n");
    for (;;) {
        int byte = receive();
        if (byte == REQUEST_SYNC) serve();
    }
}
