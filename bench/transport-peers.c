/* Transport peers for bench/transport-ingest.ts (built there with cc -O2 and
   `pkg-config --cflags --libs srt librist`). One sender process for both receiver kinds, so the
   sluice side and the peer side are fed alike:
   `srt PORTS MBPS WARMUP SECONDS LATENCY_MS`: N SRT callers (PORTS comma-separated, 127.0.0.1),
     all bound to one local port so they share one libsrt multiplexer (two libsrt threads, not 2N);
   `rist PORTS MBPS WARMUP SECONDS BUFFER_MS`: one librist main-profile sender with N peers of
     weight 0, so every peer gets every packet (librist duplicates; one write per message).
   Both pace 1316-byte messages of TS (7 packets: PAT and PMT every ~100 ms, PCR on the video PID
   every ~26 ms, continuity counters counting on every PID) at MBPS per stream from one thread.
   Lines out: {"event":"connected"} once every stream is up (nothing is sent before), then
   {"event":"mark",...} after WARMUP s, {"event":"end",...} after SECONDS more (the measuring
   window), then {"event":"stats",...} with what the protocol had to repair. The connections stay
   open until stdin closes (the bench reads the receivers' counts first).
   `sink PORT`: a UDP socket on 127.0.0.1:PORT that is never read (smallest buffer, the kernel
   drops what does not fit), for ristreceiver's output; exits when stdin closes. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <librist/librist.h>
#include <netinet/in.h>
#include <srt/srt.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#define MSG 1316
#define MAX_STREAMS 1024
#define PID_PMT 0x1000
#define PID_VIDEO 0x100
#define PID_AUDIO 0x101

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec / 1e9;
}

static void nap_ms(double ms) {
  struct timespec ts = {0, (long)(ms * 1e6)};
  nanosleep(&ts, NULL);
}

static uint32_t crc32_mpeg(const uint8_t *p, size_t n) {
  uint32_t crc = 0xffffffff;
  for (size_t i = 0; i < n; i++) {
    crc ^= (uint32_t)p[i] << 24;
    for (int k = 0; k < 8; k++) crc = crc & 0x80000000 ? (crc << 1) ^ 0x04c11db7 : crc << 1;
  }
  return crc;
}

/* One TS source: the same sequence goes to every stream (each receiver sees it whole). */
static struct {
  uint8_t cc[0x2000];
  unsigned long long msgs;
  double msgSeconds;
} src;

static uint8_t *header(uint8_t *p, int pid, int pusi) {
  memset(p, 0xff, 188);
  p[0] = 0x47;
  p[1] = (uint8_t)((pusi ? 0x40 : 0) | (pid >> 8));
  p[2] = (uint8_t)pid;
  p[3] = (uint8_t)(0x10 | (src.cc[pid]++ & 15));
  return p + 4;
}

static void section(uint8_t *p, int pid, const uint8_t *body, size_t n) {
  uint8_t *s = header(p, pid, 1);
  *s++ = 0; /* pointer_field */
  memcpy(s, body, n);
  const uint32_t crc = crc32_mpeg(s, n);
  s[n] = crc >> 24;
  s[n + 1] = crc >> 16;
  s[n + 2] = crc >> 8;
  s[n + 3] = crc;
}

static void make_message(uint8_t *m) {
  static const uint8_t pat[] = {0x00, 0xb0, 13, 0x00, 0x01, 0xc1, 0, 0,
                                0x00, 0x01, 0xe0 | (PID_PMT >> 8), PID_PMT & 0xff};
  static const uint8_t pmt[] = {0x02, 0xb0, 23, 0x00, 0x01, 0xc1, 0, 0, 0xe0 | (PID_VIDEO >> 8),
                                PID_VIDEO & 0xff, 0xf0, 0, 0x1b, 0xe0 | (PID_VIDEO >> 8),
                                PID_VIDEO & 0xff, 0xf0, 0, 0x0f, 0xe0 | (PID_AUDIO >> 8),
                                PID_AUDIO & 0xff, 0xf0, 0};
  const unsigned long long i = src.msgs++;
  int k = 0;
  if (i % 76 == 0) { /* ~100 ms at 8 Mbit/s */
    section(m, 0, pat, sizeof pat);
    section(m + 188, PID_PMT, pmt, sizeof pmt);
    k = 2;
  }
  for (; k < 7; k++) {
    uint8_t *p = m + k * 188;
    if (k == 6) {
      header(p, PID_AUDIO, 0);
      continue;
    }
    uint8_t *s = header(p, PID_VIDEO, 0);
    if (k == 0 && i % 20 == 0) { /* PCR every ~26 ms */
      p[3] |= 0x20;
      const unsigned long long pcr = (unsigned long long)(i * src.msgSeconds * 27e6);
      const unsigned long long base = pcr / 300, ext = pcr % 300;
      s[0] = 7;
      s[1] = 0x10;
      s[2] = base >> 25;
      s[3] = base >> 17;
      s[4] = base >> 9;
      s[5] = base >> 1;
      s[6] = (uint8_t)((base & 1) << 7 | 0x7e | ext >> 8);
      s[7] = (uint8_t)ext;
    }
  }
}

