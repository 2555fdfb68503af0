/* A stand-in for a GPU runtime, for machines without a GPU: built as
 * libcuda.so.1 (the name CUDA's driver library is loaded under), it answers
 * cuPointerGetAttribute(CU_POINTER_ATTRIBUTE_MEMORY_TYPE) as CUDA does:
 * CU_MEMORYTYPE_DEVICE for its "device" memory, CUDA_ERROR_INVALID_VALUE for
 * memory it does not know. Its "device" memory is mapped PROT_NONE, so any
 * host access faults (SIGSEGV), as a host access to a real GPU's memory
 * would; fake_device_write/read copy in and out as cudaMemcpy does, and
 * fake_device_open/close let a stand-in GPU-aware MPI library (fake_gpu_mpi.c)
 * reach it. tests/mpi_library.rs builds and uses it. */
#include <stddef.h>
#include <string.h>
#include <sys/mman.h>

#define MAX_ALLOCS 64
static struct { char *base; size_t len; } allocs[MAX_ALLOCS];
static int nallocs;

static int find(const void *p) {
    for (int i = 0; i < nallocs; i++)
        if ((const char *)p >= allocs[i].base && (const char *)p < allocs[i].base + allocs[i].len)
            return i;
    return -1;
}

/* CUresult cuPointerGetAttribute(void *data, CUpointer_attribute, CUdeviceptr) */
int cuPointerGetAttribute(void *data, int attribute, unsigned long long ptr) {
    if (attribute != 2 /* CU_POINTER_ATTRIBUTE_MEMORY_TYPE */ || data == NULL) return 1;
    if (find((const void *)(size_t)ptr) < 0) return 1; /* CUDA_ERROR_INVALID_VALUE */
    *(unsigned *)data = 2;                              /* CU_MEMORYTYPE_DEVICE */
    return 0;
}

void *fake_device_alloc(size_t n) {
    if (nallocs == MAX_ALLOCS) return NULL;
    size_t len = (n + 4095) / 4096 * 4096 + 4096;
    char *p = mmap(NULL, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return NULL;
    allocs[nallocs].base = p;
    allocs[nallocs].len = len;
    nallocs++;
    return p;
}

/* Opens the allocation holding p for host access (for the stand-in
 * library's own copies); returns 0 if p is not device memory. */
int fake_device_open(const void *p) {
    int i = find(p);
    if (i < 0) return 0;
    mprotect(allocs[i].base, allocs[i].len, PROT_READ | PROT_WRITE);
    return 1;
}

void fake_device_close(const void *p) {
    int i = find(p);
    if (i >= 0) mprotect(allocs[i].base, allocs[i].len, PROT_NONE);
}

void fake_device_write(void *dev, const void *src, size_t n) {
    fake_device_open(dev);
    memcpy(dev, src, n);
    fake_device_close(dev);
}

void fake_device_read(void *dst, const void *dev, size_t n) {
    fake_device_open(dev);
    memcpy(dst, dev, n);
    fake_device_close(dev);
}
