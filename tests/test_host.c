/* Host access to tensor values (ops/host.h): in place for contiguous cpu tensors,
 * through the backend's copy for any other layout or device, refused on meta; and the
 * ops that read values on the host (item, nonzero, one_hot, masked_select, index
 * checks) on a device other than the cpu, reached only through that seam.
 *
 * The other device is a stand-in registered here for the cuda device type: its memory
 * is host memory, its copy and fill are the cpu's, and it counts them, so the tests
 * see every host read and write, and every fill, go through the backend. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ct_test.h"
#include "core/backend.h"
#include "cpu/backend.h"
#include "cpu/iter.h"
#include "ops/host.h"

static int copies, fills;

static void *dev_alloc(ct_device d, size_t nbytes) {
    (void)d;
    return aligned_alloc(64, (nbytes + 63) / 64 * 64 + 64);
}
static void dev_free(ct_device d, void *p, size_t nbytes) {
    (void)d, (void)nbytes;
    free(p);
}
static void dev_copy(ct_tensor *dst, const ct_tensor *src) {
    copies++;
    ct_cpu_copy(dst, src);
}
static void dev_fill(ct_tensor *dst, const void *value) {
    fills++;
    ct_cpu_fill(dst, value);
}
static void dev_synchronize(ct_device d) { (void)d; }
static const ct_kernel_entry no_kernels[] = {CT_KERNEL_END};
static const ct_kernel_entry *const dev_tables[] = {no_kernels, NULL};
static const ct_backend stand_in = {.name = "stand-in", .type = CT_DEV_CUDA,
                                    .alloc = dev_alloc, .free = dev_free, .copy = dev_copy,
                                    .fill = dev_fill,
                                    .run_loop = ct_cpu_run_loop, .synchronize = dev_synchronize,
                                    .kernel_tables = dev_tables};

static ct_tensor *on_device(ct_tensor *t) {
    if (!ct_backend_for_type(CT_DEV_CUDA)) ct_backend_register(&stand_in);
    return ct_to(t, .device = CT_CUDA(0));
}

TEST(contiguous_cpu_tensors_are_read_and_written_in_place) {
    ct_tensor *t = ct_arange(6, .dtype = CT_F32);
    ct_host_buf hb;
    const float *v = ct_host_read("test", t, CT_DTYPE_UNSET, &hb);
    CHECK(v == (const float *)ct_data_ptr(t) && hb.copy == NULL);
    ct_host_release(&hb);
    float *w = ct_host_write("test", t, &hb);
    CHECK(w == (float *)ct_data_ptr(t) && hb.copy == NULL && hb.dst == NULL);
    w[0] = 9;
    ct_host_release(&hb);
    CHECK_VALUES(t, 0, 9, 1, 2, 3, 4, 5);
    /* empty tensors give a pointer all the same */
    CHECK(ct_host_read("test", ct_empty(CT_SHAPE(0)), CT_DTYPE_UNSET, &hb) != NULL);
    ct_host_release(&hb);
}

TEST(other_layouts_and_dtypes_are_read_through_a_copy) {
    /* [[0, 1, 2], [3, 4, 5]] transposed: C order 0 3 1 4 2 5, as int64 */
    ct_tensor *t = ct_transpose(ct_reshape(ct_arange(6, .dtype = CT_F64), CT_SHAPE(2, 3)), 0, 1);
    ct_host_buf hb;
    const int64_t *v = ct_host_read("test", t, CT_I64, &hb);
    CHECK(v != NULL && hb.copy != NULL);
    int64_t want[] = {0, 3, 1, 4, 2, 5};
    CHECK(v && !memcmp(v, want, sizeof want));
    ct_host_release(&hb);
    CHECK(hb.copy == NULL);
    /* a write into a non-contiguous tensor lands in its own layout */
    ct_tensor *base = ct_zeros(CT_SHAPE(2, 3), .dtype = CT_I64);
    ct_tensor *view = ct_transpose(base, 0, 1);
    int64_t *w = ct_host_write("test", view, &hb);
    CHECK(w != NULL && hb.dst == view);
    if (w) memcpy(w, want, sizeof want);
    ct_host_release(&hb);
    CHECK_VALUES(base, 0, 0, 1, 2, 3, 4, 5);
}

