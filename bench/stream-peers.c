/* Peers for bench/stream-ingest.ts, N streams on ports BASE..BASE+N-1 of one multicast group.
   `send GROUP BASE N MBPS_EACH SECONDS FILE`: paced sendmmsg on lo, each port playing FILE (a TS)
   from its own offset in 1316-byte datagrams, looping; prints {"sent":datagrams,"bytes":b}, `bytes`
   counted from the line "start" on stdin (the measured window) to the end.
   `recv GROUP BASE N SECONDS`: the C ceiling: N sockets (8 MB buffers) under one epoll, drained
   with recvmmsg; prints {"datagrams":n,"bytes":b,"cpu":seconds,"wall":seconds}, bytes, CPU and
   wall time from the line "start" on stdin. It wakes as sluice's receive hub does
   (native/net/udp_hub.cc, kRound): a round that read data but filled no batch is followed by a
   pause until 2 ms after the round began, and a socket gets at most 8 recvmmsg calls per round,
   so the ratio measures the code, not the wake-up policy. Like the hub it takes up to 256 ready
   sockets per epoll_wait (kMaxEvents): with 64, a round at 100 streams read only 64 sockets and
   left the rest for the next, so each recvmmsg found more datagrams than the hub's did. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <fcntl.h>
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
  unsigned long long sent = 0, sent0 = 0;
  int next = 0, started = 0;
  /* "start" on stdin opens the window the receivers measure: looked for every 10 ms. */
  fcntl(0, F_SETFL, fcntl(0, F_GETFL) | O_NONBLOCK);
  double looked = 0;
  while (now() - t0 < secs) {
    if (!started && now() - looked > 0.01) {
      char line[64];
      ssize_t r = read(0, line, sizeof line);
      looked = now();
      if (r > 0 && memmem(line, (size_t)r, "start", 5)) {
        started = 1;
        sent0 = sent;
      }
    }
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
  printf("{\"sent\":%llu,\"bytes\":%llu}\n", sent, started ? (sent - sent0) * DG : 0);
  return 0;
}

static double cpu_seconds(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + ru.ru_stime.tv_sec +
         ru.ru_stime.tv_usec / 1e6;
}

/* `keep` mode: what any receiver that hands its data on must do at the least. Each socket's
   datagrams are read straight into that socket's batch (packed: the stream's datagrams are all
   1316 bytes, so entry i of a call points at the batch's end plus i × 1316; no copy at all), a
   batch is complete at 64 datagrams or 20 ms after its first (the udp input's batching), and
   two batches per socket alternate (one filling while the other is with its consumer). */
#define KEEP_LATENCY 0.020
struct keep {
  unsigned char *buf[2];
  int cur, count;
  double first;
};

static int do_recv(const char *group, int base, int n, double secs, int keep) {
  int ep = epoll_create1(0);
  static struct keep ks[4096];
  static int fd_index[65536];
  for (int i = 0; i < n; i++) {
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);
    fd_index[fd] = i;
    if (keep) {
      ks[i].buf[0] = malloc(BATCH * 2048);
      ks[i].buf[1] = malloc(BATCH * 2048);
    }
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
  /* "start" on stdin (after the bench's warm-up) begins the measured window, as for the
     sluice children: CPU and wall time are counted from it. */
  struct epoll_event sev = {.events = EPOLLIN, .data.fd = 0};
  epoll_ctl(ep, EPOLL_CTL_ADD, 0, &sev);
  double cpu0 = 0, w0 = 0;
  int started = 0;
  printf("ready\n");
  fflush(stdout);
  static unsigned char data[BATCH][2048];
  struct mmsghdr m[BATCH];
  struct iovec iov[BATCH];
  struct epoll_event evs[256];
  unsigned long long got = 0, bytes = 0; /* bytes: from "start" on */
  double t0 = now();
  while (now() - t0 < secs) {
    int ready = epoll_wait(ep, evs, 256, 100);
    const double round = now();
    int full = 0;
    for (int e = 0; e < ready; e++) {
      if (evs[e].data.fd == 0) {
        char line[64];
        ssize_t r = read(0, line, sizeof line);
        if (r <= 0 || (memmem(line, (size_t)r, "start", 5) && !started)) {
          epoll_ctl(ep, EPOLL_CTL_DEL, 0, NULL);
          started = 1;
          cpu0 = cpu_seconds();
          w0 = now();
        }
        continue;
      }
      if (keep) {
        struct keep *k = &ks[fd_index[evs[e].data.fd]];
        for (int call = 0; call < 8; call++) {
          const int room = BATCH - k->count;
          unsigned char *at = k->buf[k->cur] + (size_t)k->count * DG;
          for (int i = 0; i < room; i++) {
            iov[i].iov_base = at + (size_t)i * DG;
            iov[i].iov_len = 2048;
            memset(&m[i], 0, sizeof m[i]);
            m[i].msg_hdr.msg_iov = &iov[i];
            m[i].msg_hdr.msg_iovlen = 1;
          }
          int got_k = recvmmsg(evs[e].data.fd, m, room, MSG_DONTWAIT, NULL);
          if (got_k <= 0) break;
          if (k->count == 0) k->first = round;
          got += got_k;
          if (started)
            for (int i = 0; i < got_k; i++) bytes += m[i].msg_len;
          k->count += got_k;
          if (got_k < room) break;
          k->cur ^= 1; /* full: handed on */
          k->count = 0;
          full = 1;
        }
        continue;
      }
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
        if (started)
          for (int i = 0; i < k; i++) bytes += m[i].msg_len;
        if (k < BATCH) break;
        full = 1;
      }
    }
    if (keep) {
      for (int i = 0; i < n; i++) {
        if (ks[i].count > 0 && round - ks[i].first >= KEEP_LATENCY) {
          ks[i].cur ^= 1; /* due: handed on */
          ks[i].count = 0;
        }
      }
    }
    if (ready > 0 && !full) {
      const double wait = round + 0.002 - now();
      if (wait > 0) usleep((useconds_t)(wait * 1e6));
    }
  }
  if (!started) {
    cpu0 = 0;
    w0 = t0;
  }
  printf("{\"datagrams\":%llu,\"bytes\":%llu,\"cpu\":%f,\"wall\":%f}\n", got, bytes,
         cpu_seconds() - cpu0, now() - w0);
  return 0;
}

int main(int argc, char **argv) {
  if (argc >= 8 && !strcmp(argv[1], "send"))
    return do_send(argv[2], atoi(argv[3]), atoi(argv[4]), atof(argv[5]), atof(argv[6]), argv[7]);
  if (argc >= 6 && !strcmp(argv[1], "recv"))
    return do_recv(argv[2], atoi(argv[3]), atoi(argv[4]), atof(argv[5]),
                   argc >= 7 && !strcmp(argv[6], "keep"));
  fprintf(stderr, "usage: send GROUP BASE N MBPS SECONDS FILE | recv GROUP BASE N SECONDS [keep]\n");
  return 2;
}
