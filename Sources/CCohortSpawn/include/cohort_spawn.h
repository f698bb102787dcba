#ifndef COHORT_SPAWN_H
#define COHORT_SPAWN_H

#include <sys/types.h>

/// Starts `path` with `argv` and `envp` in a new process group, with `stdin_fd`, `stdout_fd`
/// and `stderr_fd` on 0, 1 and 2 (stdin from /dev/null when `stdin_fd` is -1), nothing else
/// inherited, default dispositions and an empty mask for the usual signals, in `directory`
/// when it is not NULL. On Linux the child is killed (SIGKILL) when the thread that called
/// this function ends, which is why Cohort calls it from one thread that lives as long as
/// the process: a worker killed with `kill -9` takes its children with it.
///
/// Returns the child's pid, or -1 with `*error` set to the errno of what failed (`*stage`
/// to 1 for the working directory, 2 for the program, 0 for the spawn itself).
pid_t cohort_spawn(const char *path, char *const argv[], char *const envp[], int stdin_fd, int stdout_fd,
                   int stderr_fd, const char *directory, int *error, int *stage);

#endif
