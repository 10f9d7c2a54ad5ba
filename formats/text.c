/*
 * Events as text for `ingero dump`: a stable key=value line like perf
 * script's, or a JSON object; and the string escaping of every command's
 * text and the JSON string quoting of every command's JSON. Everything is
 * formatted into the caller's buffer or stream.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "text.h"

/*
 * An appending writer: to a stream f, or else over a fixed buffer,
 * always NUL-terminated, counting what it could not fit.
 */
struct out {
	char *p;
	size_t size, len;
	FILE *f;
};

static void put(struct out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void put(struct out *o, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	if (o->f)
		n = vfprintf(o->f, fmt, ap);
	else
		n = vsnprintf(o->p + (o->len < o->size ? o->len : o->size), o->len < o->size ? o->size - o->len : 0, fmt, ap);
	va_end(ap);
	if (n > 0)
		o->len += n;
}

/* Appends the n bytes at s as they are. */
static void put_bytes(struct out *o, const void *s, size_t n)
{
	if (o->f) {
		fwrite(s, 1, n, o->f);
	} else if (o->len < o->size) {
		size_t room = o->size - o->len - 1;

		memcpy(o->p + o->len, s, n < room ? n : room);
		o->p[o->len + (n < room ? n : room)] = 0;
	}
	o->len += n;
}

/*
 * The length of the character at p when it is printable: 1 for ASCII from
 * space to '~', 2 to 4 for a well-formed UTF-8 sequence (no overlong form,
 * no surrogate, at most U+10FFFF); 0 for a control byte, a C1 control
 * (U+0080 to U+009F, which some terminals obey as they do ESC sequences) or
 * a byte that starts no such sequence.
 */
static size_t printable_len(const unsigned char *p)
{
	size_t n, i;
	unsigned char lo = 0x80, hi = 0xbf;

	if (*p >= 0x20 && *p < 0x7f)
		return 1;
	if (*p >= 0xc2 && *p <= 0xdf)
		n = 2;
	else if (*p >= 0xe0 && *p <= 0xef)
		n = 3;
	else if (*p >= 0xf0 && *p <= 0xf4)
		n = 4;
	else
		return 0;
	if (*p == 0xc2 || *p == 0xe0)	/* not a C1 control; no overlong form */
		lo = 0xa0;
	else if (*p == 0xed)
		hi = 0x9f;
	else if (*p == 0xf0)
		lo = 0x90;
	else if (*p == 0xf4)
		hi = 0x8f;
	for (i = 1; i < n; i++, lo = 0x80, hi = 0xbf)
		if (p[i] < lo || p[i] > hi)
			return 0;
	return n;
}

/*
 * s as a JSON string: valid UTF-8 as it is, '"' and '\\' escaped, control
 * characters (C0, DEL and C1) as \\u00XX, and each byte that is not valid
 * UTF-8 as \\ufffd, the replacement character.
 */
static void quote(struct out *o, const char *s)
{
	const unsigned char *p = (const unsigned char *)(s ? s : "");

	put_bytes(o, "\"", 1);
	while (*p) {
		size_t n = printable_len(p);

		if (*p == '"' || *p == '\\') {
			put(o, "\\%c", *p);
		} else if (n) {
			put_bytes(o, p, n);
		} else if (*p < 0x80) {
			put(o, "\\u%04x", *p);
		} else if (*p == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f) {
			put(o, "\\u%04x", p[1]);
			n = 2;
		} else {
			put_bytes(o, "\\ufffd", 6);
		}
		p += n ? n : 1;
	}
	put_bytes(o, "\"", 1);
}

void ingero_text_fquote(FILE *f, const char *s)
{
	struct out o = { NULL, 0, 0, f };

	quote(&o, s);
}

/*
 * The columns a terminal gives the printable character of n bytes at p:
 * two for an East Asian wide or fullwidth one (Markus Kuhn's wcwidth()
 * ranges, and the emoji blocks), else one. Combining marks count as one.
 */
static size_t columns(const unsigned char *p, size_t n)
{
	uint32_t c;

	if (n < 3)
		return 1;
	c = n == 3 ? (p[0] & 0x0fu) << 12 | (p[1] & 0x3fu) << 6 | (p[2] & 0x3fu) :
		(p[0] & 0x07u) << 18 | (p[1] & 0x3fu) << 12 | (p[2] & 0x3fu) << 6 | (p[3] & 0x3fu);
	return (c >= 0x1100 && c <= 0x115f) || c == 0x2329 || c == 0x232a ||
	       (c >= 0x2e80 && c <= 0xa4cf && c != 0x303f) || (c >= 0xac00 && c <= 0xd7a3) ||
	       (c >= 0xf900 && c <= 0xfaff) || (c >= 0xfe10 && c <= 0xfe19) || (c >= 0xfe30 && c <= 0xfe6f) ||
	       (c >= 0xff00 && c <= 0xff60) || (c >= 0xffe0 && c <= 0xffe6) || (c >= 0x1f300 && c <= 0x1f64f) ||
	       (c >= 0x1f900 && c <= 0x1f9ff) || (c >= 0x20000 && c <= 0x3fffd) ? 2 : 1;
}

/*
 * s as text that no string of a trace can use to move the cursor, recolour
 * a terminal or start a line: valid UTF-8 as it is, a backslash doubled, and
 * a control byte, DEL or a byte that starts no valid UTF-8 sequence as \\xHH;
 * for a word of dump's plain form, a space and an '=' too, so that a line
 * splits at its spaces, and each field at its '=' into key and value.
 * Returns the columns it takes on a terminal.
 */
static size_t escape(struct out *o, const char *s, int word)
{
	const unsigned char *p = (const unsigned char *)(s ? s : "");
	size_t cols = 0;

	while (*p) {
		size_t n = printable_len(p);

		if (*p == '\\') {
			put_bytes(o, "\\\\", 2);
			cols += 2;
		} else if (!n || (word && (*p == ' ' || *p == '='))) {
			put(o, "\\x%02x", *p);
			cols += 4;
			n = 1;
		} else {
			put_bytes(o, p, n);
			cols += columns(p, n);
		}
		p += n;
	}
	return cols;
}

size_t ingero_text_fescape(FILE *f, const char *s, size_t width)
{
	struct out o = { NULL, 0, 0, f };
	size_t cols = escape(&o, s, 0);

	if (cols >= width)
		return cols;
	fprintf(f, "%*s", (int)(width - cols), "");
	return width;
}

static void put_str(struct out *o, const char *key, const char *s, int json)
{
	if (json) {
		put(o, ",\"%s\":", key);
		quote(o, s);
	} else {
		put(o, " %s=", key);
		escape(o, s, 1);
	}
}

static void put_u64(struct out *o, const char *key, uint64_t v, int json)
{
	put(o, json ? ",\"%s\":%" PRIu64 : " %s=%" PRIu64, key, v);
}

static void put_i64(struct out *o, const char *key, int64_t v, int json)
{
	put(o, json ? ",\"%s\":%" PRId64 : " %s=%" PRId64, key, v);
}

/* Pointers and handles in hex: a JSON string, as they outgrow a double. */
static void put_hex(struct out *o, const char *key, uint64_t v, int json)
{
	put(o, json ? ",\"%s\":\"0x%" PRIx64 "\"" : " %s=0x%" PRIx64, key, v);
}

const char *ingero_text_state(uint32_t state, char buf[16])
{
	static const char letters[] = "SDTtXZPI";
	size_t i, n = 0;

	for (i = 0; i < 8; i++)
		if (state & (1u << i))
			buf[n++] = letters[i];
	if (!n)
		buf[n++] = 'R';
	if (state & INGERO_STATE_PREEMPTED)
		buf[n++] = '+';
	buf[n] = 0;
	return buf;
}

static const char *task_kind(uint32_t kind)
{
	static const char *const names[] = { "fork", "exec", "exit", "comm", "follow" };

	return kind < sizeof(names) / sizeof(names[0]) ? names[kind] : "unknown";
}

static int arg_is_number(uint32_t kind)
{
	return kind == INGERO_ARG_INT || kind == INGERO_ARG_SIZE;
}

static void put_call(struct out *o, const struct ingero_call *c, uint64_t ts, const struct ingero_header *h,
		     int json)
{
	const struct ingero_api *api = c->api < h->napis ? &h->apis[c->api] : NULL;
	char unknown[32];
	unsigned i, nargs = api ? api->nargs : INGERO_MAX_ARGS;

	snprintf(unknown, sizeof(unknown), "api#%u", c->api);
	put_str(o, "api", api ? api->name : unknown, json);
	if (json)
		put(o, ",\"args\":{");
	for (i = 0; i < nargs; i++) {
		char name[16];
		const char *n = api && api->args[i].name && *api->args[i].name ? api->args[i].name : name;

		snprintf(name, sizeof(name), "arg%u", i);
		if (json) {
			if (i)
				put_bytes(o, ",", 1);
			quote(o, n);
			put(o, ":");
			put(o, api && arg_is_number(api->args[i].kind) ? "%" PRIu64 : "\"0x%" PRIx64 "\"", c->args[i]);
		} else {
			put_bytes(o, " ", 1);
			escape(o, n, 1);
			put(o, api && arg_is_number(api->args[i].kind) ? "=%" PRIu64 : "=0x%" PRIx64, c->args[i]);
		}
	}
	if (json)
		put(o, "}");
	put_i64(o, "ret", (int64_t)c->ret, json);
	if (c->out)
		put_hex(o, "out", c->out, json);
	/* negative for a return before its entry, as CPUs whose clocks disagree can record */
	put_i64(o, "dur_ns", (int64_t)(c->end_ns - ts), json);
	put_u64(o, "id", c->id, json);
	put_u64(o, "parent", c->parent, json);
	put_u64(o, "pid", c->pid, json);
}

size_t ingero_text_event(char *out, size_t size, const struct ingero_event *ev,
			 const struct ingero_header *h, int json)
{
	struct out o = { out, size, 0, NULL };
	uint64_t key = ingero_event_key(ev), at = key >= h->start_ns ? key - h->start_ns : h->start_ns - key;
	int64_t cpu = -1, tid = -1;
	char state[16], secs[24];
	int has_tid;

	if (size)
		out[0] = 0;
	/* the whole seconds with their sign, which the plain form pads as one */
	snprintf(secs, sizeof(secs), "%s%" PRIu64, key >= h->start_ns ? "" : "-", at / 1000000000);
	switch (ev->stream) {
	case INGERO_STREAM_CALL:
	case INGERO_STREAM_OPEN:
		cpu = ev->call.cpu, tid = ev->call.tid;
		break;
	case INGERO_STREAM_SWITCH:
		cpu = ev->sw.cpu, tid = ev->sw.prev_tid;
		break;
	case INGERO_STREAM_WAKEUP:
		cpu = ev->wakeup.cpu, tid = ev->wakeup.waker_tid;
		break;
	case INGERO_STREAM_TASK:
		tid = ev->task.tid;
		break;
	case INGERO_STREAM_LOST:
		cpu = ev->lost.cpu;
		break;
	}
	has_tid = tid >= 0 || ev->stream == INGERO_STREAM_SWITCH || ev->stream == INGERO_STREAM_WAKEUP;
	if (json) {
		put(&o, "{\"time\":\"%s.%09" PRIu64 "\",\"ts_ns\":%" PRIu64 ",\"stream\":\"%s\"", secs,
		    at % 1000000000, ev->ts, ingero_stream_name(ev->stream));
		/* every object has both, null where the stream has none */
		put(&o, cpu >= 0 ? ",\"cpu\":%" PRId64 : ",\"cpu\":null", cpu);
		put(&o, has_tid ? ",\"tid\":%" PRId64 : ",\"tid\":null", tid);
	} else {
		put(&o, "%6s.%09" PRIu64, secs, at % 1000000000);
		put(&o, cpu >= 0 ? " [%03" PRId64 "]" : " [---]", cpu);
		put(&o, has_tid ? " %7" PRId64 : "       -", tid);
		put(&o, " %-6s", ingero_stream_name(ev->stream));
	}
	switch (ev->stream) {
	case INGERO_STREAM_CALL:
	case INGERO_STREAM_OPEN:
		put_call(&o, &ev->call, ev->ts, h, json);
		break;
	case INGERO_STREAM_SWITCH:
		put_str(&o, "prev_comm", ev->sw.prev_comm, json);
		put_i64(&o, "prev_tid", ev->sw.prev_tid, json);
		put_i64(&o, "prev_prio", ev->sw.prev_prio, json);
		put_str(&o, "prev_state", ingero_text_state(ev->sw.prev_state, state), json);
		put_str(&o, "next_comm", ev->sw.next_comm, json);
		put_i64(&o, "next_tid", ev->sw.next_tid, json);
		put_i64(&o, "next_prio", ev->sw.next_prio, json);
		break;
	case INGERO_STREAM_WAKEUP:
		put_str(&o, "wakee_comm", ev->wakeup.wakee_comm, json);
		put_i64(&o, "wakee_tid", ev->wakeup.wakee_tid, json);
		put_i64(&o, "wakee_prio", ev->wakeup.wakee_prio, json);
		put_u64(&o, "target_cpu", ev->wakeup.target_cpu, json);
		break;
	case INGERO_STREAM_TASK:
		put_str(&o, "kind", task_kind(ev->task.kind), json);
		put_u64(&o, "pid", ev->task.pid, json);
		if (ev->task.kind == INGERO_TASK_FORK) {
			put_u64(&o, "child_pid", ev->task.child_pid, json);
			put_u64(&o, "child_tid", ev->task.child_tid, json);
		}
		put_str(&o, "comm", ev->task.comm, json);
		break;
	case INGERO_STREAM_LOST:
		put_u64(&o, "count", ev->lost.count, json);
		put_u64(&o, "span_ns", ev->lost.end_ns - ev->ts, json);
		break;
	case INGERO_STREAM_LIB:
		put_u64(&o, "id", ev->lib.id, json);
		put_str(&o, "path", ev->lib.path, json);
		put_str(&o, "build_id", ev->lib.build_id, json);
		put_u64(&o, "pid", ev->lib.pid, json);
		put_u64(&o, "probes", ev->lib.probes, json);
		put_u64(&o, "missing", ev->lib.missing, json);
		break;
	}
	if (json)
		put(&o, "}");
	return o.len;
}

int ingero_text_has_tid(const struct ingero_event *ev, uint32_t tid)
{
	switch (ev->stream) {
	case INGERO_STREAM_CALL:
	case INGERO_STREAM_OPEN:
		return ev->call.tid == tid;
	case INGERO_STREAM_SWITCH:
		return (uint32_t)ev->sw.prev_tid == tid || (uint32_t)ev->sw.next_tid == tid;
	case INGERO_STREAM_WAKEUP:
		return (uint32_t)ev->wakeup.waker_tid == tid || (uint32_t)ev->wakeup.wakee_tid == tid;
	case INGERO_STREAM_TASK:
		return ev->task.tid == tid || (ev->task.kind == INGERO_TASK_FORK && ev->task.child_tid == tid);
	default:
		return 0;
	}
}
