/* The executable-mapping watch: a seccomp user-notification filter on mmap(PROT_EXEC) of a file. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include "error.h"
#include "mmapwatch.h"

#if defined(__x86_64__)
#define AUDIT_ARCH_NATIVE AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define AUDIT_ARCH_NATIVE AUDIT_ARCH_AARCH64
#endif

#ifndef SECCOMP_USER_NOTIF_FLAG_CONTINUE
#define SECCOMP_USER_NOTIF_FLAG_CONTINUE (1UL << 0)
#endif

/* The low 32 bits of a syscall argument (little-endian). */
#define ARG_LO(n) (offsetof(struct seccomp_data, args) + (n) * sizeof(__u64))

int ingero_mmapwatch_install(void)
{
#if defined(AUDIT_ARCH_NATIVE) && defined(SECCOMP_FILTER_FLAG_NEW_LISTENER)
	struct sock_filter filter[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_NATIVE, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_mmap, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARG_LO(2)),		/* prot */
		BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, PROT_EXEC, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARG_LO(4)),		/* fd */
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0xffffffff, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF),
	};
	struct sock_fprog prog = { .len = sizeof(filter) / sizeof(filter[0]), .filter = filter };

	return syscall(__NR_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog);
#else
	errno = ENOSYS;
	return -1;
#endif
}

/*
 * The path under which this process sees the file the mapping names: the
 * watched process's own path if it is the same file here, else through
 * /proc/PID/root (a container's mount namespace).
 */
static int mapped_path(pid_t pid, int fd, char *path, size_t len)
{
	char link[64], target[PATH_MAX];
	struct stat want, st;
	ssize_t n;

	snprintf(link, sizeof(link), "/proc/%d/fd/%d", (int)pid, fd);
	if (stat(link, &want))
		return -1;
	n = readlink(link, target, sizeof(target) - 1);
	if (n <= 0)
		return -1;
	target[n] = 0;
	if (!stat(target, &st) && st.st_dev == want.st_dev && st.st_ino == want.st_ino) {
		snprintf(path, len, "%s", target);
		return 0;
	}
	snprintf(path, len, "/proc/%d/root%s", (int)pid, target);
	return stat(path, &st) || st.st_ino != want.st_ino ? -1 : 0;
}

static void answer(int fd, __u64 id)
{
	struct seccomp_notif_resp resp = {
		.id = id,
		.flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE,
	};

	/* ENOENT: the process was killed while stopped; nothing to answer. */
	ioctl(fd, SECCOMP_IOCTL_NOTIF_SEND, &resp);
}

/*
 * Answers the listener until every watched process is gone, or until stop
 * (an eventfd, or -1) is written: each file is shown to fn first, when there
 * is one, and the mapping then goes on.
 */
static void serve(int fd, int stop, ingero_mmapwatch_fn fn, void *ctx)
{
	struct seccomp_notif req;
	char path[PATH_MAX + 64];

	for (;;) {
		struct pollfd p[2] = { { .fd = fd, .events = POLLIN }, { .fd = stop, .events = POLLIN } };

		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (p[1].revents || !(p[0].revents & POLLIN))
			break;		/* stopped, or POLLHUP: every watched process is gone */
		memset(&req, 0, sizeof(req));
		if (ioctl(fd, SECCOMP_IOCTL_NOTIF_RECV, &req)) {
			if (errno == EINTR || errno == ENOENT)
				continue;
			break;
		}
		if (fn && !mapped_path(req.pid, (int)req.data.args[4], path, sizeof(path)))
			fn(path, req.pid, ctx);
		answer(fd, req.id);
	}
}

static void *watch(void *arg)
{
	struct ingero_mmapwatch *w = arg;

	serve(w->fd, w->stop, w->fn, w->ctx);
	return NULL;
}

int ingero_mmapwatch_watching(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	return poll(&p, 1, 0) >= 0 && !(p.revents & (POLLHUP | POLLNVAL));
}

void ingero_mmapwatch_pass(int fd)
{
	serve(fd, -1, NULL, NULL);
}

int ingero_mmapwatch_send(int sock, int listener)
{
	char cbuf[CMSG_SPACE(sizeof(int))] = { 0 }, byte = 0;
	struct iovec iov = { &byte, 1 };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };

	if (listener >= 0) {
		struct cmsghdr *c;

		msg.msg_control = cbuf;
		msg.msg_controllen = sizeof(cbuf);
		c = CMSG_FIRSTHDR(&msg);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &listener, sizeof(int));
	}
	return sendmsg(sock, &msg, MSG_NOSIGNAL) == 1 ? 0 : -1;
}

int ingero_mmapwatch_receive(int sock)
{
	char cbuf[CMSG_SPACE(sizeof(int))], byte;
	struct iovec iov = { &byte, 1 };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof(cbuf) };
	struct cmsghdr *c;
	ssize_t n;
	int fd = -1;

	while ((n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC)) < 0 && errno == EINTR)
		;
	if (n <= 0)
		return -2;
	/* the kernel drops a descriptor it has no room for in this process, and says so */
	if (msg.msg_flags & MSG_CTRUNC)
		return -3;
	c = CMSG_FIRSTHDR(&msg);
	if (c && c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS)
		memcpy(&fd, CMSG_DATA(c), sizeof(int));
	return fd;
}

/* The watcher takes no signals, so that they reach the thread that waits for them. */
int ingero_mmapwatch_start(struct ingero_mmapwatch *w, int fd, ingero_mmapwatch_fn fn, void *ctx)
{
	sigset_t all, old;
	int err;

	w->fd = fd;
	w->fn = fn;
	w->ctx = ctx;
	if ((w->stop = eventfd(0, EFD_CLOEXEC)) < 0)
		return error_errno("cannot start the thread that watches library loads");
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	err = pthread_create(&w->thread, NULL, watch, w);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (err) {
		close(w->stop);
		return error("cannot start the thread that watches library loads");
	}
	w->running = 1;
	return 0;
}

/* The thread ends once the file it may be showing has been looked at: the recorder's lock is never left held. */
void ingero_mmapwatch_stop(struct ingero_mmapwatch *w)
{
	if (w->running) {
		eventfd_write(w->stop, 1);
		pthread_join(w->thread, NULL);
		close(w->stop);
	}
	w->running = 0;
	if (w->fd >= 0)
		close(w->fd);
	w->fd = -1;
}
