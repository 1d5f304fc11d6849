/* Finding and loading the MPI plugin (Note [The MPI plugin], dist/backend.h).
 *
 * Where: $CTORCH_DIST_PLUGIN (a path) when set; else libctorch_mpi.so beside the
 * loaded libctorch (or the program, for the static library); else the install's
 * libdir; else the build tree's; else the dynamic linker's own search.  RTLD_GLOBAL: Open MPI
 * dlopen()s its own components, which need libmpi's symbols global. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dist/dist_impl.h"
#include "core/error.h"

#define PLUGIN_NAME "libctorch_mpi.so"

static void *try_open(const char *path, char *why, size_t n) {
    void *h = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
    if (!h) {
        const char *e = dlerror();
        size_t used = strlen(why);
        snprintf(why + used, n - used, "%s%s", used ? "; " : "", e ? e : path);
    }
    return h;
}

static void *open_plugin(char *why, size_t n) {
    const char *env = getenv("CTORCH_DIST_PLUGIN");
    if (env && *env) return try_open(env, why, n);
    char path[4096];
    Dl_info info;
    if (dladdr((void *)ct_dist_load_plugin, &info) && info.dli_fname) {
        const char *slash = strrchr(info.dli_fname, '/');
        if (slash) {
            snprintf(path, sizeof path, "%.*s/%s", (int)(slash - info.dli_fname), info.dli_fname,
                     PLUGIN_NAME);
            void *h = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
            if (h) return h;
        }
    }
    /* Compiled in: the install's libdir, then the build tree's (programs of the
     * build tree linked with the static library live in other directories). */
    const char *dirs[] = {CTORCH_INSTALL_LIBDIR, CTORCH_BUILD_LIBDIR};
    for (int i = 0; i < 2; i++) {
        snprintf(path, sizeof path, "%s/%s", dirs[i], PLUGIN_NAME);
        void *h = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
        if (h) return h;
    }
    return try_open(PLUGIN_NAME, why, n);
}

const ct_dist_engine *ct_dist_load_plugin(const char *fn) {
    static void *handle;
    static const ct_dist_engine *be;
    if (be) return be;
    char why[1024] = "";
    if (!handle) handle = open_plugin(why, sizeof why);
    if (!handle) {
        ct_error(
            "%s: the MPI backend (%s) cannot be loaded: %s; ctorch was built without MPI or the "
            "plugin is not installed (set CTORCH_DIST_PLUGIN to its path)",
            fn, PLUGIN_NAME, why);
        return NULL;
    }
    ct_dist_plugin_entry_fn entry = (ct_dist_plugin_entry_fn)dlsym(handle, CT_DIST_PLUGIN_ENTRY);
    const ct_dist_engine *b = entry ? entry() : NULL;
    if (!b || b->abi != CT_DIST_BACKEND_ABI) {
        ct_error("%s: %s is not a ctorch %s plugin of this version (ABI %d, expected %d)", fn,
                 PLUGIN_NAME, b ? b->name : "distributed", b ? b->abi : -1, CT_DIST_BACKEND_ABI);
        return NULL;
    }
    return be = b;
}
