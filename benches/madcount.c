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
 * With $MADCOUNT_TIMELINE set it also keeps a timeline: the process's start (when this library
 * is loaded), the umad device's open, and every MAD written to it and read from it, each with
 * the wall clock (CLOCK_REALTIME, ns), written at exit to $MADCOUNT_TIMELINE.<pid>, one event a
 * line:
 *     1764240000123456789 send class=0x81 method=0x01 attr=0x0011 state=0 tid=0x00000001
 *     1764240000123461234 recv class=0x81 method=0x81 attr=0x0011 state=0 tid=0x00000001
 * (also "start", "open" and "exit", the last before the timeline is written; state is a PortInfo SMP's PortState, 0 for any other MAD; tid the low
 * 32 bits of the transaction ID).
 * benches/madtimeline.py reads it. Up to 4 M events are kept.
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
#include <time.h>
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

/* The timeline ($MADCOUNT_TIMELINE): kinds of event, and the events themselves. */
enum { EV_START, EV_OPEN, EV_SEND, EV_RECV, EV_EXIT };
static const char *const ev_names[] = { "start", "open", "send", "recv", "exit" };
struct event {
	long long ns;
	unsigned char kind, mclass, method, state;
	unsigned short attr;
	unsigned tid; /* the low 32 bits of the transaction ID */
};
#define MAX_EVENTS (4u << 20)
static struct event *events;
static unsigned n_events;

static long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* Notes one event of the timeline (nothing without $MADCOUNT_TIMELINE). `mad` (`len` bytes)
 * may be NULL. */
static void note(int kind, const unsigned char *mad, size_t len)
{
	long long t;

	if (!events)
		return;
	/* The clock is read under the lock, so that the timeline is in time order. */
	pthread_mutex_lock(&lock);
	t = now_ns();
	if (n_events < MAX_EVENTS) {
		struct event *e = &events[n_events++];
		e->ns = t;
		e->kind = (unsigned char)kind;
		e->mclass = mad ? mad[1] : 0;
		e->method = mad ? mad[3] : 0;
		e->attr = mad ? (unsigned short)((unsigned)mad[16] << 8 | mad[17]) : 0;
		e->tid = mad ? (unsigned)mad[12] << 24 | (unsigned)mad[13] << 16 | (unsigned)mad[14] << 8 | mad[15] : 0;
		/* A PortInfo SMP's PortState (the SMP data starts at byte 64, PortState is the low
		 * nibble of its byte 32): tells the arming Sets from the activating ones. */
		e->state = mad && len > 64 + 32 && (mad[1] == 0x01 || mad[1] == 0x81) && e->attr == 0x15 ? mad[64 + 32] & 0x0f : 0;
	}
	pthread_mutex_unlock(&lock);
}

__attribute__((constructor)) static void at_start(void)
{
	if (getenv("MADCOUNT_TIMELINE"))
		events = calloc(MAX_EVENTS, sizeof *events);
	note(EV_START, NULL, 0);
}

static void dump_timeline(void)
{
	const char *out = getenv("MADCOUNT_TIMELINE");
	char path[4096];
	FILE *f;

	if (!events || !out)
		return;
	snprintf(path, sizeof path, "%s.%d", out, (int)getpid());
	f = fopen(path, "w");
	if (!f)
		return;
	for (unsigned i = 0; i < n_events; i++) {
		const struct event *e = &events[i];
		fprintf(f, "%lld %s", e->ns, ev_names[e->kind]);
		if (e->kind == EV_SEND || e->kind == EV_RECV)
			fprintf(f, " class=0x%02x method=0x%02x attr=0x%04x state=%u tid=0x%08x", e->mclass, e->method,
				e->attr, e->state, e->tid);
		fputc('\n', f);
	}
	fclose(f);
}

static void dump(void)
{
	const char *out = getenv("MADCOUNT_OUT");
	char path[4096];
	FILE *f;

	if (dumped)
		return;
	dumped = 1;
	note(EV_EXIT, NULL, 0);
	dump_timeline();
	if (!out)
		return;
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
	if (fd >= 0 && path && strncmp(path, "/dev/infiniband/umad", 20) == 0) {
		umad_fd = fd;
		note(EV_OPEN, NULL, 0);
	}
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
	static ssize_t (*real)(int, const void *, size_t);

	if (!real)
		real = (ssize_t (*)(int, const void *, size_t))dlsym(RTLD_NEXT, "write");

	if (fd == umad_fd && n >= HDR_OLD + 24) {
		const unsigned char *mad = (const unsigned char *)buf + (n == HDR_PKEY + MAD_LEN ? HDR_PKEY : HDR_OLD);
		unsigned attr = (unsigned)mad[16] << 8 | mad[17];

		pthread_mutex_lock(&lock);
		counts[mad[1]][mad[3]][attr < 0x300 ? attr : attr >= 0xff00 ? 0x300 + (attr & 0xff) : OTHER]++;
		pthread_mutex_unlock(&lock);
		note(EV_SEND, mad, n - (size_t)(mad - (const unsigned char *)buf));
	}
	return real(fd, buf, n);
}

/* Reads pass through unchanged; with the timeline on, each MAD read from the umad device is
 * noted (umad2sim returns -11 for an empty queue: not a MAD). */
ssize_t read(int fd, void *buf, size_t n)
{
	static ssize_t (*real)(int, void *, size_t);
	ssize_t got;

	if (!real)
		real = (ssize_t (*)(int, void *, size_t))dlsym(RTLD_NEXT, "read");
	got = real(fd, buf, n);

	if (events && fd == umad_fd && got >= HDR_OLD + 24) {
		size_t hdr = got == HDR_PKEY + MAD_LEN ? HDR_PKEY : HDR_OLD;

		note(EV_RECV, (const unsigned char *)buf + hdr, (size_t)got - hdr);
	}
	return got;
}
