/* The profiler (ctorch/profiler.h): events of a known op sequence, the key_averages
 * table's layout and totals, the Chrome trace read back as JSON, nesting, backward
 * events linked to their forward op, loader workers on their own threads, the
 * schedule and its trace handler, and the errors. */
#include <dirent.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "ct_test.h"
#include "io/json.h"
#include "io/read_file.h"

/* The events named name; the first one's index in *first (-1: none). */
static int count_named(const ct_profiler_event *ev, int n, const char *name, int *first) {
    int c = 0;
    if (first) *first = -1;
    for (int i = 0; i < n; i++)
        if (!strcmp(ev[i].name, name)) {
            if (first && *first < 0) *first = i;
            c++;
        }
    return c;
}

/* 3 matrix products and 2 relus, in a range. */
static void known_sequence(void) {
    ct_tensor *a = ct_ones(CT_SHAPE(2, 3)), *b = ct_ones(CT_SHAPE(3, 4));
    ct_record_function("work") {
        ct_tensor *y = ct_matmul(a, b);
        y = ct_relu(ct_matmul(ct_relu(y), ct_ones(CT_SHAPE(4, 4))));
        ct_matmul(y, ct_ones(CT_SHAPE(4, 2)));
    }
}

TEST(test_events_of_a_known_sequence) {
    ct_profiler *prof = NULL;
    CT_PROFILE(prof, .record_shapes = true, .with_stack = true) { known_sequence(); }
    CHECK(prof);
    int n = 0;
    const ct_profiler_event *ev = ct_profiler_events(prof, &n);
    CHECK(ev);
    int mm = -1, work = -1;
    CHECK_INT_EQ(count_named(ev, n, "mm", &mm), 3);
    CHECK_INT_EQ(count_named(ev, n, "relu", NULL), 2);
    CHECK_INT_EQ(count_named(ev, n, "work", &work), 1);
    CHECK_INT_EQ(n, 6);
    if (mm < 0 || work < 0) return;
    CHECK_STR_EQ(ev[mm].input_shapes, "[[2, 3], [3, 4]]");
    CHECK_STR_EQ(ev[mm].category, "cpu_op");
    CHECK_STR_EQ(ev[work].category, "user_annotation");
    CHECK_STR_EQ(ev[mm].file, __FILE__);
    CHECK_INT_EQ(ev[mm].line, 30); /* ct_matmul(a, b) in known_sequence */
    CHECK_INT_EQ(ev[mm].tid, syscall(SYS_gettid));
    /* Every op lies in the range, which is its parent; self times add up. */
    double self = 0, op_total = 0;
    for (int i = 0; i < n; i++) {
        self += ev[i].self_us;
        if (i == work) continue;
        CHECK_INT_EQ(ev[i].parent, work);
        CHECK(ev[i].start_us >= ev[work].start_us);
        CHECK(ev[i].start_us + ev[i].dur_us <= ev[work].start_us + ev[work].dur_us + 1e-3);
        CHECK(ev[i].dur_us > 0);
        op_total += ev[i].dur_us;
    }
    CHECK_CLOSE(self, ev[work].dur_us, 1e-6);
    CHECK_CLOSE(ev[work].self_us, ev[work].dur_us - op_total, 1e-6);
    /* Ops on one thread follow each other: each starts after the one before ends. */
    for (int i = 2; i < n; i++)
        CHECK(ev[i].start_us >= ev[i - 1].start_us + ev[i - 1].dur_us - 1e-3);
}

/* The cells of the table's line whose name cell is name (split on runs of 2+ spaces). */
static int row_cells(const char *table, const char *name, char cells[12][96]) {
    const char *line = table;
    while (line && *line) {
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) : strlen(line);
        char buf[1024];
        snprintf(buf, sizeof buf, "%.*s", (int)len, line);
        int n = 0;
        char *s = buf;
        while (*s && n < 12) {
            while (*s == ' ') s++;
            if (!*s) break;
            char *e = strstr(s, "  ");
            size_t l = e ? (size_t)(e - s) : strlen(s);
            snprintf(cells[n++], 96, "%.*s", (int)l, s);
            s += l;
        }
        if (n && !strcmp(cells[0], name)) return n;
        line = end ? end + 1 : NULL;
    }
    return 0;
}

/* "1.234ms" in microseconds. */
static double parse_time(const char *s) {
    char *end;
    double v = strtod(s, &end);
    return !strcmp(end, "s") ? v * 1e6 : !strcmp(end, "ms") ? v * 1e3 : v;
}

