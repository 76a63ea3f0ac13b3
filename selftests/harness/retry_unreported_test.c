// SPDX-License-Identifier: GPL-2.0
/*
 * Harness self-check: a program that fails a case and, run again with
 * -r for it, exits 0 without reporting that case (it reports another).
 * The guest's init must not take that for a pass: each retried case must
 * report "ok".
 */
#include <stdio.h>

int main(int argc, char **argv)
{
	printf("TAP version 13\n1..1\n");
	if (argc > 1) {
		printf("ok 1 harness.another_case\n");
		return 0;
	}
	printf("not ok 1 harness.retried_case\n");
	return 1;
}
