/* Memory reports (ctorch/memory.h): ct_memory_stats counts exactly, ct_memory_summary
 * lays them out as torch.cuda.memory_summary, and a recorded snapshot finds a tensor a
 * loop keeps, by op and call site. */
#include <pthread.h>
#include <stdlib.h>

#include "ct_test.h"

#define KIB 1024

TEST(stats_count_storages_and_bytes) {
    ct_allocator_stats a = ct_memory_stats(CT_CPU);
    ct_tensor *x = ct_empty(CT_SHAPE(1000), .dtype = CT_F32), *v = ct_view(x, CT_SHAPE(10, 100));
    ct_allocator_stats b = ct_memory_stats(CT_CPU);
    CHECK_INT_EQ(b.allocations.current - a.allocations.current, 1); /* a view shares its storage */
    CHECK_INT_EQ(b.allocations.allocated - a.allocations.allocated, 1);
    CHECK_INT_EQ(b.allocated_bytes.current - a.allocated_bytes.current, 4000);
    CHECK_INT_EQ(b.allocated_bytes.allocated - a.allocated_bytes.allocated, 4000);
    CHECK(b.allocated_bytes.peak >= b.allocated_bytes.current);
    CHECK(b.reserved_bytes.current >= b.allocated_bytes.current);
    CHECK(b.reserved_bytes.peak >= b.reserved_bytes.current);
    CT_SCOPE { ct_empty(CT_SHAPE(3, 5), .dtype = CT_F64); }
    ct_allocator_stats c = ct_memory_stats(CT_CPU);
    CHECK_INT_EQ(c.allocations.freed - b.allocations.freed, 1);
    CHECK_INT_EQ(c.allocated_bytes.freed - b.allocated_bytes.freed, 120);
    CHECK_INT_EQ(c.allocated_bytes.current, b.allocated_bytes.current);
    CHECK_INT_EQ(c.allocations.allocated - c.allocations.freed, c.allocations.current);
    /* peaks: a reset brings them down to now; a larger tensor raises them by its size */
    ct_reset_peak_memory_stats(CT_CPU);
    ct_allocator_stats d = ct_memory_stats(CT_CPU);
    CHECK_INT_EQ(d.allocated_bytes.peak, d.allocated_bytes.current);
    CHECK_INT_EQ(d.largest_allocation, 0);
    CT_SCOPE { ct_empty(CT_SHAPE(64, KIB), .dtype = CT_F32); }
    ct_allocator_stats e = ct_memory_stats(CT_CPU);
    CHECK_INT_EQ(e.allocated_bytes.peak, d.allocated_bytes.current + 256 * KIB);
    CHECK_INT_EQ(e.largest_allocation, 256 * KIB);
    CHECK(ct_dtype_of(v) == CT_F32);
    /* a device never used has zero statistics */
    ct_allocator_stats meta = ct_memory_stats(CT_META);
    CHECK_INT_EQ(meta.allocations.allocated, 0);
}

static void *make_and_free(void *arg) {
    (void)arg;
    for (int i = 0; i < 10; i++) CT_SCOPE { ct_empty(CT_SHAPE(25), .dtype = CT_F32); }
    return NULL;
}

TEST(other_threads_count_after_they_exit) {
    ct_allocator_stats a = ct_memory_stats(CT_CPU);
    pthread_t th;
    CHECK(pthread_create(&th, NULL, make_and_free, NULL) == 0);
    pthread_join(th, NULL);
    ct_allocator_stats b = ct_memory_stats(CT_CPU);
    CHECK(b.allocations.allocated - a.allocations.allocated >= 10);
    CHECK(b.allocations.freed - a.allocations.freed >= 10);
    CHECK(b.allocated_bytes.freed - a.allocated_bytes.freed >= 1000);
    CHECK_INT_EQ(b.allocations.current, a.allocations.current);
}

/* The row of table s whose name is name, or NULL. */
static const char *row(const char *s, const char *name) {
    char key[64];
    snprintf(key, sizeof key, "| %-21s |", name);
    return strstr(s, key);
}

TEST(summary_is_pytorchs_table) {
    ct_reset_peak_memory_stats(CT_CPU);
    ct_tensor *big = ct_empty(CT_SHAPE(2 * KIB, KIB), .dtype = CT_F32); /* 8 MiB */
    char *s = ct_memory_summary(CT_CPU);
    CHECK(s != NULL);
    if (!s) return;
    CHECK(strstr(s, "ctorch memory summary, device cpu") != NULL);
    CHECK(strstr(s, "|        Metric         | Cur Usage  | Peak Usage | Tot Alloc  | Tot Freed  |\n") != NULL);
    const char *names[] = {"Allocated memory", "Reserved memory", "Allocations", "Largest block"};
    for (int i = 0; i < 4; i++) CHECK(row(s, names[i]) != NULL);
    /* every line is 77 characters wide, framed by '|' */
    int lines = 0;
    for (const char *p = s; *p; lines++) {
        const char *nl = strchr(p, '\n');
        CHECK(nl != NULL);
        if (!nl) break;
        CHECK_INT_EQ(nl - p, 77);
        CHECK(p[0] == '|' && nl[-1] == '|');
        p = nl + 1;
    }
    CHECK_INT_EQ(lines, 13);
    /* PyTorch's units: KB from 768 KB, MB from 768 MB */
    const char *largest = row(s, "Largest block");
    CHECK(largest && strstr(largest, "|          - |    8192 KB |          - |          - |") != NULL);
    const char *alloc = row(s, "Allocated memory");
    CHECK(alloc && strstr(alloc, " KB |") != NULL);
    free(s);
    CHECK(ct_numel(big) == 2 * KIB * KIB);
}