TEST(test_table_layout_and_totals) {
    ct_profiler *prof = NULL;
    CT_PROFILE(prof, .profile_memory = true, .record_shapes = true) { known_sequence(); }
    char *t = ct_profiler_table(prof, .sort_by = "self_cpu_time_total", .row_limit = 20);
    CHECK(t);
    if (!t) return;
    /* PyTorch 1.13's layout: a name column of the longest name + 4 (work: 8), twelve
     * for the others, two spaces after each. */
    const char *head =
        "--------  ------------  ------------  ------------  ------------  ------------  "
        "------------  ------------  ------------  \n"
        "    Name    Self CPU %      Self CPU   CPU total %     CPU total  CPU time avg  "
        "     CPU Mem  Self CPU Mem    # of Calls  \n"
        "--------  ------------  ------------  ------------  ------------  ------------  "
        "------------  ------------  ------------  \n";
    CHECK(!strncmp(t, head, strlen(head)));
    char c[12][96];
    CHECK_INT_EQ(row_cells(t, "mm", c), 9);
    CHECK_STR_EQ(c[8], "3");
    CHECK(strstr(c[6], " b") || strstr(c[6], " Kb")); /* memory units */
    CHECK_INT_EQ(row_cells(t, "relu", c), 9);
    CHECK_STR_EQ(c[8], "2");
    CHECK_INT_EQ(row_cells(t, "work", c), 9);
    CHECK_STR_EQ(c[8], "1");
    CHECK_STR_EQ(c[3], "100.00%"); /* the range holds everything */
    /* The self times add up to the footer's total; the rows are sorted by them. */
    const char *foot = strstr(t, "Self CPU time total: ");
    CHECK(foot);
    double total = foot ? parse_time(foot + strlen("Self CPU time total: ")) : 0, sum = 0;
    double last = 1e300, share = 0;
    const char *names[] = {"mm", "relu", "work"};
    double self[3];
    for (int i = 0; i < 3; i++) {
        row_cells(t, names[i], c);
        self[i] = parse_time(c[2]);
        sum += self[i];
        share += strtod(c[1], NULL);
    }
    CHECK_CLOSE(sum, total, 0.01 * total + 0.003);
    CHECK_CLOSE(share, 100.0, 0.05);
    const char *p = strstr(t, "\n--------  -") + 1;
    p = strchr(strchr(p, '\n') + 1, '\n') + 1; /* past the headings */
    for (int i = 0; i < 3; i++) { /* the rows, in order */
        char name[64];
        CHECK(sscanf(p, "%63s", name) == 1);
        for (int k = 0; k < 3; k++)
            if (!strcmp(name, names[k])) {
                CHECK(self[k] <= last);
                last = self[k];
            }
        p = strchr(p, '\n') + 1;
    }
    free(t);
    /* Grouped by input shapes: a row per (name, shapes) and the column. */
    t = ct_profiler_table(prof, .group_by_input_shape = true, .row_limit = -1);
    CHECK(t && strstr(t, "Input Shapes  \n"));
    int rows = 0;
    for (const char *s = t; s && (s = strstr(s, "  mm  ")); s++) rows++;
    CHECK_INT_EQ(rows, 3); /* [2, 3] x [3, 4], [2, 4] x [4, 4], [2, 4] x [4, 2] */
    free(t);
    t = ct_profiler_table(prof, .row_limit = 1);
    CHECK(t && !strstr(t, "relu") && strstr(t, "work")); /* first seen first, one row */
    free(t);
}

TEST(test_time_and_memory_units) {
    ct_profiler *prof = NULL;
    CT_PROFILE(prof, .profile_memory = true) {
        ct_tensor *x = ct_zeros(CT_SHAPE(1024, 1024)); /* not an op: no event */
        ct_relu(x);                                    /* allocates 4 Mb */
    }
    int n = 0;
    const ct_profiler_event *ev = ct_profiler_events(prof, &n);
    CHECK_INT_EQ(n, 1);
    if (n != 1) return;
    CHECK_INT_EQ(ev[0].cpu_memory, 4 << 20);
    char *t = ct_profiler_table(prof);
    char c[12][96];
    CHECK_INT_EQ(row_cells(t, "relu", c), 9);
    CHECK_STR_EQ(c[6], "4.00 Mb");
    CHECK_STR_EQ(c[7], "4.00 Mb");
    CHECK_STR_EQ(c[1], "100.00%");
    CHECK(strstr(c[2], "us") || strstr(c[2], "ms"));
    free(t);
}

