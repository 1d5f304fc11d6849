/* Helpers shared by the layer modules. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nn/layer_util.h"
#include "core/object.h"

ct_tensor *ct_layer_param(ct_module *m, const char *name, ct_shape shape, ct_dtype dtype) {
    ct_tensor *t = NULL;
    CT_NO_GRAD { t = ct_empty(shape, .dtype = dtype); }
    return ct_module_add_parameter(m, name, t);
}

ct_tensor *ct_layer_tensor(const ct_module *m, const char *name) {
    ct_tensor *t = ct_module_get_parameter(m, name);
    return t ? t : ct_module_get_buffer(m, name);
}

int ct_layer_reset_kaiming(ct_tensor *weight, ct_tensor *bias) {
    int rc = -1;
    CT_SCOPE { /* the initializers' results are references for this scope */
        if (!ct_init_kaiming_uniform_(weight, .a = sqrt(5.0))) break;
        int64_t fan_in;
        if (bias && ct_init_calculate_fan(weight, &fan_in, NULL)) break;
        double bound = bias && fan_in > 0 ? 1 / sqrt((double)fan_in) : 0;
        rc = !bias || ct_init_uniform_(bias, -bound, bound) ? 0 : -1;
    }
    return rc;
}

void ct_layer_fmt_dims(char *buf, size_t size, const int64_t *d, int n, bool as_int) {
    if (as_int && n == 1) {
        snprintf(buf, size, "%lld", (long long)d[0]);
        return;
    }
    size_t k = (size_t)snprintf(buf, size, "(");
    for (int i = 0; i < n && k < size; i++)
        k += (size_t)snprintf(buf + k, size - k, i ? ", %lld" : "%lld", (long long)d[i]);
    if (k < size) snprintf(buf + k, size - k, n == 1 ? ",)" : ")");
}

void ct_layer_fmt_float(char *buf, size_t size, double v, bool nan_is_none) {
    if (isnan(v)) {
        snprintf(buf, size, nan_is_none ? "None" : "nan");
        return;
    }
    if (isinf(v)) {
        snprintf(buf, size, v > 0 ? "inf" : "-inf");
        return;
    }
    /* The shortest digits that read back as v, then Python's layout: scientific
     * when the exponent is < -4 or >= 16, else positional with at least ".0". */
    char e[40];
    int p = 1;
    for (; p < 17; p++) {
        snprintf(e, sizeof e, "%.*e", p - 1, v);
        if (strtod(e, NULL) == v) break;
    }
    snprintf(e, sizeof e, "%.*e", p - 1, v);
    int exp10 = atoi(strchr(e, 'e') + 1);
    if (exp10 < -4 || exp10 >= 16) {
        char mant[32];
        snprintf(mant, sizeof mant, "%.*s", (int)(strchr(e, 'e') - e), e);
        snprintf(buf, size, "%se%c%02d", mant, exp10 < 0 ? '-' : '+', abs(exp10));
        return;
    }
    int decimals = p - 1 - exp10;
    snprintf(buf, size, "%.*f", decimals > 0 ? decimals : 0, v);
    if (!strchr(buf, '.') && strlen(buf) + 2 < size) strcat(buf, ".0");
}

void ct_layer_fmt_shape(char *buf, size_t size, ct_shape s) {
    size_t k = (size_t)snprintf(buf, size, "[");
    for (int i = 0; i < s.ndim && k < size; i++)
        k += (size_t)snprintf(buf + k, size - k, i ? ", %lld" : "%lld", (long long)s.d[i]);
    if (k < size) snprintf(buf + k, size - k, "]");
}

void ct_layer_discard(ct_module *m) {
    ct_scope_unregister(m);
    ct_release(m);
}
