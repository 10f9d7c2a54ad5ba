/* Events as text: the one-line forms of `ingero dump` (plain and JSON), string escaping and JSON string quoting. */
#ifndef INGERO_TEXT_H
#define INGERO_TEXT_H

#include <stddef.h>
#include <stdio.h>
#include "../lib/trace.h"

/*
 * Writes ev as one line (without the newline) into out[0..size), always
 * NUL-terminated; times are relative to h->start_ns. Returns the length it
 * needed, as snprintf does.
 */
size_t ingero_text_event(char *out, size_t size, const struct ingero_event *ev,
			 const struct ingero_header *h, int json);
/*
 * Writes s (NULL: "") to f as every plain-text output prints a string of
 * the trace, so that none can drive the terminal or break a line: valid
 * UTF-8 as it is, a backslash doubled, a control byte, DEL, each byte of a
 * C1 control (U+0080 to U+009F) or a byte that is not part of a valid UTF-8
 * sequence as \xHH (dump's words escape a space and '=' too). Pads it on
 * the right with spaces to width columns of a terminal (0: no padding),
 * where "%-*s" would count bytes: a character takes one, an East Asian wide
 * one two. Returns the columns written, the padding included.
 */
size_t ingero_text_fescape(FILE *f, const char *s, size_t width);
/*
 * Writes s (NULL: "") to f as a quoted JSON string, always valid UTF-8: a
 * byte that is not part of a valid UTF-8 sequence becomes \ufffd, a control
 * byte, DEL or C1 control \u00XX.
 */
void ingero_text_fquote(FILE *f, const char *s);
/* The thread state as ps shows it: "S", "D", "R+" (preempted), "R" (a yield). */
const char *ingero_text_state(uint32_t state, char buf[16]);
/* 1 when one of ev's thread fields (caller, prev or next, waker or wakee, child) is tid. */
int ingero_text_has_tid(const struct ingero_event *ev, uint32_t tid);

#endif
