/* ctorch/pt.h — PyTorch's .pt / .pth files (torch.save and torch.load), read safely.
 *
 * A .pt file is a zip archive (torch.save since PyTorch 1.6): <name>/data.pkl holds a
 * pickle of the saved object, <name>/data/<key> the bytes of each storage.  Files of
 * the older format (torch.save(..., _use_new_zipfile_serialization=False): pickles
 * followed by the storages) load too.
 *
 * The pickle is read by a restricted unpickler, never by running it: only the opcodes
 * torch.save writes and the globals a checkpoint needs (collections.OrderedDict,
 * torch._utils._rebuild_tensor_v2 / _rebuild_tensor / _rebuild_parameter, the
 * torch.*Storage types, torch.Size, _codecs.encode for bytes) are accepted; any other
 * global is refused with its name ("refusing to load global 'os.system'"), so a
 * hostile file cannot execute code — what torch.load(f, weights_only=True) promises.
 * Sizes, offsets and strides are checked against the archive's entries.  Everything
 * lands on the CPU unless .map_location says otherwise; tensors that shared a storage
 * in PyTorch share one here.
 *
 *     ct_module *model = ct_sequential(CT_MODULES(ct_nn_linear(4, 2)));
 *     // for PyTorch: torch.load("/tmp/ct_pt_doc.pt", weights_only=True) reads it
 *     ct_save_pt(ct_module_state_dict(model), "/tmp/ct_pt_doc.pt");
 *     // torch.save(model.state_dict(), path) in Python, a torchvision .pth: the same call
 *     ct_load_state_dict_file(model, "/tmp/ct_pt_doc.pt");   // or ct_load_pt_state_dict
 *     // a checkpoint, torch.save({"model": model.state_dict(), "epoch": 3}, path)
 *     ct_pt_value *ckpt = ct_pt_dict();
 *     ct_pt_set(ckpt, "model", ct_pt_from_state_dict(ct_module_state_dict(model)));
 *     ct_pt_set(ckpt, "epoch", ct_pt_int(3));
 *     ct_save_pt_value(ckpt, "/tmp/ct_pt_doc_ckpt.pt");
 *     ct_pt_value *back = ct_load_pt("/tmp/ct_pt_doc_ckpt.pt");
 *     total = (double)ct_pt_as_int(ct_pt_get(back, "epoch"));            // 3
 *     ct_load_state_dict(model, ct_pt_state_dict(ct_pt_get(back, "model")));
 *
 * Values (ct_pt_value) are reference counted like tensors (ct_release, scopes); a
 * container holds references to its items, and accessors return borrowed pointers.
 */
#ifndef CTORCH_PT_H
#define CTORCH_PT_H

#include "state_dict.h"