/* The blocks of the snapshot made by op at this file's line. */
static int64_t count_from(const char *op, int line, bool *backward) {
    int64_t n = ct_memory_snapshot(CT_CPU, NULL, 0), found = 0;
    CHECK(n >= 0);
    ct_memory_block *b = calloc((size_t)(n ? n : 1), sizeof *b);
    n = ct_memory_snapshot(CT_CPU, b, n);
    for (int64_t i = 1; i < n; i++) CHECK(b[i - 1].bytes >= b[i].bytes); /* largest first */
    for (int64_t i = 0; i < n; i++)
        if (!strcmp(b[i].op, op) && b[i].line == line && b[i].file && strstr(b[i].file, "test_memory_report.c")) {
            found++;
            if (backward) *backward = b[i].backward;
        }
    free(b);
    return found;
}

TEST(snapshot_finds_a_tensor_kept_across_iterations) {
    ct_tensor *w = ct_randn(CT_SHAPE(16, 16), .requires_grad = true), *kept[5];
    ct_memory_record_history(true);
    int line = 0;
    for (int i = 0; i < 5; i++) {
        CT_SCOPE {
            ct_tensor *h = ct_relu(w);
            line = __LINE__ + 1;
            kept[i] = ct_keep(ct_mul(h, h)); /* the leak: the product outlives the step */
            ct_sum(h);
        }
    }
    CHECK_INT_EQ(count_from("ct_mul", line, NULL), 5);
    const int first_line = line;
    CHECK_INT_EQ(count_from("ct_relu", line - 2, NULL), 5); /* saved by the products' graphs */
    char *s = ct_memory_snapshot_to_string(CT_CPU, 5);
    CHECK(s != NULL);
    char want[128];
    snprintf(want, sizeof want, "test_memory_report.c:%d", line);
    const char *r = s ? strstr(s, want) : NULL;
    CHECK(r != NULL);
    if (r) {
        const char *start = r;
        while (start > s && start[-1] != '\n') start--;
        CHECK(strstr(start, "       5  float32   [16, 16]") != NULL);
        CHECK(strstr(start, "ct_mul") != NULL && strstr(start, "ct_mul") < r);
    }
    CHECK(s && strstr(s, "ctorch memory snapshot, device cpu:") == s);
    free(s);
    /* a freed block leaves the snapshot */
    int inner = 0;
    CT_SCOPE {
        inner = __LINE__ + 1;
        ct_tensor *gone = ct_add(w, w);
        CHECK_INT_EQ(count_from("ct_add", inner, NULL), 1);
        CHECK(ct_numel(gone) == 256);
    }
    CHECK_INT_EQ(count_from("ct_add", inner, NULL), 0);
    /* what a backward formula allocates is marked so */
    ct_tensor *loss = ct_sum(ct_mul(kept[0], kept[0]));
    line = __LINE__ + 1;
    CHECK(ct_backward(loss) == 0);
    bool backward = false;
    int64_t n = ct_memory_snapshot(CT_CPU, NULL, 0);
    ct_memory_block *b = calloc((size_t)n, sizeof *b);
    n = ct_memory_snapshot(CT_CPU, b, n);
    for (int64_t i = 0; i < n; i++) backward |= b[i].backward && b[i].line == line;
    free(b);
    CHECK(backward);
    ct_memory_record_history(false);
    /* stopping keeps the live records, and records no new storage */
    CHECK_INT_EQ(count_from("ct_mul", first_line, NULL), 5);
    line = __LINE__ + 1;
    ct_tensor *later = ct_mul(w, w);
    CHECK_INT_EQ(count_from("ct_mul", line, NULL), 0);
    CHECK(ct_numel(later) == 256);
    for (int i = 0; i < 5; i++) CHECK(ct_numel(kept[i]) == 256);
}

TEST(snapshot_errors) {
    CHECK_ERROR(ct_memory_snapshot(CT_CPU, NULL, 3), "blocks is NULL or max is negative");
    ct_memory_block b;
    CHECK_ERROR(ct_memory_snapshot(CT_CPU, &b, -1), "max is negative (-1)");
}
