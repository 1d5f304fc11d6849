/* The data pipeline of a Fashion-MNIST training script:
 *
 *     transform = Compose([RandomCrop(28, padding=4), RandomHorizontalFlip(),
 *                          ConvertImageDtype(torch.float), Normalize((0.2860,), (0.3530,))])
 *     train = FashionMNIST(root, train=True, transform=transform)
 *     loader = DataLoader(train, batch_size=64, shuffle=True, num_workers=2,
 *                         generator=torch.Generator().manual_seed(0))
 *     for epoch in range(2):
 *         for images, labels in loader: ...
 *
 * Reads Debian's dataset-fashion-mnist (or the directory given with --data; it says so
 * and exits 0 when the files are missing).  Checks that each epoch shows every image
 * once (6000 per class) and that images come out normalized. */
#include <stdio.h>
#include <unistd.h>

#include "common/cli_options.h"
#include "ctorch.h"

int main(int argc, char **argv) {
    const char *root = "/usr/share/datasets/fashion-mnist";
    cli_option opts[] = {CLI_OPT_STRING("data", &root, "DIR", "the dataset's directory")};
    int status;
    if (!cli_parse(argc, argv,
                   "Runs Fashion-MNIST through a shuffling DataLoader with random crops and flips "
                   "for two epochs and checks every image comes once per epoch.",
                   opts, 1, &status))
        return status;
    char probe[4096];
    snprintf(probe, sizeof probe, "%s/train-labels-idx1-ubyte.gz", root);
    if (access(probe, R_OK) != 0) {
        printf("skipped: no Fashion-MNIST in %s (apt-get install dataset-fashion-mnist)\n", root);
        return 0;
    }
    ct_set_error_handler(ct_abort_on_error);
    /* The main thread only sums the batches: the two loader threads do the work, and an
     * idle OpenMP team would spin on the cores they need. */
    ct_set_num_threads(1);
    int failures = 0;
    CT_SCOPE {
        ct_transform *tf = ct_tf_compose(CT_TRANSFORM_LIST(
            ct_tf_random_crop(28, .padding = 4), ct_tf_random_horizontal_flip(0.5),
            ct_tf_to_float(), ct_tf_normalize(1, (double[]){0.2860}, (double[]){0.3530})));
        ct_dataset *train = ct_fashion_mnist(.root = root, .transform = tf);
        ct_loader *loader = ct_dataloader(train, .batch_size = 64, .shuffle = true,
                                          .num_workers = 2, .generator = ct_generator_new(0));
        printf("%lld samples, %lld batches per epoch\n", (long long)ct_dataset_len(train),
               (long long)ct_loader_len(loader));
        for (int epoch = 0; epoch < 2; epoch++) {
            int64_t per_class[10] = {0};
            double pixel_sum = 0;
            int64_t pixels = 0;
            ct_batch batch;
            while (ct_loader_next(loader, &batch)) {
                CT_SCOPE_HERE;
                ct_tensor *images = batch.t[0], *labels = batch.t[1];
                int64_t y[64];
                ct_copy_to_buffer(labels, y, CT_I64, sizeof y);
                for (int64_t i = 0; i < batch.size; i++) per_class[y[i]]++;
                pixel_sum += ct_item(ct_sum(ct_to(images, .dtype = CT_F64)));
                pixels += ct_numel(images);
            }
            printf("epoch %d: per class", epoch);
            for (int c = 0; c < 10; c++) {
                printf(" %lld", (long long)per_class[c]);
                failures += per_class[c] != 6000;
            }
            /* Padding adds zeros (-0.81 once normalized): the mean falls a little below 0. */
            double mean = pixel_sum / (double)pixels;
            printf(", mean pixel %.3f\n", mean);
            failures += !(mean > -0.5 && mean < 0.1);
        }
    }
    printf(failures ? "FAILED\n" : "ok\n");
    return failures != 0;
}