TEST(meta_tensors_have_no_values) {
    ct_tensor *m = ct_empty(CT_SHAPE(3), .device = CT_META);
    CHECK(!ct_has_values(m) && ct_has_values(ct_zeros(CT_SHAPE(3))));
    ct_host_buf hb;
    CHECK_ERROR(ct_host_read("ct_frobnicate", m, CT_DTYPE_UNSET, &hb),
                "ct_frobnicate: cannot be called on meta tensors: it needs the tensor's values, "
                "and a meta tensor has no data");
    CHECK(hb.copy == NULL);
    CHECK_ERROR(ct_host_write("ct_frobnicate", m, &hb), "ct_frobnicate: cannot be called on meta");
    ct_host_release(&hb); /* a failed call leaves nothing to release */
}

TEST(item_reads_a_device_tensor_through_its_backend) {
    ct_tensor *d = on_device(ct_scalar_tensor(5, .dtype = CT_I64));
    CHECK(d != NULL && ct_device_of(d).type == CT_DEV_CUDA);
    int before = copies;
    CHECK_INT_EQ(ct_item_int(d), 5);
    CHECK_CLOSE(ct_item(d), 5, 0);
    CHECK_INT_EQ(copies - before, 2);
}

TEST(nonzero_and_one_hot_on_a_device) {
    float x[] = {0, 2, 0, 3, 1, 0};
    ct_tensor *d = on_device(ct_tensor_f32(x, CT_SHAPE(2, 3)));
    int before = copies;
    ct_tensor *nz = ct_nonzero(d);
    CHECK(nz && ct_device_of(nz).type == CT_DEV_CUDA);
    CHECK_INT_EQ(copies - before, 2); /* the mask read, the coordinates written */
    CHECK_VALUES(ct_to(nz, .device = CT_CPU), 0, 0, 1, 1, 0, 1, 1);
    int64_t c[] = {2, 0};
    ct_tensor *oh = ct_one_hot(on_device(ct_tensor_i64(c, CT_SHAPE(2))), 3);
    CHECK(oh && ct_device_of(oh).type == CT_DEV_CUDA);
    CHECK_VALUES(ct_to(oh, .device = CT_CPU), 0, 0, 0, 1, 1, 0, 0);
    CHECK_ERROR(ct_one_hot(on_device(ct_tensor_i64(c, CT_SHAPE(2))), 2),
                "ct_one_hot: Class values must be smaller than num_classes. (got 2, num_classes 2)");
}

TEST(masked_select_on_a_device) {
    float x[] = {1, 2, 3, 4};
    bool m[] = {true, false, false, true};
    ct_tensor *s = ct_masked_select(on_device(ct_tensor_f32(x, CT_SHAPE(4))),
                                    on_device(ct_tensor_from(m, CT_BOOL, CT_SHAPE(4))));
    CHECK(s && ct_device_of(s).type == CT_DEV_CUDA);
    CHECK_VALUES(ct_to(s, .device = CT_CPU), 0, 1, 4);
}

TEST(checks_of_values_read_a_device_tensor) {
    /* the kernel-less stand-in stops index_select after its index check */
    int64_t i[] = {0, 7};
    ct_tensor *t = on_device(ct_zeros(CT_SHAPE(3, 2)));
    CHECK_ERROR(ct_index_select(t, 0, on_device(ct_tensor_i64(i, CT_SHAPE(2)))),
                "index out of range in self");
    ct_tensor *a = on_device(ct_arange(3)), *z = on_device(ct_zeros(CT_SHAPE(3), .dtype = CT_I64));
    CHECK_ERROR(ct_div_mode(a, z, CT_ROUND_FLOOR), "ZeroDivisionError: integer division by zero");
}

/* Factories that fill (zeros, eye) and fill_ set a device tensor's values through the
 * device's backend. */
TEST(fills_on_a_device_go_through_its_backend) {
    on_device(ct_zeros(CT_SHAPE(1)));
    int before = fills;
    ct_tensor *z = ct_zeros(CT_SHAPE(3, 4), .device = CT_CUDA(0));
    CHECK(fills - before == 1);
    CHECK_VALUES(ct_to(z, .device = CT_CPU), 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);
    before = fills;
    ct_tensor *e = ct_eye_nm(2, 3, .device = CT_CUDA(0));
    CHECK(fills - before == 2); /* zeros, then the diagonal */
    CHECK_VALUES(ct_to(e, .device = CT_CPU), 0, 1, 0, 0, 0, 1, 0);
    CHECK_VALUES(ct_to(ct_fill_(z, 2), .device = CT_CPU), 0, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2);
}