/* The trace file, parsed. */
static json_value *read_trace(const char *path) {
    size_t n = 0;
    char *text = NULL;
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    n = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    text = malloc(n + 1);
    if (text && fread(text, 1, n, f) != n) n = 0;
    fclose(f);
    char err[256] = "";
    json_value *v = text ? json_parse(text, n, err, sizeof err) : NULL;
    if (!v) ct_test_fail(__FILE__, __LINE__, "%s is not JSON: %s", path, err);
    free(text);
    return v;
}

static const json_value *member(const json_value *o, const char *key, json_kind kind) {
    const json_value *v = o ? json_get(o, key) : NULL;
    if (!v || v->kind != kind) {
        ct_test_fail(__FILE__, __LINE__, "member %s missing or of the wrong kind", key);
        return NULL;
    }
    return v;
}

TEST(test_chrome_trace_is_valid_and_nested) {
    ct_profiler *prof = NULL;
    ct_tensor *w = ct_ones(CT_SHAPE(3, 3), .requires_grad = true);
    CT_PROFILE(prof, .record_shapes = true, .with_stack = true, .profile_memory = true) {
        ct_record_function("outer") {
            ct_record_function("inner \"quoted\"") { ct_sum(ct_mul(w, w)); }
            ct_record_function("not UTF-8: \xff\xfe") { ct_relu(w); }
            ct_backward(ct_sum(ct_relu(w)));
        }
    }
    char path[] = "/tmp/ct_profiler_trace_XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    close(fd);
    CHECK(ct_profiler_export_chrome_trace(prof, path) == 0);
    json_value *v = read_trace(path);
    unlink(path);
    const json_value *te = member(v, "traceEvents", JSON_ARRAY);
    if (!te) {
        json_free(v);
        return;
    }
    int n = 0;
    ct_profiler_events(prof, &n);
    int complete = 0, threads = 0;
    const json_value *outer = NULL, *inner = NULL;
    double last_ts = -1;
    for (size_t i = 0; i < te->len; i++) {
        const json_value *e = &te->items[i];
        const json_value *ph = member(e, "ph", JSON_STRING);
        member(e, "pid", JSON_NUMBER);
        member(e, "tid", JSON_NUMBER);
        member(e, "name", JSON_STRING);
        if (ph && !strcmp(ph->string, "M")) {
            const json_value *a = member(e, "args", JSON_OBJECT);
            member(a, "name", JSON_STRING);
            threads += !strcmp(json_get(e, "name")->string, "thread_name");
            continue;
        }
        CHECK_STR_EQ(ph ? ph->string : NULL, "X");
        member(e, "cat", JSON_STRING);
        member(e, "args", JSON_OBJECT);
        const json_value *ts = member(e, "ts", JSON_NUMBER), *dur = member(e, "dur", JSON_NUMBER);
        if (!ts || !dur) continue;
        CHECK(ts->number >= last_ts); /* one thread: in start order */
        CHECK(dur->number >= 0);
        last_ts = ts->number;
        const char *name = json_get(e, "name")->string;
        if (!strcmp(name, "outer")) outer = e;
        if (!strcmp(name, "inner \"quoted\"")) inner = e;
        if (!strncmp(name, "not UTF-8", 9)) CHECK_STR_EQ(name, "not UTF-8: ??");
        complete++;
    }
    CHECK_INT_EQ(complete, n);
    CHECK_INT_EQ(threads, 1);
    CHECK(outer && inner);
    if (outer && inner) { /* the child's [ts, ts + dur] lies in the parent's */
        double ots = json_get(outer, "ts")->number, odur = json_get(outer, "dur")->number;
        double its = json_get(inner, "ts")->number, idur = json_get(inner, "dur")->number;
        CHECK(its >= ots && its + idur <= ots + odur + 1e-3);
    }
    /* Input shapes, call stack and memory in the args of mul. */
    for (size_t i = 0; i < te->len; i++) {
        const json_value *e = &te->items[i];
        if (strcmp(json_get(e, "name")->string, "mul")) continue;
        const json_value *a = json_get(e, "args");
        const json_value *sh = member(a, "Input Shapes", JSON_ARRAY);
        CHECK(sh && sh->len == 2 && sh->items[0].len == 2 && sh->items[0].items[0].number == 3);
        const json_value *cs = member(a, "Call stack", JSON_STRING);
        CHECK(cs && strstr(cs->string, "test_profiler.c:"));
        member(a, "CPU Mem", JSON_NUMBER);
        member(a, "Sequence number", JSON_NUMBER);
    }
    json_free(v);
}

