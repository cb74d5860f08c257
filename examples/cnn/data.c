/* cnn: Fashion-MNIST's idx files, read through zlib (gzread reads plain
 * files too).
 *
 * An idx file is a 4-byte magic 00 00 08 ndim (08: unsigned bytes), ndim
 * big-endian 32-bit sizes, then the bytes row-major: images are idx3
 * [n, 28, 28], labels idx1 [n]. Everything a file says is checked before it
 * is used, so a missing, truncated or corrupt file is an error naming it. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "cnn.h"

#define MAX_ITEMS (1L << 20)     /* the sets are 60k and 10k; a header past this is corrupt */

const char *const cnn_class_names[CNN_CLASSES] = {"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
                                                  "Sandal",      "Shirt",   "Sneaker",  "Bag",   "Ankle boot"};

/* n bytes of f into buf; what names them in the error. */
static int read_exact(gzFile f, const char *path, void *buf, size_t n, const char *what)
{
    size_t got = 0;
    while (got < n) {
        unsigned chunk = n - got > (1u << 30) ? 1u << 30 : (unsigned)(n - got);
        int r = gzread(f, (char *)buf + got, chunk);
        if (r < 0) {
            int code;
            const char *msg = gzerror(f, &code);
            if (code == Z_ERRNO) return tg_error_set("%s: cannot read %s: %s", path, what, strerror(errno));
            return tg_error_set("%s: corrupt: %s while reading %s", path, msg, what);
        }
        if (r == 0) return tg_error_set("%s: truncated: %zu of the %zu bytes of %s", path, got, n, what);
        got += (size_t)r;
    }
    return 0;
}

/* Opens path and reads its idx header: ndim sizes into dims. NULL with a
 * message when the file cannot be read or is not an idx file of ndim dims. */
static gzFile open_idx(const char *path, int ndim, long *dims /* [ndim] */)
{
    errno = 0;
    gzFile f = gzopen(path, "rb");
    if (!f) {
        tg_error_set("%s: cannot open: %s", path, errno ? strerror(errno) : "out of memory");
        return NULL;
    }
    gzbuffer(f, 1 << 17);
    uint8_t h[16];
    if (read_exact(f, path, h, 4, "the magic number")) goto fail;
    if (h[0] || h[1] || h[2] != 0x08 || h[3] != ndim) {
        tg_error_set("%s: not an idx%d-ubyte file (magic %02x %02x %02x %02x, expected 00 00 08 %02x)", path, ndim,
                     h[0], h[1], h[2], h[3], ndim);
        goto fail;
    }
    if (read_exact(f, path, h + 4, 4 * (size_t)ndim, "the sizes")) goto fail;
    for (int d = 0; d < ndim; d++) {
        const uint8_t *b = h + 4 + 4 * d;
        dims[d] = (long)((uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3]);
    }
    if (dims[0] < 1 || dims[0] > MAX_ITEMS) {
        tg_error_set("%s: corrupt: the header says %ld items (expected 1 to %ld)", path, dims[0], MAX_ITEMS);
        goto fail;
    }
    return f;
fail:
    gzclose(f);
    return NULL;
}

/* After the last item: a file read whole must end there. */
static int expect_end(gzFile f, const char *path, long items)
{
    uint8_t extra;
    int r = gzread(f, &extra, 1);
    if (r == 0) return 0;
    if (r < 0) return read_exact(f, path, &extra, 1, "the end of the file");  /* names the zlib error */
    return tg_error_set("%s: corrupt: bytes past the %ld items its header announces", path, items);
}

void cnn_set_free(cnn_set *s)
{
    free(s->pixels);
    free(s->labels);
    memset(s, 0, sizeof *s);
}

int cnn_set_load(cnn_set *s, const char *images, const char *labels, long limit)
{
    memset(s, 0, sizeof *s);
    long di[3], dl[1];
    gzFile fi = open_idx(images, 3, di), fl = fi ? open_idx(labels, 1, dl) : NULL;
    int rc = -1;
    if (!fl) goto done;
    if (di[1] != CNN_SIDE || di[2] != CNN_SIDE) {
        tg_error_set("%s: images are %ld x %ld, expected %d x %d", images, di[1], di[2], CNN_SIDE, CNN_SIDE);
        goto done;
    }
    if (di[0] != dl[0]) {
        tg_error_set("%s holds %ld images but %s holds %ld labels", images, di[0], labels, dl[0]);
        goto done;
    }
    long n = limit > 0 && limit < di[0] ? limit : di[0];
    size_t px = (size_t)n * CNN_SIDE * CNN_SIDE;
    s->pixels = malloc(px);
    s->labels = malloc((size_t)n);
    if (!s->pixels || !s->labels) {
        tg_error_set("out of memory for %ld images of %s", n, images);
        goto done;
    }
    if (read_exact(fi, images, s->pixels, px, "the pixels") || read_exact(fl, labels, s->labels, (size_t)n, "the labels"))
        goto done;
    if (n == di[0] && (expect_end(fi, images, n) || expect_end(fl, labels, n))) goto done;
    for (long i = 0; i < n; i++)
        if (s->labels[i] >= CNN_CLASSES) {
            tg_error_set("%s: label %d of item %ld is out of range [0, %d]", labels, s->labels[i], i,
                         CNN_CLASSES - 1);
            goto done;
        }
    s->n = (int)n;
    rc = 0;
done:
    if (fi) gzclose(fi);
    if (fl) gzclose(fl);
    if (rc) cnn_set_free(s);
    return rc;
}

int cnn_data_load(const char *dir, long limit, cnn_set *train, cnn_set *test)
{
    char p[4][CNN_PATH_MAX + 64];
    static const char *const names[4] = {"train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz",
                                         "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"};
    for (int i = 0; i < 4; i++) snprintf(p[i], sizeof p[i], "%s/%s", dir, names[i]);
    memset(test, 0, sizeof *test);
    if (cnn_set_load(train, p[0], p[1], limit) || cnn_set_load(test, p[2], p[3], limit)) {
        if (strcmp(dir, CNN_DATA_DIR) == 0 && strstr(tg_error(), "No such file"))
            tg_error_set("%s (Debian's package dataset-fashion-mnist installs it: apt-get install "
                         "dataset-fashion-mnist; or give --data DIR)", tg_error());
        cnn_set_free(train);
        return -1;
    }
    return 0;
}
