/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A 32-bit program (attach_i386_test.sh): its system calls take the
 * kernel's compat entry points.  It waits in poll(NULL, 0, 100) for ever.
 */
	.globl _start
	.text
_start:
	movl	$168, %eax	/* __NR_poll (i386) */
	xorl	%ebx, %ebx
	xorl	%ecx, %ecx
	movl	$100, %edx
	int	$0x80
	jmp	_start
