/* The main job: a CNN trained on Fashion-MNIST (Debian's dataset-fashion-mnist), as a
 * PyTorch tutorial would write it.
 *
 *     fashion_mnist [--epochs 3] [--batch-size 64] [--lr 1e-3] [--workers 2] [--seed 0]
 *                   [--out runs/fashion_mnist] [--resume latest|PATH] [--data DIR]
 *                   [--limit N] [--test-limit N] [--min-accuracy A] [--threads N]
 *                   [--overwrite]
 *
 * Each epoch trains with Adam, shows a progress bar (plain lines when stdout is not a
 * terminal), evaluates on the test set in eval mode under no_grad, and keeps the last
 * checkpoints and the best one in --out, with the run's configuration as JSON beside
 * them.  --resume continues a run exactly where its checkpoint left it.  A new run
 * refuses an --out that holds an earlier run's checkpoints unless --overwrite says to
 * delete them (mixing runs would judge the new best against the old one). */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ctorch.h"

typedef struct {
    int epochs, workers, threads;
    int64_t batch_size, limit, test_limit;
    double lr, min_accuracy;
    uint64_t seed;
    const char *out, *resume, *data;
    bool overwrite;
} config;

static void usage(const char *prog) {
    fprintf(stderr,
            "usage: %s [--epochs N] [--batch-size N] [--lr X] [--workers N] [--seed N]\n"
            "          [--out DIR] [--resume latest|PATH] [--data DIR] [--limit N]\n"
            "          [--test-limit N] [--min-accuracy A] [--threads N] [--overwrite]\n",
            prog);
    exit(2);
}

static config parse_args(int argc, char **argv) {
    config c = {
        .epochs = 3, .workers = 2, .batch_size = 64, .lr = 1e-3, .out = "runs/fashion_mnist"};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) usage(argv[0]);
        if (!strcmp(a, "--overwrite")) {
            c.overwrite = true;
            continue;
        }
        if (!v) usage(argv[0]);
        i++;
        if (!strcmp(a, "--epochs"))
            c.epochs = atoi(v);
        else if (!strcmp(a, "--batch-size"))
            c.batch_size = atoll(v);
        else if (!strcmp(a, "--lr"))
            c.lr = atof(v);
        else if (!strcmp(a, "--workers"))
            c.workers = atoi(v);
        else if (!strcmp(a, "--seed"))
            c.seed = strtoull(v, NULL, 10);
        else if (!strcmp(a, "--out"))
            c.out = v;
        else if (!strcmp(a, "--resume"))
            c.resume = v;
        else if (!strcmp(a, "--data"))
            c.data = v;
        else if (!strcmp(a, "--limit"))
            c.limit = atoll(v);
        else if (!strcmp(a, "--test-limit"))
            c.test_limit = atoll(v);
        else if (!strcmp(a, "--min-accuracy"))
            c.min_accuracy = atof(v);
        else if (!strcmp(a, "--threads"))
            c.threads = atoi(v);
        else
            usage(argv[0]);
    }
    if (c.epochs < 1 || c.batch_size < 1 || c.workers < 0 || !(c.lr > 0)) usage(argv[0]);
    return c;
}

/* mkdir -p */
static int mkdir_p(const char *path) {
    char buf[4096];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *p = buf + 1; *p; p++)
        if (*p == '/') {
            *p = 0;
            mkdir(buf, 0755);
            *p = '/';
        }
    return mkdir(buf, 0755) == 0 || access(buf, W_OK) == 0 ? 0 : -1;
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* ---- progress --------------------------------------------------------------- */

typedef struct {
    bool tty;
    int epoch, epochs;
    int64_t total, done, last_line;
    double start, loss_sum;
    int64_t loss_n;
} progress;

static void progress_show(progress *p, bool final) {
    double t = now() - p->start, rate = t > 0 ? (double)p->done / t : 0;
    double eta = rate > 0 ? (double)(p->total - p->done) / rate : 0;
    double loss = p->loss_n ? p->loss_sum / (double)p->loss_n : NAN;
    if (p->tty) {
        int width = 30, filled = p->total ? (int)(width * p->done / p->total) : width;
        printf("\repoch %d/%d [%.*s%s%*s] %lld/%lld  %.0f samples/s  ETA %d:%02d  loss %.4f",
               p->epoch, p->epochs, filled,
               "==============================", filled < width ? ">" : "",
               width - filled - (filled < width), "", (long long)p->done, (long long)p->total, rate,
               (int)eta / 60, (int)eta % 60, loss);
        if (final) printf("\n");
        fflush(stdout);
    } else if (final || p->done - p->last_line >= p->total / 5) {
        printf("epoch %d/%d: %lld/%lld samples, %.0f samples/s, ETA %ds, loss %.4f\n", p->epoch,
               p->epochs, (long long)p->done, (long long)p->total, rate, (int)eta, loss);
        p->last_line = p->done;
    }
}

