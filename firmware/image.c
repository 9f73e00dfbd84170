/* Walk the model image's layer table: start each accelerator layer's descriptor list and
   wait for its interrupt, run processor layers in C, record cycles and counters per layer. */
#include "image.h"

#include "kernels.h"
#include "soc.h"

void image_checksum(uint32_t from, uint32_t to, uint32_t *a_out, uint32_t *b_out) {
    const volatile uint32_t *word = dram(from);
    const volatile uint32_t *end = dram(to);
    uint32_t a = 0, b = 0;
    while (word < end) {
        a += *word++;
        b += a;
    }
    *a_out = a;
    *b_out = b;
}

static const char *const op_names[] = {"?", "conv2d", "depthwise", "fc", "add", "avgpool",
                                       "maxpool", "softmax", "reshape"};

static void report_layer(uint32_t i, const LayerEntry *e, const LayerResult *r) {
    uart_puts("layer ");
    uart_put_udec(i);
    uart_putc(' ');
    uart_puts((const char *)dram(e->name));
    uart_putc(' ');
    uart_puts(e->op <= OP_RESHAPE ? op_names[e->op] : "?");
    uart_puts(e->engine == ENGINE_PROCESSOR ? " cpu " : " accel ");
    uart_put_udec(r->cycles);
    uart_puts(" cycles\n");
}

static const uint32_t ctrl_start = 1u << ACC_CTRL_START_SHIFT | 1u << ACC_CTRL_IRQ_ENABLE_SHIFT;
static const uint32_t status_ends = ACC_STATUS_DONE_MASK << ACC_STATUS_DONE_SHIFT
                                    | ACC_STATUS_ERROR_MASK << ACC_STATUS_ERROR_SHIFT;

/* An accelerator layer's list: its address and count (the accelerator takes them when the
   list starts, so the next list's are written while one runs). */
static void prepare_list(unsigned k, const LayerEntry *e) {
    accel_write(k, ACC_DESC_ADDR, e->desc_addr);
    accel_write(k, ACC_DESC_COUNT, e->desc_count);
}

/* Wait for accelerator k's interrupt; read STATUS and clear done / error (the interrupt
   falls). */
static uint32_t wait_list(unsigned k, LayerResult *r) {
    wait_irq(k);
    uint32_t status = accel_read(k, ACC_STATUS);
    accel_write(k, ACC_STATUS, status & status_ends);
    r->status = status;
    return status;
}

/* The counters of the list that ended last (taken at its end: the next list may run). */
static void read_counters(unsigned k, LayerResult *r) {
    r->acc_cycles = accel_read64(k, ACC_CYCLES_LO);
    if (r->acc_cycles >> 29) {
        r->acc_mac_cycles = accel_read64(k, ACC_MAC_CYCLES_LO);
        r->acc_bytes_read = accel_read64(k, ACC_BYTES_READ_LO);
        r->acc_bytes_written = accel_read64(k, ACC_BYTES_WRITTEN_LO);
    } else {
        /* a list of fewer than 2^29 cycles made fewer MAC cycles and moved fewer than 2^32
           bytes each way (a 64-bit beat a cycle at most): the high words are 0 */
        r->acc_mac_cycles = accel_read(k, ACC_MAC_CYCLES_LO);
        r->acc_bytes_read = accel_read(k, ACC_BYTES_READ_LO);
        r->acc_bytes_written = accel_read(k, ACC_BYTES_WRITTEN_LO);
    }
    r->tiles = accel_read(k, ACC_TILES);
}

/* A reshape that changes no byte (its output is its input's buffer): nothing runs, and its
   turn of the layer walk takes no time (0 cycles, no readings). */
static int is_view(const LayerEntry *e) {
    return e->engine == ENGINE_PROCESSOR && e->op == OP_RESHAPE && !e->params;
}

