/* A plain main() for the harnesses (no libFuzzer): runs each file given, and each file
 * of each directory given, through LLVMFuzzerTestOneInput.  Exits 0 when all ran;
 * sanitizers or a crash make it fail. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz.h"

static int run_file(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "replay: cannot open %s\n", path);
        return -1;
    }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *buf = malloc(n > 0 ? (size_t)n : 1);
    size_t got = buf && n > 0 ? fread(buf, 1, (size_t)n, f) : 0;
    fclose(f);
    if (!buf || (long)got != n) {
        fprintf(stderr, "replay: cannot read %s\n", path);
        free(buf);
        return -1;
    }
    LLVMFuzzerTestOneInput(buf, got);
    free(buf);
    return 0;
}

static int names_cmp(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Runs path (a file, or each file of a directory in name order); the count run. */
static int run_path(const char *path) {
    struct stat st;
    if (stat(path, &st) != 0) {
        fprintf(stderr, "replay: no such file or directory: %s\n", path);
        return -1;
    }
    if (!S_ISDIR(st.st_mode)) return run_file(path) == 0 ? 1 : -1;
    DIR *d = opendir(path);
    if (!d) return -1;
    char *names[4096];
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < 4096)
        if (e->d_name[0] != '.') names[n++] = strdup(e->d_name);
    closedir(d);
    qsort(names, (size_t)n, sizeof *names, names_cmp);
    int ran = 0;
    for (int i = 0; i < n; i++) {
        char file[4096];
        snprintf(file, sizeof file, "%s/%s", path, names[i]);
        if (ran >= 0) ran = run_file(file) == 0 ? ran + 1 : -1;
        free(names[i]);
    }
    return ran;
}

int main(int argc, char **argv) {
    LLVMFuzzerInitialize(&argc, &argv);
    int total = 0;
    for (int i = 1; i < argc; i++) {
        int ran = run_path(argv[i]);
        if (ran < 0) return 1;
        total += ran;
    }
    if (total == 0) {
        fprintf(stderr, "replay: no inputs\n");
        return 1;
    }
    printf("replayed %d inputs\n", total);
    return 0;
}
