/* Generators: a seed and a counter offset behind a lock; see Note [Random counters]. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/generator.h"
#include "core/lifetime.h"
#include "core/tensor_impl.h"
#include "core/mem.h"

/* PyTorch's default seed (c10::detail::default_rng_seed_val). */
#define DEFAULT_SEED 67280421310721ull
#define STATE_BYTES 16 /* seed, offset: little-endian uint64 each */

struct ct_generator {
    ct_object obj;
    pthread_mutex_t lock;
    uint64_t seed;
    uint64_t offset;
};

static void generator_destroy(ct_object *o) {
    ct_generator *g = (ct_generator *)o;
    pthread_mutex_destroy(&g->lock);
    ct_lifetime_free(g);
}

/* The default generator lives as long as the program: releasing it does nothing. */
static void default_destroy(ct_object *o) { (void)o; }

static ct_generator default_gen = {
    .obj = {.refs = 1, .magic = CT_OBJECT_ALIVE, .destroy = default_destroy},
    .lock = PTHREAD_MUTEX_INITIALIZER,
    .seed = DEFAULT_SEED,
    .offset = 0,
};

ct_generator *ct_generator_new(uint64_t seed) {
    ct_generator *g = ct_calloc(1, sizeof *g);
    if (!g) {
        ct_error("ct_generator_new: out of memory");
        return NULL;
    }
    ct_object_init(&g->obj, generator_destroy);
    pthread_mutex_init(&g->lock, NULL);
    g->seed = seed;
    return ct_scope_register(g);
}

ct_generator *ct_default_generator(void) { return &default_gen; }
ct_generator *ct_generator_or_default(ct_generator *g) { return g ? g : &default_gen; }

uint64_t ct_generator_reserve(ct_generator *g, uint64_t n, uint64_t *seed) {
    pthread_mutex_lock(&g->lock);
    uint64_t first = g->offset;
    g->offset += n;
    *seed = g->seed;
    pthread_mutex_unlock(&g->lock);
    return first;
}

void ct_generator_manual_seed(ct_generator *g, uint64_t seed) {
    if (!ct_alive("ct_generator_manual_seed", 1, g)) return;
    g = ct_generator_or_default(g);
    pthread_mutex_lock(&g->lock);
    g->seed = seed;
    g->offset = 0;
    pthread_mutex_unlock(&g->lock);
}

ct_generator *ct_manual_seed(uint64_t seed) {
    ct_generator_manual_seed(&default_gen, seed);
    return &default_gen;
}

uint64_t ct_generator_initial_seed(ct_generator *g) {
    if (!ct_alive("ct_generator_initial_seed", 1, g)) return 0;
    g = ct_generator_or_default(g);
    pthread_mutex_lock(&g->lock);
    uint64_t s = g->seed;
    pthread_mutex_unlock(&g->lock);
    return s;
}

uint64_t ct_initial_seed(void) { return ct_generator_initial_seed(&default_gen); }

uint64_t ct_seed(void) {
    uint64_t s = 0;
    FILE *f = fopen("/dev/urandom", "rb");
    if (!f || fread(&s, sizeof s, 1, f) != 1) { /* no urandom: the clock and an address */
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        s = (uint64_t)ts.tv_sec * 1000000007u ^ (uint64_t)ts.tv_nsec ^ (uint64_t)(uintptr_t)&s;
    }
    if (f) fclose(f);
    ct_generator_manual_seed(&default_gen, s);
    return s;
}

static void put_u64(uint8_t *p, uint64_t v) {
    for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static uint64_t get_u64(const uint8_t *p) {
    uint64_t v = 0;
    for (int i = 0; i < 8; i++) v |= (uint64_t)p[i] << (8 * i);
    return v;
}

ct_tensor *ct_generator_get_state(ct_generator *g) {
    if (!ct_alive("ct_generator_get_state", 1, g)) return NULL;
    g = ct_generator_or_default(g);
    ct_tensor *t = ct_tensor_new("ct_generator_get_state", CT_SHAPE(STATE_BYTES), CT_U8, CT_CPU);
    if (!t) return NULL;
    uint8_t *p = (uint8_t *)ct_tensor_data(t);
    pthread_mutex_lock(&g->lock);
    put_u64(p, g->seed);
    put_u64(p + 8, g->offset);
    pthread_mutex_unlock(&g->lock);
    return ct_ret(t);
}

int ct_generator_set_state(ct_generator *g, const ct_tensor *state) {
    if (!ct_alive("ct_generator_set_state", 1, g) || !ct_alive("ct_generator_set_state", 2, state))
        return -1;
    if (!state) return -1;
    if (state->dtype != CT_U8) {
        ct_error("ct_generator_set_state: RNG state must be a torch.ByteTensor (got %s, "
                 "expected uint8)", ct_dtype_name(state->dtype));
        return -1;
    }
    if (state->numel != STATE_BYTES) {
        ct_error("ct_generator_set_state: RNG state is wrong size (got %lld bytes, expected %d)",
                 (long long)state->numel, STATE_BYTES);
        return -1;
    }
    uint8_t p[STATE_BYTES];
    if (ct_copy_to_buffer(state, p, CT_U8, sizeof p) != 0) return -1;
    g = ct_generator_or_default(g);
    pthread_mutex_lock(&g->lock);
    g->seed = get_u64(p);
    g->offset = get_u64(p + 8);
    pthread_mutex_unlock(&g->lock);
    return 0;
}