static int run_processor(const LayerEntry *e) {
    const void *params = dram(e->params);
    switch (e->op) {
    case OP_CONV2D: conv2d_layer(params); return 1;
    case OP_DEPTHWISE: depthwise_layer(params); return 1;
    case OP_FC: fc_layer(params); return 1;
    case OP_ADD: add_layer(params); return 1;
    case OP_AVGPOOL: avgpool_layer(params); return 1;
    case OP_MAXPOOL: maxpool_layer(params); return 1;
    case OP_SOFTMAX: softmax_layer(params); return 1;
    case OP_RESHAPE:
        if (e->params) copy_layer(params);  /* no parameters: an alias, nothing to do */
        return 1;
    default: return 0;
    }
}

static uint32_t finish(RunRecord *record, uint32_t status) {
    record->status = status;
    record->done = 1;
    return status;
}

/* Layers whose table entries and results the firmware keeps on chip during a run: the layer
   walk then touches external memory only through the layers themselves, and the results go
   out after the timed loop (a longer image goes by chunks of this many layers). */
#define CHUNK_LAYERS 128
static LayerEntry chunk_entries[CHUNK_LAYERS];
static LayerResult chunk_results[CHUNK_LAYERS];

/* A chunk's entries on chip, its results cleared (a processor layer leaves the accelerator
   fields 0; an accelerator layer sets every field). */
static void load_entries(const LayerEntry *layers, uint32_t first, uint32_t count) {
    for (uint32_t i = 0; i < count; ++i) {
        chunk_entries[i] = layers[first + i];
        chunk_results[i] = (LayerResult){0};
    }
}

static void store_results(LayerResult *results, uint32_t first, uint32_t count) {
    for (uint32_t i = 0; i < count; ++i) results[first + i] = chunk_results[i];
}

static uint32_t fail(RunRecord *record, LayerResult *results, uint32_t first, uint32_t i,
                     const LayerEntry *e, uint32_t status) {
    store_results(results, first, i - first + 1);
    record->layer = i;
    uart_puts("error: layer ");
    uart_puts((const char *)dram(e->name));
    if (status == RUN_BAD_LAYER) {
        uart_puts(": no processor kernel for its op\n");
    } else {
        uart_puts(": accelerator ");
        uart_put_udec(e->engine - ENGINE_ACCEL0);
        uart_puts(" stopped with error code ");
        uart_put_udec(record->code);
        uart_puts(" at descriptor ");
        uart_put_udec(record->index);
        uart_putc('\n');
    }
    return finish(record, status);
}

