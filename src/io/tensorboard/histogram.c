/* add_histogram (SummaryWriter.add_histogram with bins='tensorflow').
 *
 * The buckets are PyTorch's default_bins: edges v = 1e-12, 1.1 v, 1.1^2 v, ... while
 * v < 1e20, mirrored for negatives, and 0 between (the same doubles, made by the same
 * repeated multiplication).  Counting is np.histogram's: bin i holds
 * edge[i] <= x < edge[i+1], the last bin also x == its right edge.  Then
 * make_histogram's trim: from the bin before the first non-empty one (an empty bin
 * [0] prepended when the first bin is non-empty) to the last non-empty one, each
 * bucket given by its right edge. */
#include <math.h>
#include <pthread.h>

#include "core/error.h"
#include "core/mem.h"
#include "core/object.h"
#include "tensorboard/histogram.pb-c.h"
#include "io/tensorboard/writer.h"
#include "tensorboard/summary.pb-c.h"

#define TB_MAX_EDGES 2048

static double edges[TB_MAX_EDGES];
static int n_edges;
static pthread_once_t edges_once = PTHREAD_ONCE_INIT;

static void make_edges(void) {
    double pos[TB_MAX_EDGES / 2];
    int n = 0;
    for (double v = 1e-12; v < 1e20; v *= 1.1) pos[n++] = v;
    for (int i = 0; i < n; i++) edges[i] = -pos[n - 1 - i];
    edges[n] = 0;
    for (int i = 0; i < n; i++) edges[n + 1 + i] = pos[i];
    n_edges = 2 * n + 1;
}

/* The bin of x (np.histogram's), or -1 outside the edges. */
static int bin_of(double x) {
    if (x < edges[0] || x > edges[n_edges - 1]) return -1;
    if (x == edges[n_edges - 1]) return n_edges - 2;
    int lo = 0, hi = n_edges - 1; /* edges[lo] <= x < edges[hi] */
    while (hi - lo > 1) {
        int mid = (lo + hi) / 2;
        if (edges[mid] <= x) lo = mid;
        else hi = mid;
    }
    return lo;
}

int ct_tb_add_histogram_with(ct_summary_writer *w, const char *tag, ct_tensor *values, int64_t step,
                          ct_tb_options o) {
    static const char *op = "ct_tb_add_histogram";
    if (!ct_alive(op, 3, values) || !tb_check_writer(op, w)) return -1;
    if (!tag || !values) {
        if (!ct_last_error()) ct_error("%s: %s is NULL", op, tag ? "values" : "tag");
        return -1;
    }
    int64_t n = ct_numel(values);
    if (n == 0) {
        ct_error("%s: The input has no element (tag \"%s\")", op, tag);
        return -1;
    }
    pthread_once(&edges_once, make_edges);
    double *x = ct_malloc(sizeof(double) * (size_t)n);
    double *counts = ct_calloc((size_t)n_edges, sizeof(double));
    int rc = -1;
    if (!x || !counts) {
        ct_error("%s: out of memory for %lld values", op, (long long)n);
        goto done;
    }
    if (ct_copy_to_buffer(values, x, CT_F64, sizeof(double) * (size_t)n) != 0) goto done;
    double mn = x[0], mx = x[0], sum = 0, sum_sq = 0;
    for (int64_t i = 0; i < n; i++) {
        if (!isfinite(x[i])) {
            ct_error("%s: the values of \"%s\" must be finite (element %lld is %g)", op, tag,
                     (long long)i, x[i]);
            goto done;
        }
        mn = fmin(mn, x[i]);
        mx = fmax(mx, x[i]);
        sum += x[i];
        sum_sq += x[i] * x[i];
        int b = bin_of(x[i]);
        if (b >= 0) counts[b] += 1;
    }
    int n_bins = n_edges - 1, start = n_bins, end = -1;
    for (int b = 0; b < n_bins; b++)
        if (counts[b] > 0) {
            if (start == n_bins) start = b;
            end = b;
        }
    if (end < 0) {
        ct_error("%s: no value of \"%s\" lies within the buckets' range (|x| < 1e20)", op, tag);
        goto done;
    }
    end += 1; /* one past the last non-empty bin */
    /* bucket j: the count of bin start-1+j (0 for the prepended one), its right edge */
    int n_out = end - start + 1;
    double *bucket = counts + start - 1, *limit = edges + start;
    if (start == 0) {
        /* prepend an empty bin: shift the counts up by one in place */
        for (int b = end; b > 0; b--) counts[b] = counts[b - 1];
        counts[0] = 0;
        bucket = counts;
    }
    Tensorboard__HistogramProto h = TENSORBOARD__HISTOGRAM_PROTO__INIT;
    h.min = mn;
    h.max = mx;
    h.num = (double)n;
    h.sum = sum;
    h.sum_squares = sum_sq;
    h.n_bucket_limit = (size_t)n_out;
    h.bucket_limit = limit;
    h.n_bucket = (size_t)n_out;
    h.bucket = bucket;
    Tensorboard__Summary__Value v = TENSORBOARD__SUMMARY__VALUE__INIT;
    v.tag = (char *)tag;
    v.value_case = TENSORBOARD__SUMMARY__VALUE__VALUE_HISTO;
    v.histo = &h;
    rc = tb_write_value(w, op, &v, step, o.walltime);
done:
    free(x);
    free(counts);
    return rc;
}
