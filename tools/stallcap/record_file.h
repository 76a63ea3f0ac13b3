/* SPDX-License-Identifier: GPL-2.0 */
/*
 * stallcap(1): the record file format (stallcap.data).
 *
 * A header, then chunks; every chunk is { __u32 type; __u32 size; } followed
 * by its payload, size counting the 8 header bytes, a multiple of 8.  All
 * integers are the recording host's byte order (x86-64: little endian).
 * Unknown chunk types are skipped; a truncated last chunk (the file is still
 * being written, or was cut) ends the reading without error, with a warning.
 * A header longer than struct scf_header (up to SCF_MAX_HEADER) is skipped.
 *
 *   SCF_RECORD  a ring record as the module wrote it (struct
 *               stallcap_rec_header ..., ABI version 2 layout: fixed part
 *               of fixed_size bytes, then sections)
 *   SCF_PROC    struct scf_proc, then nr_maps x (struct scf_map + path)
 *   SCF_KSYM    struct scf_ksym + name + module name
 *   SCF_LOST    struct scf_lost: the ring's counters when they changed
 *   SCF_VDSO    the recording kernel's vDSO image
 *   SCF_INFO    struct scf_info: the host (boot id), the wall-clock offset,
 *               the pid namespaces; readers take min(size, sizeof) bytes
 *   SCF_FDNAME  struct scf_fdname + name: what the descriptor of the next
 *               sample's system call was open on (/proc/PID/fd/FD when
 *               the tool read the sample); before that sample's record
 * A chunk describing a process or a kernel symbol comes before the first
 * record that needs it.
 */
#ifndef STALLCAP_RECORD_FILE_H
#define STALLCAP_RECORD_FILE_H

#include <linux/types.h>

#define SCF_MAGIC	"STALLCAP"
/* 2: records of stallcap ABI version 2, struct scf_info grew */
#define SCF_VERSION	2

struct scf_header {
	char magic[8];
	__u32 version;
	__u32 header_size;
	__u64 created_ns;	/* CLOCK_REALTIME */
	__u64 __reserved[5];
};

struct scf_chunk {
	__u32 type;
	__u32 size;
};

enum {
	SCF_RECORD = 1,
	SCF_PROC = 2,
	SCF_KSYM = 3,
	SCF_LOST = 4,
	SCF_VDSO = 5,
	SCF_INFO = 6,
	SCF_FDNAME = 7,
};

struct scf_proc {
	__u32 pid;
	__u32 nr_maps;
	__u64 snap_ns;
	char comm[16];
};

struct scf_map {
	__u64 start, end, pgoff;
	__u32 prot;
	__u16 path_len;		/* bytes of path that follow, without NUL */
	__u8 build_id_len;
	__u8 __pad;
	__u8 build_id[32];
	/* char path[path_len], then zero padding to 8 bytes */
};

struct scf_ksym {
	__u64 addr;
	__u32 size;
	__u16 name_len;
	__u16 mod_len;
	/* char name[name_len], char mod[mod_len], zero padding to 8 bytes */
};

struct scf_lost {
	__u64 lost;
	__u64 suppressed;
};

struct scf_info {
	char release[65];	/* uname -r of the recording host */
	char boot_id[37];	/* /proc/sys/kernel/random/boot_id */
	__u8 __pad[2];
	__s64 realtime_offset_ns; /* CLOCK_REALTIME - CLOCK_MONOTONIC at start */
	__u64 pid_ns_inum;	/* pid namespace of the records' ns ids */
	__u64 reader_pid_ns_inum; /* pid namespace of the recording tool */
	__u64 module_features;	/* STALLCAP_FEAT_* of the module (GET_INFO) */
	__u32 host_flags;	/* SCF_HOST_*; 0 in files made before them */
	__u32 __reserved;
};

struct scf_fdname {
	__u32 pid;
	__u32 tid;
	__u64 stall_id;
	__u32 sample_index;
	__s32 fd;
	__u16 name_len;		/* bytes of name that follow, without NUL */
	__u16 __pad[3];
	/* char name[name_len], then zero padding to 8 bytes */
};

/* scf_info.host_flags */
#define SCF_HOST_KNOWN	(1U << 0)	/* module_features and the bits below are set */
#define SCF_HOST_PSI	(1U << 1)	/* pressure stall information was on */

/* a process of 100,000s of mappings (a JVM's, Elasticsearch's) writes tens of MiB */
#define SCF_MAX_CHUNK	(1U << 30)
#define SCF_KSYM_NAME_MAX 512	/* the kernel's KSYM_NAME_LEN (6.1+: Rust names) */
#define SCF_MAX_HEADER	4096	/* a later version's longer header, skipped */

#endif /* STALLCAP_RECORD_FILE_H */
