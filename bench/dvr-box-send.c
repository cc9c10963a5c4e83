/* Paced UDP play-out for bench/dvr-box.ts: `FILE HOST BASEPORT N MBPS SECONDS` sends the TS file
   in 1316-byte datagrams to N unicast ports (BASEPORT..BASEPORT+N-1) at MBPS each, with sendmmsg,
   looping the file; prints the datagrams sent per port. Loopback only. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define DG 1316
#define MAX_BATCH 256

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
  if (argc != 7) {
    fprintf(stderr, "usage: FILE HOST BASEPORT N MBPS SECONDS\n");
    return 2;
  }
  FILE *f = fopen(argv[1], "rb");
  if (!f) return perror("open"), 1;
  fseek(f, 0, SEEK_END);
  long size = ftell(f) / DG * DG;
  fseek(f, 0, SEEK_SET);
  unsigned char *data = malloc(size);
  if (fread(data, 1, size, f) != (size_t)size) return perror("read"), 1;
  fclose(f);
  long dgs = size / DG;
  int base = atoi(argv[3]), n = atoi(argv[4]);
  double rate = atof(argv[5]) * 1e6 / 8 / DG, secs = atof(argv[6]);
  int fd = socket(AF_INET, SOCK_DGRAM, 0);
  int sndbuf = 16 << 20;
  setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &sndbuf, sizeof sndbuf);
  struct sockaddr_in *to = calloc(n, sizeof *to);
  for (int i = 0; i < n; i++) {
    to[i].sin_family = AF_INET;
    to[i].sin_port = htons(base + i);
    inet_pton(AF_INET, argv[2], &to[i].sin_addr);
  }
  long *sent = calloc(n, sizeof *sent);
  struct mmsghdr msgs[MAX_BATCH];
  struct iovec iov[MAX_BATCH];
  double t0 = now();
  for (;;) {
    double el = now() - t0;
    if (el >= secs) break;
    long due = (long)(el * rate);
    for (int p = 0; p < n; p++) {
      while (sent[p] < due) {
        int b = 0;
        while (b < MAX_BATCH && sent[p] + b < due) {
          long k = (sent[p] + b) % dgs;
          iov[b].iov_base = data + k * DG;
          iov[b].iov_len = DG;
          memset(&msgs[b], 0, sizeof msgs[b]);
          msgs[b].msg_hdr.msg_iov = &iov[b];
          msgs[b].msg_hdr.msg_iovlen = 1;
          msgs[b].msg_hdr.msg_name = &to[p];
          msgs[b].msg_hdr.msg_namelen = sizeof to[p];
          b++;
        }
        int r = sendmmsg(fd, msgs, b, 0);
        if (r <= 0) break;
        sent[p] += r;
      }
    }
    usleep(1000);
  }
  printf("%ld\n", sent[0]);
  return 0;
}