uint32_t run_image(const RunBlock *run) {
    const ImageHeader *header = dram(IMAGE_BASE);
    if (header->magic != IMAGE_MAGIC || header->version != IMAGE_VERSION) {
        uart_puts("error: no model image of this version\n");
        return RUN_BAD_IMAGE;
    }
    RunRecord *record = dram(header->results);
    LayerResult *results = (LayerResult *)(record + 1);
    record->done = 0;
    record->layer = 0;
    if (run->flags & 1) {
        uint64_t start = cycles();
        uint32_t a, b;
        image_checksum(IMAGE_BASE + CHECKSUM_FROM, IMAGE_BASE + header->data_bytes, &a, &b);
        record->check_cycles = cycles() - start;
        if (a != header->checksum_a || b != header->checksum_b) {
            uart_puts("error: the image's checksum does not match: refused\n");
            return finish(record, RUN_BAD_CHECKSUM);
        }
    }
    if (header->accels != sysctrl_read(SYSCTRL_ACCELS)
        || header->datapaths != sysctrl_read(SYSCTRL_DATAPATHS)) {
        uart_puts("error: the image was compiled for other accelerators\n");
        return finish(record, RUN_WRONG_BUILD);
    }
    const LayerEntry *layers = dram(header->layers);
    uint32_t count = header->layer_count;
    /* the first chunk of the table comes on chip with the model, before the inference */
    uint32_t first = 0, chunk = count < CHUNK_LAYERS ? count : CHUNK_LAYERS;
    load_entries(layers, 0, chunk);
    /* one reading of the cycle counter and the bus monitor at each boundary between layers:
       the end of one layer is the start of the next, so the layers' cycles add up to the
       whole run's */
    const uint32_t report = run->flags & 2;
    uint64_t run_start = cycles();
    /* the cycle counter's low word at each boundary (a layer takes fewer than 2^32 cycles,
       43 s at 100 MHz: the difference modulo 2^32 is its cycles) */
    uint32_t now = (uint32_t)run_start;
    /* the bus monitor's low words: a layer moves fewer than 2^32 bytes each way, so the
       difference modulo 2^32 is its bytes */
    uint32_t read = sysctrl_read(SYSCTRL_BUS_READ);
    uint32_t written = sysctrl_read(SYSCTRL_BUS_WRITTEN);
    /* an accelerator layer followed by an accelerator layer of the same chunk starts that
       one at the boundary, as soon as it has its status and the boundary's readings, and
       reads its own counters while the next list runs; the next list's address and count
       are written while the current one runs. (With the report on, a layer's report reads
       external memory: no early start.) A view's turn is skipped: its result stays 0. */
    uint32_t started = 0;  /* layer i's list was started at the previous boundary */
    for (uint32_t i = 0; i < count; ++i) {
        if (i == first + chunk) {
            store_results(results, first, chunk);
            first = i;
            chunk = count - i < CHUNK_LAYERS ? count - i : CHUNK_LAYERS;
            load_entries(layers, first, chunk);
        }
        const LayerEntry *e = &chunk_entries[i - first];
        LayerResult *r = &chunk_results[i - first];
        if (is_view(e) && !report) continue;
        /* the next layer that runs (views are passed over) */
        const LayerEntry *next = e + 1, *chunk_end = chunk_entries + chunk;
        while (next < chunk_end && is_view(next)) ++next;
        if (next == chunk_end || report || e->engine == ENGINE_PROCESSOR
            || next->engine == ENGINE_PROCESSOR)
            next = 0;
        progress(i + 1);
        uint32_t failed = RUN_OK;
        uint32_t status = 0;
        unsigned k = e->engine - ENGINE_ACCEL0;
        if (e->engine == ENGINE_PROCESSOR) {
            if (!run_processor(e)) failed = RUN_BAD_LAYER;
        } else {
            if (!started) {
                prepare_list(k, e);
                accel_write(k, ACC_CTRL, ctrl_start);
            }
            if (next) prepare_list(next->engine - ENGINE_ACCEL0, next);
            status = wait_list(k, r);
            if (status >> ACC_STATUS_ERROR_SHIFT & ACC_STATUS_ERROR_MASK) {
                failed = RUN_ACCEL_ERROR;
                next = 0;
            }
        }
        uint32_t end = sysctrl_read(SYSCTRL_CYCLES);
        uint32_t read1 = sysctrl_read(SYSCTRL_BUS_READ);
        uint32_t written1 = sysctrl_read(SYSCTRL_BUS_WRITTEN);
        if (next) accel_write(next->engine - ENGINE_ACCEL0, ACC_CTRL, ctrl_start);
        started = next != 0;
        if (e->engine != ENGINE_PROCESSOR) {
            read_counters(k, r);
            if (failed != RUN_OK) {
                record->code = status >> ACC_STATUS_CODE_SHIFT & ACC_STATUS_CODE_MASK;
                record->index = accel_read(k, ACC_ERR_INDEX);
            }
        }
        r->cycles = (uint32_t)(end - now);
        r->bus_read = (uint32_t)(read1 - read);
        r->bus_written = (uint32_t)(written1 - written);
        now = end;
        read = read1;
        written = written1;
        if (failed != RUN_OK) return fail(record, results, first, i, e, failed);
        if (report) {
            report_layer(i, e, r);
            /* (the report reads the layer's name from external memory: not the next
               layer's bytes) */
            read = sysctrl_read(SYSCTRL_BUS_READ);
            written = sysctrl_read(SYSCTRL_BUS_WRITTEN);
        }
    }
    /* the last boundary's whole count, from its low word and a reading just after it */
    uint64_t stop = cycles();
    uint64_t last = (stop & ~(uint64_t)0xFFFFFFFFu) | now;
    if (last > stop) last -= (uint64_t)1 << 32;
    record->cycles = last - run_start;
    /* the results leave the chip after the timed loop */
    store_results(results, first, chunk);
    record->layer = count;
    return finish(record, RUN_OK);
}
