/* Reference counts and scopes.
 *
 * Each thread has a stack of registered objects; a scope is a mark into it.  Closing
 * a scope releases everything registered above its mark, then moves the objects that
 * ct_keep() handed out into the enclosing scope.  Outside any scope registration is a
 * no-op: the caller owns what it gets. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "ctorch/base.h"
#include "core/error.h"
#include "core/object.h"
#include "core/mem.h"

typedef struct {
    void **items;
    int len, cap;
} ptr_vec;

typedef struct {
    int mark;     /* first stack index owned by this scope */
    ptr_vec kept; /* objects handed to the enclosing scope */
} scope_frame;

/* The first frames need no allocation: opening a scope fails only beyond them. */
enum { FIRST_FRAMES = 16 };
static _Thread_local ptr_vec stack;
static _Thread_local scope_frame first_frames[FIRST_FRAMES];
static _Thread_local scope_frame *frames; /* first_frames once a scope was opened */
static _Thread_local int depth, frames_cap;

/* A thread's scope stack is freed when the thread exits (worker threads would leak it
 * otherwise): the key's destructor runs in the exiting thread. */
static pthread_key_t exit_key;
static pthread_once_t exit_key_once = PTHREAD_ONCE_INIT;
static _Thread_local bool exit_hook_set;

static void free_thread_scopes(void *unused) {
    (void)unused;
    for (int i = 0; i < frames_cap; i++) free(frames[i].kept.items);
    if (frames != first_frames) free(frames);
    free(stack.items);
    memset(first_frames, 0, sizeof first_frames);
    frames = NULL;
    stack = (ptr_vec){0};
    frames_cap = depth = 0;
    exit_hook_set = false;
}
static void make_exit_key(void) { pthread_key_create(&exit_key, free_thread_scopes); }
static void free_at_thread_exit(void) {
    if (exit_hook_set) return;
    pthread_once(&exit_key_once, make_exit_key);
    pthread_setspecific(exit_key, &exit_hook_set); /* any non-NULL value */
    exit_hook_set = true;
}

/* False when out of memory (nothing pushed). */
static bool vec_push(ptr_vec *v, void *p) {
    if (v->len == v->cap) {
        free_at_thread_exit();
        int cap = v->cap ? v->cap * 2 : 64;
        void **items = ct_realloc(v->items, (size_t)cap * sizeof *items);
        if (!items) return false;
        v->items = items;
        v->cap = cap;
    }
    v->items[v->len++] = p;
    return true;
}

void *ct_retain(void *obj) {
    /* Always atomic: a count of 1 does not mean the caller owns the only reference.
     * Threads may borrow a tensor the main thread owns and retain it at once. */
    if (!ct_alive("ct_retain", 1, obj)) return NULL;
    if (obj) atomic_fetch_add_explicit(&((ct_object *)obj)->refs, 1, memory_order_relaxed);
    return obj;
}

void ct_release(void *obj) { ct_object_release(obj); }

/* A result that an op failed to finish (ct_error_fail_result), or that cannot be
 * registered, is released: the op returns NULL. */
void *ct_scope_register(void *obj) {
    if (!obj) return NULL;
    if (ct_error_take_failed_result() || (depth > 0 && !vec_push(&stack, obj))) {
        if (!ct_last_error()) ct_error("out of memory registering a result with its scope");
        ct_release(obj);
        return NULL;
    }
    return obj;
}

bool ct_scope_unregister(void *obj) {
    if (!obj || depth == 0) return false;
    /* Newest first: the object was almost always registered a moment ago. */
    for (int i = stack.len - 1; i >= frames[depth - 1].mark; i--) {
        if (stack.items[i] != obj) continue;
        memmove(&stack.items[i], &stack.items[i + 1], (size_t)(stack.len - i - 1) * sizeof(void *));
        stack.len--;
        return true;
    }
    return false;
}

ct_scope_guard ct_scope_begin(void) {
    if (!frames) {
        frames = first_frames;
        frames_cap = FIRST_FRAMES;
    }
    if (depth == frames_cap) {
        free_at_thread_exit();
        int cap = frames_cap * 2;
        scope_frame *f = ct_realloc(frames == first_frames ? NULL : frames, (size_t)cap * sizeof *f);
        if (!f) {
            /* The scope's objects go to the enclosing one; the guard closes nothing. */
            ct_error("ct_scope_begin: out of memory opening a scope %d deep", depth + 1);
            return (ct_scope_guard){.depth = depth + 1, .once = 1};
        }
        if (frames == first_frames) memcpy(f, first_frames, sizeof first_frames);
        memset(f + frames_cap, 0, (size_t)(cap - frames_cap) * sizeof *f);
        frames = f;
        frames_cap = cap;
    }
    frames[depth].mark = stack.len;
    frames[depth].kept.len = 0;
    depth++;
    return (ct_scope_guard){.depth = depth, .once = 1};
}

void ct_scope_end(ct_scope_guard *g) {
    /* Scopes close innermost first; a guard whose scope was already closed by an
     * inner early exit closes nothing more. */
    while (depth >= g->depth && depth > 0) {
        scope_frame *f = &frames[depth - 1];
        /* Release newest first: later objects may point at earlier ones. */
        while (stack.len > f->mark) ct_object_release(stack.items[--stack.len]);
        depth--;
        for (int i = 0; i < f->kept.len; i++)
            if (depth > 0 && !vec_push(&stack, f->kept.items[i]))
                ct_error("out of memory handing an object to the enclosing scope");
        f->kept.len = 0;
    }
}

int ct_scope_depth(void) { return depth; }

void *ct_keep(void *obj) {
    if (!ct_alive("ct_keep", 1, obj)) return NULL;
    if (!obj || depth == 0) return obj;
    if (!vec_push(&frames[depth - 1].kept, obj)) {
        ct_error("ct_keep: out of memory");
        return NULL;
    }
    return ct_retain(obj);
}
