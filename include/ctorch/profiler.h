/* ctorch/profiler.h — where the time and memory go (torch.profiler).
 *
 *     ct_module *model = ct_nn_linear(3, 2);
 *     ct_profiler *prof = NULL;
 *     CT_PROFILE(prof, .record_shapes = true, .profile_memory = true) {
 *         ct_record_function("model_inference") {
 *             ct_tensor *loss = ct_sum(ct_relu(ct_forward(model, ct_ones(CT_SHAPE(4, 3)))));
 *             ct_backward(loss);
 *         }
 *     }
 *     char *table = ct_profiler_table(prof, .sort_by = "self_cpu_time_total", .row_limit = 10);
 *     fputs(table, stdout); // the key_averages table, as PyTorch prints it
 *     free(table);
 *     ct_profiler_export_chrome_trace(prof, "/tmp/ctorch_doc_trace.json"); // open in Perfetto
 *
 * Every op call of the op table (the names of src/ops/ops.def: "addmm", "relu") is an
 * event, forward and backward, with its thread, start and duration, and as asked its
 * input shapes, the bytes of tensor memory allocated and freed while it ran and the C
 * call site of the user's call.  The autograd engine's nodes are ranges named by
 * their grad_fn ("AddmmBackward0") holding the ops their backward ran; a node, its
 * ops and the forward op that made it carry the same sequence number.
 * ct_record_function ranges (torch.profiler.record_function) nest.  Ops run by
 * DataLoader worker threads while a profiler is active are recorded on the workers'
 * own tracks (thread ids); other threads a program starts itself are not recorded.
 *
 * How an op is timed: it runs from the thread's last boundary to the moment it
 * reports its outputs, where boundaries are each ctorch call made by user code, each
 * op's end and each range's begin and end.  So user code between calls is never
 * counted, ops inside a range lie inside it, and an op of the table that runs other
 * ops of the table (rare: most such ops report only themselves) is shown after them,
 * not around them.
 *
 * One profiler is active in a process at a time.  With none active, an op pays one
 * predictable branch more than without a profiler (bench/bench_profiler.c measures
 * it); while one is active, recording an op costs about 100 to 300 ns.
 */
#ifndef CTORCH_PROFILER_H
#define CTORCH_PROFILER_H

#include <stdio.h>

#include "tensor.h"

