/*
 * From a prototype to the fetch arguments of its uprobe and uretprobe: where
 * the calling convention of this machine puts each argument at the entry.
 * Only the plain p:/r: forms, registers, stack offsets and $retval, which 4.x
 * kernels share; arrays only when the caller says the kernel has them.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "probes.h"

/*
 * The integer argument registers as uprobe_events names them, and where the
 * first argument that did not fit lies at the entry: above the return
 * address on x86-64, at the stack pointer on aarch64. A struct of two
 * eightbytes (dim3) takes two registers or goes whole to the stack; after
 * that x86-64 goes on filling registers, AAPCS64 does not.
 */
#define HEAP_REGS 6

struct abi {
	const char *regs[8];
	unsigned nregs;
	unsigned stack_first;
	int stack_ends_regs;
	const char *saved[HEAP_REGS];	/* callee-saved: at the return they hold the caller's values */
};

#if defined(__x86_64__)
static const struct abi abi = { { "%di", "%si", "%dx", "%cx", "%r8", "%r9" }, 6, 8, 0,
				{ "%bx", "%bp", "%r12", "%r13", "%r14", "%r15" } };
#elif defined(__aarch64__)
static const struct abi abi = { { "%x0", "%x1", "%x2", "%x3", "%x4", "%x5", "%x6", "%x7" }, 8, 0, 1,
				{ "%x19", "%x20", "%x21", "%x22", "%x23", "%x24" } };
#else
#error "ingero knows the calling conventions of x86-64 and aarch64 only"
#endif

/* Types narrower than a register, whose upper bits the caller may leave as they were. */
static const struct {
	const char *type;
	unsigned bits;
} narrow[] = {
	{ "unsigned char", 8 },
	{ "int", 32 },
	{ "unsigned int", 32 },
	{ "CUdevice", 32 },
	{ "CUstreamCaptureStatus", 32 },
};

/* By-value structs of two eightbytes. */
static const char *const pairs[] = { "dim3" };

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define STACK_WINDOW_WORDS 256
#define ARRAY_FIELD_WORDS 64
#define PLAIN_WINDOW_WORDS 64
#define HEAP_WORDS 8
#define PLAIN_HEAP_WORDS 4

static unsigned words_of(const char *type)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(pairs); i++)
		if (!strcmp(pairs[i], type))
			return 2;
	return 1;
}

/* "x64", "u64", "u32": how the field is typed; for a dim3, its first eightbyte (x | y << 32). */
static const char *fetch_type(const struct ingero_arg *arg)
{
	size_t i;

	switch (arg->kind) {
	case INGERO_ARG_SIZE:
		return "u64";
	case INGERO_ARG_INT:
		if (!strncmp(arg->type, "enum ", 5))
			return "u32";
		for (i = 0; i < ARRAY_SIZE(narrow); i++)
			if (!strcmp(narrow[i].type, arg->type))
				return narrow[i].bits == 8 ? "u8" : "u32";
		return "u64";
	default:
		return "x64";
	}
}

struct out {
	char *buf;
	size_t len, used;
	int overflow;
	int uniform;	/* every argument as u64, the missing ones as 0: one format for many probes */
};

__attribute__((format(printf, 2, 3)))
static void add(struct out *o, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(o->buf + o->used, o->len - o->used, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= o->len - o->used)
		o->overflow = 1;
	else
		o->used += n;
}

static void entry_args(struct out *o, const struct ingero_api *api)
{
	unsigned reg = 0, stack = abi.stack_first;
	uint32_t i;

	for (i = 0; i < api->nargs; i++) {
		const struct ingero_arg *arg = &api->args[i];
		const char *type = o->uniform ? "u64" : fetch_type(arg);
		unsigned words = words_of(arg->type);

		if (reg + words <= abi.nregs) {
			add(o, "%sa%u=%s:%s", o->used ? " " : "", i, abi.regs[reg], type);
			reg += words;
		} else {
			add(o, "%sa%u=+%u(%%sp):%s", o->used ? " " : "", i, stack, type);
			stack += 8 * words;
			if (abi.stack_ends_regs)
				reg = abi.nregs;
		}
	}
	for (; o->uniform && i < INGERO_MAX_ARGS; i++)
		add(o, " a%u=\\0:u64", i);
}

unsigned ingero_probe_arg_bits(const struct ingero_arg *arg)
{
	const char *type = fetch_type(arg);

	return type[1] == '8' ? 8 : type[1] == '3' ? 32 : 64;
}

void ingero_probe_window(int use_arrays, unsigned *words, unsigned *per_field)
{
	*words = use_arrays ? STACK_WINDOW_WORDS : PLAIN_WINDOW_WORDS;
	*per_field = use_arrays ? ARRAY_FIELD_WORDS : 1;
}

void ingero_probe_heap_window(int use_arrays, unsigned *regs, unsigned *words, unsigned *per_field)
{
	*regs = HEAP_REGS;
	*words = use_arrays ? HEAP_WORDS : PLAIN_HEAP_WORDS;
	*per_field = use_arrays ? HEAP_WORDS : 1;
}

/*
 * A caller that passes a pointer into its heap memory usually keeps that
 * memory's address in a callee-saved register across the call: the words
 * those registers point to, read at the return, hold the out-pointer's value.
 */
static void heap_window(struct out *o, int use_arrays)
{
	unsigned regs, words, per_field, r, w;

	ingero_probe_heap_window(use_arrays, &regs, &words, &per_field);
	for (r = 0; r < regs; r++) {
		add(o, " c%u=%s:x64", r, abi.saved[r]);
		if (per_field > 1)
			add(o, " h%u=+0(%s):x64[%u]", r, abi.saved[r], words);
		else
			for (w = 0; w < words; w++)
				add(o, " h%u_%u=+%u(%s):x64", r, w, w * 8, abi.saved[r]);
	}
}

static int fetchargs(struct out *o, const struct ingero_api *api, int is_return, int use_arrays)
{
	int out_ptr = ingero_api_arg(api, INGERO_ARG_OUT_DEVPTR) >= 0;
	unsigned words, per_field, w;

	if (!is_return) {
		entry_args(o, api);
		if (out_ptr || o->uniform)
			add(o, "%ssp=%%sp:x64", o->used ? " " : "");
		return o->overflow ? -1 : 0;
	}
	add(o, "%sret=$retval:u32", o->used ? " " : "");
	if (out_ptr) {
		add(o, " sp=%%sp:x64");
		ingero_probe_window(use_arrays, &words, &per_field);
		for (w = 0; w < words / per_field; w++) {
			if (per_field > 1)
				add(o, " w%u=+%u(%%sp):x64[%u]", w, w * per_field * 8, per_field);
			else
				add(o, " w%u=+%u(%%sp):x64", w, w * 8);
		}
		heap_window(o, use_arrays);
	}
	return o->overflow ? -1 : 0;
}

int ingero_probe_fetchargs(const struct ingero_api *api, int is_return, int use_arrays, char *buf, size_t len)
{
	struct out o = { buf, len, 0, 0, 0 };

	if (!len)
		return -1;
	buf[0] = '\0';
	return fetchargs(&o, api, is_return, use_arrays);
}

int ingero_probe_fetchargs_grouped(const struct ingero_api *api, uint32_t index, int is_return,
				   int use_arrays, char *buf, size_t len)
{
	struct out o = { buf, len, 0, 0, 1 };

	if (!len)
		return -1;
	buf[0] = '\0';
	add(&o, "api=\\%u:u16", index);
	return fetchargs(&o, api, is_return, use_arrays);
}
