/* The event file writer shared by the add functions: each builds its Summary (or
 * Event) on the stack, and tb_write_summary packs it into one framed record at the
 * end of the writer's buffer.
 *
 * Note [Buffered records]: the buffer holds whole records only; it reaches the file
 * at ct_summary_writer_flush, at close, and when an add finds flush_secs passed since
 * the last write (tb_append checks, no thread), or the buffer past TB_BUFFER_MAX.  A
 * failed write keeps the records, reports the error at the call that tried it, and
 * the next write tries again. */
#ifndef CT_IO_TENSORBOARD_WRITER_H
#define CT_IO_TENSORBOARD_WRITER_H

#include <stddef.h>
#include <stdint.h>

#include "ctorch/tensorboard.h"
#include "tensorboard/event.pb-c.h"

#define TB_BUFFER_MAX (4u << 20) /* bytes of records that make an add write them out */

typedef struct {
    char *dir; /* the child's log directory (add_scalars) */
    ct_summary_writer *w;
} tb_child;

struct ct_summary_writer {
    char *log_dir;
    char *path;           /* the event file */
    char *filename_suffix;
    int fd;
    double flush_secs;
    double last_write;    /* monotonic seconds */
    uint8_t *buf;         /* framed records not yet written */
    size_t len, cap;
    tb_child *children;   /* add_scalars' writers, by directory */
    int n_children, cap_children;
};

/* Seconds since the epoch (Event.wall_time), and a monotonic clock. */
double tb_wall_time(void);
double tb_monotonic(void);

/* A writer for log_dir with the options of o (ct_summary_writer_with without the
 * public entry's checks); NULL with an error naming op. */
ct_summary_writer *tb_writer_open(const char *op, const char *log_dir, ct_summary_writer_options o);

/* Frames the Event ev into w's buffer (then writes the buffer when Note [Buffered
 * records] says so).  0, or -1 with an error naming op. */
int tb_write_event(ct_summary_writer *w, const char *op, Tensorboard__Event *ev);
/* tb_write_event of Event{wall_time (walltime, 0: now), step, summary s}. */
int tb_write_summary(ct_summary_writer *w, const char *op, Tensorboard__Summary *s, int64_t step,
                     double walltime);
/* tb_write_summary of the one value v. */
int tb_write_value(ct_summary_writer *w, const char *op, Tensorboard__Summary__Value *v, int64_t step,
                   double walltime);

/* Writes w's buffer to its file.  0, or -1 with an error naming op. */
int tb_flush(ct_summary_writer *w, const char *op);

/* Whether w is usable: false with an error naming op when it is NULL. */
int tb_check_writer(const char *op, const ct_summary_writer *w);

#endif