/* ---- the model -------------------------------------------------------------- */

static ct_module *make_model(void) {
    return ct_sequential(CT_MODULES(ct_nn_conv2d(1, 32, CT_DIMS(3), .padding = CT_DIMS(1)),
                                    ct_nn_relu(), ct_nn_max_pool2d(CT_DIMS(2)),
                                    ct_nn_conv2d(32, 64, CT_DIMS(3), .padding = CT_DIMS(1)),
                                    ct_nn_relu(), ct_nn_max_pool2d(CT_DIMS(2)), ct_nn_flatten(),
                                    ct_nn_linear(3136, 128), ct_nn_relu(), ct_nn_linear(128, 10)));
}

/* Fashion-MNIST as floats normalised with the training set's mean and std. */
static ct_dataset *make_dataset(const config *c, bool train, int64_t limit) {
    const double mean = 0.2860, std = 0.3530;
    ct_transform *tf =
        ct_tf_compose(2, (ct_transform *[]){ct_tf_to_float(), ct_tf_normalize(1, &mean, &std)});
    ct_dataset *ds = ct_fashion_mnist(.root = c->data, .train = train, .transform = tf);
    if (ds && limit > 0 && limit < ct_dataset_len(ds)) {
        int64_t *idx = malloc(sizeof *idx * (size_t)limit);
        for (int64_t i = 0; i < limit; i++) idx[i] = i;
        ds = ct_subset(ds, idx, limit);
        free(idx);
    }
    return ds;
}

static double evaluate(ct_module *model, ct_loader *test, double *loss_out) {
    int64_t correct = 0, seen = 0;
    double loss = 0;
    ct_module_eval(model);
    CT_NO_GRAD {
        ct_batch b;
        while (true) {
            CT_SCOPE_HERE;
            if (!ct_loader_next(test, &b)) break;
            ct_tensor *logits = ct_forward(model, b.t[0]);
            loss += ct_item(ct_cross_entropy(logits, b.t[1], .reduction = CT_REDUCTION_SUM));
            correct += ct_item_int(ct_sum(ct_eq(ct_argmax(logits, .dims = CT_DIMS(1)), b.t[1])));
            seen += b.size;
        }
    }
    ct_module_train(model, true);
    *loss_out = seen ? loss / (double)seen : NAN;
    return seen ? (double)correct / (double)seen : 0;
}

static void write_config(const config *c, char *json, size_t size) {
    snprintf(json, size,
             "{\"model\": \"conv(1,32,3,p1)-relu-maxpool2-conv(32,64,3,p1)-relu-maxpool2-flatten-"
             "linear(3136,128)-relu-linear(128,10)\", \"optimizer\": \"Adam\", \"lr\": %g, "
             "\"batch_size\": %lld, \"epochs\": %d, \"workers\": %d, \"seed\": %llu, "
             "\"limit\": %lld, \"dataset\": \"Fashion-MNIST\"}",
             c->lr, (long long)c->batch_size, c->epochs, c->workers, (unsigned long long)c->seed,
             (long long)c->limit);
}

/* Counts dir's checkpoint files (ckpt-*.safetensors, best.safetensors), deleting them
 * when remove is set. */
static int checkpoint_files(const char *dir, bool remove) {
    DIR *d = opendir(dir);
    if (!d) return 0;
    int n = 0;
    struct dirent *e;
    char path[4352];
    while ((e = readdir(d))) {
        const char *name = e->d_name, *ext = strrchr(name, '.');
        if (!ext || strcmp(ext, ".safetensors") ||
            (strncmp(name, "ckpt-", 5) && strcmp(name, "best.safetensors")))
            continue;
        n++;
        snprintf(path, sizeof path, "%s/%s", dir, name);
        if (remove) unlink(path);
    }
    closedir(d);
    return n;
}

/* path gets text plus a newline, or keeps its old contents if anything fails. */
static int write_text_atomically(const char *path, const char *text) {
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp-%ld", path, (long)getpid());
    FILE *f = fopen(tmp, "w");
    if (!f) return -1;
    bool ok = fprintf(f, "%s\n", text) >= 0 && fflush(f) == 0 && fsync(fileno(f)) == 0;
    ok = fclose(f) == 0 && ok;
    if (ok && rename(tmp, path) == 0) return 0;
    unlink(tmp);
    return -1;
}

