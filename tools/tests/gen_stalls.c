// SPDX-License-Identifier: GPL-2.0
/*
 * gen_stalls FILE N: write N generated stalls to FILE (scale_gen.h).
 * gen_stalls --bench TOOL N: the same into a temporary file, then time
 * `TOOL report` over it (--top, -f folded, text) and print "@bench
 * host.report.*" lines (bench/run.sh, bench/report.c).
 */
#include <sys/stat.h>

#include "scale_gen.h"

static int bench(const char *tool, unsigned int n)
{
	static const char *const modes[][2] = {
		{ "top", "--top" }, { "folded", "-ffolded" }, { "text", "-ftext" },
	};
	char path[] = "/tmp/stallcap-gen-XXXXXX";
	struct run r;
	struct stat st;
	size_t i;
	int fd = mkstemp(path), ret;

	if (fd < 0)
		return 1;
	close(fd);
	ret = gen_stalls(path, n) || stat(path, &st);
	printf("@bench host.report.stalls=%u\n@bench host.report.file_mib=%lld\n", n,
	       (long long)(st.st_size >> 20));
	for (i = 0; i < ARRAY_SIZE(modes) && !ret; i++) {
		ret = run_report(tool, path, modes[i][1], "/dev/null", &r) || r.status;
		printf("@bench host.report.%s.cpu_s=%.3f\n@bench host.report.%s.wall_s=%.3f\n"
		       "@bench host.report.%s.maxrss_kib=%ld\n", modes[i][0], r.cpu_s,
		       modes[i][0], r.wall_s, modes[i][0], r.maxrss_kb);
	}
	unlink(path);
	return ret ? 1 : 0;
}

int main(int argc, char **argv)
{
	if (argc == 4 && !strcmp(argv[1], "--bench"))
		return bench(argv[2], (unsigned int)strtoul(argv[3], NULL, 0));
	if (argc != 3) {
		fprintf(stderr, "usage: gen_stalls FILE N | --bench TOOL N\n");
		return 2;
	}
	return gen_stalls(argv[1], (unsigned int)strtoul(argv[2], NULL, 0)) ? 1 : 0;
}
