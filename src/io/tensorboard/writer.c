/* The event file: creation, framing, the buffer, flush and close (writer.h). */
#define _GNU_SOURCE
#include "io/tensorboard/writer.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/error.h"
#include "core/mem.h"
#include "io/tensorboard/crc32c.h"

/* Which writer of this process a file belongs to: part of its name, so that two
 * writers opened in the same second never share a file. */
static atomic_uint next_file_id;

double tb_wall_time(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

double tb_monotonic(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

int tb_check_writer(const char *op, const ct_summary_writer *w) {
    if (w) return 1;
    if (!ct_last_error()) ct_error("%s: the writer is NULL", op);
    return 0;
}

/* mkdir -p: creates dir and its missing parents. */
static int make_dirs(const char *op, const char *dir) {
    char *p = ct_strdup(dir);
    if (!p) {
        ct_error("%s: out of memory", op);
        return -1;
    }
    int rc = 0;
    for (char *s = p + 1;; s++) {
        if (*s != '/' && *s != '\0') continue;
        char c = *s;
        *s = '\0';
        if (mkdir(p, 0777) != 0 && errno != EEXIST) {
            ct_error("%s: cannot create the directory %s: %s", op, p, strerror(errno));
            rc = -1;
            break;
        }
        *s = c;
        if (c == '\0') break;
    }
    if (rc == 0) {
        struct stat st;
        if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
            ct_error("%s: %s is not a directory", op, dir);
            rc = -1;
        }
    }
    free(p);
    return rc;
}

static void free_writer(ct_summary_writer *w) {
    if (w->fd >= 0) close(w->fd);
    free(w->log_dir);
    free(w->path);
    free(w->filename_suffix);
    free(w->buf);
    free(w);
}

ct_summary_writer *tb_writer_open(const char *op, const char *log_dir, ct_summary_writer_options o) {
    if (o.flush_secs < 0) {
        ct_error("%s: flush_secs must be >= 0 (got %g)", op, o.flush_secs);
        return NULL;
    }
    if (make_dirs(op, log_dir) != 0) return NULL;
    ct_summary_writer *w = ct_calloc(1, sizeof *w);
    if (!w) {
        ct_error("%s: out of memory", op);
        return NULL;
    }
    w->fd = -1;
    w->flush_secs = o.flush_secs > 0 ? o.flush_secs : 5; /* PyTorch: 120; a live TensorBoard sees the run within seconds */
    char host[256] = "localhost";
    if (gethostname(host, sizeof host - 1) != 0) strcpy(host, "localhost");
    host[sizeof host - 1] = '\0';
    const char *suffix = o.filename_suffix ? o.filename_suffix : "";
    w->log_dir = ct_strdup(log_dir);
    w->filename_suffix = ct_strdup(suffix);
    if (!w->log_dir || !w->filename_suffix ||
        asprintf(&w->path, "%s/events.out.tfevents.%010lld.%s.%d.%u%s", log_dir,
                 (long long)time(NULL), host, (int)getpid(), atomic_fetch_add(&next_file_id, 1),
                 suffix) < 0) {
        w->path = NULL;
        free_writer(w);
        ct_error("%s: out of memory", op);
        return NULL;
    }
    w->fd = open(w->path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (w->fd < 0) {
        ct_error("%s: cannot create %s: %s", op, w->path, strerror(errno));
        free_writer(w);
        return NULL;
    }
    Tensorboard__Event ev = TENSORBOARD__EVENT__INIT;
    ev.wall_time = tb_wall_time();
    ev.what_case = TENSORBOARD__EVENT__WHAT_FILE_VERSION;
    ev.file_version = "brain.Event:2";
    if (tb_write_event(w, op, &ev) != 0 || tb_flush(w, op) != 0) {
        unlink(w->path);
        free_writer(w);
        return NULL;
    }
    return w;
}

ct_summary_writer *ct_summary_writer_with(const char *log_dir, ct_summary_writer_options o) {
    static const char *op = "ct_summary_writer";
    if (log_dir) return tb_writer_open(op, log_dir, o);
    /* SummaryWriter's default: runs/<Mon><DD>_<HH>-<MM>-<SS>_<host><comment> */
    char stamp[64], host[256] = "localhost", *dir;
    time_t now = time(NULL);
    struct tm tm;
    localtime_r(&now, &tm);
    strftime(stamp, sizeof stamp, "%b%d_%H-%M-%S", &tm);
    if (gethostname(host, sizeof host - 1) != 0) strcpy(host, "localhost");
    host[sizeof host - 1] = '\0';
    if (asprintf(&dir, "runs/%s_%s%s", stamp, host, o.comment ? o.comment : "") < 0) {
        ct_error("%s: out of memory", op);
        return NULL;
    }
    ct_summary_writer *w = tb_writer_open(op, dir, o);
    free(dir);
    return w;
}

const char *ct_summary_writer_log_dir(const ct_summary_writer *w) {
    return tb_check_writer("ct_summary_writer_log_dir", w) ? w->log_dir : NULL;
}

const char *ct_summary_writer_file(const ct_summary_writer *w) {
    return tb_check_writer("ct_summary_writer_file", w) ? w->path : NULL;
}

static void put_u64le(uint8_t *p, uint64_t v) {
    for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}

static void put_u32le(uint8_t *p, uint32_t v) {
    for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}

/* Record framing: len (u64 LE), masked crc of those 8 bytes, data, masked crc of data. */
int tb_write_event(ct_summary_writer *w, const char *op, Tensorboard__Event *ev) {
    size_t n = protobuf_c_message_get_packed_size(&ev->base);
    size_t need = w->len + n + 16;
    if (need > w->cap) {
        size_t cap = w->cap ? w->cap : 4096;
        while (cap < need) cap *= 2;
        uint8_t *buf = ct_realloc(w->buf, cap);
        if (!buf) {
            ct_error("%s: out of memory for a record of %zu bytes", op, n);
            return -1;
        }
        w->buf = buf;
        w->cap = cap;
    }
    uint8_t *p = w->buf + w->len;
    put_u64le(p, n);
    put_u32le(p + 8, tb_masked_crc32c(p, 8));
    protobuf_c_message_pack(&ev->base, p + 12);
    put_u32le(p + 12 + n, tb_masked_crc32c(p + 12, n));
    w->len = need;
    if (w->len > TB_BUFFER_MAX || tb_monotonic() - w->last_write >= w->flush_secs) return tb_flush(w, op);
    return 0;
}

int tb_write_summary(ct_summary_writer *w, const char *op, Tensorboard__Summary *s, int64_t step,
                     double walltime) {
    Tensorboard__Event ev = TENSORBOARD__EVENT__INIT;
    ev.wall_time = walltime != 0 ? walltime : tb_wall_time();
    ev.step = step;
    ev.what_case = TENSORBOARD__EVENT__WHAT_SUMMARY;
    ev.summary = s;
    return tb_write_event(w, op, &ev);
}

int tb_write_value(ct_summary_writer *w, const char *op, Tensorboard__Summary__Value *v, int64_t step,
                   double walltime) {
    Tensorboard__Summary s = TENSORBOARD__SUMMARY__INIT;
    s.n_value = 1;
    s.value = &v;
    return tb_write_summary(w, op, &s, step, walltime);
}

int tb_flush(ct_summary_writer *w, const char *op) {
    size_t done = 0;
    while (done < w->len) {
        ssize_t k = write(w->fd, w->buf + done, w->len - done);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) {
            int err = k < 0 ? errno : EIO;
            memmove(w->buf, w->buf + done, w->len - done);
            w->len -= done;
            ct_error("%s: writing %s failed: %s", op, w->path, strerror(err));
            return -1;
        }
        done += (size_t)k;
    }
    w->len = 0;
    w->last_write = tb_monotonic();
    return 0;
}

int ct_summary_writer_flush(ct_summary_writer *w) {
    static const char *op = "ct_summary_writer_flush";
    if (!tb_check_writer(op, w)) return -1;
    int rc = tb_flush(w, op);
    for (int i = 0; i < w->n_children; i++)
        if (tb_flush(w->children[i].w, op) != 0) rc = -1;
    return rc;
}

int ct_summary_writer_close(ct_summary_writer *w) {
    static const char *op = "ct_summary_writer_close";
    if (!w) return 0;
    int rc = tb_flush(w, op);
    for (int i = 0; i < w->n_children; i++) {
        if (ct_summary_writer_close(w->children[i].w) != 0) rc = -1;
        free(w->children[i].dir);
    }
    free(w->children);
    if (close(w->fd) != 0 && rc == 0) {
        ct_error("%s: closing %s failed: %s", op, w->path, strerror(errno));
        rc = -1;
    }
    w->fd = -1;
    free_writer(w);
    return rc;
}