int main(int argc, char **argv) {
    config c = parse_args(argc, argv);
    setvbuf(stdout, NULL, _IOLBF, 0); /* progress lines appear as they happen in logs too */
    ct_set_error_handler(ct_abort_on_error);
    if (c.threads > 0) ct_set_num_threads(c.threads);
    ct_manual_seed(c.seed);
    if (mkdir_p(c.out) != 0) {
        fprintf(stderr, "cannot create the output directory %s\n", c.out);
        return 1;
    }
    if (!c.resume && checkpoint_files(c.out, c.overwrite) > 0 && !c.overwrite) {
        fprintf(stderr,
                "%s holds the checkpoints of an earlier run: continue it with --resume latest, "
                "or pass --overwrite to delete them, or choose another --out\n",
                c.out);
        return 1;
    }
    char json[1024], path[4096];
    write_config(&c, json, sizeof json);
    snprintf(path, sizeof path, "%s/config.json", c.out);
    if (write_text_atomically(path, json) != 0) {
        fprintf(stderr, "cannot write %s\n", path);
        return 1;
    }

    int rc = 0;
    CT_SCOPE { /* everything below is freed when the run ends */
        ct_module *model = make_model();
        ct_tensor *params[16];
        int n_params = ct_parameters(model, params, 16);
        ct_optim *opt = ct_adam(params, n_params, .lr = c.lr);
        ct_generator *shuffle = ct_generator_new(c.seed);
        ct_dataset *train_set = make_dataset(&c, true, c.limit);
        ct_loader *train = ct_dataloader(train_set, .batch_size = c.batch_size, .shuffle = true,
                                         .num_workers = c.workers, .generator = shuffle);
        ct_loader *test = ct_dataloader(make_dataset(&c, false, c.test_limit), .batch_size = 256,
                                        .num_workers = c.workers);
        ct_module_print(model);

        ct_training_state st = {.model = model, .optim = opt, .config = json};
        int first_epoch = 1;
        if (c.resume) {
            if (!strcmp(c.resume, "latest")) {
                if (ct_checkpoint_latest(c.out, path, sizeof path) != 0) {
                    fprintf(stderr, "no checkpoint to resume in %s\n", c.out);
                    rc = 1;
                    break;
                }
            } else {
                snprintf(path, sizeof path, "%s", c.resume);
            }
            ct_checkpoint_load(path, &st, NULL);
            first_epoch = (int)st.epoch + 1;
            printf("resumed from %s (epoch %lld, step %lld)\n", path, (long long)st.epoch,
                   (long long)st.step);
        }

        /* A run resumed from --out's latest checkpoint keeps that run's best; one resumed
         * from a file elsewhere starts from that checkpoint's metric. */
        double best = -1, t_start = now();
        if (c.resume && (strcmp(c.resume, "latest") || ct_checkpoint_best_metric(c.out, &best) != 0))
            best = st.metric;
        int64_t trained = 0;
        for (int epoch = first_epoch; epoch <= c.epochs; epoch++) {
            ct_loader_set_epoch(train,
                                (uint64_t)epoch); /* the shuffle depends on the epoch alone */
            progress p = {.tty = isatty(STDOUT_FILENO),
                          .epoch = epoch,
                          .epochs = c.epochs,
                          .total = ct_dataset_len(train_set),
                          .start = now()};
            ct_batch b;
            while (true) {
                CT_SCOPE_HERE;
                if (!ct_loader_next(train, &b)) break;
                ct_tensor *loss = ct_cross_entropy(ct_forward(model, b.t[0]), b.t[1]);
                ct_zero_grad(opt);
                ct_backward(loss);
                ct_step(opt);
                st.step++;
                p.done += b.size;
                p.loss_sum += ct_item(loss);
                p.loss_n++;
                if (p.loss_n % 20 == 0) progress_show(&p, false);
            }
            progress_show(&p, true);
            trained += p.done;
            double test_loss, acc = evaluate(model, test, &test_loss);
            printf("epoch %d: train loss %.4f, test loss %.4f, test accuracy %.2f%%\n", epoch,
                   p.loss_sum / (double)p.loss_n, test_loss, 100 * acc);
            st.epoch = epoch;
            st.metric = acc;
            if (ct_checkpoint_keep(c.out, &st, (ct_checkpoint_policy){.keep_last = 2}) == 1)
                printf("  new best: saved %s/best.safetensors\n", c.out);
            if (acc > best) best = acc;
        }
        double t = now() - t_start;
        printf("done: %d epochs, best test accuracy %.2f%%, %.1f s, %.0f samples/s; checkpoints in "
               "%s\n",
               c.epochs - first_epoch + 1, 100 * best, t, t > 0 ? (double)trained / t : 0, c.out);
        if (c.min_accuracy > 0 && best < c.min_accuracy) {
            fprintf(stderr, "accuracy %.4f is below the required %.4f\n", best, c.min_accuracy);
            rc = 1;
        }
    }
    return rc;
}
