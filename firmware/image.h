/* The model image (image_format.h, docs/soc.md): checks and the layer walk. */
#ifndef TESSERA_IMAGE_H
#define TESSERA_IMAGE_H

#include <stdint.h>

#include "image_format.h"

/* Fletcher-64 of the 32-bit words [from, to) (bus addresses, word-aligned). */
void image_checksum(uint32_t from, uint32_t to, uint32_t *a, uint32_t *b);

/* Run the image at IMAGE_BASE with the run block's options; returns the RunStatus and fills
   the results (header->results). */
uint32_t run_image(const RunBlock *run);

#endif
