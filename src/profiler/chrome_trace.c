/* The Chrome trace of a recording (ct_profiler_export_chrome_trace) in the JSON
 * "traceEvents" format chrome://tracing and Perfetto read: one complete event
 * ("ph": "X", ts and dur in microseconds) per event, a process_name and a thread_name
 * metadata event ("ph": "M") per thread; and the on_trace_ready handler that writes
 * one such file per recording into a directory, named as tensorboard_trace_handler
 * names them. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "profiler/profiler_impl.h"
#include "core/error.h"
#include "core/mem.h"
#include "io/json.h"

/* s as a JSON string; bytes that are not UTF-8 (a range's name is the user's) become
 * '?', so that the file stays JSON. */
static void put_string(FILE *f, const char *s) {
    size_t n = strlen(s), size = 6 * n + 3;
    char small[256], *buf = 2 * size <= sizeof small ? small : ct_malloc(2 * size);
    if (!buf) {
        fputs("\"\"", f);
        return;
    }
    char *text = buf + size;
    const unsigned char *p = (const unsigned char *)s, *end = p + n;
    size_t len = 0;
    while (p < end) {
        int l = utf8_len(p, end);
        if (l) memcpy(text + len, p, (size_t)l);
        else text[len] = '?';
        len += l ? (size_t)l : 1;
        p += l ? l : 1;
    }
    text[len] = 0;
    if (json_escape(buf, size, 0, text)) fputs(buf, f);
    else fputs("\"\"", f);
    if (buf != small) free(buf);
}

static void put_event(FILE *f, const ct_profiler *p, const ct_profiler_event *e) {
    fprintf(f, "  {\"ph\": \"X\", \"cat\": \"%s\", \"name\": ", e->category);
    put_string(f, e->name);
    fprintf(f, ", \"pid\": %lld, \"tid\": %lld, \"ts\": %.3f, \"dur\": %.3f, \"args\": {",
            (long long)p->pid, (long long)e->tid, e->start_us, e->dur_us);
    const char *sep = "";
    if (e->input_shapes) {
        fprintf(f, "\"Input Shapes\": %s", e->input_shapes);
        sep = ", ";
    }
    if (e->seq >= 0) {
        fprintf(f, "%s\"Sequence number\": %lld", sep, (long long)e->seq);
        sep = ", ";
    }
    if (e->in_backward) {
        fprintf(f, "%s\"Backward\": true", sep);
        sep = ", ";
    }
    if (e->file) {
        char site[1024];
        snprintf(site, sizeof site, "%s:%d", e->file, e->line);
        fprintf(f, "%s\"Call stack\": ", sep);
        put_string(f, site);
        sep = ", ";
    }
    if (p->o.profile_memory)
        fprintf(f, "%s\"CPU Mem\": %lld, \"Self CPU Mem\": %lld", sep, (long long)e->cpu_memory,
                (long long)e->self_cpu_memory);
    fputs("}}", f);
}

int(ct_profiler_export_chrome_trace)(ct_profiler *p, const char *path) {
    const char *fn = "ct_profiler_export_chrome_trace";
    if (!prof_has_events(p, fn)) return -1;
    if (!path) {
        ct_error("%s: path is NULL", fn);
        return -1;
    }
    FILE *f = fopen(path, "w");
    if (!f) {
        ct_error("%s: cannot open %s for writing: %s", fn, path, strerror(errno));
        return -1;
    }
    fputs("{\"schemaVersion\": 1, \"displayTimeUnit\": \"ms\", \"traceEvents\": [\n", f);
    for (int i = 0; i < p->n_events; i++) {
        put_event(f, p, &p->events[i]);
        fputs(",\n", f);
    }
    fprintf(f, "  {\"ph\": \"M\", \"name\": \"process_name\", \"pid\": %lld, \"tid\": 0, "
               "\"args\": {\"name\": \"ctorch\"}}", (long long)p->pid);
    for (int i = 0; i < p->n_threads; i++) {
        fprintf(f, ",\n  {\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": %lld, \"tid\": %lld, "
                   "\"args\": {\"name\": ",
                (long long)p->pid, (long long)p->tids[i]);
        put_string(f, p->labels[i]);
        fputs("}}", f);
    }
    fputs("\n]}\n", f);
    bool failed = ferror(f) != 0;
    if (fclose(f) != 0 || failed) {
        ct_error("%s: writing %s failed: %s", fn, path, strerror(errno));
        return -1;
    }
    return 0;
}

/* mkdir -p */
static int make_dirs(const char *dir) {
    char path[4096];
    if (snprintf(path, sizeof path, "%s", dir) >= (int)sizeof path) return -1;
    for (char *s = path + 1; *s; s++) {
        if (*s != '/') continue;
        *s = 0;
        if (mkdir(path, 0777) != 0 && errno != EEXIST) return -1;
        *s = '/';
    }
    return mkdir(path, 0777) != 0 && errno != EEXIST ? -1 : 0;
}

void(ct_tensorboard_trace_handler)(ct_profiler *prof, void *ctx) {
    const char *fn = "ct_tensorboard_trace_handler", *dir = ctx;
    if (!dir) {
        ct_error("%s: the directory (on_trace_ready_ctx) is NULL", fn);
        return;
    }
    if (make_dirs(dir) != 0) {
        ct_error("%s: cannot make the directory %s: %s", fn, dir, strerror(errno));
        return;
    }
    char host[256] = "localhost";
    gethostname(host, sizeof host - 1);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    long long ms = (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
    char path[4096];
    struct stat st;
    do /* a name of its own, even for two recordings within a millisecond */
        snprintf(path, sizeof path, "%s/%s_%lld.%lld.pt.trace.json", dir, host,
                 (long long)getpid(), ms++);
    while (stat(path, &st) == 0);
    (ct_profiler_export_chrome_trace)(prof, path);
}
