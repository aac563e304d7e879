/* The Pod sandbox's process: sleeps until SIGINT/SIGTERM, reaps children. Built with `gcc -static`. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static void sigdown(int signo) { (void)signo; exit(0); }
static void sigreap(int signo) { (void)signo; while (waitpid(-1, NULL, WNOHANG) > 0) {} }

int main(int argc, char **argv) {
  if (argc > 1 && argv[1][0] == '-' && argv[1][1] == 'v') { printf("pause (rayconformance)\n"); return 0; }
  if (getpid() != 1) fprintf(stderr, "pause: warning: not PID 1\n");
  struct sigaction down = {.sa_handler = sigdown}, reap = {.sa_handler = sigreap, .sa_flags = SA_NOCLDSTOP};
  if (sigaction(SIGINT, &down, NULL) < 0 || sigaction(SIGTERM, &down, NULL) < 0 ||
      sigaction(SIGCHLD, &reap, NULL) < 0) return 1;
  for (;;) pause();
}