static int parse_ports(const char *csv, int *ports) {
  int n = 0;
  for (const char *p = csv; *p && n < MAX_STREAMS;) {
    ports[n++] = atoi(p);
    const char *c = strchr(p, ',');
    if (!c) break;
    p = c + 1;
  }
  return n;
}

/* The paced loop: warm-up, the measured window, both bounded in time. */
typedef int (*send_fn)(const uint8_t *msg, void *ctx);
static void pace(double mbps, double warmup, double secs, send_fn send, void *ctx) {
  const double rate = mbps * 1e6 / 8 / MSG;
  src.msgSeconds = 1 / rate;
  uint8_t msg[MSG];
  unsigned long long sent = 0, errors = 0, atMark = 0;
  double mark = 0;
  const double t0 = now();
  for (;;) {
    const double t = now() - t0;
    if (t >= warmup + secs) break;
    while (sent < t * rate) {
      make_message(msg);
      errors += (unsigned long long)send(msg, ctx);
      sent++;
    }
    if (!mark && t >= warmup) {
      mark = t;
      atMark = sent;
      printf("{\"event\":\"mark\",\"sent\":%llu}\n", sent);
      fflush(stdout);
    }
    nap_ms(1);
  }
  printf("{\"event\":\"end\",\"sent\":%llu,\"window\":%llu,\"seconds\":%.6f,\"errors\":%llu}\n",
         sent, sent - atMark, now() - t0 - mark, errors);
  fflush(stdout);
}

static void wait_stdin_eof(void) {
  char b[256];
  while (read(0, b, sizeof b) > 0) {
  }
}

/* ---- SRT ---- */

struct srt_ctx {
  int n;
  SRTSOCKET s[MAX_STREAMS];
};

static int srt_send_all(const uint8_t *msg, void *arg) {
  struct srt_ctx *c = arg;
  int errors = 0;
  for (int i = 0; i < c->n; i++)
    if (srt_sendmsg2(c->s[i], (const char *)msg, MSG, NULL) != MSG) errors++;
  return errors;
}

static int do_srt(const char *csv, double mbps, double warmup, double secs, int latency) {
  static int ports[MAX_STREAMS];
  static struct srt_ctx c;
  c.n = parse_ports(csv, ports);
  srt_startup();
  srt_setloglevel(LOG_ERR);
  int local = 0;
  for (int i = 0; i < c.n; i++) {
    SRTSOCKET s = srt_create_socket();
    srt_setsockflag(s, SRTO_LATENCY, &latency, sizeof latency);
    struct sockaddr_in la = {.sin_family = AF_INET, .sin_port = htons(local)};
    inet_pton(AF_INET, "127.0.0.1", &la.sin_addr);
    if (srt_bind(s, (struct sockaddr *)&la, sizeof la) < 0) {
      fprintf(stderr, "srt_bind: %s\n", srt_getlasterror_str());
      return 1;
    }
    if (i == 0) {
      int len = sizeof la;
      srt_getsockname(s, (struct sockaddr *)&la, &len);
      local = ntohs(la.sin_port);
    }
    struct sockaddr_in ra = {.sin_family = AF_INET, .sin_port = htons(ports[i])};
    inet_pton(AF_INET, "127.0.0.1", &ra.sin_addr);
    if (srt_connect(s, (struct sockaddr *)&ra, sizeof ra) < 0) {
      fprintf(stderr, "srt_connect :%d: %s\n", ports[i], srt_getlasterror_str());
      return 1;
    }
    c.s[i] = s;
  }
  printf("{\"event\":\"connected\"}\n");
  fflush(stdout);
  pace(mbps, warmup, secs, srt_send_all, &c);
  /* Let the send buffers empty (acknowledged), bounded. */
  for (double t0 = now(); now() - t0 < 1.0;) {
    size_t blocks = 0, bytes = 0, pending = 0;
    for (int i = 0; i < c.n; i++) {
      srt_getsndbuffer(c.s[i], &blocks, &bytes);
      pending += blocks;
    }
    if (!pending) break;
    nap_ms(10);
  }
  long long retrans = 0, lossReports = 0, drops = 0;
  for (int i = 0; i < c.n; i++) {
    SRT_TRACEBSTATS st;
    if (srt_bstats(c.s[i], &st, 0) == 0) {
      retrans += st.pktRetransTotal;
      lossReports += st.pktSndLossTotal;
      drops += st.pktSndDropTotal;
    }
  }
  printf("{\"event\":\"stats\",\"retransmitted\":%lld,\"lossReports\":%lld,\"senderDrops\":%lld}\n",
         retrans, lossReports, drops);
  fflush(stdout);
  wait_stdin_eof();
  for (int i = 0; i < c.n; i++) srt_close(c.s[i]);
  srt_cleanup();
  return 0;
}

