/* UDP load for tests: `FILE|- HOST PORT MBPS SECONDS MAX_DATAGRAMS` sends 1316-byte datagrams
   to HOST:PORT at MBPS (0 = as fast as the kernel takes them) with sendmmsg, for at most
   SECONDS and at most MAX_DATAGRAMS, whichever ends first; then prints the datagrams sent.
   FILE is a TS file sent in a loop; `-` sends junk: 0x47-aligned packets with random PIDs and
   payload. Loopback only (the test gives 127.0.0.1). */
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
#define BATCH 64

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
  if (argc != 7) {
    fprintf(stderr, "usage: FILE|- HOST PORT MBPS SECONDS MAX_DATAGRAMS\n");
    return 2;
  }
  unsigned char *data;
  long size;
  if (strcmp(argv[1], "-") == 0) {
    size = (long)DG * 4096;
    data = malloc(size);
    srand(1);
    for (long i = 0; i < size; i++) data[i] = (unsigned char)rand();
    for (long o = 0; o < size; o += 188) data[o] = 0x47;
  } else {
    FILE *f = fopen(argv[1], "rb");
    if (!f) return perror("open"), 1;
    fseek(f, 0, SEEK_END);
    size = ftell(f) / DG * DG;
    fseek(f, 0, SEEK_SET);
    if (size < DG) return fprintf(stderr, "file shorter than one datagram\n"), 1;
    data = malloc(size);
    if (fread(data, 1, size, f) != (size_t)size) return perror("read"), 1;
    fclose(f);
  }
  struct sockaddr_in to = {0};
  to.sin_family = AF_INET;
  to.sin_port = htons(atoi(argv[3]));
  if (inet_pton(AF_INET, argv[2], &to.sin_addr) != 1) return fprintf(stderr, "bad host\n"), 2;
  const double mbps = atof(argv[4]);
  const double seconds = atof(argv[5]);
  const long max = atol(argv[6]);
  int fd = socket(AF_INET, SOCK_DGRAM, 0);
  if (fd < 0) return perror("socket"), 1;
  int sndbuf = 4 << 20;
  setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof sndbuf);
  struct mmsghdr msgs[BATCH];
  struct iovec iov[BATCH];
  long sent = 0, offset = 0;
  const double start = now();
  while (sent < max) {
    const double t = now() - start;
    if (t >= seconds) break;
    if (mbps > 0) {
      const double due = mbps * 1e6 / 8 / DG * t; /* datagrams due by now */
      if (sent >= due) {
        usleep(500);
        continue;
      }
    }
    int n = BATCH;
    if (mbps > 0) { /* paced: only what is due, so a low rate is sent smoothly, not in bursts */
      const long due = (long)(mbps * 1e6 / 8 / DG * t) + 1 - sent;
      if (due < n) n = (int)due;
    }
    if (max - sent < n) n = (int)(max - sent);
    for (int i = 0; i < n; i++) {
      iov[i].iov_base = data + offset;
      iov[i].iov_len = DG;
      offset = (offset + DG) % size;
      memset(&msgs[i], 0, sizeof msgs[i]);
      msgs[i].msg_hdr.msg_name = &to;
      msgs[i].msg_hdr.msg_namelen = sizeof to;
      msgs[i].msg_hdr.msg_iov = &iov[i];
      msgs[i].msg_hdr.msg_iovlen = 1;
    }
    int r = sendmmsg(fd, msgs, n, 0);
    if (r > 0) sent += r;
    else usleep(200); /* the receiver's buffer is full: the kernel refuses for a moment */
  }
  printf("%ld\n", sent);
  close(fd);
  free(data);
  return 0;
}
