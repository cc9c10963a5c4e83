/* Peers for bench/stream-ingest.ts, N streams on ports BASE..BASE+N-1 of one multicast group.
   `send GROUP BASE N MBPS_EACH SECONDS FILE`: paced sendmmsg on lo, each port playing FILE (a TS)
   from its own offset in 1316-byte datagrams, looping; prints {"sent":datagrams}.
   `recv GROUP BASE N SECONDS`: the C ceiling: N sockets (8 MB buffers) under one epoll, drained
   with recvmmsg; prints {"datagrams":n,"cpu":seconds}. It wakes as sluice's receive hub does
   (native/net/udp_hub.cc, kRound): a round that read data but filled no batch is followed by a
   pause until 2 ms after the round began, and a socket gets at most 8 recvmmsg calls per round,
   so the ratio measures the code, not the wake-up policy. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define DG 1316
#define BATCH 64
#define MAX_STREAMS 1024

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec / 1e9;
}

static int do_send(const char *group, int base, int n, double mbps, double secs, const char *file) {
  FILE *f = fopen(file, "rb");
  if (!f) return 1;
  fseek(f, 0, SEEK_END);
  long size = ftell(f) / DG * DG;
  fseek(f, 0, SEEK_SET);
  unsigned char *ts = malloc(size);
  if (size < DG || fread(ts, 1, size, f) != (size_t)size) return 1;
  fclose(f);
  int fd = socket(AF_INET, SOCK_DGRAM, 0);
  struct in_addr lo;
  inet_pton(AF_INET, "127.0.0.1", &lo);
  setsockopt(fd, IPPROTO_IP, IP_MULTICAST_IF, &lo, sizeof lo);
  int sndbuf = 8 << 20;
  setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &sndbuf, sizeof sndbuf);
  static struct sockaddr_in to[MAX_STREAMS];
  static long offset[MAX_STREAMS];
  for (int i = 0; i < n; i++) {
    to[i].sin_family = AF_INET;
    to[i].sin_port = htons(base + i);
    inet_pton(AF_INET, group, &to[i].sin_addr);
    offset[i] = (size / DG / n * i) * DG; /* streams out of phase */
  }
  struct mmsghdr m[BATCH];
  struct iovec iov[BATCH];
  double rate = n * mbps * 1e6 / 8 / DG, t0 = now();
  unsigned long long sent = 0;
  int next = 0;
  while (now() - t0 < secs) {
    double due = (now() - t0) * rate;
    while (sent + BATCH <= due) {
      for (int i = 0; i < BATCH; i++) {
        int s = next;
        next = (next + 1) % n;
        iov[i].iov_base = ts + offset[s];
        iov[i].iov_len = DG;
        offset[s] = (offset[s] + DG) % size;
        memset(&m[i], 0, sizeof m[i]);
        m[i].msg_hdr.msg_name = &to[s];
        m[i].msg_hdr.msg_namelen = sizeof to[s];
        m[i].msg_hdr.msg_iov = &iov[i];
        m[i].msg_hdr.msg_iovlen = 1;
      }
      int k = sendmmsg(fd, m, BATCH, 0);
      if (k > 0) sent += k;
    }
    struct timespec pause = {0, 200000};
    nanosleep(&pause, NULL);
  }
  printf("{\"sent\":%llu}\n", sent);
  return 0;
}

static int do_recv(const char *group, int base, int n, double secs) {
  int ep = epoll_create1(0);
  for (int i = 0; i < n; i++) {
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);
    int one = 1, buf = 8 << 20;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &buf, sizeof buf);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(base + i)};
    inet_pton(AF_INET, group, &sa.sin_addr);
    if (bind(fd, (struct sockaddr *)&sa, sizeof sa) < 0) return 1;
    struct ip_mreqn mr = {0};
    mr.imr_multiaddr = sa.sin_addr;
    inet_pton(AF_INET, "127.0.0.1", &mr.imr_address);
    setsockopt(fd, IPPROTO_IP, IP_ADD_MEMBERSHIP, &mr, sizeof mr);
    struct epoll_event ev = {.events = EPOLLIN, .data.fd = fd};
    epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
  }
  printf("ready\n");
  fflush(stdout);
  static unsigned char data[BATCH][2048];
  struct mmsghdr m[BATCH];
  struct iovec iov[BATCH];
  struct epoll_event evs[64];
  unsigned long long got = 0;
  double t0 = now();
  while (now() - t0 < secs) {
    int ready = epoll_wait(ep, evs, 64, 100);
    const double round = now();
    int full = 0;
    for (int e = 0; e < ready; e++) {
      for (int call = 0; call < 8; call++) {
        for (int i = 0; i < BATCH; i++) {
          iov[i].iov_base = data[i];
          iov[i].iov_len = sizeof data[i];
          memset(&m[i], 0, sizeof m[i]);
          m[i].msg_hdr.msg_iov = &iov[i];
          m[i].msg_hdr.msg_iovlen = 1;
        }
        int k = recvmmsg(evs[e].data.fd, m, BATCH, MSG_DONTWAIT, NULL);
        if (k <= 0) break;
        got += k;
        if (k < BATCH) break;
        full = 1;
      }
    }
    if (ready > 0 && !full) {
      const double wait = round + 0.002 - now();
      if (wait > 0) usleep((useconds_t)(wait * 1e6));
    }
  }
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  double cpu = ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + ru.ru_stime.tv_sec +
               ru.ru_stime.tv_usec / 1e6;
  printf("{\"datagrams\":%llu,\"cpu\":%f}\n", got, cpu);
  return 0;
}

int main(int argc, char **argv) {
  if (argc >= 8 && !strcmp(argv[1], "send"))
    return do_send(argv[2], atoi(argv[3]), atoi(argv[4]), atof(argv[5]), atof(argv[6]), argv[7]);
  if (argc >= 6 && !strcmp(argv[1], "recv"))
    return do_recv(argv[2], atoi(argv[3]), atoi(argv[4]), atof(argv[5]));
  fprintf(stderr, "usage: send GROUP BASE N MBPS SECONDS FILE | recv GROUP BASE N SECONDS\n");
  return 2;
}
