/* The model runner: read the run block, run the image (image.c), report and exit with the
   run's status (0: every layer ran). */
#include "image.h"
#include "soc.h"

int main(void) {
    const RunBlock *run = dram(RUN_BLOCK);
    if (run->magic != RUN_MAGIC) {
        uart_puts("error: no run block\n");
        return 0x100 + RUN_BAD_IMAGE;
    }
    if (run->uart_divisor) uart_divisor(run->uart_divisor);
    uint32_t status = run_image(run);
    if (status == RUN_OK) uart_puts("done\n");
    return status == RUN_OK ? 0 : 0x100 + status;
}
