/* Warnings inside the library (PyTorch's warnings.warn / TORCH_WARN): a message that
 * does not fail the call.  ct_warn formats it and hands it to the installed warning
 * handler (ctorch/base.h: ct_set_warning_handler), which by default prints
 * "ctorch: warning: <message>" on stderr.
 *
 * Also here: the count of tensor values this thread has read on the host through the
 * public accessors (ct_item, ct_item_int, ct_copy_to_buffer).  A tracer compares it
 * before and after a forward: a change means the forward's C code looked at data, so
 * its control flow may depend on it (torch.jit.trace's TracerWarning). */
#ifndef CT_CORE_WARN_H
#define CT_CORE_WARN_H

void ct_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Counts one host read of a tensor's value by the user's code. */
void ct_note_value_read(void);
/* The reads counted on this thread so far. */
unsigned long ct_value_reads(void);

#endif
