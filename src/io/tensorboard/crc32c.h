/* CRC-32C (Castagnoli, reflected polynomial 0x82F63B78) and the masked form TFRecord
 * framing stores: Debian has no C library of it, so a byte-wise table here (the
 * records are small next to the PNG and protobuf work that makes them). */
#ifndef CT_IO_TENSORBOARD_CRC32C_H
#define CT_IO_TENSORBOARD_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/* CRC-32C of n bytes: crc32c("123456789") = 0xE3069283. */
uint32_t tb_crc32c(const void *data, size_t n);
/* The masked CRC of TFRecord files: ((crc >> 15) | (crc << 17)) + 0xa282ead8. */
uint32_t tb_masked_crc32c(const void *data, size_t n);

#endif
