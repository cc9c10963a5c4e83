/* UDP peers for bench/udp-ingest.ts. `send GROUP PORT MBPS SECONDS`: paced sendmmsg of
   1316-byte datagrams of TS (7 packets, PID 0x100, CC counting) on the loopback interface.
   `recv GROUP PORT SECONDS`: the C recvmmsg receiver ceiling. CPU, wall time and datagrams are
   counted from the line "start" on stdin (after the bench's warm-up, as for sluice's child) to
   "stop", which prints {"datagrams":all,"window":in the window,"cpu":s,"wall":s}.
   The receiver wakes as sluice's receive hub does (native/net/udp_hub.cc, kRound): a round that
   read data but filled no batch is followed by a pause until 2 ms after the round began, so
   datagrams are read many per recvmmsg, not one per wake-up. Same policy on both sides: the
   ratio measures the code, not the wake-up policy. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <poll.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
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

static int do_send(const char *group, int port, double mbps, double secs) {
  int fd = socket(AF_INET, SOCK_DGRAM, 0);
  struct in_addr lo;
  inet_pton(AF_INET, "127.0.0.1", &lo);
  setsockopt(fd, IPPROTO_IP, IP_MULTICAST_IF, &lo, sizeof lo);
  int sndbuf = 8 << 20;
  setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &sndbuf, sizeof sndbuf);
  struct sockaddr_in to = {.sin_family = AF_INET, .sin_port = htons(port)};
  inet_pton(AF_INET, group, &to.sin_addr);
  static unsigned char buf[BATCH][DG];
  struct mmsghdr m[BATCH];
  struct iovec iov[BATCH];
  unsigned cc = 0;
  double rate = mbps * 1e6 / 8 / DG, t0 = now();
  unsigned long long sent = 0;
  while (now() - t0 < secs) {
    double due = (now() - t0) * rate;
    while (sent + BATCH <= due) {
      for (int i = 0; i < BATCH; i++) {
        for (int k = 0; k < 7; k++) {
          unsigned char *p = buf[i] + k * 188;
          memset(p, 0xAB, 188);
          p[0] = 0x47; p[1] = 0x01; p[2] = 0x00; p[3] = 0x10 | (cc++ & 15);
        }
        iov[i].iov_base = buf[i];
        iov[i].iov_len = DG;
        memset(&m[i], 0, sizeof m[i]);
        m[i].msg_hdr.msg_name = &to;
        m[i].msg_hdr.msg_namelen = sizeof to;
        m[i].msg_hdr.msg_iov = &iov[i];
        m[i].msg_hdr.msg_iovlen = 1;
      }
      int n = sendmmsg(fd, m, BATCH, 0);
      if (n > 0) sent += n;
    }
    struct timespec ts = {0, 200000};
    nanosleep(&ts, NULL);
  }
  printf("{\"sent\":%llu}\n", sent);
  return 0;
}

static double cpu_seconds(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + ru.ru_stime.tv_sec +
         ru.ru_stime.tv_usec / 1e6;
}

static int do_recv(const char *group, int port, double secs) {
  int fd = socket(AF_INET, SOCK_DGRAM, 0);
  int one = 1, buf = 8 << 20;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &buf, sizeof buf);
  struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(port)};
  inet_pton(AF_INET, group, &sa.sin_addr);
  if (bind(fd, (struct sockaddr *)&sa, sizeof sa) < 0) return 1;
  struct ip_mreqn mr = {0};
  mr.imr_multiaddr = sa.sin_addr;
  inet_pton(AF_INET, "127.0.0.1", &mr.imr_address);
  setsockopt(fd, IPPROTO_IP, IP_ADD_MEMBERSHIP, &mr, sizeof mr);
  printf("ready\n");
  fflush(stdout);
  static unsigned char data[BATCH][2048];
  struct mmsghdr m[BATCH];
  struct iovec iov[BATCH];
  unsigned long long got = 0, got0 = 0;
  double t0 = now(), cpu0 = 0, w0 = t0;
  struct pollfd pfd[2] = {{.fd = fd, .events = POLLIN}, {.fd = 0, .events = POLLIN}};
  while (now() - t0 < secs) {
    if (poll(pfd, 2, 100) <= 0) continue;
    if (pfd[1].revents) {
      char line[64];
      ssize_t r = read(0, line, sizeof line);
      if (r <= 0 || memmem(line, (size_t)r, "stop", 4)) break;
      if (memmem(line, (size_t)r, "start", 5)) {
        cpu0 = cpu_seconds();
        w0 = now();
        got0 = got;
      }
    }
    if (!pfd[0].revents) continue;
    const double round = now();
    int full = 0;
    for (int call = 0; call < 8; call++) { /* as the hub: at most 8 calls per round */
      for (int i = 0; i < BATCH; i++) {
        iov[i].iov_base = data[i];
        iov[i].iov_len = sizeof data[i];
        memset(&m[i], 0, sizeof m[i]);
        m[i].msg_hdr.msg_iov = &iov[i];
        m[i].msg_hdr.msg_iovlen = 1;
      }
      int n = recvmmsg(fd, m, BATCH, MSG_DONTWAIT, NULL);
      if (n <= 0) break;
      got += n;
      if (n < BATCH) break;
      full = 1;
    }
    if (!full) {
      const double wait = round + 0.002 - now();
      if (wait > 0) usleep((useconds_t)(wait * 1e6));
    }
  }
  printf("{\"datagrams\":%llu,\"window\":%llu,\"cpu\":%f,\"wall\":%f}\n", got, got - got0,
         cpu_seconds() - cpu0, now() - w0);
  return 0;
}

int main(int argc, char **argv) {
  if (argc >= 6 && !strcmp(argv[1], "send")) return do_send(argv[2], atoi(argv[3]), atof(argv[4]), atof(argv[5]));
  if (argc >= 5 && !strcmp(argv[1], "recv")) return do_recv(argv[2], atoi(argv[3]), atof(argv[4]));
  fprintf(stderr, "usage: send GROUP PORT MBPS SECONDS | recv GROUP PORT SECONDS\n");
  return 2;
}
