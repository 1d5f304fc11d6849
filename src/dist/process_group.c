/* The process group: ct_dist_init (the plugin, MPI, the world group and the
 * communication thread), the ranks, new groups, ct_dist_destroy. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dist/dist_impl.h"
#include "core/dtype.h"
#include "core/error.h"
#include "core/mem.h"

const ct_dist_engine *ct_dist_be;
ct_process_group *ct_dist_world_group;
static ct_process_group *groups; /* every group made, the world first */
static int world_rank, world_size = 1, local_rank;
static bool initialized, finalized;

/* RANK, WORLD_SIZE, LOCAL_RANK (torchrun's), when set, must say what MPI says. */
static int check_env(const char *name, int want) {
    const char *v = getenv(name);
    if (!v || !*v) return 0;
    char *end;
    long got = strtol(v, &end, 10);
    if (*end || got != want) {
        ct_error("ct_dist_init: the environment has %s=%s but MPI gives this process %s %d", name,
                 v, name, want);
        return -1;
    }
    return 0;
}

static ct_process_group *group_new(void) {
    ct_process_group *g = ct_calloc(1, sizeof *g);
    if (g) {
        g->next = groups;
        groups = g;
    }
    return g;
}

/* Fills g's ranks and the point-to-point tag range from its communicator. */
static int group_fill(ct_process_group *g, const int *world_ranks) {
    const ct_dist_engine *be = ct_dist_be;
    g->rank = be->comm_rank(g->comm);
    g->size = be->comm_size(g->comm);
    g->tag_ub = be->tag_ub(g->comm);
    g->ranks = ct_malloc(sizeof(int) * (size_t)g->size);
    if (!g->ranks) return -1;
    for (int i = 0; i < g->size; i++) g->ranks[i] = world_ranks ? world_ranks[i] : i;
    return 0;
}

int ct_dist_init_with(ct_dist_init_options o) {
    if (initialized) {
        ct_error("ct_dist_init: trying to initialize the default process group twice!");
        return -1;
    }
    if (finalized) {
        ct_error(
            "ct_dist_init: the process group was destroyed, and MPI cannot be initialised again "
            "in the same process");
        return -1;
    }
    if (o.backend == CT_DIST_NCCL) {
        ct_error(
            "ct_dist_init: the NCCL backend is not available in this build of ctorch (CPU tensors: "
            "CT_DIST_MPI)");
        return -1;
    }
    if (o.backend != CT_DIST_DEFAULT && o.backend != CT_DIST_MPI) {
        ct_error("ct_dist_init: unknown backend %d", (int)o.backend);
        return -1;
    }
    const ct_dist_engine *be = ct_dist_load_plugin("ct_dist_init");
    if (!be) return -1;
    int rank, size, local;
    if (be->init(ct_dist_combine, ct_dtype_sizes, CT_NUM_DTYPES, &rank, &size, &local) != 0) {
        ct_error("ct_dist_init: %s", be->error());
        return -1;
    }
    ct_dist_be = be;
    const char *ompi_local = getenv("OMPI_COMM_WORLD_LOCAL_RANK");
    if (ompi_local && *ompi_local) local = atoi(ompi_local);
    ct_process_group *w = NULL;
    if (check_env("RANK", rank) || check_env("WORLD_SIZE", size) || check_env("LOCAL_RANK", local))
        goto fail;
    w = group_new();
    if (!w || !(w->comm = be->comm_world()) || !(w->ctl = be->comm_dup(w->comm)) ||
        !(w->p2p = be->comm_dup(w->comm)) || group_fill(w, NULL) != 0) {
        ct_error("ct_dist_init: %s", w ? be->error() : "out of memory");
        goto fail;
    }
    world_rank = rank;
    world_size = size;
    local_rank = local;
    ct_dist_world_group = w;
    if (ct_dist_comm_start() != 0) goto fail;
    initialized = true;
    return 0;
fail:
    if (w) {
        be->comm_free(w->p2p);
        be->comm_free(w->ctl);
        be->comm_free(w->comm);
        groups = w->next;
        free(w->ranks);
        free(w);
    }
    ct_dist_world_group = NULL;
    be->finalize();
    finalized = true;
    world_rank = local_rank = 0;
    world_size = 1;
    return -1;
}

