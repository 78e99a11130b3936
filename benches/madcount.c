/*
 * madcount.c: counts the MADs a process writes to /dev/infiniband/umad*, by management class,
 * method and attribute. A measuring aid for benches/bringup-ratio.sh --count-mads, not part of
 * ibsm: it is preloaded before ibsim's umad2sim (LD_PRELOAD="madcount.so libumad2sim.so"), so
 * that its open() and write() see the umad device and its MADs first and then pass every call
 * on unchanged. The same counter works for ibsm and for OpenSM (libibumad writes each MAD with
 * one write() as well).
 *
 * At exit (a normal exit, or _exit(), which ibsm uses under umad2sim) it writes one line per
 * (class, method, attribute) to $MADCOUNT_OUT.<pid>:
 *     class=0x81 method=0x01 attr=0x0011 count=2939
 * Nothing is written without MADCOUNT_OUT.
 *
 * Build: cc -O2 -shared -fPIC -o madcount.so madcount.c -ldl
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

/* The old ib_user_mad header (umad2sim) is 56 bytes; with the P_Key index it is 64. */
#define HDR_OLD 56
#define HDR_PKEY 64
#define MAD_LEN 256

static int umad_fd = -1;
/* Attribute slots: 0x000-0x2ff as they are, 0xff00-0xffff (vendor) at 0x300-0x3ff, any other
 * attribute at OTHER (printed as 0x0000 with other=1). */
#define OTHER 0x400
static unsigned long counts[256][256][OTHER + 1]; /* class, method, attribute slot */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int dumped;

static void dump(void)
{
	const char *out = getenv("MADCOUNT_OUT");
	char path[4096];
	FILE *f;

	if (dumped || !out)
		return;
	dumped = 1;
	snprintf(path, sizeof path, "%s.%d", out, (int)getpid());
	f = fopen(path, "w");
	if (!f)
		return;
	for (int c = 0; c < 256; c++)
		for (int m = 0; m < 256; m++)
			for (int a = 0; a <= OTHER; a++)
				if (counts[c][m][a])
					fprintf(f, "class=0x%02x method=0x%02x attr=0x%04x count=%lu%s\n", c, m,
						a < 0x300 ? a : a < OTHER ? 0xff00 + (a - 0x300) : 0,
						counts[c][m][a], a == OTHER ? " other=1" : "");
	fclose(f);
}

__attribute__((destructor)) static void at_exit(void)
{
	dump();
}

void _exit(int code)
{
	void (*real)(int) = (void (*)(int))dlsym(RTLD_NEXT, "_exit");

	dump();
	real(code);
	for (;;)
		;
}

static int note_open(const char *path, int fd)
{
	if (fd >= 0 && path && strncmp(path, "/dev/infiniband/umad", 20) == 0)
		umad_fd = fd;
	return fd;
}

/* The next library's `sym` (open or open64) called, and the umad fd noted. */
static int open_next(const char *sym, const char *path, int flags, int mode)
{
	int (*real)(const char *, int, ...) = (int (*)(const char *, int, ...))dlsym(RTLD_NEXT, sym);

	return note_open(path, real(path, flags, mode));
}

int open(const char *path, int flags, ...)
{
	va_list ap;
	int mode;

	va_start(ap, flags);
	mode = va_arg(ap, int);
	va_end(ap);
	return open_next("open", path, flags, mode);
}

int open64(const char *path, int flags, ...)
{
	va_list ap;
	int mode;

	va_start(ap, flags);
	mode = va_arg(ap, int);
	va_end(ap);
	return open_next("open64", path, flags, mode);
}

ssize_t write(int fd, const void *buf, size_t n)
{
	ssize_t (*real)(int, const void *, size_t) =
		(ssize_t (*)(int, const void *, size_t))dlsym(RTLD_NEXT, "write");

	if (fd == umad_fd && n >= HDR_OLD + 24) {
		const unsigned char *mad = (const unsigned char *)buf + (n == HDR_PKEY + MAD_LEN ? HDR_PKEY : HDR_OLD);
		unsigned attr = (unsigned)mad[16] << 8 | mad[17];

		pthread_mutex_lock(&lock);
		counts[mad[1]][mad[3]][attr < 0x300 ? attr : attr >= 0xff00 ? 0x300 + (attr & 0xff) : OTHER]++;
		pthread_mutex_unlock(&lock);
	}
	return real(fd, buf, n);
}
