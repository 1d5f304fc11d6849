/* PNG encoding of 8-bit images through libpng, into memory. */
#ifndef CT_IO_TENSORBOARD_PNG_H
#define CT_IO_TENSORBOARD_PNG_H

#include <stddef.h>
#include <stdint.h>

/* Encodes the h x w image of c (3: RGB, 4: RGBA) channels, pixels in HWC order, as
 * PNG.  *out (free) and *n_out; 0, or -1 with an error naming op. */
int tb_png_encode(const char *op, const uint8_t *pixels, int h, int w, int c, uint8_t **out,
                  size_t *n_out);

#endif
