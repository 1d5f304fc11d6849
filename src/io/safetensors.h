/* The safetensors writer inside the library: a state dict written into an open atomic
 * file (io/atomic_file.h), for formats that embed a safetensors blob (the .ctm file)
 * as well as for ct_save_safetensors.  The reader is ct_safetensors_from_buffer
 * (ctorch/serialize.h). */
#ifndef CT_IO_SAFETENSORS_H
#define CT_IO_SAFETENSORS_H

#include "ctorch/serialize.h"
#include "io/atomic_file.h"

/* Writes sd with metadata (may be NULL) at f's position; false with an error naming
 * f->op when a tensor cannot be stored or a write fails. */
bool ct_safetensors_write(ct_atomic_file *f, const ct_state_dict *sd, const ct_metadata *meta);

#endif