TEST(test_backward_events_carry_their_forward_sequence_number) {
    ct_profiler *prof = NULL;
    ct_tensor *w = ct_ones(CT_SHAPE(4), .requires_grad = true);
    CT_PROFILE(prof) { ct_backward(ct_sum(ct_mul(w, ct_full(CT_SHAPE(4), 3.0)))); }
    int n = 0;
    const ct_profiler_event *ev = ct_profiler_events(prof, &n);
    int mul = -1, node = -1, acc = -1;
    for (int i = 0; i < n; i++) {
        if (!strcmp(ev[i].name, "mul") && !ev[i].in_backward) mul = i;
        if (!strcmp(ev[i].name, "MulBackward0")) node = i;
        if (!strcmp(ev[i].name, "AccumulateGrad")) acc = i;
    }
    CHECK(mul >= 0 && node >= 0 && acc >= 0);
    if (mul < 0 || node < 0 || acc < 0) return;
    CHECK(ev[mul].seq >= 0);
    CHECK_INT_EQ(ev[node].seq, ev[mul].seq);
    CHECK_STR_EQ(ev[node].category, "autograd");
    CHECK(ev[node].in_backward && ev[node].start_us > ev[mul].start_us);
    /* The node's backward ran a mul, inside the node's range, with the same number. */
    int inside = 0;
    for (int i = 0; i < n; i++)
        if (ev[i].parent == node) {
            CHECK(ev[i].in_backward);
            CHECK_INT_EQ(ev[i].seq, ev[mul].seq);
            inside += !strcmp(ev[i].name, "mul");
        }
    CHECK(inside >= 1);
}

/* A dataset whose samples are made by an op. */
static int op_get(ct_dataset *ds, int64_t i, ct_sample *out) {
    (void)ds;
    out->n = 1;
    usleep(1000); /* so that both workers take batches, most likely */
    ct_record_function("make sample") { out->t[0] = ct_mul(ct_full(CT_SHAPE(3), (double)i), ct_ones(CT_SHAPE(3))); }
    return out->t[0] ? 0 : -1;
}
static int64_t op_len(const ct_dataset *ds) {
    (void)ds;
    return 8;
}
static const ct_dataset_class OP_DATASET = {.name = "Ops", .len = op_len, .get = op_get};

TEST(test_loader_workers_have_their_own_threads) {
    ct_loader *l = ct_dataloader(ct_dataset_new(&OP_DATASET, 0), .batch_size = 2, .num_workers = 2);
    ct_profiler *prof = NULL;
    int batches = 0;
    CT_PROFILE(prof) {
        ct_batch b;
        while (ct_loader_next(l, &b)) batches++;
    }
    CHECK_INT_EQ(batches, 4);
    int n = 0;
    const ct_profiler_event *ev = ct_profiler_events(prof, &n);
    int64_t me = syscall(SYS_gettid);
    int worker_muls = 0, worker_ranges = 0;
    for (int i = 0; i < n; i++) {
        if (ev[i].tid == me) continue;
        worker_muls += !strcmp(ev[i].name, "mul");
        worker_ranges += !strcmp(ev[i].name, "make sample");
    }
    CHECK_INT_EQ(worker_muls, 8);
    /* Per thread, times only grow: ops with the same parent follow each other. */
    for (int i = 0; i < n; i++)
        for (int k = i + 1; k < n; k++) {
            if (ev[k].tid != ev[i].tid || ev[k].parent != ev[i].parent) continue;
            CHECK(ev[k].start_us >= ev[i].start_us + ev[i].dur_us - 1e-3);
            break;
        }
    CHECK_INT_EQ(worker_ranges, 8);
    CHECK_INT_EQ(count_named(ev, n, "stack", NULL), 4); /* collate, in the workers too */
    char path[] = "/tmp/ct_profiler_workers_XXXXXX";
    int fd = mkstemp(path);
    close(fd);
    CHECK(ct_profiler_export_chrome_trace(prof, path) == 0);
    json_value *v = read_trace(path);
    unlink(path);
    const json_value *te = member(v, "traceEvents", JSON_ARRAY);
    /* Each worker that loaded a batch is a thread of its own, named; every event's
     * thread has its name. */
    int worker_names = 0, named = 0;
    int64_t tids[16];
    for (size_t i = 0; te && i < te->len; i++) {
        const json_value *e = &te->items[i], *a = json_get(e, "args");
        const json_value *nm = a ? json_get(a, "name") : NULL;
        if (strcmp(json_get(e, "name")->string, "thread_name") || named == 16) continue;
        tids[named++] = (int64_t)json_get(e, "tid")->number;
        if (nm && nm->kind == JSON_STRING && !strncmp(nm->string, "loader worker ", 14)) worker_names++;
    }
    CHECK(worker_names >= 1 && worker_names <= 2);
    CHECK_INT_EQ(named, worker_names + 1);
    for (int i = 0; i < n; i++) {
        bool found = false;
        for (int k = 0; k < named; k++) found |= tids[k] == ev[i].tid;
        CHECK(found);
    }
    json_free(v);
}

