#ifndef COURIER_CPOSIXSHIM_H
#define COURIER_CPOSIXSHIM_H

// Linux calls that Swift's Glibc module does not show (they need _GNU_SOURCE), for descriptors
// that are close-on-exec from the moment they exist: setting FD_CLOEXEC afterwards leaves a
// window in which a child process another thread starts inherits the descriptor.

/// pipe2(fds, O_CLOEXEC). Returns 0, or -1 with errno set.
int courier_pipe_cloexec(int fds[2]);

/// accept4(listener, NULL, NULL, SOCK_CLOEXEC). Returns the connection, or -1 with errno set.
int courier_accept_cloexec(int listener);

#endif
