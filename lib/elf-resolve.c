/*
 * A library's CUDA symbols as uprobe_events wants them: the file offsets of
 * the functions in .dynsym and .symtab (a runtime linked in statically has
 * its names in .symtab only), and the GNU build-id.
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <elfutils/libdwelf.h>
#include "error.h"
#include "libfind.h"

struct elf_file {
	int fd;
	Elf *elf;
	GElf_Phdr *loads;
	size_t nloads;
};

static void elf_file_release(struct elf_file *f)
{
	free(f->loads);
	if (f->elf)
		elf_end(f->elf);
	if (f->fd >= 0)
		close(f->fd);
}

/* quiet: a file that is not ELF is only -1 (ENOEXEC), as when looking through folders. */
static int elf_file_open(struct elf_file *f, const char *path, int quiet)
{
	size_t n, i;

	memset(f, 0, sizeof(*f));
	f->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (f->fd < 0)
		return quiet ? -1 : error_errno("cannot open '%s'", path);
	elf_version(EV_CURRENT);
	f->elf = elf_begin(f->fd, ELF_C_READ_MMAP, NULL);
	if (!f->elf || elf_kind(f->elf) != ELF_K_ELF || elf_getphdrnum(f->elf, &n)) {
		errno = ENOEXEC;
		return quiet ? -1 : error("'%s' is not an ELF file", path);
	}
	f->loads = calloc(n ? n : 1, sizeof(*f->loads));
	if (!f->loads)
		return error_errno("cannot read '%s'", path);
	for (i = 0; i < n; i++) {
		GElf_Phdr *ph = &f->loads[f->nloads];

		if (gelf_getphdr(f->elf, (int)i, ph) && ph->p_type == PT_LOAD)
			f->nloads++;
	}
	return 0;
}

/* The file offset of a virtual address, through the PT_LOAD segment that holds it; 0 if none does. */
static uint64_t file_offset(const struct elf_file *f, uint64_t vaddr)
{
	size_t i;

	for (i = 0; i < f->nloads; i++) {
		const GElf_Phdr *ph = &f->loads[i];

		if (vaddr >= ph->p_vaddr && vaddr - ph->p_vaddr < ph->p_filesz)
			return vaddr - ph->p_vaddr + ph->p_offset;
	}
	return 0;
}

/*
 * The API named name, ignoring a version suffix ("cudaMalloc@@libcudart.so.13");
 * -1 if none. The names of a table begin alike ("cu"): most symbols fail at once.
 */
static int api_index(const char *name, const struct ingero_api *apis, size_t napis)
{
	size_t len = strcspn(name, "@"), i;

	if (!napis || name[0] != apis[0].name[0] || name[1] != apis[0].name[1])
		return -1;
	for (i = 0; i < napis; i++)
		if (!strncmp(apis[i].name, name, len) && apis[i].name[len] == '\0')
			return (int)i;
	return -1;
}

/* Fills offsets[] from one symbol table; returns how many it set that were unset. */
static int scan_symbols(const struct elf_file *f, Elf_Scn *scn, const GElf_Shdr *sh,
			const struct ingero_api *apis, size_t napis, uint64_t *offsets)
{
	Elf_Data *data = elf_getdata(scn, NULL);
	size_t n = sh->sh_entsize ? sh->sh_size / sh->sh_entsize : 0, i;
	int found = 0;

	for (i = 0; data && i < n; i++) {
		GElf_Sym sym;
		const char *name;
		uint64_t off;
		int k;

		if (!gelf_getsym(data, (int)i, &sym) || sym.st_shndx == SHN_UNDEF || !sym.st_value ||
		    (GELF_ST_TYPE(sym.st_info) != STT_FUNC && GELF_ST_TYPE(sym.st_info) != STT_GNU_IFUNC))
			continue;
		name = elf_strptr(f->elf, sh->sh_link, sym.st_name);
		if (!name || (k = api_index(name, apis, napis)) < 0 || offsets[k])
			continue;
		off = file_offset(f, sym.st_value);
		if (off) {
			offsets[k] = off;
			found++;
		}
	}
	return found;
}

static int resolve(const char *path, const struct ingero_api *apis, size_t napis, uint64_t *offsets,
		   char *build_id, size_t build_id_len, int quiet)
{
	struct elf_file f;
	Elf_Scn *scn = NULL;
	int found = 0;

	memset(offsets, 0, napis * sizeof(*offsets));
	if (build_id_len)
		build_id[0] = '\0';
	if (elf_file_open(&f, path, quiet)) {
		elf_file_release(&f);
		return -1;
	}
	while ((scn = elf_nextscn(f.elf, scn))) {
		GElf_Shdr sh;

		if (gelf_getshdr(scn, &sh) && (sh.sh_type == SHT_DYNSYM || sh.sh_type == SHT_SYMTAB))
			found += scan_symbols(&f, scn, &sh, apis, napis, offsets);
	}
	if (build_id_len) {
		const unsigned char *id;
		ssize_t len = dwelf_elf_gnu_build_id(f.elf, (const void **)&id), i;

		for (i = 0; i < len && (size_t)(2 * i + 2) < build_id_len; i++)
			snprintf(build_id + 2 * i, 3, "%02x", id[i]);
	}
	elf_file_release(&f);
	return found;
}

int ingero_lib_resolve(const char *path, const struct ingero_api *apis, size_t napis,
		       uint64_t *offsets, char *build_id, size_t build_id_len)
{
	return resolve(path, apis, napis, offsets, build_id, build_id_len, 0);
}

int ingero_lib_has_cuda(const char *path, const struct ingero_api *apis, size_t napis)
{
	uint64_t *offsets = calloc(napis ? napis : 1, sizeof(*offsets));
	int found;

	if (!offsets)
		return 0;
	found = resolve(path, apis, napis, offsets, NULL, 0, 1);
	free(offsets);
	return found > 0;
}