CT_API_BEGIN
#ifdef __cplusplus
extern "C" {
#endif

/* ---- values: what a pickle holds ---------------------------------------- */

typedef struct ct_pt_value ct_pt_value; /* None, a number, a string, a tensor or a container */
/* The kind of a value (Python's type). */
typedef enum {
    CT_PT_INVALID = 0, /* what ct_pt_kind_of says of NULL */
    CT_PT_NONE,
    CT_PT_BOOL,
    CT_PT_INT,
    CT_PT_FLOAT,
    CT_PT_STR,
    CT_PT_BYTES,
    CT_PT_TENSOR,
    CT_PT_LIST,
    CT_PT_TUPLE,
    CT_PT_DICT, /* dict and OrderedDict, in insertion order */
} ct_pt_kind;

/* v's kind; CT_PT_INVALID for NULL. */
ct_pt_kind ct_pt_kind_of(const ct_pt_value *v);
#define ct_pt_kind_of(v) CT_AT(ct_pt_kind_of(v))
const char *ct_pt_kind_name(ct_pt_kind k); /* Python's names: "int", "dict", "Tensor", ... */
#define ct_pt_kind_name(k) CT_AT(ct_pt_kind_name(k))

/* New values (registered with the scope, as tensors are). */
ct_pt_value *ct_pt_none(void);
#define ct_pt_none(...) CT_AT(ct_pt_none(__VA_ARGS__))
ct_pt_value *ct_pt_bool(bool b);
#define ct_pt_bool(b) CT_AT(ct_pt_bool(b))
ct_pt_value *ct_pt_int(int64_t i);
#define ct_pt_int(i) CT_AT(ct_pt_int(i))
ct_pt_value *ct_pt_float(double f);
#define ct_pt_float(f) CT_AT(ct_pt_float(f))
ct_pt_value *ct_pt_str(const char *s); /* UTF-8 */
#define ct_pt_str(s) CT_AT(ct_pt_str(s))
ct_pt_value *ct_pt_bytes(const void *data, size_t n);
#define ct_pt_bytes(data, n) CT_AT(ct_pt_bytes(data, n))
ct_pt_value *ct_pt_tensor(ct_tensor *t); /* retains t */
#define ct_pt_tensor(t) CT_AT(ct_pt_tensor(t))
ct_pt_value *ct_pt_list(void);  /* [] */
#define ct_pt_list(...) CT_AT(ct_pt_list(__VA_ARGS__))
ct_pt_value *ct_pt_tuple(void); /* (), filled with ct_pt_append */
#define ct_pt_tuple(...) CT_AT(ct_pt_tuple(__VA_ARGS__))
ct_pt_value *ct_pt_dict(void);  /* {} */
#define ct_pt_dict(...) CT_AT(ct_pt_dict(__VA_ARGS__))
/* An OrderedDict of sd's tensors (what torch.save(model.state_dict()) pickles). */
ct_pt_value *ct_pt_from_state_dict(const ct_state_dict *sd);
#define ct_pt_from_state_dict(sd) CT_AT(ct_pt_from_state_dict(sd))

/* Containers.  Each retains the item; 0 or -1 (a wrong kind, or an item that holds the
 * container, which would make a cycle). */
int ct_pt_append(ct_pt_value *seq, ct_pt_value *item);                   /* list or tuple */
#define ct_pt_append(seq, item) CT_AT(ct_pt_append(seq, item))
int ct_pt_set(ct_pt_value *dict, const char *key, ct_pt_value *item);    /* d[key] = item */
#define ct_pt_set(dict, key, item) CT_AT(ct_pt_set(dict, key, item))
/* d[key] = item for a key that is not a string (an int, as the optimizer's state has). */
int ct_pt_set_item(ct_pt_value *dict, ct_pt_value *key, ct_pt_value *item);
#define ct_pt_set_item(dict, key, item) CT_AT(ct_pt_set_item(dict, key, item))
int64_t ct_pt_len(const ct_pt_value *v); /* items of a list, tuple or dict; -1 otherwise */
#define ct_pt_len(v) CT_AT(ct_pt_len(v))
ct_pt_value *ct_pt_at(const ct_pt_value *v, int64_t i); /* i-th item (a dict's i-th value); borrowed */
#define ct_pt_at(v, i) CT_AT(ct_pt_at(v, i))
ct_pt_value *ct_pt_key_at(const ct_pt_value *dict, int64_t i); /* a dict's i-th key; borrowed */
#define ct_pt_key_at(dict, i) CT_AT(ct_pt_key_at(dict, i))
ct_pt_value *ct_pt_get(const ct_pt_value *dict, const char *key); /* borrowed; NULL when absent */
#define ct_pt_get(dict, key) CT_AT(ct_pt_get(dict, key))

/* Reading scalars: the wrong kind (or NULL) gives 0 / NULL and an error naming both. */
bool ct_pt_as_bool(const ct_pt_value *v);
#define ct_pt_as_bool(v) CT_AT(ct_pt_as_bool(v))
int64_t ct_pt_as_int(const ct_pt_value *v);   /* an int (or a bool) */
#define ct_pt_as_int(v) CT_AT(ct_pt_as_int(v))
double ct_pt_as_float(const ct_pt_value *v);  /* a float or an int */
#define ct_pt_as_float(v) CT_AT(ct_pt_as_float(v))
const char *ct_pt_as_str(const ct_pt_value *v); /* NUL-terminated UTF-8; borrowed */
#define ct_pt_as_str(v) CT_AT(ct_pt_as_str(v))
const void *ct_pt_as_bytes(const ct_pt_value *v, size_t *n); /* borrowed */
#define ct_pt_as_bytes(v, n) CT_AT(ct_pt_as_bytes(v, n))
ct_tensor *ct_pt_as_tensor(const ct_pt_value *v); /* borrowed */
#define ct_pt_as_tensor(v) CT_AT(ct_pt_as_tensor(v))
/* A dict of string keys and tensors as a new state dict (sharing the tensors); an
 * entry of any other kind is an error naming it. */
ct_state_dict *ct_pt_state_dict(const ct_pt_value *dict);
#define ct_pt_state_dict(dict) CT_AT(ct_pt_state_dict(dict))

/* ---- loading ------------------------------------------------------------ */

/* Options of the loaders. */
typedef struct {
    ct_device map_location; /* where tensors land (default: cpu, whatever device saved them) */
    const char *key;        /* load only this entry of the saved dict ("model", "state_dict") */
} ct_pt_load_options;
/* torch.load(path, map_location="cpu", weights_only=True): the saved object, or NULL
 * with an error naming the file and what was wrong (a refused global, a truncated
 * archive, a storage too small for its tensor, ...). */
ct_pt_value *ct_load_pt_with(const char *path, ct_pt_load_options o);
#define ct_load_pt(path, ...) CT_AT(ct_load_pt_with(path, CT_OPTIONS(ct_pt_load_options, __VA_ARGS__)))
/* The same from a file's bytes in memory (for embedding and fuzzing). */
ct_pt_value *ct_pt_from_buffer(const void *data, size_t size, ct_pt_load_options o);
#define ct_pt_from_buffer(...) CT_AT(ct_pt_from_buffer(__VA_ARGS__))
/* ct_load_pt, then ct_pt_state_dict of what it holds (of its .key entry when given). */
ct_state_dict *ct_load_pt_state_dict_with(const char *path, ct_pt_load_options o);
#define ct_load_pt_state_dict(path, ...) \
    CT_AT(ct_load_pt_state_dict_with(path, CT_OPTIONS(ct_pt_load_options, __VA_ARGS__)))

/* Loads a state dict file into m, the format read from its first bytes: a .pt/.pth
 * (zip or the older pickle format) or safetensors.  Strict as ct_load_state_dict (o
 * as there); 0 or -1. */
int ct_load_state_dict_file_with(ct_module *m, const char *path, ct_load_options o);
#define ct_load_state_dict_file(m, path, ...) \
    CT_AT(ct_load_state_dict_file_with(m, path, CT_OPTIONS(ct_load_options, __VA_ARGS__)))

/* ---- saving ------------------------------------------------------------- */

/* torch.save(state_dict, path): a zip archive that torch.load(path, weights_only=True)
 * reads (PyTorch 1.6 and later).  Tensors sharing a storage are written as one
 * storage, views keep their offsets and strides.  Written atomically; 0 or -1. */
int ct_save_pt(const ct_state_dict *sd, const char *path);
#define ct_save_pt(sd, path) CT_AT(ct_save_pt(sd, path))
/* torch.save(obj, path) for a tree of values.  PyTorch 1.13's weights_only loader
 * reads no floats (its unpickler lacks BINFLOAT; 2.0's has it): give 1.13 such a file
 * with weights_only=False, or store the number as a tensor. */
int ct_save_pt_value(const ct_pt_value *v, const char *path);
#define ct_save_pt_value(v, path) CT_AT(ct_save_pt_value(v, path))

#ifdef __cplusplus
}
#endif
CT_API_END
#endif
