/* SPDX-License-Identifier: GPL-2.0 */
/*
 * stallcap(1): what the tool's files share.
 *
 * Data flows through a sink: the live collector (collect.c) and the file
 * reader (record_file.c) both produce records, process snapshots and kernel
 * symbols; `record` writes them to a file, `report` groups them into stalls
 * (stalls.c), resolves their frames (resolve.c: ksyms.c, and usyms.h's
 * usyms.c, unwind.c) and prints them (output.h: format_text.c,
 * format_json.c, format_folded.c, the exports).
 */
#ifndef STALLCAP_TOOL_H
#define STALLCAP_TOOL_H

#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <sys/types.h>
#include <stallcap/stallcap.h>

#include "htab.h"

#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))
#define NSEC_PER_MSEC	1000000ULL
#define NSEC_PER_SEC	1000000000ULL

extern const char *prog;
extern bool sc_quiet;		/* warnx_() prints nothing (fuzzing) */
int open_regular(const char *path);
void warnx_(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void warn_open(int err);
__u64 now_ns(int clock);
bool str_ends_with(const char *s, const char *suffix);

/* ---- time and ids (util.c) ---- */

extern bool sc_time_utc;	/* wall-clock times in UTC, else local time */
void read_boot_id(char *buf, size_t len);
__s64 realtime_offset_ns(void);
__u64 self_pid_ns(void);
bool psi_on(void);
void sc_wallclock(char *buf, size_t len, __u64 realtime_ns);
void sc_ids(char *buf, size_t len, __u32 ns_id, __u32 host_id);

/**
 * struct sc_host_info - the recording host, as the record file keeps it
 * @release: uname -r
 * @boot_id: /proc/sys/kernel/random/boot_id
 * @realtime_offset_ns: CLOCK_REALTIME - CLOCK_MONOTONIC when recording began
 *	(records carry their own realtime stamps; this is the fallback)
 * @pid_ns_inum: pid namespace of the records' ns_pid/ns_tid (control page)
 * @reader_pid_ns_inum: pid namespace of the recording tool
 * @module_features: the module's STALLCAP_FEAT_* bits
 * @host_flags: SCF_HOST_* (record_file.h); 0: the recording tool did not say
 *	(a file made before them)
 */
struct sc_host_info {
	char release[65];
	char boot_id[37];
	__s64 realtime_offset_ns;
	__u64 pid_ns_inum;
	__u64 reader_pid_ns_inum;
	__u64 module_features;
	__u32 host_flags;
};

/* ---- processes (procmaps.c) ---- */

#define SC_PROT_R	1
#define SC_PROT_W	2
#define SC_PROT_X	4
#define SC_BUILD_ID_MAX	32

/** struct sc_map - one line of /proc/PID/maps, with the file's build-id. */
struct sc_map {
	__u64 start, end, pgoff;
	__u32 prot;
	__u32 build_id_len;
	__u8 build_id[SC_BUILD_ID_MAX];
	char *path;		/* "" for anonymous memory */
};

/** struct sc_proc - a snapshot of a process's mappings; older ones chained. */
struct sc_proc {
	__u32 pid;
	__u32 nr_maps;
	bool sorted;		/* maps by address, disjoint: binary search */
	__u64 snap_ns;		/* CLOCK_MONOTONIC */
	char comm[16];
	struct sc_map *maps;
	struct sc_proc *older;
};

struct buildid_cache;
int procmaps_snapshot(__u32 pid, struct buildid_cache *bc, struct sc_proc **out);
const struct sc_map *sc_proc_find(const struct sc_proc *p, __u64 addr);
bool sc_proc_is_text(const struct sc_proc *p, __u64 addr);
bool sc_proc_is_jit(const struct sc_proc *p, __u64 addr);
void sc_proc_free(struct sc_proc *p);
void sc_proc_normalize(struct sc_proc *p);
struct buildid_cache *buildid_cache_new(void);
void buildid_cache_keep_deleted(struct buildid_cache *bc);
void buildid_cache_free(struct buildid_cache *bc);

/* ---- copies of files deleted while mapped (kept_elf.c) ---- */

bool kept_elf_deleted(const char *path);
int kept_elf_path(const struct sc_map *m, char *buf, size_t len);
int kept_elf_save(int fd, const struct sc_map *m);
int elf_file_build_id(const char *path, __u8 *id, __u32 *len);
int vdso_image(void **img, size_t *len);

/* ---- kernel symbols (ksyms.c) ---- */

struct ksym {
	__u64 addr;
	__u32 size;
	const char *name;
	const char *mod;	/* NULL for the kernel proper */
};

struct ksyms;
struct ksyms *ksyms_new(void);
void ksyms_free(struct ksyms *ks);
int ksyms_load(struct ksyms *ks, const char *path);
int ksyms_add(struct ksyms *ks, __u64 addr, __u32 size, const char *name,
	      const char *mod);
const struct ksym *ksyms_find(struct ksyms *ks, __u64 addr);
bool ksym_frame_is_return(unsigned int i, const struct ksym *inner);
size_t ksyms_count(const struct ksyms *ks);

/* ---- the sink: who receives what the collector or a file produces ---- */

/**
 * struct sc_fdname - what a sample's system call's descriptor was open on
 * @pid: the sample's pid (initial namespace)
 * @tid: its tid
 * @stall_id: its stall
 * @sample_index: the sample
 * @fd: the descriptor (the call's first argument)
 * @name: /proc/PID/fd/FD's link when the sample was read: a path,
 *	"socket:[INODE]", "pipe:[INODE]", "anon_inode:[eventfd]", ...
 */
struct sc_fdname {
	__u32 pid, tid;
	__u64 stall_id;
	__u32 sample_index;
	__s32 fd;
	char *name;
};

struct sc_sink {
	int (*record)(struct sc_sink *sk, const struct stallcap_rec_header *rec);
	int (*proc)(struct sc_sink *sk, const struct sc_proc *p);
	int (*ksym)(struct sc_sink *sk, const struct ksym *sym);
	int (*lost)(struct sc_sink *sk, __u64 lost, __u64 suppressed);
	int (*vdso)(struct sc_sink *sk, const void *img, size_t len);
	int (*info)(struct sc_sink *sk, const struct sc_host_info *hi);
	int (*flush)(struct sc_sink *sk);
	/*
	 * live: process @pid exited and sent nothing for a while: forget what
	 * is kept of it (0), or -EBUSY while it is still needed (asked again
	 * later).  NULL: kept until the end.
	 */
	int (*proc_gone)(struct sc_sink *sk, __u32 pid);
	/*
	 * live: does the sink have work due with time, not with records (a
	 * stall shown while in progress, a screen to redraw)?  Then the loop
	 * flushes it every POLL_MS; otherwise it sleeps until a record or an
	 * exit comes (a second at most).  NULL: always.
	 */
	bool (*timed)(struct sc_sink *sk);
	/* the file of the next record's system call (comes before it) */
	int (*fdname)(struct sc_sink *sk, const struct sc_fdname *f);
};

/* ---- the record file (record_file.c) ---- */

struct scfile;
struct scfile *scfile_create(const char *path);
int scfile_close(struct scfile *f);
int scfile_flush(struct scfile *f);
struct sc_sink *scfile_sink(struct scfile *f);
/** scfile_read() - feed a file's contents to a sink; 0, or -errno. */
int scfile_read(const char *path, struct sc_sink *sk);

/* ---- the live collector (collect.c; its options: collect_opts.c) ---- */

struct collect_opts {
	int fd;			/* --fd: the application's session, or -1 */
	bool global;		/* system-wide reader */
	char **cmd;		/* command to run, NULL-terminated, or NULL */
	double duration;	/* seconds, 0: until interrupted / cmd exits */
	struct stallcap_config cfg;
	bool verbose;
	__u64 deadline_ns;	/* --deadline: watch unmodified processes */
	bool cputime;		/* --cputime */
	bool no_inherit;	/* --no-inherit: not the processes they create */
	bool park;		/* --park: futex waits and sleeps are idle */
	bool recv;		/* --recv: blocking socket receives are idle */
	bool children;		/* --children: -p's existing descendants too */
	__u32 pids[64];		/* -p: running processes to attach to */
	size_t npids;
};

/* ---- JIT symbols from /tmp/perf-PID.map (perfmap.c) ---- */
const char *perfmap_lookup(__u32 pid, __u64 addr, __u64 *off);
void perfmap_set_dir(const char *dir);
void perfmap_free_all(void);

/* ---- watching unmodified processes (record_attach.c) ---- */
int parse_duration(const char *arg, __u64 *ns);
int parse_duration_max(const char *arg, __u64 *ns, double max_ns);
int parse_pids(struct collect_opts *o, const char *arg);
int attach_process(const struct collect_opts *o, int fd, __u32 pid);
size_t attach_children(const struct collect_opts *o, int fd, __u32 pid);
void hint_program(const struct collect_opts *o, __u32 pid);
pid_t spawn_unmodified(const struct collect_opts *o, int fd);
bool any_alive(const struct collect_opts *o);

/* ---- what the live loop sleeps on (waitset.c) ---- */
struct waitset {
	struct pollfd pfd[2 + ARRAY_SIZE(((struct collect_opts *)0)->pids)];
	unsigned int n;		/* pfd[0]: the session; then pidfds */
	bool polled;		/* a process has no pidfd: look every POLL_MS */
	bool exited;		/* a pidfd fired */
};
void waitset_init(struct waitset *ws, int session_fd);
void waitset_add_exit(struct waitset *ws, pid_t pid);
int waitset_wait(struct waitset *ws, int timeout_ms);
bool waitset_exit_seen(const struct waitset *ws);
void waitset_release(struct waitset *ws);

int collect_run(const struct collect_opts *o, struct sc_sink *sk, int *cmd_status);
void collect_stop(void);
int collect_parse_opt(struct collect_opts *o, int opt, const char *arg);
void collect_opts_init(struct collect_opts *o);
int collect_check(struct collect_opts *o);

/* getopt_long entries of the collector's options, and their help text */
#define COLLECT_LONG_OPTIONS \
	{ "fd", required_argument, NULL, 'F' }, \
	{ "global", no_argument, NULL, 'g' }, \
	{ "duration", required_argument, NULL, 'd' }, \
	{ "ring-kb", required_argument, NULL, 'R' }, \
	{ "stack-bytes", required_argument, NULL, 'S' }, \
	{ "samples", required_argument, NULL, 'N' }, \
	{ "rate-limit", required_argument, NULL, 'L' }, \
	{ "defer-user", no_argument, NULL, 'D' }, \
	{ "verbose", no_argument, NULL, 'v' }, \
	{ "deadline", required_argument, NULL, 'T' }, \
	{ "cputime", no_argument, NULL, 'C' }, \
	{ "pid", required_argument, NULL, 'p' }, \
	{ "no-inherit", no_argument, NULL, COLLECT_OPT_NO_INHERIT }, \
	{ "park", no_argument, NULL, COLLECT_OPT_PARK }, \
	{ "recv", no_argument, NULL, COLLECT_OPT_RECV }, \
	{ "children", no_argument, NULL, COLLECT_OPT_CHILDREN }
#define COLLECT_OPT_NO_INHERIT	0x100	/* long options only */
#define COLLECT_OPT_PARK	0x101
#define COLLECT_OPT_CHILDREN	0x102
#define COLLECT_OPT_RECV	0x103
#define COLLECT_SHORT_OPTIONS "F:gd:R:S:N:L:DvT:Cp:"
#define COLLECT_HELP \
"  -T, --deadline DUR   watch an unmodified program: each thread's time\n" \
"                       between event-loop waits (epoll, poll, select,\n" \
"                       io_uring...) over DUR (20ms, 500us, 1s) is a stall\n" \
"  -C, --cputime        with --deadline: count only CPU time\n" \
"  -p, --pid PID[,PID]  with --deadline: attach to running processes\n" \
"      --children       with -p: their child processes too (those started\n" \
"                       before the attach)\n" \
"      --no-inherit     with --deadline: not the processes they start and\n" \
"                       the programs they execute (followed by default)\n" \
"      --park           with --deadline: futex, semaphore waits, sleeps idle\n" \
"                       too (runtimes that park idle workers: Go, tokio)\n" \
"      --recv           with --deadline: blocking socket receives, pipe and\n" \
"                       terminal reads idle too (a thread per connection\n" \
"                       waiting for a request, a pool's worker process, a\n" \
"                       serial line's reader)\n" \
"  -F, --fd N           read the session fd N the application passed\n" \
"  -g, --global         read every session's records (needs CAP_SYS_ADMIN)\n" \
"  -d, --duration DUR   stop after DUR (seconds, or 20ms, 1s...)\n" \
"  -R, --ring-kb KB     ring size of a session opened here (power of two)\n" \
"  -S, --stack-bytes N  raw user stack bytes copied per sample\n" \
"  -N, --samples N      samples per stall (1..64)\n" \
"  -L, --rate-limit N   stalls reported per minute (0: no limit)\n" \
"  -D, --defer-user     complete user stacks on return to user space\n" \
"  -v, --verbose        print counts when done, and each exited process\n" \
"                       forgotten (its maps and symbols freed)\n" \
"  -- CMD [ARGS]        run CMD with a session it finds through STALLCAP_FD\n" \
"                       (or, with --global, just run it)\n"

/* ---- resolved frames ---- */

enum sc_method { SC_METHOD_KERNEL, SC_METHOD_FP, SC_METHOD_DWARF };

struct sc_frame {
	__u64 addr;
	__u8 method;		/* enum sc_method */
	bool is_return;		/* a return address: symbolized at addr - 1 */
	const char *sym;	/* NULL if unknown */
	__u64 off;
	const char *dso;	/* kernel module, "kernel", or ELF path */
	__u64 dso_off;		/* user: offset in the mapped file */
	const char *file;	/* source file, or NULL */
	int line;
	bool inlined;		/* a function inlined at addr (DWARF), shown
				 * before the frame of the function it is in */
	bool signal_frame;	/* the signal return trampoline (DWARF): the
				 * next frame is where the signal came */
	bool unnamed;		/* user: in a file read, in no symbol it (or a
				 * debug file of it) carries */
};

/* ---- a sample's stack copies, and where its user frames end ---- */

/** struct sc_run - stack bytes copied from @start (size 0: none) */
struct sc_run {
	const void *bytes;
	__u64 start;
	__u32 size;
};

/* STALLCAP_SEC_USER_STACK_MORE sections read at most (the module writes 8) */
#define SC_MAX_MORE	16

/**
 * struct sc_copies - a sample's stack copies besides the view's own
 * @istack: STALLCAP_SEC_INTERRUPTED_STACK: the stack a signal handler on
 *	the alternate signal stack interrupted
 * @more: STALLCAP_SEC_USER_STACK_MORE: resident runs above the view's
 *	copy, past pages that were not resident, in address order
 * @nr_more: how many of @more
 */
struct sc_copies {
	struct sc_run istack;
	struct sc_run more[SC_MAX_MORE];
	unsigned int nr_more;
};

/** enum unwind_end - why a user stack's frames end where they do */
enum unwind_end {
	UNWIND_END_STOPPED,	/* the frame-pointer walk, or the unwinder stopped */
	UNWIND_END_OUTERMOST,	/* DWARF reached the outermost frame */
	UNWIND_END_COPY,	/* DWARF needed stack bytes past the copy's end */
	UNWIND_END_OUTSIDE,	/* DWARF needed memory no copy holds (addr) */
	UNWIND_END_ERROR,	/* a pc in no code, or a libdw error (msg) */
	UNWIND_END_JIT,		/* stopped at code no file describes (set by the resolver) */
	UNWIND_END_STACK_SWITCH, /* at Go's runtime.mcall (set by the resolver) */
	UNWIND_END_JIT_CHAIN,	/* a JIT's frame-pointer chain ended (set by the resolver) */
};

/**
 * struct unwind_stop - where and why a user stack's frames end
 * @end: why
 * @addr: UNWIND_END_COPY and UNWIND_END_OUTSIDE: the address of the word
 *	the walk needed for the next frame
 * @msg: UNWIND_END_ERROR: what ended it (libdw's message after "libdw: ")
 */
struct unwind_stop {
	enum unwind_end end;
	__u64 addr;
	char msg[96];
};

/* ---- stalls (stalls.c) ---- */

struct sc_sample {
	struct stallcap_sample_view v;		/* into buf */
	struct stallcap_sample_view user;	/* deferred user stack, or = v */
	struct sc_copies copies;	/* v's other stack copies */
	struct sc_copies user_copies;	/* user's */
	struct sc_sample *next;
	struct sc_sample *cookie_next;	/* stalls.c: waiting for its user stack */
	bool has_deferred;	/* user stack completed by a USER_STACK record */
	__u64 seen_ns;		/* live report: when it arrived (CLOCK_MONOTONIC) */
	bool merged;		/* a USER_STACK record merged into its sample */
	bool has_syscall;	/* sys holds its STALLCAP_SEC_SYSCALL */
	struct stallcap_sec_syscall sys;
	char *fd_name;		/* what sys's fd was open on (SCF_FDNAME), or NULL */
	__u64 buf[];
};

struct sc_stall {
	struct hnode node;	/* in stalls.by_id */
	__u32 pid, tid;
	__u64 stall_id;
	struct sc_sample *samples, *last;
	unsigned int nr_samples;
	unsigned int nr_defer_pending;	/* samples waiting for a user stack */
	struct stallcap_stall_end end;
	bool ended;
	bool printed;
	__u64 end_seen_ns;	/* live report: when the end arrived */
	unsigned int shown;	/* live report: samples already printed */
	bool fresh;		/* live report: samples came since the last print */
	struct sc_stall *next, *prev;
	struct cookie_ent *cookies;	/* stalls.c: its deferred-stack entries */
};

struct cookie_ent;

/**
 * struct stalls - the stalls of a report, in arrival order, indexed
 * @by_id: stalls by (tid, stall_id)
 * @by_cookie: struct cookie_ent by (stall, cookie), listed in @cookies
 */
struct stalls {
	struct sc_stall *head, *tail;
	unsigned int nr;	/* stalls seen */
	unsigned int live;	/* stalls held (seen, not released) */
	__u64 records, bad_records;
	struct htab by_id, by_cookie;
	/* the file of the next sample's system call, until that sample comes */
	struct sc_fdname pending_fd;
};

void stalls_init(struct stalls *st);
/** stalls_note_fd() - the file of a sample that comes next (copied) */
void stalls_note_fd(struct stalls *st, const struct sc_fdname *f);
void stalls_free(struct stalls *st);
/** stalls_add() - file a record; returns the stall it belongs to or NULL. */
struct sc_stall *stalls_add(struct stalls *st, const struct stallcap_rec_header *rec);
struct sc_stall *stalls_find(const struct stalls *st, __u32 tid, __u64 stall_id);
/** stalls_release() - free a stall the report is done with. */
void stalls_release(struct stalls *st, struct sc_stall *s);
bool stall_defer_pending(const struct sc_stall *s);
bool stalls_of_pid(const struct stalls *st, __u32 pid);

/* ---- resolving a stall for the formatters, one sample at a time (resolve.c) ---- */

/* user frames shown for one stack at most: unwound ones with inline ones */
#define SC_MAX_UFRAMES	(4 * STALLCAP_MAX_FRAMES)

/* the frames of a task section (runner, lock owner), resolved */
struct sc_rtask {
	struct sc_frame *f;	/* nk kernel frames, then nu user frames */
	int nk, nu;
};

/**
 * struct sc_rsample - one sample's frames, symbolized
 * @kf: @nk kernel frames; @uf: @nu user frames.  Both live in buffers of the
 *	struct sc_rstall, reused for its next sample.
 */
struct sc_rsample {
	const struct sc_sample *smp;
	struct sc_frame *kf, *uf;
	int nk, nu;
	struct unwind_stop ustop;	/* why the user frames end there */
	bool jit_unnamed;	/* a user frame in a JIT's code no perf map names */
	struct sc_rtask tasks[STALLCAP_VIEW_MAX_TASKS];	/* as v.tasks */
};

struct resolver;

/**
 * struct sc_rstall - a stall being resolved sample after sample
 * @first: the first sample shown (its fixed part), NULL if none
 * @nr: samples shown (a deferred user stack merged into its samples is not)
 * @cur: the current sample, after resolve_stall_next() returned 1
 */
struct sc_rstall {
	const struct sc_stall *st;
	const char *proc_comm;	/* process name from the snapshot, or NULL */
	const struct stallcap_sample *first;
	unsigned int nr;
	struct sc_rsample cur;
	/* private */
	struct resolver *r;
	const struct sc_sample *next;
	bool started;
	struct sc_frame *kbuf, *ubuf;
	struct sc_frame *rbuf;	/* user frames as unwound, before inline ones */
	struct sc_frame *tbuf[STALLCAP_VIEW_MAX_TASKS];
	__s64 rt_offset_ns;	/* CLOCK_REALTIME - CLOCK_MONOTONIC for this stall */
	bool rt_known;		/* rt_offset_ns is known */
	/* samples in sched_yield() among the first @counted resolved */
	unsigned int pos, counted, yield_samples;
};

/** sc_stall_yields() - every sample of @rs (all resolved) is in sched_yield() */
bool sc_stall_yields(const struct sc_rstall *rs);

#define RESOLVER_UNNAMED_FILES	4

struct resolver {
	struct ksyms *ks;		/* from the file / collector */
	struct ksyms *live;		/* kallsyms fallback, loaded on a miss */
	const char *live_path;		/* its file, or NULL: no fallback */
	bool live_tried;
	struct usyms *us;
	unsigned int unwind_flags;
	__s64 rt_offset_ns;		/* the recording's realtime offset */
	bool rt_offset_known;		/* (fallback for records without one) */
	/* files holding user frames that no symbol names (hint_unnamed()) */
	char unnamed_files[RESOLVER_UNNAMED_FILES][256];
	unsigned int nr_unnamed_files;
	bool more_unnamed_files;
};

/** resolve_stall() - start resolving @st (nothing is resolved yet); 0 or -ENOMEM. */
int resolve_stall(struct resolver *r, const struct sc_stall *st, struct sc_rstall *out);
/** resolve_stall_next() - resolve the next sample shown into out->cur: 1, or 0 at the end. */
int resolve_stall_next(struct sc_rstall *rs);
/** resolve_stall_rewind() - the next resolve_stall_next() starts over. */
void resolve_stall_rewind(struct sc_rstall *rs);
void resolve_stall_free(struct sc_rstall *rs);
const char *sc_state_name(__u8 state);
const char *sc_path_name(__u8 path);
const char *sc_clock_name(__u8 clock);
const char *sc_method_name(__u8 method);
__u64 sc_stall_over_ns(const struct sc_stall *st);
bool sc_same_stack(const struct sc_rsample *a, const struct sc_rsample *b);

/* ---- stacks seen (stack_set.c): "same stacks as sample N" in linear time ---- */

struct stack_set;
struct stack_set *stack_set_new(void);
void stack_set_free(struct stack_set *ss);
/**
 * stack_set_seen() - whether a sample with the same state and frame
 * addresses was added before; if so *@first is its sample_index, else @r
 * is added.  Returns true if seen.
 */
bool stack_set_seen(struct stack_set *ss, const struct sc_rsample *r, __u32 *first);

/* ---- the system call a sample's thread was inside (syscalls.c) ---- */

const char *sc_syscall_name(__u32 nr);
#define SC_SYSCALL_LABEL_MAX	24	/* "syscall 4294967295" */
const char *sc_syscall_label(__u32 nr, char *buf, size_t len);
int sc_syscall_fd(const struct stallcap_sec_syscall *sys);
void sc_syscall_text(FILE *out, const struct sc_sample *m);
void sc_syscall_json(FILE *out, const struct sc_sample *m);

/* ---- escaping names for output (escape.c) ---- */

size_t utf8_decode(const unsigned char *p, size_t left, __u32 *cp);
size_t utf8_len(const unsigned char *p, size_t left);
bool unsafe_char(__u32 cp);
/* text: printable ASCII and valid UTF-8 (no C1/bidi controls) as is, else \xNN */
void text_str(FILE *out, const char *s);
/* the same, with a length (for char arrays that may lack a NUL) */
void text_strn(FILE *out, const char *s, size_t n);
/* folded: as text_str, and ';' (the frame separator) shown as ':' */
void folded_str(FILE *out, const char *s);

/* ---- a live report fed by hand (report.c; host tests) ---- */
struct report;
struct report *report_live_new(FILE *out, bool json, unsigned int max_stalls);
struct sc_sink *report_live_sink(struct report *rp);
const struct sc_proc *report_live_proc(struct report *rp, __u32 pid);
void report_live_end(struct report *rp);

/* ---- stallcap top (top.c) ---- */
struct top;
struct top *top_new(FILE *out, bool batch, unsigned int max_stalls);
struct sc_sink *top_sink(struct top *tp);
void top_render(struct top *tp, __u64 now, double secs);
void top_free(struct top *tp);

/* ---- one-line hints (hints.c) ---- */

void hint_lost(__u64 lost);
void hint_kallsyms(int err);
void hint_no_watch(__u64 records);
void hint_park(__u64 futex, __u64 stalls);
void hint_recv(__u64 receiving, __u64 stalls);
void hint_busy_wait(__u64 yielding, __u64 stalls);
void hint_unnamed(const struct resolver *r);

/* ---- subcommands ---- */

int cmd_record(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_top(int argc, char **argv);
int cmd_stats(int argc, char **argv);
int cmd_archive(int argc, char **argv);
int exit_code(int ret, const struct collect_opts *o, int status);

#endif /* STALLCAP_TOOL_H */
