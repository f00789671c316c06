#define _GNU_SOURCE
#include <fcntl.h>
#include <stddef.h>
#include <sys/socket.h>
#include <unistd.h>

#include "CPosixShim.h"

int courier_pipe_cloexec(int fds[2]) { return pipe2(fds, O_CLOEXEC); }

int courier_accept_cloexec(int listener) { return accept4(listener, NULL, NULL, SOCK_CLOEXEC); }
