// SPDX-License-Identifier: GPL-2.0
/*
 * stallcap(1): inline frames from DWARF.  An address in code the compiler
 * inlined belongs to several functions at once: the innermost inlined one
 * (at the address's own source line), the function it was inlined into (at
 * the call site, DW_AT_call_file/line), and so on out to the function the
 * ELF symbol names.  They are found as eu-addr2line -i and eu-stack -i find
 * them: the scopes of the address (dwarf_getscopes), then the concrete
 * nesting of the innermost one (dwarf_getscopes_die).
 */
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <stdlib.h>
#include <string.h>

#include "tool.h"
#include "usyms.h"

/* a function DIE's name: its linkage name (demangled later), else its name */
static const char *die_name(Dwarf_Die *die)
{
	Dwarf_Attribute attr;
	const char *name;

	name = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_linkage_name, &attr));
	if (!name)
		name = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &attr));
	return name ? name : dwarf_diename(die);
}

/* the call site of an inlined subroutine DIE */
static void call_site(Dwarf_Die *die, const char **file, int *line)
{
	Dwarf_Attribute attr;
	Dwarf_Files *files;
	Dwarf_Word v;
	Dwarf_Die cu;

	*file = NULL;
	*line = 0;
	if (!dwarf_diecu(die, &cu, NULL, NULL) || dwarf_getsrcfiles(&cu, &files, NULL))
		return;
	if (!dwarf_formudata(dwarf_attr(die, DW_AT_call_file, &attr), &v))
		*file = dwarf_filesrc(files, v, NULL, NULL);
	if (!dwarf_formudata(dwarf_attr(die, DW_AT_call_line, &attr), &v))
		*line = (int)v;
}

/* the concrete scopes of the innermost scope at @pc (module address @a) */
static int concrete_scopes(Dwfl_Module *mod, Dwarf_Addr a, Dwarf_Die **scopes)
{
	Dwarf_Die *cudie, die;
	Dwarf_Addr bias = 0;
	Dwarf *dw;
	int n;

	*scopes = NULL;
	cudie = dwfl_module_addrdie(mod, a, &bias);
	if (!cudie)
		return 0;
	n = dwarf_getscopes(cudie, a - bias, scopes);
	if (n <= 0)
		goto none;
	dw = dwfl_module_getdwarf(mod, &bias);
	if (!dw || !dwarf_offdie(dw, dwarf_dieoffset(&(*scopes)[0]), &die))
		goto none;
	free(*scopes);
	*scopes = NULL;
	n = dwarf_getscopes_die(&die, scopes);
	if (n > 0)
		return n;
none:
	free(*scopes);
	*scopes = NULL;
	return 0;
}

/**
 * dw_inline_frames() - the frames inlined at @a, innermost first
 * @mod: the module holding @a
 * @a: the address looked up (a return address less one)
 * @names: display names
 * @f: the frame of @a, symbolized; its file:line become the outermost call
 *	site when there are inline frames
 * @out: where the inline frames go (at most @max, the innermost ones)
 *
 * Returns the number of inline frames written.
 */
int dw_inline_frames(Dwfl_Module *mod, __u64 a, struct sc_names *names,
		     struct sc_frame *f, struct sc_frame *out, int max)
{
	const char *file = f->file;
	int line = f->line, n, i, k = 0;
	bool inlined = false;
	Dwarf_Die *scopes;

	n = concrete_scopes(mod, a, &scopes);
	for (i = 0; i < n; i++) {
		int tag = dwarf_tag(&scopes[i]);

		if (tag == DW_TAG_subprogram)
			break;
		if (tag != DW_TAG_inlined_subroutine)
			continue;
		if (k < max) {		/* deeper ones cut, the call site still found */
			out[k] = *f;
			out[k].inlined = true;
			out[k].sym = sc_names_get(names, die_name(&scopes[i]), false);
			out[k].off = 0;
			out[k].file = file;
			out[k].line = line;
			k++;
		}
		call_site(&scopes[i], &file, &line);
		inlined = true;
	}
	free(scopes);
	if (inlined) {
		f->file = file;
		f->line = line;
	}
	return k;
}