/* ---- RIST ---- */

static atomic_int rist_up;
static atomic_llong rist_retrans;

static void rist_status(void *arg, struct rist_peer *peer, enum rist_connection_status st) {
  (void)arg;
  (void)peer;
  if (st == RIST_CONNECTION_ESTABLISHED) rist_up++;
  else if (st == RIST_CONNECTION_TIMED_OUT) rist_up--;
}

static int rist_stats(void *arg, const struct rist_stats *s) {
  (void)arg;
  if (s->stats_type == RIST_STATS_SENDER_PEER) rist_retrans += (long long)s->stats.sender_peer.retransmitted;
  rist_stats_free(s);
  return 0;
}

static int rist_send_one(const uint8_t *msg, void *arg) {
  struct rist_data_block b = {.payload = msg, .payload_len = MSG};
  return rist_sender_data_write(arg, &b) == MSG ? 0 : 1;
}

static int do_rist(const char *csv, double mbps, double warmup, double secs, int buffer) {
  static int ports[MAX_STREAMS];
  const int n = parse_ports(csv, ports);
  struct rist_logging_settings *log = NULL;
  rist_logging_set(&log, RIST_LOG_ERROR, NULL, NULL, NULL, stderr);
  struct rist_ctx *ctx = NULL;
  if (rist_sender_create(&ctx, RIST_PROFILE_MAIN, 0, log) != 0) return 1;
  rist_connection_status_callback_set(ctx, rist_status, NULL);
  rist_stats_callback_set(ctx, 250, rist_stats, NULL);
  for (int i = 0; i < n; i++) {
    char url[128];
    snprintf(url, sizeof url, "rist://127.0.0.1:%d?weight=0", ports[i]);
    struct rist_peer_config *cfg = NULL;
    if (rist_parse_address2(url, &cfg) != 0 || !cfg) return 1;
    cfg->recovery_mode = RIST_RECOVERY_MODE_TIME;
    cfg->recovery_length_min = cfg->recovery_length_max = (uint32_t)buffer;
    cfg->recovery_rtt_min = 50;
    cfg->recovery_rtt_max = 500;
    cfg->weight = 0;
    struct rist_peer *peer = NULL;
    const int rc = rist_peer_create(ctx, &peer, cfg);
    rist_peer_config_free2(&cfg);
    if (rc != 0) return 1;
  }
  if (rist_start(ctx) != 0) return 1;
  for (double t0 = now(); rist_up < n; nap_ms(5))
    if (now() - t0 > 10) {
      fprintf(stderr, "rist: %d of %d peers connected\n", (int)rist_up, n);
      return 1;
    }
  printf("{\"event\":\"connected\"}\n");
  fflush(stdout);
  pace(mbps, warmup, secs, rist_send_one, ctx);
  nap_ms(600); /* the last writes go out; two stats intervals */
  printf("{\"event\":\"stats\",\"retransmitted\":%lld}\n", (long long)rist_retrans);
  fflush(stdout);
  wait_stdin_eof();
  rist_destroy(ctx);
  rist_logging_settings_free2(&log);
  return 0;
}

/* ---- sink ---- */

static int do_sink(int port) {
  int fd = socket(AF_INET, SOCK_DGRAM, 0);
  int small = 1;
  setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
  struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(port)};
  inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
  if (bind(fd, (struct sockaddr *)&sa, sizeof sa) < 0) return 1;
  printf("ready\n");
  fflush(stdout);
  wait_stdin_eof();
  return 0;
}

int main(int argc, char **argv) {
  if (argc >= 7 && !strcmp(argv[1], "srt"))
    return do_srt(argv[2], atof(argv[3]), atof(argv[4]), atof(argv[5]), atoi(argv[6]));
  if (argc >= 7 && !strcmp(argv[1], "rist"))
    return do_rist(argv[2], atof(argv[3]), atof(argv[4]), atof(argv[5]), atoi(argv[6]));
  if (argc >= 3 && !strcmp(argv[1], "sink")) return do_sink(atoi(argv[2]));
  fprintf(stderr,
          "usage: srt PORTS MBPS WARMUP SECONDS LATENCY_MS | rist PORTS MBPS WARMUP SECONDS "
          "BUFFER_MS | sink PORT\n");
  return 2;
}
