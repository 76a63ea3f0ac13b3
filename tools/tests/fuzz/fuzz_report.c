// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer target: `stallcap report FILE` on a record file made of the
 * input, in each format (text, json, folded), as the command runs it: the
 * record-file reader, the grouping, symbolization and unwinding, the
 * formatters.
 *
 * Checks beyond the sanitizers, on what the report wrote:
 *  - text: every byte a newline, printable ASCII or well-formed UTF-8 that
 *    is not a control character (nothing a terminal would act on);
 *  - json: every line one valid JSON value, its strings well-formed UTF-8;
 *  - folded: every line "frames COUNT", no control character.
 */

#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "tool.h"
#include "json_check.h"

static int in_fd = -1, out_fd = -1;
static char in_path[64], out_path[64];

static void setup(void)
{
	in_fd = memfd_create("fuzz-in", MFD_CLOEXEC);
	out_fd = memfd_create("fuzz-out", MFD_CLOEXEC);
	if (in_fd < 0 || out_fd < 0)
		abort();
	snprintf(in_path, sizeof(in_path), "/proc/self/fd/%d", in_fd);
	snprintf(out_path, sizeof(out_path), "/proc/self/fd/%d", out_fd);
	sc_quiet = true;
}

static char *read_out(size_t *len)
{
	off_t n = lseek(out_fd, 0, SEEK_END);
	char *buf = malloc((size_t)n + 1);

	if (!buf || pread(out_fd, buf, (size_t)n, 0) != n)
		abort();
	buf[n] = 0;
	*len = (size_t)n;
	return buf;
}

/* A byte a terminal shows as text: '\n', printable ASCII, or UTF-8 (escape.c). */
static void check_text(const char *buf, size_t len)
{
	const unsigned char *p = (const unsigned char *)buf;
	size_t i, n;
	__u32 cp;

	for (i = 0; i < len; i += n) {
		n = utf8_decode(p + i, len - i, &cp);
		if (!n || (cp != '\n' && unsafe_char(cp)))
			abort();
	}
}

static void check_json(char *buf)
{
	char *line, *save = NULL;

	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
		if (!json_line_ok(line))
			abort();
}

static void check_folded(char *buf, size_t len)
{
	char *line, *save = NULL, *sp;

	check_text(buf, len);
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		sp = strrchr(line, ' ');
		if (!sp || sp == line || !sp[1] || strspn(sp + 1, "0123456789") != strlen(sp + 1))
			abort();
	}
}

static void run(const char *fmt)
{
	char *argv[] = { "report", in_path, "-f", (char *)fmt, "-o", out_path, NULL };
	size_t len;
	char *buf;

	if (ftruncate(out_fd, 0))
		abort();
	optind = 0;
	cmd_report(6, argv);
	buf = read_out(&len);
	if (strlen(buf) != len)
		abort();	/* a NUL byte in the output */
	if (!strcmp(fmt, "text"))
		check_text(buf, len);
	else if (!strcmp(fmt, "json"))
		check_json(buf);
	else
		check_folded(buf, len);
	free(buf);
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	if (in_fd < 0)
		setup();
	if (ftruncate(in_fd, 0) || pwrite(in_fd, data, size, 0) != (ssize_t)size)
		abort();
	run("text");
	run("json");
	run("folded");
	return 0;
}
