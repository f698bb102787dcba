// The worker's spawn of shell children: fork and exec, with the child set
// to die with its parent (PR_SET_PDEATHSIG), which posix_spawn cannot ask for. Between the
// fork and the exec the child calls only async-signal-safe functions and touches no memory
// of the parent's but its own locals.
#define _GNU_SOURCE
#include "cohort_spawn.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

static const int reset_signals[] = {SIGPIPE, SIGINT,  SIGTERM, SIGHUP,  SIGQUIT, SIGCHLD,
                                    SIGUSR1, SIGUSR2, SIGALRM, SIGTSTP, SIGTTIN, SIGTTOU};

/// Closes every descriptor from `lowest` up, in the child.
static void close_from(int lowest) {
#if defined(__linux__) && defined(SYS_close_range)
    if (syscall(SYS_close_range, (unsigned int)lowest, ~0U, 0) == 0) return;
#endif
    struct rlimit limit;
    long highest = 4096;
    if (getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY && limit.rlim_cur < 65536)
        highest = (long)limit.rlim_cur;
    for (long fd = lowest; fd < highest; fd++) close((int)fd);
}

/// In the child: reports what failed through `report` and exits.
static void fail_child(int report, int stage, int error) {
    int message[2] = {stage, error};
    ssize_t ignored = write(report, message, sizeof message);
    (void)ignored;
    _exit(127);
}

pid_t cohort_spawn(const char *path, char *const argv[], char *const envp[], int stdin_fd, int stdout_fd,
                   int stderr_fd, const char *directory, int *error, int *stage) {
    *error = 0;
    *stage = 0;
    // The child tells the parent why it could not exec through this pipe; a successful exec
    // closes it (close-on-exec) and the parent reads nothing.
    int report[2];
#ifdef __linux__
    if (pipe2(report, O_CLOEXEC) != 0) {
        *error = errno;
        return -1;
    }
#else
    if (pipe(report) != 0) {
        *error = errno;
        return -1;
    }
    fcntl(report[0], F_SETFD, FD_CLOEXEC);
    fcntl(report[1], F_SETFD, FD_CLOEXEC);
#endif
    int null_fd = -1;
    if (stdin_fd < 0) {
        null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
        if (null_fd < 0) {
            *error = errno;
            close(report[0]);
            close(report[1]);
            return -1;
        }
    }
    const pid_t parent = getpid();
    // No signal handler of the parent's may run in the child before the exec.
    sigset_t all, previous;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &previous);
    pid_t pid = fork();
    if (pid == 0) {
        setpgid(0, 0);
#ifdef __linux__
        // Killed when the spawning thread ends; if the parent already died, do not run.
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent) _exit(127);
#endif
        for (size_t i = 0; i < sizeof reset_signals / sizeof reset_signals[0]; i++) signal(reset_signals[i], SIG_DFL);
        int in = stdin_fd >= 0 ? stdin_fd : null_fd;
        // dup2 clears close-on-exec on the new descriptor; a descriptor already in place keeps it.
        if (in == 0) fcntl(0, F_SETFD, 0); else if (dup2(in, 0) < 0) fail_child(report[1], 0, errno);
        if (stdout_fd == 1) fcntl(1, F_SETFD, 0); else if (dup2(stdout_fd, 1) < 0) fail_child(report[1], 0, errno);
        if (stderr_fd == 2) fcntl(2, F_SETFD, 0); else if (dup2(stderr_fd, 2) < 0) fail_child(report[1], 0, errno);
        if (report[1] != 3) {
            if (dup2(report[1], 3) < 0) fail_child(report[1], 0, errno);
            fcntl(3, F_SETFD, FD_CLOEXEC);
        }
        close_from(4);
        sigset_t empty;
        sigemptyset(&empty);
        sigprocmask(SIG_SETMASK, &empty, NULL);
        if (directory != NULL && chdir(directory) != 0) fail_child(3, 1, errno);
        execve(path, argv, envp);
        fail_child(3, 2, errno);
    }
    int spawn_error = errno;
    pthread_sigmask(SIG_SETMASK, &previous, NULL);
    close(report[1]);
    if (null_fd >= 0) close(null_fd);
    if (pid < 0) {
        close(report[0]);
        *error = spawn_error;
        return -1;
    }
    int message[2] = {0, 0};
    ssize_t got;
    do {
        got = read(report[0], message, sizeof message);
    } while (got < 0 && errno == EINTR);
    close(report[0]);
    if (got == (ssize_t)sizeof message) {
        int status;
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
        *stage = message[0];
        *error = message[1];
        return -1;
    }
    return pid;
}
