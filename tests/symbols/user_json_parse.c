/* A program defining a function named like one of ctorch's internal ones (json_parse,
 * which parses safetensors headers).  Built against the static and the shared
 * library: it links, the program's json_parse is called by the program only, and
 * ct_load_safetensors still parses with ctorch's own.
 *   user_json_parse FILE   (FILE: a safetensors file to write and read back) */
#include <ctorch.h>
#include <stdio.h>
#include <string.h>

static int user_calls;

/* The program's own json_parse, with another signature than ctorch's. */
int json_parse(const char *text);
int json_parse(const char *text) {
    user_calls++;
    return (int)strlen(text);
}

static int fail(const char *what) {
    fprintf(stderr, "FAIL %s (%s)\n", what, ct_last_error() ? ct_last_error() : "no error set");
    return 1;
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s FILE\n", argv[0]);
        return 2;
    }
    const float want[3] = {1.5f, -2, 3};
    float got[3] = {0};
    int status = 0;
    CT_SCOPE {
        ct_state_dict *sd = ct_state_dict_new();
        float v[3] = {1.5f, -2, 3};
        if (ct_state_dict_set(sd, "w", ct_tensor_f32(v, CT_SHAPE(3))) != 0 ||
            ct_save_safetensors(sd, argv[1], NULL) != 0) {
            status = fail("saving");
            break;
        }
        ct_state_dict *back = ct_load_safetensors(argv[1]);
        ct_tensor *w = back ? ct_state_dict_get(back, "w") : NULL;
        if (!w || ct_copy_to_buffer(w, got, CT_F32, sizeof got) != 0) {
            status = fail("ct_load_safetensors");
            break;
        }
    }
    remove(argv[1]);
    if (status) return status;
    if (memcmp(got, want, sizeof want)) return fail("ct_load_safetensors read other values");
    if (user_calls) return fail("ctorch called the program's json_parse");
    if (json_parse("{\"a\": 1}") != 8 || user_calls != 1) return fail("the program's json_parse");
    printf("ok: ctorch read w = [%g, %g, %g] with its own parser; json_parse is the program's\n",
           got[0], got[1], got[2]);
    return 0;
}