CT_API_BEGIN
#ifdef __cplusplus
extern "C" {
#endif

/* A profiler: its options, and the events of its last finished recording. */
typedef struct ct_profiler ct_profiler;

/* torch.profiler.schedule(wait, warmup, active, repeat, skip_first): after skip_first
 * steps, cycles of `wait` idle steps, `warmup` steps (run but not kept) and `active`
 * recorded steps; after `repeat` cycles (0: for ever) nothing more is recorded.  Steps
 * are counted by ct_profiler_step.  All zero: no schedule, the whole CT_PROFILE block
 * is recorded. */
typedef struct {
    int wait;       /* idle steps at the start of each cycle */
    int warmup;     /* steps run as if recorded, their events dropped */
    int active;     /* recorded steps; the trace is ready after the last of them */
    int repeat;     /* cycles; 0: no limit */
    int skip_first; /* steps skipped before the first cycle */
} ct_profiler_schedule;

/* Called when a recording is finished (the end of each active window of a schedule,
 * or the end of the CT_PROFILE block): the profiler's events are that recording's. */
typedef void (*ct_trace_ready_fn)(ct_profiler *prof, void *ctx);

/* Options of a profiler (torch.profiler.profile's arguments). */
typedef struct {
    bool record_shapes;    /* keep each op's input shapes */
    bool profile_memory;   /* keep the bytes of tensor memory allocated and freed */
    bool with_stack;       /* keep the C call site (file:line) of each event */
    ct_profiler_schedule schedule;   /* all zero: record everything */
    ct_trace_ready_fn on_trace_ready; /* NULL: none */
    void *on_trace_ready_ctx;         /* passed to on_trace_ready */
} ct_profiler_options;

/* Starts profiling on this thread (and on DataLoader workers as they take their next
 * batch): returns the profiler, registered with the current scope like other objects
 * (ct_release frees it).  NULL with an error when a profiler is already active. */
ct_profiler *ct_profiler_start(ct_profiler_options o);
#define ct_profiler_start(...) CT_AT(ct_profiler_start(CT_OPTIONS(ct_profiler_options, __VA_ARGS__)))
/* Stops the active profiler p (on the thread that started it): its events become the
 * last recording and on_trace_ready runs if one was being recorded.  0, or -1 with an
 * error (p is not active, or another thread's). */
int ct_profiler_stop(ct_profiler *p);
#define ct_profiler_stop(p) CT_AT(ct_profiler_stop(p))
/* Ends a step of p's schedule (torch.profiler.profile.step()): may end an active
 * window (the trace is ready: on_trace_ready runs) or start one; with a schedule each
 * recorded step is a range "ProfilerStep#N".  0, or -1 with an error. */
int ct_profiler_step(ct_profiler *p);
#define ct_profiler_step(p) CT_AT(ct_profiler_step(p))

/* What CT_PROFILE keeps on the stack. */
typedef struct {
    ct_profiler *prof; /* the profiler it started; NULL when it could not start */
    int once;           /* the block runs once */
} ct_profile_guard;
/* CT_PROFILE's start: *prof = ct_profiler_start(o) (NULL with the error on failure;
 * the block still runs, unprofiled). */
ct_profile_guard ct_profile_begin(ct_profiler **prof, ct_profiler_options o);
#define ct_profile_begin(prof, o) CT_AT(ct_profile_begin(prof, o))
/* CT_PROFILE's end: stops the profiler the guard started, if any. */
void ct_profile_end(ct_profile_guard *g);
#define ct_profile_end(g) CT_AT(ct_profile_end(g))
/* CT_PROFILE(prof, .record_shapes = true) { ... }: the block is profiled
 * (with torch.profiler.profile(record_shapes=True) as prof:); prof, a ct_profiler *
 * variable, gets the profiler, stopped when the block is left (at its end, by break,
 * return or goto) and then holding the block's events. */
#define CT_PROFILE(prof, ...)                                                           \
    for (ct_profile_guard CT_CAT(ct_prof_, __LINE__) __attribute__((cleanup(ct_profile_end))) = \
             ct_profile_begin(&(prof), CT_OPTIONS(ct_profiler_options, __VA_ARGS__));   \
         CT_CAT(ct_prof_, __LINE__).once; CT_CAT(ct_prof_, __LINE__).once = 0)

/* ---- ranges ------------------------------------------------------------- */

/* What ct_record_function keeps on the stack. */
typedef struct {
    bool open; /* a range was opened (a profiler records this thread) */
    int once;  /* the block runs once */
} ct_record_guard;
/* Opens a range named name (copied) on this thread if a profiler records it; ranges
 * nest.  Returns what ct_record_function_end closes. */
ct_record_guard ct_record_function_begin(const char *name);
#define ct_record_function_begin(name) CT_AT(ct_record_function_begin(name))
/* Closes the range ct_record_function_begin opened (nothing if it opened none). */
void ct_record_function_end(ct_record_guard *g);
#define ct_record_function_end(g) CT_AT(ct_record_function_end(g))
/* ct_record_function("data loading") { ... }: the block is a range of that name in
 * the profile (with torch.profiler.record_function("data loading"):); left by break
 * or at its end.  Without a profiler it costs a branch. */
#define ct_record_function(name)                                                         \
    for (ct_record_guard CT_CAT(ct_rf_, __LINE__) __attribute__((cleanup(ct_record_function_end))) = \
             ct_record_function_begin(name);                                             \
         CT_CAT(ct_rf_, __LINE__).once; CT_CAT(ct_rf_, __LINE__).once = 0)

/* ---- results ------------------------------------------------------------ */

/* One recorded event (torch.autograd.profiler.FunctionEvent).  Times are microseconds
 * on the monotonic clock; memory in bytes. */
typedef struct {
    const char *name;      /* the op's name ("addmm"), the range's, or a grad_fn's */
    const char *category;  /* "cpu_op", "user_annotation" (ct_record_function and the
                            * schedule's "ProfilerStep#N") or "autograd" (a node) */
    int64_t tid;           /* the thread's id (gettid) */
    double start_us;       /* when it began */
    double dur_us;         /* how long it ran, its children included */
    double self_us;        /* dur_us less its children's */
    int parent;            /* index of the enclosing event in the same list; -1: none */
    int64_t seq;           /* sequence number linking a forward op, its grad_fn node and
                            * the node's ops; -1: none */
    bool in_backward;      /* run by the autograd engine */
    const char *input_shapes; /* record_shapes: "[[64, 784], [10, 784], []]" (one list per
                               * input, [] for each attribute, as PyTorch); else NULL */
    int64_t cpu_memory;       /* profile_memory: bytes allocated less bytes freed */
    int64_t self_cpu_memory;  /* the same less its children's */
    const char *file;      /* with_stack: the call site; else NULL */
    int line;              /* with file */
} ct_profiler_event;

/* The events of p's last finished recording, ordered by start time (threads mixed);
 * *n gets their number.  The array belongs to p.  NULL with *n = 0 when there are none
 * (or an error when p is NULL, released or still recording without a finished window). */
const ct_profiler_event *ct_profiler_events(ct_profiler *p, int *n);
#define ct_profiler_events(p, n) CT_AT(ct_profiler_events(p, n))

/* Options of ct_profiler_table (key_averages(group_by_input_shape).table(...)). */
typedef struct {
    const char *sort_by;  /* "cpu_time", "cpu_time_total", "self_cpu_time_total",
                           * "cpu_memory_usage", "self_cpu_memory_usage" or "count",
                           * descending; NULL: first-seen order */
    int row_limit;        /* rows shown; 0: PyTorch's 100; negative: all */
    bool group_by_input_shape; /* one row per (name, input shapes), with a column of them */
} ct_profiler_table_options;
/* The table PyTorch 1.13's prof.key_averages().table() prints: per event name, Self
 * CPU %, Self CPU, CPU total %, CPU total, CPU time avg, (CPU Mem, Self CPU Mem with
 * profile_memory), # of Calls (and Input Shapes when grouped by them), the same
 * headings, widths and units ("1.234ms", "12.00 Kb"), and the "Self CPU time total"
 * footer.  A malloc'd string (free() it), or NULL with an error: no events, a sort_by
 * PyTorch does not know. */
char *ct_profiler_table(ct_profiler *p, ct_profiler_table_options o);
#define ct_profiler_table(...) CT_AT(ct_profiler_table(CT_ARG_OPTS_(ct_profiler_table_options, __VA_ARGS__, )))

/* Writes the events as a Chrome trace (the JSON "traceEvents" format of
 * chrome://tracing and Perfetto, as prof.export_chrome_trace does): a complete event
 * ("ph": "X") per event with name, cat, ts and dur in microseconds, pid, tid and args
 * (Input Shapes, Sequence number, Call stack, memory), and a thread_name per thread.
 * 0, or -1 with an error (no events, the file cannot be written). */
int ct_profiler_export_chrome_trace(ct_profiler *p, const char *path);
#define ct_profiler_export_chrome_trace(p, path) CT_AT(ct_profiler_export_chrome_trace(p, path))

/* An on_trace_ready that writes each recording into the directory ctx (a const char *
 * path, made if missing) as <host>_<pid>.<milliseconds>.pt.trace.json, the names
 * torch.profiler.tensorboard_trace_handler gives, so TensorBoard's profiler plugin
 * finds them.  A failure to write sets the error.  Two traces of two steps each:
 *
 *     ct_profiler *p = ct_profiler_start(.schedule = {.wait = 1, .active = 2, .repeat = 2},
 *                                        .on_trace_ready = ct_tensorboard_trace_handler,
 *                                        .on_trace_ready_ctx = "/tmp/ctorch_doc_profile");
 *     for (int step = 0; step < 8; step++) {
 *         ct_relu(x);
 *         ct_profiler_step(p);
 *     }
 *     ct_profiler_stop(p);
 */
void ct_tensorboard_trace_handler(ct_profiler *prof, void *ctx);
#define ct_tensorboard_trace_handler(prof, ctx) CT_AT(ct_tensorboard_trace_handler(prof, ctx))

#ifdef __cplusplus
}
#endif
CT_API_END

#endif
