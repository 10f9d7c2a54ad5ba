/*
 * Noticing libraries as they are mapped: a seccomp filter in the traced
 * command stops every executable file mapping until ingero has looked at the
 * file (and probed it), so no call into a late-loaded library goes unseen.
 */
#ifndef INGERO_MMAPWATCH_H
#define INGERO_MMAPWATCH_H

#include <pthread.h>
#include <sys/types.h>

/* Called for each file about to be mapped executable, before the mapping is made. */
typedef void (*ingero_mmapwatch_fn)(const char *path, pid_t pid, void *ctx);

struct ingero_mmapwatch {
	int fd;			/* the seccomp listener */
	int stop;		/* an eventfd that ends the thread, while running */
	ingero_mmapwatch_fn fn;
	void *ctx;
	pthread_t thread;
	int running;
};

/*
 * In the child, before exec: installs the filter, inherited by everything it
 * starts. Returns the listener fd, or -1 where the kernel lacks seccomp user
 * notification (before 5.5).
 */
int ingero_mmapwatch_install(void);
/* Answers the listener from a thread of its own until every watched process is gone. */
int ingero_mmapwatch_start(struct ingero_mmapwatch *w, int fd, ingero_mmapwatch_fn fn, void *ctx);
/*
 * Ends that thread and closes the listener. Processes still watched (ones
 * the command left running) would then fail to map executable files
 * (ENOSYS), were it not for the copy that the session's keeper holds.
 */
void ingero_mmapwatch_stop(struct ingero_mmapwatch *w);
/* Whether a watched process is left: the listener hangs up once every one is gone. */
int ingero_mmapwatch_watching(int fd);
/* Lets every mapping through, unlooked at, until every watched process is gone: for when ingero is. */
void ingero_mmapwatch_pass(int fd);
/* Sends one byte on the socket, with the listener as its passenger when it is one (>= 0); -1 on failure. */
int ingero_mmapwatch_send(int sock, int listener);
/*
 * What ingero_mmapwatch_send() sent: the listener (close-on-exec), -1 when
 * none came, -2 at the end, -3 when one came that this process had no room
 * for (too many open files).
 */
int ingero_mmapwatch_receive(int sock);

#endif
