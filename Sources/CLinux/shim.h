#ifndef ISLET_CLINUX_SHIM_H
#define ISLET_CLINUX_SHIM_H

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

/* Linux's epoll and eventfd, which the Glibc module does not bring into Swift.
   `struct epoll_event` is packed on x86-64; these wrappers keep it out of Swift
   entirely, trading it for plain arrays of descriptors and event bits. */

/// The event bits Islet's loops use, as plain integers.
static const uint32_t ISLET_EPOLLIN = EPOLLIN;
static const uint32_t ISLET_EPOLLOUT = EPOLLOUT;
static const uint32_t ISLET_EPOLLERR = EPOLLERR;
static const uint32_t ISLET_EPOLLHUP = EPOLLHUP;
static const uint32_t ISLET_EPOLLRDHUP = EPOLLRDHUP;
static const uint32_t ISLET_EPOLLET = EPOLLET;

/// A new close-on-exec epoll instance, or -1.
static inline int islet_epoll_create(void) {
    return epoll_create1(EPOLL_CLOEXEC);
}

/// A new non-blocking, close-on-exec eventfd, or -1.
static inline int islet_eventfd_create(void) {
    return eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
}

/// Adds (op = 0), modifies (1) or removes (2) `fd` with `events`; the event's data is
/// the descriptor itself.
static inline int islet_epoll_control(int epfd, int op, int fd, uint32_t events) {
    struct epoll_event event = { .events = events, .data = { .fd = fd } };
    int ops[3] = { EPOLL_CTL_ADD, EPOLL_CTL_MOD, EPOLL_CTL_DEL };
    return epoll_ctl(epfd, ops[op < 0 || op > 2 ? 0 : op], fd, &event);
}

/// Waits for events; fills `fds` and `events` (each `capacity` long) and answers how
/// many, 0 on timeout, or -1 with errno (EINTR included).
static inline int islet_epoll_wait(int epfd, int *fds, uint32_t *events, int capacity, int timeout_ms) {
    struct epoll_event ready[256];
    if (capacity > 256) capacity = 256;
    int count = epoll_wait(epfd, ready, capacity, timeout_ms);
    for (int i = 0; i < count; i++) {
        fds[i] = ready[i].data.fd;
        events[i] = ready[i].events;
    }
    return count;
}

/// Adds (op = 0) or removes (2) `fd` with `events`, the event's data being `tag`
/// rather than the descriptor: for watchers whose entries outlive a descriptor's
/// number (a tag that is never reused cannot name a later socket under that number).
static inline int islet_epoll_control_tagged(int epfd, int op, int fd, uint32_t events, uint64_t tag) {
    struct epoll_event event = { .events = events, .data = { .u64 = tag } };
    int ops[3] = { EPOLL_CTL_ADD, EPOLL_CTL_MOD, EPOLL_CTL_DEL };
    return epoll_ctl(epfd, ops[op < 0 || op > 2 ? 0 : op], fd, &event);
}

/// Waits for events of descriptors added with `islet_epoll_control_tagged`; fills
/// `tags` and `events` (each `capacity` long) and answers how many, 0 on timeout, or
/// -1 with errno (EINTR included).
static inline int islet_epoll_wait_tagged(int epfd, uint64_t *tags, uint32_t *events, int capacity, int timeout_ms) {
    struct epoll_event ready[256];
    if (capacity > 256) capacity = 256;
    int count = epoll_wait(epfd, ready, capacity, timeout_ms);
    for (int i = 0; i < count; i++) {
        tags[i] = ready[i].data.u64;
        events[i] = ready[i].events;
    }
    return count;
}

/// Accepts a connection as a non-blocking, close-on-exec socket, or -1; `accept4` is
/// a GNU extension the Glibc module does not export.
static inline int islet_accept_nonblocking(int listener) {
    return accept4(listener, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
}

/// Names the calling thread (at most 15 bytes are kept); `prctl` is variadic.
static inline int islet_name_current_thread(const char *name) {
    return prctl(PR_SET_NAME, (unsigned long)name, 0UL, 0UL, 0UL);
}

/* glibc declares pipe2 only with _GNU_SOURCE, which the Swift importer does not set. */
int pipe2(int pipefd[2], int flags);

/// A pipe whose two ends are close-on-exec from the start (so that no child another
/// thread spawns meanwhile inherits them); 0 or -1.
static inline int islet_pipe_cloexec(int fds[2]) {
    return pipe2(fds, O_CLOEXEC);
}

/// Adds to `actions` the closing of every descriptor from `lowest` up in the child
/// (glibc's close_range), so that a child inherits no socket or file of ours, whether
/// or not it was opened close-on-exec; 0 or an error number.
static inline int islet_spawn_close_from(posix_spawn_file_actions_t *actions, int lowest) {
    return posix_spawn_file_actions_addclosefrom_np(actions, lowest);
}

/// Adds to `actions` a change of the child's working folder; 0 or an error number.
static inline int islet_spawn_chdir(posix_spawn_file_actions_t *actions, const char *path) {
    return posix_spawn_file_actions_addchdir_np(actions, path);
}

/// Sets `attributes` so that the child starts with no signal blocked and every
/// signal at its default action, whatever the spawning thread had; 0 or an error
/// number.
static inline int islet_spawn_reset_signals(posix_spawnattr_t *attributes) {
    sigset_t none, all;
    sigemptyset(&none);
    sigfillset(&all);
    int rc = posix_spawnattr_setsigmask(attributes, &none);
    if (rc == 0) rc = posix_spawnattr_setsigdefault(attributes, &all);
    if (rc == 0) rc = posix_spawnattr_setflags(attributes, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    return rc;
}

#endif
