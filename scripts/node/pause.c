/* The pod sandbox's process: holds the pod's namespaces and does nothing until it is told to stop.
   Built statically by scripts/cluster-build.sh into the image containerd names as sandbox_image. */
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

static void stop(int sig) { (void)sig; exit(0); }

int main(void) {
  signal(SIGTERM, stop);
  signal(SIGINT, stop);
  for (;;) pause();
}