static void count_ready(ct_profiler *prof, void *ctx) {
    int *calls = ctx;
    int n = 0;
    const ct_profiler_event *ev = ct_profiler_events(prof, &n);
    /* Two active steps, each a ProfilerStep range with one relu. */
    int steps = 0;
    for (int i = 0; i < n; i++) steps += !strncmp(ev[i].name, "ProfilerStep#", 13);
    if (steps != 2 || count_named(ev, n, "relu", NULL) != 2)
        ct_test_fail(__FILE__, __LINE__, "trace %d: %d steps, %d relus", *calls, steps,
                     count_named(ev, n, "relu", NULL));
    ++*calls;
}

TEST(test_schedule_and_trace_handler) {
    ct_profiler *prof = NULL;
    int calls = 0;
    ct_tensor *x = ct_ones(CT_SHAPE(3));
    CT_PROFILE(prof, .schedule = {.wait = 1, .warmup = 1, .active = 2, .repeat = 2},
               .on_trace_ready = count_ready, .on_trace_ready_ctx = &calls) {
        for (int step = 0; step < 10; step++) {
            ct_relu(x);
            ct_profiler_step(prof);
        }
    }
    CHECK_INT_EQ(calls, 2);
    /* The directory handler: one file per cycle, named as PyTorch names them. */
    char dir[] = "/tmp/ct_profiler_dir_XXXXXX";
    CHECK(mkdtemp(dir));
    char sub[64];
    snprintf(sub, sizeof sub, "%s/log", dir);
    CT_PROFILE(prof, .schedule = {.wait = 0, .warmup = 0, .active = 1, .repeat = 3},
               .on_trace_ready = ct_tensorboard_trace_handler, .on_trace_ready_ctx = sub) {
        for (int step = 0; step < 5; step++) {
            ct_relu(x);
            ct_profiler_step(prof);
        }
    }
    DIR *d = opendir(sub);
    CHECK(d);
    int files = 0;
    char want[128];
    snprintf(want, sizeof want, "_%lld.", (long long)getpid());
    for (struct dirent *e; d && (e = readdir(d));) {
        if (e->d_name[0] == '.') continue;
        size_t l = strlen(e->d_name);
        CHECK(l > 14 && !strcmp(e->d_name + l - 14, ".pt.trace.json") && strstr(e->d_name, want));
        char p[512];
        snprintf(p, sizeof p, "%s/%s", sub, e->d_name);
        json_free(read_trace(p));
        unlink(p);
        files++;
    }
    if (d) closedir(d);
    rmdir(sub);
    rmdir(dir);
    CHECK_INT_EQ(files, 3);
}

TEST(test_profiler_errors) {
    ct_set_error_handler(NULL);
    ct_profiler *outer = NULL, *inner = (ct_profiler *)1;
    CT_PROFILE(outer) {
        ct_clear_error();
        CT_PROFILE(inner) { ct_relu(ct_ones(CT_SHAPE(2))); }
        CHECK(inner == NULL);
        CHECK(ct_last_error() && strstr(ct_last_error(), "a profiler is already active"));
        ct_clear_error();
    }
    CHECK(outer);
    /* The inner block's op went to the outer profiler. */
    int n = 0;
    ct_profiler_events(outer, &n);
    CHECK_INT_EQ(n, 1);
    CHECK_ERROR(ct_profiler_table(outer, .sort_by = "cuda_time"), "unknown sort_by \"cuda_time\"");
    CHECK_ERROR(ct_profiler_stop(outer), "not active");
    CHECK_ERROR(ct_profiler_step(outer), "not active");
    ct_profiler *empty = NULL;
    CT_PROFILE(empty) {}
    CHECK_ERROR(ct_profiler_export_chrome_trace(empty, "/tmp/ct_never.json"), "recorded no events");
    CHECK_ERROR(ct_profiler_table(empty), "recorded no events");
    CHECK_ERROR(ct_profiler_start(.schedule = {.wait = 2}), "needs active >= 1");
    CHECK_ERROR(ct_profiler_start(.schedule = {.active = -1}), "must be >= 0");
    /* Leaving the block early stops the profiler too. */
    ct_profiler *p = NULL;
    for (int i = 0; i < 1; i++) CT_PROFILE(p) { break; }
    CHECK_ERROR(ct_profiler_stop(p), "not active");
    /* Without a profiler, ranges cost nothing and record nothing. */
    ct_record_function("nobody") { CHECK(ct_relu(ct_ones(CT_SHAPE(1)))); }
}