bool(ct_dist_is_available)(void) {
    static int available = -1;
    if (available < 0) {
        /* Loading sets an error when it fails: a question does not report one. */
        ct_error_defer_handler(true);
        available = ct_dist_load_plugin("ct_dist_is_available") != NULL;
        ct_error_defer_handler(false);
        if (!available) (ct_clear_error)();
    }
    return available;
}

bool(ct_dist_is_initialized)(void) { return initialized; }

int(ct_dist_destroy)(void) {
    if (!initialized) {
        ct_error("ct_dist_destroy: Default process group has not been initialized, please make "
                 "sure to call "
                 "init_process_group.");
        return -1;
    }
    ct_dist_comm_stop(); /* runs what was queued before, then ends */
    const ct_dist_engine *be = ct_dist_be;
    for (ct_process_group *g = groups, *next; g; g = next) {
        next = g->next;
        be->comm_free(g->p2p);
        be->comm_free(g->ctl);
        be->comm_free(g->comm);
        free(g->ranks);
        free(g);
    }
    groups = ct_dist_world_group = NULL;
    be->finalize();
    initialized = false;
    finalized = true;
    world_rank = local_rank = 0;
    world_size = 1;
    return 0;
}

int(ct_dist_rank)(void) { return world_rank; }
int(ct_dist_world_size)(void) { return world_size; }
int(ct_dist_local_rank)(void) { return local_rank; }
bool(ct_dist_is_main)(void) { return world_rank == 0; }

ct_process_group *ct_dist_group_of(const char *fn, ct_process_group *g) {
    if (!initialized) {
        ct_error("%s: Default process group has not been initialized, please make sure to call "
                 "init_process_group.",
                 fn);
        return NULL;
    }
    if (!g) return ct_dist_world_group;
    if (g->rank < 0) {
        ct_error("%s: this rank (%d) is not a member of the group", fn, world_rank);
        return NULL;
    }
    return g;
}

ct_process_group *(ct_dist_new_group)(const int *ranks, int n) {
    const char *fn = "ct_dist_new_group";
    if (!ct_dist_group_of(fn, NULL)) return NULL;
    int *members = ct_malloc(sizeof(int) * (size_t)(ranks ? (n > 0 ? n : 1) : world_size));
    if (!members) {
        ct_error("%s: out of memory", fn);
        return NULL;
    }
    int count = ranks ? n : world_size, me = -1;
    for (int i = 0; i < count; i++) {
        int r = ranks ? ranks[i] : i;
        bool dup = false;
        for (int j = 0; j < i; j++) dup |= members[j] == r;
        if (r < 0 || r >= world_size || dup) {
            ct_error("%s: rank %d %s (the world has %d ranks)", fn, r,
                     dup ? "is given twice" : "is out of range", world_size);
            free(members);
            return NULL;
        }
        members[i] = r;
        if (r == world_rank) me = i;
    }
    ct_process_group *g = group_new();
    ct_work *w = g ? ct_work_new(CT_WORK_NEW_GROUP, fn, ct_dist_world_group) : NULL;
    if (!w) {
        free(members);
        return NULL;
    }
    /* Members split off with the group's order as key; the others get no communicator. */
    w->color = me >= 0 ? 0 : -1;
    w->key = me;
    ct_dist_enqueue(w);
    int rc = (ct_work_wait)(w);
    g->comm = w->new_comm;
    g->ctl = w->new_ctl;
    g->p2p = w->new_p2p;
    (ct_work_free)(w);
    if (rc != 0) {
        free(members);
        return NULL;
    }
    if (g->comm) {
        if (group_fill(g, members) != 0) {
            free(members);
            ct_error("%s: out of memory", fn);
            return NULL;
        }
    } else {
        g->rank = -1;
        g->size = count;
    }
    free(members);
    return g;
}

int(ct_dist_group_rank)(const ct_process_group *g) { return g ? g->rank : world_rank; }
int(ct_dist_group_size)(const ct_process_group *g) { return g ? g->size : world_size; }
